// Softmax lowering: the reference, functional runs against it, synchronization, the engines it
// claims, and the errors of bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "workloads/kernels/softmax.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::DType;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::workloads::lower;
using trnsim::workloads::LoweredKernel;
using trnsim::workloads::softmax_reference;
using namespace trnsim_test;

namespace {
std::string sm(int64_t rows, int64_t hidden, const std::string& extra = "",
               const std::string& params = "{}") {
  return kernel_json("softmax", {rows, hidden}, extra, params);
}
}  // namespace

TEST_CASE("softmax_reference matches a hand-computed case and is stable", "[unit][softmax]") {
  // [0, ln 3]: exps 1 and 3, sum 4. A row of 1000s would overflow exp without the max.
  const std::vector<float> y = softmax_reference({0.0f, std::log(3.0f), 1000, 1000}, 2, 2);
  CHECK(y[0] == Approx(0.25f));
  CHECK(y[1] == Approx(0.75f));
  CHECK(y[2] == Approx(0.5f));
  CHECK(y[3] == Approx(0.5f));
}

TEST_CASE("the lowered softmax computes softmax", "[unit][softmax]") {
  struct Case {
    int64_t rows, hidden;
    const char* extra;
    const char* params;
  };
  const std::vector<Case> cases = {
      {300, 1000, "", "{}"},
      {300, 1000, "", R"({"scale_engine": "scalar", "bufs": 2})"},
      {129, 4096, R"(, "dtype": "fp32")", R"({"bufs": 1})"},
      {200, 77, R"(, "dtype": "fp16")", R"({"tile_rows": 48, "bufs": 4})"},
      {64, 512, R"(, "dtype": "fp8_e4m3")", "{}"},
      {64, 512, R"(, "dtype": "fp8_e5m2")", R"({"scale_engine": "scalar"})"},
      {5, 1, "", "{}"},  // one element a row: all ones
  };
  for (const ArchConfig& arch : {trnsim::config::trn2(), trnsim::config::trn1()}) {
    for (const Case& c : cases) {
      INFO(arch.name << " " << sm(c.rows, c.hidden, c.extra, c.params));
      const FunctionalResult r =
          check_functional(workload(sm(c.rows, c.hidden, c.extra, c.params)), arch);
      CHECK(r.mismatches == 0);
    }
  }
}

TEST_CASE("softmax's tolerance is relative: outputs of 1/hidden are really compared",
          "[unit][softmax]") {
  // Rows of 4096 have outputs near 2.4e-4; an absolute tolerance of 1e-3 would pass anything.
  const LoweredKernel k = lowered(sm(128, 4096), trnsim::config::trn2(), true);
  CHECK(k.tolerance.atol < 1e-9);
  CHECK(k.tolerance.rtol == Approx(4 * 0x1.0p-8));
  // Leaving out the scale by 1/sum fails.
  CHECK(fails_when(k, trnsim::config::trn2(),
                   [](trnsim::isa::Program& p) { bypass(p, {Engine::vector}, "scale"); },
                   {Engine::sync, Engine::vector, Engine::scalar, Engine::gpsimd, Engine::tensor}));
}

TEST_CASE("the lowered softmax validates, counts and orders its instructions", "[unit][softmax]") {
  for (const ArchConfig& arch : {trnsim::config::trn1(), trnsim::config::trn2()}) {
    for (const char* params : {"{}", R"({"bufs": 1})", R"({"bufs": 2, "scale_engine": "scalar"})",
                               R"({"bufs": 6, "tile_rows": 100})"}) {
      INFO(arch.name << " " << params);
      const LoweredKernel big = lowered(sm(8192, 8192, "", params), arch);
      CHECK_NOTHROW(trnsim::isa::validate(big.program, arch));
      CHECK(trnsim::compiler::find_deadlock(big.program, arch) == "");
      const int64_t rows_per_tile =
          std::string(params).find("100") != std::string::npos ? 100 : 128;
      CHECK(big.program.instruction_count() ==
            static_cast<uint64_t>(7 * ((8192 + rows_per_tile - 1) / rows_per_tile)));
      CHECK(big.model_flops == 8192ULL * (5 * 8192 + 1));
      const LoweredKernel small = lowered(sm(700, 300, "", params), arch);
      CHECK(find_unordered_conflicts(small.program, arch) == "");
    }
  }
}

TEST_CASE("softmax: the max on VectorE in the data's dtype, exp with -max and the sum on ScalarE",
          "[unit][softmax]") {
  const LoweredKernel k = lowered(sm(256, 1024));
  const auto& p = k.program;
  size_t maxes = 0;
  for (const Instruction& in : p.stream(Engine::vector)) {
    if (in.opcode == Opcode::tensor_reduce) {
      ++maxes;
      CHECK(in.op0 == trnsim::isa::AluOp::max);
      CHECK(in.dst->dtype == DType::bf16);  // exact, and I1's fast rate for bf16 in and out
    }
  }
  CHECK(maxes == 2);
  size_t exps = 0;
  for (const Instruction& in : p.stream(Engine::scalar)) {
    if (in.function != trnsim::isa::ActivationFunction::exp) continue;
    ++exps;
    CHECK(in.bias.per_partition().present());    // -max
    CHECK(in.accumulate->present());             // the sum
    CHECK(in.dst->offset == in.src[0]->offset);  // in place
  }
  CHECK(exps == 2);
  CHECK(count_of(p, Engine::vector, Opcode::reciprocal) == 2);
  CHECK(k.choices.at("scale_engine") == "vector");
  CHECK(k.choices.at("bufs") == 2);  // two tiles
  // ScalarE scaling: its own reciprocal, no VectorE one.
  const LoweredKernel s = lowered(sm(256, 1024, "", R"({"scale_engine": "scalar"})"));
  CHECK(count_of(s.program, Engine::vector, Opcode::reciprocal) == 0);
  CHECK(count_of(s.program, Engine::scalar, Opcode::activation) == 6);
  CHECK(lowered(sm(1024, 1024)).choices.at("bufs") == 3);
}

TEST_CASE("softmax errors name the key", "[unit][softmax]") {
  CHECK_THAT(error_of(sm(8, 8, R"(, "eps": 0.1)")),
             StartsWith("w.json: /eps: unknown key for kernel softmax"));
  CHECK_THAT(error_of(sm(8, 8, "", R"({"scale_engine": "gpsimd"})")),
             StartsWith("w.json: /params/scale_engine: expected \"vector\" or \"scalar\", got "
                        "\"gpsimd\""));
  CHECK_THAT(error_of(sm(8, 8, "", R"({"bufs": 9})")),
             StartsWith("w.json: /params/bufs: expected an integer in [1, 8], got 9"));
  CHECK_THAT(error_of(sm(8, 8, "", R"({"tile": 9})")),
             StartsWith("w.json: /params/tile: unknown softmax parameter"));
  CHECK_THAT(error_of(sm(8, 65537)), StartsWith("w.json: /shape/1: hidden size 65537 exceeds"));
  CHECK_THAT(error_of(sm(8, 60000, R"(, "dtype": "fp32")")),
             StartsWith("w.json: /shape: softmax of hidden size 60000 (fp32) with 1 buffers needs "
                        "240064 bytes per partition of SBUF"));
  CHECK_THAT(error_of(sm(1024, 40000, "", R"({"bufs": 3})")), Contains("with 3 buffers needs"));
  CHECK(error_of(sm(1024, 40000)) == "");  // two fit by default
  CHECK_THAT(error_of(sm(8, 8, R"(, "dtype": "int32")")), StartsWith("w.json: /dtype: softmax"));
  ArchConfig tight = trnsim::config::trn2();
  tight.max_instructions = 100;
  CHECK_THAT(error_of(sm(8192, 64), tight),
             StartsWith("w.json: /shape: softmax of [8192, 64] lowers to 448 instructions"));
}
