// LayerNorm lowering: the reference, functional runs of the lowered program against it, its
// synchronization, the engines and chunks it claims, and the errors of bad input.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "workloads/kernels/layernorm.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::workloads::layernorm_reference;
using trnsim::workloads::lower;
using trnsim::workloads::LoweredKernel;
using namespace trnsim_test;

namespace {
std::string ln(int64_t rows, int64_t hidden, const std::string& extra = "",
               const std::string& params = "{}") {
  return kernel_json("layernorm", {rows, hidden}, extra, params);
}
}  // namespace

TEST_CASE("layernorm_reference matches a hand-computed case", "[unit][layernorm]") {
  // Row [1, 3]: mean 2, variance 1: (x - mean) / 1 = [-1, 1]; times gamma [2, 3] plus beta
  // [0.5, -0.5] = [-1.5, 2.5]. Row [5, 5]: variance 0, eps 1: 0 * ... + beta.
  const std::vector<float> y = layernorm_reference({1, 3, 5, 5}, {2, 3}, {0.5f, -0.5f}, 2, 2, 0.0);
  CHECK(y[0] == Approx(-1.5f));
  CHECK(y[1] == Approx(2.5f));
  const std::vector<float> e = layernorm_reference({1, 3}, {2, 3}, {0.5f, -0.5f}, 1, 2, 3.0);
  // var + eps = 4: (x - mean) / 2.
  CHECK(e[0] == Approx(-0.5f));
  CHECK(e[1] == Approx(1.0f));
}

TEST_CASE("the lowered layernorm computes layernorm with both methods", "[unit][layernorm]") {
  struct Case {
    int64_t rows, hidden;
    const char* extra;
    const char* params;
  };
  const std::vector<Case> cases = {
      {300, 1000, "", "{}"},  // rows and hidden not multiples of 128 and 512
      {300, 1000, R"(, "method": "two_pass")", "{}"},
      {130, 512, R"(, "method": "bn_stats", "dtype": "fp32")", R"({"bufs": 1})"},
      {200, 96, R"(, "method": "two_pass", "dtype": "fp16")", R"({"bufs": 2, "tile_rows": 64})"},
      {64, 2048, R"(, "dtype": "fp8_e4m3", "eps": 0.1)", R"({"beta_engine": "vector"})"},
      {257, 1, R"(, "method": "two_pass")", R"({"bufs": 4, "beta_engine": "gpsimd"})"},
      {1, 513, "", R"({"tile_rows": 1})"},
  };
  for (const ArchConfig& arch : {trnsim::config::trn2(), trnsim::config::trn1()}) {
    for (const Case& c : cases) {
      INFO(arch.name << " " << ln(c.rows, c.hidden, c.extra, c.params));
      const FunctionalResult r =
          check_functional(workload(ln(c.rows, c.hidden, c.extra, c.params)), arch);
      CHECK(r.mismatches == 0);
      // The output is rounded: the comparison is real (with hidden 1, y is beta exactly).
      if (c.hidden > 1) CHECK(r.worst > 0);
    }
  }
}

TEST_CASE("layernorm's tolerance catches a missing beta or gamma", "[unit][layernorm]") {
  // The bound (rtol 4u, atol 2u) is far below what leaving out beta (up to 0.5) or gamma (a
  // factor of 0.5 to 1.5) costs: the check is not vacuous.
  const LoweredKernel k = lowered(ln(128, 256), trnsim::config::trn2(), true);
  CHECK(k.tolerance.rtol == Approx(4 * 0x1.0p-8));
  CHECK(k.tolerance.atol == Approx(2 * 0x1.0p-8));
  CHECK(fails_when(k, trnsim::config::trn2(),
                   [](trnsim::isa::Program& p) {
                     bypass(p, {Engine::gpsimd, Engine::vector}, "beta");
                   },
                   {Engine::sync, Engine::vector, Engine::scalar, Engine::gpsimd, Engine::tensor}));
}

TEST_CASE("the lowered layernorm validates at large shapes and counts its instructions",
          "[unit][layernorm]") {
  for (const ArchConfig& arch : {trnsim::config::trn1(), trnsim::config::trn2()}) {
    for (const char* method : {"bn_stats", "two_pass"}) {
      for (const auto& [rows, hidden] : std::vector<std::pair<int64_t, int64_t>>{
               {8192, 4096}, {1000, 8191}, {129, 16000}, {4096, 512}}) {
        INFO(arch.name << " " << method << " [" << rows << ", " << hidden << "]");
        const LoweredKernel k =
            lowered(ln(rows, hidden, std::string(R"(, "method": ")") + method + "\""), arch);
        CHECK_NOTHROW(trnsim::isa::validate(k.program, arch));
        CHECK(trnsim::compiler::find_deadlock(k.program, arch) == "");
        const int64_t tiles = (rows + 127) / 128;
        const int64_t chunks = (hidden + 511) / 512;
        const int64_t per_tile = std::string(method) == "bn_stats" ? 2 + chunks + 5 + 1 : 10;
        CHECK(k.program.instruction_count() == static_cast<uint64_t>(2 + tiles * per_tile));
        CHECK(k.model_flops == static_cast<uint64_t>(rows) * (7 * hidden + 3));
      }
    }
  }
}

TEST_CASE("the lowered layernorm has no unordered accesses for any choice", "[unit][layernorm]") {
  for (const ArchConfig& arch : {trnsim::config::trn1(), trnsim::config::trn2()}) {
    for (const char* method : {"bn_stats", "two_pass"}) {
      for (const char* params :
           {R"({"bufs": 1})", R"({"bufs": 2})", R"({"bufs": 3, "beta_engine": "vector"})",
            R"({"bufs": 5, "tile_rows": 32, "beta_engine": "gpsimd"})"}) {
        INFO(arch.name << " " << method << " " << params);
        const LoweredKernel k =
            lowered(ln(700, 600, std::string(R"(, "method": ")") + method + "\"", params), arch);
        CHECK(find_unordered_conflicts(k.program, arch) == "");
      }
    }
  }
}

TEST_CASE("bn_stats reads chunks of at most bn_stats_free_max, then one bn_aggr",
          "[unit][layernorm]") {
  // hidden 1100: chunks of 512, 512 and 76.
  const ArchConfig arch = trnsim::config::trn2();
  const LoweredKernel k = lowered(ln(256, 1100), arch);
  std::vector<uint64_t> sizes;
  for (const Instruction& in : k.program.stream(Engine::vector)) {
    if (in.opcode == Opcode::bn_stats && in.label.find("tile 0 ") != std::string::npos) {
      sizes.push_back(in.src[0]->free_elements());
      CHECK(in.dst->free_elements() == 3);
    }
    if (in.opcode == Opcode::bn_aggr) CHECK(in.src[0]->free_elements() == 9);
  }
  CHECK(sizes == std::vector<uint64_t>{512, 512, 76});
  CHECK(count_of(k.program, Engine::vector, Opcode::bn_stats) == 2 * 3);
  CHECK(count_of(k.program, Engine::vector, Opcode::bn_aggr) == 2);
  CHECK(k.choices.at("bn_stats_chunks") == 3);
  // With a smaller limit the chunks follow it.
  ArchConfig small = arch;
  small.bn_stats_free_max = 256;
  const LoweredKernel s = lowered(ln(128, 1100), small);
  CHECK(count_of(s.program, Engine::vector, Opcode::bn_stats) == 5);
  CHECK_NOTHROW(trnsim::isa::validate(s.program, small));
}

TEST_CASE("layernorm puts statistics on VectorE and the scale and shift on ScalarE",
          "[unit][layernorm]") {
  for (const char* method : {"bn_stats", "two_pass"}) {
    INFO(method);
    const LoweredKernel k = lowered(ln(256, 512, std::string(R"(, "method": ")") + method + "\""));
    const auto& p = k.program;
    const bool bn = std::string(method) == "bn_stats";
    // Statistics: bn_stats/bn_aggr, or the sum by a reduction, on VectorE only.
    CHECK(count_of(p, Engine::vector, Opcode::bn_stats) == (bn ? 2 : 0));
    CHECK(count_of(p, Engine::vector, Opcode::tensor_reduce) == (bn ? 0 : 2));
    // two_pass: the variance from ScalarE's squares with the accumulator.
    size_t squares = 0, normalize = 0;
    for (const Instruction& in : p.stream(Engine::scalar)) {
      if (in.function == trnsim::isa::ActivationFunction::square) {
        ++squares;
        CHECK(in.accumulate->present());
        CHECK(in.bias.per_partition().present());  // -mean / sqrt(hidden)
      }
      if (in.function == trnsim::isa::ActivationFunction::identity) {
        ++normalize;
        CHECK(in.scale.per_partition().present());  // rstd
        CHECK(in.bias.per_partition().present());   // -mean * rstd
      }
    }
    CHECK(squares == (bn ? 0u : 2u));
    CHECK(normalize == 2);
    // gamma on VectorE, beta on GpSimdE (trn2's default).
    CHECK(count_of(p, Engine::vector, Opcode::tensor_tensor) == 2);
    CHECK(count_of(p, Engine::gpsimd, Opcode::tensor_tensor) == 2);
    CHECK(k.choices.at("beta_engine") == "gpsimd");
  }
  // trn1: VectorE and GpSimdE share the SBUF port, so beta stays on VectorE.
  const LoweredKernel t1 = lowered(ln(256, 512), trnsim::config::trn1());
  CHECK(count_of(t1.program, Engine::gpsimd, Opcode::tensor_tensor) == 0);
  CHECK(t1.choices.at("beta_engine") == "vector");
}

TEST_CASE("layernorm takes the most of three buffers that fit, and eps 1e-5 by default",
          "[unit][layernorm]") {
  const ArchConfig arch = trnsim::config::trn2();
  CHECK(lowered(ln(1024, 4096), arch).choices.at("bufs") == 3);
  // hidden 20000 bf16: gamma and beta 80000 bytes, each buffer 80000 more: one fits 224 KiB.
  CHECK(lowered(ln(1024, 20000), arch).choices.at("bufs") == 1);
  CHECK(lowered(ln(1024, 16000), arch).choices.at("bufs") == 2);
  CHECK(lowered(ln(100, 64), arch).choices.at("bufs") == 1);  // one tile
  CHECK(workload(ln(8, 8)).eps == 1e-5);
  CHECK(workload(ln(8, 8, R"(, "eps": 0.001)")).eps == 0.001);
  CHECK(workload(R"({"kernel": "rmsnorm", "shape": [8, 8]})").eps == 1e-6);
  const LoweredKernel k = lowered(ln(8, 8, R"(, "method": "two_pass")"), arch);
  CHECK(k.choices.at("method") == "two_pass");
}

TEST_CASE("layernorm errors name the key", "[unit][layernorm]") {
  CHECK_THAT(error_of(ln(8, 8, R"(, "method": "bn_stat")")),
             StartsWith("w.json: /method: expected \"bn_stats\" or \"two_pass\", got \"bn_stat\" "
                        "(did you mean \"bn_stats\"?)"));
  CHECK_THAT(error_of(ln(8, 8, R"(, "method": 2)")), StartsWith("w.json: /method: expected"));
  CHECK_THAT(error_of(ln(8, 8, R"(, "eps": 2)")), StartsWith("w.json: /eps: expected a number"));
  CHECK_THAT(error_of(ln(8, 8, R"(, "variant": "fused")")),
             StartsWith("w.json: /variant: unknown key for kernel layernorm"));
  CHECK_THAT(error_of(ln(8, 8, "", R"({"bufs": 0})")),
             StartsWith("w.json: /params/bufs: expected an integer in [1, 8], got 0"));
  CHECK_THAT(error_of(ln(8, 8, "", R"({"buf": 2})")),
             StartsWith("w.json: /params/buf: unknown layernorm parameter; expected one of: "
                        "tile_rows, bufs, beta_engine (did you mean \"bufs\"?)"));
  CHECK_THAT(error_of(ln(8, 8, "", R"({"beta_engine": "scalar"})")),
             StartsWith("w.json: /params/beta_engine: expected \"gpsimd\" or \"vector\""));
  CHECK_THAT(error_of(ln(8, 8, "", R"({"tile_rows": 129})")),
             StartsWith("w.json: /params/tile_rows: expected an integer in [1, 128]"));
  CHECK_THAT(error_of(ln(8, 8, R"(, "dtype": "int8")")), StartsWith("w.json: /dtype: layernorm"));
  CHECK_THAT(error_of(R"({"kernel": "layernorm", "shape": [8]})"), StartsWith("w.json: /shape:"));
  // hidden over what an instruction reads from SBUF, and over SBUF itself.
  CHECK_THAT(error_of(ln(8, 65537)), StartsWith("w.json: /shape/1: hidden size 65537 exceeds"));
  const std::string sbuf = error_of(ln(8, 60000));
  CHECK_THAT(sbuf, StartsWith("w.json: /shape: layernorm of hidden size 60000 (bf16) with 1 "
                              "buffers needs 481472 bytes per partition of SBUF"));
  CHECK_THAT(sbuf, Contains("trn2 has 229376"));
  // An explicit buffer count that does not fit is not shrunk.
  CHECK_THAT(error_of(ln(1024, 20000, "", R"({"bufs": 2})")),
             StartsWith("w.json: /shape: layernorm of hidden size 20000 (bf16) with 2 buffers"));
  // The instruction cap.
  ArchConfig tight = trnsim::config::trn2();
  tight.max_instructions = 1000;
  CHECK_THAT(error_of(ln(100000, 512), tight),
             StartsWith("w.json: /shape: layernorm of [100000, 512] lowers to 7040 instructions; "
                        "a kernel holds at most 1000"));
}
