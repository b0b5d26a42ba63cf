// RMSNorm lowering: SBUF limits, validity of the lowered program on each preset and for each
// choice, its synchronization, and the reference implementation.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "workloads/kernels/rmsnorm.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::Instruction;
using trnsim::isa::Program;
using trnsim::workloads::lower;
using trnsim::workloads::LoweredKernel;
using trnsim::workloads::rmsnorm_reference;
using trnsim::workloads::Workload;
using namespace trnsim_test;

namespace {

Workload rmsnorm(int64_t rows, int64_t hidden, const std::string& dtype = "bf16",
                 const std::string& params = "{}") {
  return workload(kernel_json("rmsnorm", {rows, hidden}, R"(, "dtype": ")" + dtype + "\"", params));
}

// Lowers `w`, runs it functionally in two engine orders and compares y with the reference
// within the kernel's tolerance (check_functional); x and gamma in, y out.
void check_rmsnorm(const Workload& w, const ArchConfig& arch) {
  const LoweredKernel k = lower(w, arch, true);
  REQUIRE(k.inputs.size() == 2);
  REQUIRE(k.expected.size() == 1);
  CHECK(check_functional(w, arch).mismatches == 0);
}

}  // namespace

TEST_CASE("rmsnorm_reference matches a hand-computed case", "[unit][rmsnorm]") {
  // Row 0: [3, 4], mean square 12.5, rms 3.5355339; y = [3, 4] / rms * [1, 2].
  // Row 1: [1, 1], mean square 1: y = gamma.
  const std::vector<float> y = rmsnorm_reference({3, 4, 1, 1}, {1, 2}, 2, 2, 0.0);
  REQUIRE(y.size() == 4);
  CHECK(y[0] == Approx(0.8485281f).epsilon(1e-6));
  CHECK(y[1] == Approx(2.2627417f).epsilon(1e-6));
  CHECK(y[2] == Approx(1.0f).epsilon(1e-6));
  CHECK(y[3] == Approx(2.0f).epsilon(1e-6));
  // eps = 0.5 adds to the mean square: 13, rms 3.6055513.
  const std::vector<float> e = rmsnorm_reference({3, 4}, {1, 2}, 1, 2, 0.5);
  CHECK(e[0] == Approx(0.8320503f).epsilon(1e-6));
  CHECK(e[1] == Approx(2.2188008f).epsilon(1e-6));
}

TEST_CASE("rmsnorm with a hidden size that does not fit SBUF names /shape", "[unit][rmsnorm]") {
  // bf16, 2 buffers, hidden 32768: gamma 64 KiB + 2 x (x and scaled, 64 KiB each) + one
  // 64-byte row of per-row scalars = 327744 bytes.
  const std::string msg = error_of(rmsnorm(256, 32768), trnsim::config::trn2());
  CHECK_THAT(msg, StartsWith("w.json: /shape: "));
  CHECK_THAT(msg, Contains("327744 bytes"));
  CHECK_THAT(msg, Contains("229376"));
}

TEST_CASE("rmsnorm fits SBUF exactly up to the last 64-byte row", "[unit][rmsnorm]") {
  // One buffer, bf16: 3 rows of 2h bytes (gamma, x, scaled; each rounded up to 64) + 64 bytes
  // of per-row scalars.
  // trn2 (229376 B): h = 38208 takes 229312 bytes; h = 38209 rounds to 229504.
  CHECK(error_of(rmsnorm(128, 38208, "bf16", R"({"bufs": 1})"), trnsim::config::trn2()) == "");
  CHECK_THAT(error_of(rmsnorm(128, 38209, "bf16", R"({"bufs": 1})"), trnsim::config::trn2()),
             StartsWith("w.json: /shape: "));
  // trn1 (196608 B): h = 32736 takes 196480 bytes; h = 32737 rounds to 196672.
  CHECK(error_of(rmsnorm(128, 32736, "bf16", R"({"bufs": 1})"), trnsim::config::trn1()) == "");
  CHECK_THAT(error_of(rmsnorm(128, 32737, "bf16", R"({"bufs": 1})"), trnsim::config::trn1()),
             StartsWith("w.json: /shape: "));
}

TEST_CASE("rmsnorm with a hidden size over the engine free-size limit names /shape/1",
          "[unit][rmsnorm]") {
  CHECK_THAT(error_of(rmsnorm(8, 65537, "bf16", R"({"bufs": 1})"), trnsim::config::trn2()),
             StartsWith("w.json: /shape/1: hidden size 65537 exceeds the 65536"));
}

TEST_CASE("rmsnorm bad params are reported by lower", "[unit][rmsnorm]") {
  CHECK_THAT(error_of(rmsnorm(128, 64, "bf16", R"({"bufs": 0})"), trnsim::config::trn2()),
             StartsWith("w.json: /params/bufs: "));
}

TEST_CASE("the lowered rmsnorm passes validation on trn1 and trn2", "[unit][rmsnorm]") {
  struct Case {
    int64_t rows, hidden;
    const char* dtype;
    const char* params;
  };
  const std::vector<Case> cases = {
      {128, 512, "bf16", "{}"},
      {2048, 4096, "bf16", "{}"},
      {200, 768, "bf16", "{}"},  // rows not a multiple of 128
      {1, 64, "bf16", "{}"},
      {300, 1000, "fp32", "{}"},
      {129, 256, "bf16", R"({"bufs": 1})"},
      {333, 512, "bf16", R"({"bufs": 2})"},
      {1000, 2048, "bf16", R"({"bufs": 3})"},
      {1000, 2048, "bf16", R"({"bufs": 3, "scale_engine": "vector"})"},
      {77, 100, "fp32", R"({"bufs": 1, "scale_engine": "vector"})"},
      {500, 256, "bf16", R"({"tile_rows": 64, "bufs": 3})"},
      {500, 256, "bf16", R"({"tile_rows": 100, "scale_engine": "vector"})"},
      {4096, 8192, "bf16", R"({"bufs": 2})"},
  };
  for (const ArchConfig& arch : {trnsim::config::trn1(), trnsim::config::trn2()}) {
    for (const Case& c : cases) {
      INFO(arch.name << " shape [" << c.rows << ", " << c.hidden << "] " << c.dtype << " "
                     << c.params);
      const LoweredKernel k = lower(rmsnorm(c.rows, c.hidden, c.dtype, c.params), arch, false);
      CHECK_NOTHROW(trnsim::isa::validate(k.program, arch));
      CHECK(k.inputs.empty());
      CHECK(k.model_flops == static_cast<uint64_t>(c.rows) * (4 * c.hidden + 2));
    }
  }
}

TEST_CASE("the lowered rmsnorm reports the choices it used", "[unit][rmsnorm]") {
  const LoweredKernel k =
      lower(rmsnorm(300, 128, "bf16", R"({"bufs": 3, "scale_engine": "vector"})"),
            trnsim::config::trn2(), false);
  CHECK(k.choices.at("tile_rows") == 128);
  CHECK(k.choices.at("bufs") == 3);
  CHECK(k.choices.at("scale_engine") == "vector");
  const LoweredKernel d = lower(rmsnorm(300, 128), trnsim::config::trn2(), false);
  CHECK(d.choices.at("bufs") == 2);
  CHECK(d.choices.at("scale_engine") == "scalar");
}

TEST_CASE("the lowered rmsnorm has one load and store per tile and waits for whole DMAs",
          "[unit][rmsnorm]") {
  // 200 rows: tiles of 128 and 72 rows. Queue semaphores rise by 16 per 128-row transfer and
  // by ceil(72 / 8) = 9 for the last tile; gamma (128 rows) comes first on the same queue.
  const LoweredKernel k = lower(rmsnorm(200, 256), trnsim::config::trn2(), false);
  const Program& p = k.program;
  CHECK(p.stream(Engine::sync).size() == 1 + 2 * 2);
  CHECK(p.stream(Engine::scalar).size() == 3 * 2);
  CHECK(p.stream(Engine::vector).size() == 2);
  CHECK(p.stream(Engine::tensor).empty());
  CHECK(p.stream(Engine::gpsimd).empty());
  const uint16_t in_sem = p.queues.at(0).semaphore;
  // The square-sum of tile 1 waits for gamma, tile 0 and tile 1: 16 + 16 + 9.
  const Instruction& sq1 = p.stream(Engine::scalar).at(3);
  bool waits_for_all = false;
  for (const auto& w : sq1.waits) waits_for_all |= (w.semaphore == in_sem && w.value == 41);
  CHECK(waits_for_all);
  // The last tile's DMAs cover 72 partitions.
  int partial = 0;
  for (const Instruction& in : p.stream(Engine::sync)) partial += in.dst->partitions == 72;
  CHECK(partial == 2);
}

TEST_CASE("the lowered rmsnorm computes rmsnorm", "[unit][rmsnorm]") {
  check_rmsnorm(rmsnorm(200, 256), trnsim::config::trn2());
  check_rmsnorm(rmsnorm(64, 64, "fp32"), trnsim::config::trn1());
  check_rmsnorm(rmsnorm(300, 128, "bf16", R"({"bufs": 1, "scale_engine": "vector"})"),
                trnsim::config::trn2());
  check_rmsnorm(rmsnorm(300, 96, "bf16", R"({"tile_rows": 64, "bufs": 3})"),
                trnsim::config::trn2());
}

TEST_CASE("the lowered rmsnorm passes its check in fp16 and fp8 too", "[unit][rmsnorm]") {
  // Each output rounds twice in its dtype (x / rms, then times gamma): the tolerance follows the
  // dtype's rounding unit, not fp32's.
  for (const char* dtype : {"fp16", "fp8_e4m3", "fp8_e5m2"}) {
    INFO(dtype);
    check_rmsnorm(rmsnorm(256, 512, dtype), trnsim::config::trn2());
  }
  const LoweredKernel k = lower(rmsnorm(128, 64, "fp16"), trnsim::config::trn2(), false);
  CHECK(k.tolerance.rtol == Approx(5 * 0x1.0p-11));
  CHECK(k.tolerance.atol == Approx(0x1.0p-12));
}
