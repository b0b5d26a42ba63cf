// RMSNorm lowering: SBUF limits, validity of the lowered program on each preset and for each
// choice, its synchronization, and the reference implementation.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "isa/validate.hpp"
#include "workloads/kernels/rmsnorm.hpp"
#include "workloads/lowering.hpp"
#include "workloads/workload.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::DType;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::isa::Program;
using trnsim::workloads::lower;
using trnsim::workloads::LoweredKernel;
using trnsim::workloads::parse_workload;
using trnsim::workloads::rmsnorm_reference;
using trnsim::workloads::Workload;
using trnsim::workloads::WorkloadError;

namespace {

Workload rmsnorm(int64_t rows, int64_t hidden, const std::string& dtype = "bf16",
                 const std::string& params = "{}") {
  return parse_workload(R"({"kernel": "rmsnorm", "shape": [)" + std::to_string(rows) + ", " +
                            std::to_string(hidden) + R"(], "dtype": ")" + dtype +
                            R"(", "params": )" + params + "}",
                        "w.json");
}

std::string lowering_error_of(const Workload& w, const ArchConfig& arch) {
  try {
    lower(w, arch, false);
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

// Runs the program's instructions in an order its semaphores allow: each DMA completes at
// once and raises its queue's semaphore by the DMA engines it uses (D1). Engines are visited
// in `order`, each running as far as its waits allow, so two orders expose a missing wait.
// Returns false on deadlock.
bool run_functional(const Program& p, const ArchConfig& arch, trnsim::isa::MemoryImage& mem,
                    const std::vector<Engine>& order) {
  std::vector<int64_t> sem(p.semaphores.size(), 0);
  std::vector<size_t> next(trnsim::kEngineCount, 0);
  auto ready = [&](const Instruction& in) {
    for (const auto& w : in.waits) {
      if (sem[w.semaphore] < w.value) return false;
    }
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (Engine e : order) {
      const auto& stream = p.stream(e);
      size_t& i = next[trnsim::index_of(e)];
      while (i < stream.size() && ready(stream[i])) {
        const Instruction& in = stream[i];
        trnsim::isa::execute(in, mem);
        if (in.opcode == Opcode::dma_copy) {
          sem[p.queues[in.dma_queue].semaphore] += arch.dma_engines_for(in.dst.partitions);
        }
        for (const auto& u : in.updates) {
          sem[u.semaphore] = u.kind == trnsim::isa::SemaphoreUpdateKind::add
                                 ? sem[u.semaphore] + u.value
                                 : u.value;
        }
        ++i;
        progress = true;
      }
    }
  }
  for (Engine e : trnsim::kAllEngines) {
    if (next[trnsim::index_of(e)] != p.stream(e).size()) return false;
  }
  return true;
}

// Lowers `w`, runs it functionally in two engine orders and compares y with the reference
// within the kernel's tolerance.
void check_functional(const Workload& w, const ArchConfig& arch) {
  const LoweredKernel k = lower(w, arch, true);
  REQUIRE_NOTHROW(trnsim::isa::validate(k.program, arch));
  REQUIRE(k.inputs.size() == 2);
  REQUIRE(k.expected.size() == 1);
  const std::vector<std::vector<Engine>> orders = {
      {Engine::sync, Engine::scalar, Engine::vector, Engine::tensor, Engine::gpsimd},
      {Engine::vector, Engine::scalar, Engine::gpsimd, Engine::tensor, Engine::sync}};
  for (const auto& order : orders) {
    trnsim::isa::MemoryImage mem(arch, k.program.dram_bytes());
    for (const auto& input : k.inputs) {
      const auto* t = k.program.find_dram_tensor(input.name);
      REQUIRE(t != nullptr);
      for (size_t i = 0; i < input.values.size(); ++i) {
        trnsim::isa::store_element(t->dtype, mem.hbm.data() + t->address + i * size_of(t->dtype),
                                   input.values[i]);
      }
    }
    REQUIRE(run_functional(k.program, arch, mem, order));
    const auto* y = k.program.find_dram_tensor("y");
    REQUIRE(y != nullptr);
    const auto& expected = k.expected[0].values;
    int mismatches = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      const float got =
          trnsim::isa::load_element(y->dtype, mem.hbm.data() + y->address + i * size_of(y->dtype));
      const double bound = k.tolerance.atol + k.tolerance.rtol * std::abs(expected[i]);
      if (!(std::abs(got - expected[i]) <= bound)) {
        if (++mismatches <= 5)
          UNSCOPED_INFO("y[" << i << "] = " << got << ", expected " << expected[i]);
      }
    }
    CHECK(mismatches == 0);
  }
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
  const std::string msg = lowering_error_of(rmsnorm(256, 32768), trnsim::config::trn2());
  CHECK_THAT(msg, StartsWith("w.json: /shape: "));
  CHECK_THAT(msg, Contains("327744 bytes"));
  CHECK_THAT(msg, Contains("229376"));
}

TEST_CASE("rmsnorm fits SBUF exactly up to the last 64-byte row", "[unit][rmsnorm]") {
  // One buffer, bf16: 3 rows of 2h bytes (gamma, x, scaled; each rounded up to 64) + 64 bytes
  // of per-row scalars.
  // trn2 (229376 B): h = 38208 takes 229312 bytes; h = 38209 rounds to 229504.
  CHECK(lowering_error_of(rmsnorm(128, 38208, "bf16", R"({"bufs": 1})"), trnsim::config::trn2()) ==
        "");
  CHECK_THAT(
      lowering_error_of(rmsnorm(128, 38209, "bf16", R"({"bufs": 1})"), trnsim::config::trn2()),
      StartsWith("w.json: /shape: "));
  // trn1 (196608 B): h = 32736 takes 196480 bytes; h = 32737 rounds to 196672.
  CHECK(lowering_error_of(rmsnorm(128, 32736, "bf16", R"({"bufs": 1})"), trnsim::config::trn1()) ==
        "");
  CHECK_THAT(
      lowering_error_of(rmsnorm(128, 32737, "bf16", R"({"bufs": 1})"), trnsim::config::trn1()),
      StartsWith("w.json: /shape: "));
}

TEST_CASE("rmsnorm with a hidden size over the engine free-size limit names /shape/1",
          "[unit][rmsnorm]") {
  CHECK_THAT(lowering_error_of(rmsnorm(8, 65537, "bf16", R"({"bufs": 1})"), trnsim::config::trn2()),
             StartsWith("w.json: /shape/1: hidden size 65537 exceeds the 65536"));
}

TEST_CASE("rmsnorm bad params are reported by lower", "[unit][rmsnorm]") {
  CHECK_THAT(lowering_error_of(rmsnorm(128, 64, "bf16", R"({"bufs": 0})"), trnsim::config::trn2()),
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
  for (const Instruction& in : p.stream(Engine::sync)) partial += in.dst.partitions == 72;
  CHECK(partial == 2);
}

TEST_CASE("the lowered rmsnorm computes rmsnorm", "[unit][rmsnorm]") {
  check_functional(rmsnorm(200, 256), trnsim::config::trn2());
  check_functional(rmsnorm(64, 64, "fp32"), trnsim::config::trn1());
  check_functional(rmsnorm(300, 128, "bf16", R"({"bufs": 1, "scale_engine": "vector"})"),
                   trnsim::config::trn2());
  check_functional(rmsnorm(300, 96, "bf16", R"({"tile_rows": 64, "bufs": 3})"),
                   trnsim::config::trn2());
}

TEST_CASE("the lowered rmsnorm passes its check in fp16 and fp8 too", "[unit][rmsnorm]") {
  // Each output rounds twice in its dtype (x / rms, then times gamma): the tolerance follows the
  // dtype's rounding unit, not fp32's.
  for (const char* dtype : {"fp16", "fp8_e4m3", "fp8_e5m2"}) {
    INFO(dtype);
    check_functional(rmsnorm(256, 512, dtype), trnsim::config::trn2());
  }
  const LoweredKernel k = lower(rmsnorm(128, 64, "fp16"), trnsim::config::trn2(), false);
  CHECK(k.tolerance.rtol == Approx(5 * 0x1.0p-11));
  CHECK(k.tolerance.atol == Approx(0x1.0p-12));
}
