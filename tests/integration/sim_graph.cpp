// Graph workloads simulated functionally at small shapes, against the graph's double-precision
// reference, in both modes; and proof that the check catches a wrong kernel. One simulation per
// test case (a process of its own).
#include <catch2/catch.hpp>

#include "../support/graphs.hpp"
#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "sim_support.hpp"
#include "workloads/lowering.hpp"

using namespace trnsim;
using namespace trnsim_test;

namespace {

template <typename Mutate>
workloads::CheckResult run_graph(const std::string& text, Mutate mutate) {
  const config::ArchConfig arch = config::trn2();
  workloads::LoweredKernel k = workloads::lower(parse(text), arch, true);
  mutate(k.program);
  isa::validate(k.program, arch);
  REQUIRE(compiler::find_deadlock(k.program, arch).empty());
  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  Recorder rec;
  const auto result = models::simulate(k.program, arch, &memory, rec);
  REQUIRE(result.completed);
  CHECK(rec.kernels.size() == k.program.kernel_count());
  return workloads::check_outputs(k, memory);
}

workloads::CheckResult run_graph(const std::string& text) {
  return run_graph(text, [](isa::Program&) {});
}

void require_pass(const workloads::CheckResult& c) {
  INFO("max abs err " << c.max_abs_error << ", max rel err " << c.max_rel_error << ", "
                      << c.mismatches << " of " << c.elements << " off");
  CHECK(c.elements > 0);
  CHECK(c.status == workloads::CheckResult::Status::pass);
}

}  // namespace

// 300 rows: two full tiles and a partial one.
TEST_CASE("eager decomposed RMSNorm matches the reference") {
  require_pass(run_graph(rmsnorm_graph("eager", 300, 256)));
}
TEST_CASE("compiled decomposed RMSNorm matches the reference") {
  require_pass(run_graph(rmsnorm_graph("compile", 300, 256)));
}
TEST_CASE("rms_norm as one fused op matches the reference") {
  require_pass(run_graph(graph_json(
      "eager", R"("x": {"shape": [300, 256]}, "gamma": {"shape": [256], "init": "ones"})",
      R"({"op": "rms_norm", "args": ["x", "gamma"], "out": "y"})")));
}
TEST_CASE("eager decomposed LayerNorm matches the reference") {
  require_pass(run_graph(layernorm_graph("eager", 200, 384)));
}
TEST_CASE("compiled decomposed LayerNorm matches the reference") {
  require_pass(run_graph(layernorm_graph("compile", 200, 384)));
}
TEST_CASE("eager decomposed softmax matches the reference") {
  require_pass(run_graph(softmax_graph("eager", 130, 512)));
}
TEST_CASE("compiled decomposed softmax matches the reference") {
  require_pass(run_graph(softmax_graph("compile", 130, 512)));
}
TEST_CASE("compiled decomposed GELU matches the reference") {
  require_pass(
      run_graph(graph_json("compile", R"("h": {"shape": [256, 320]})", gelu_ops("h", "y"))));
}
TEST_CASE("elementwise functions, reversed operands and broadcasts match the reference") {
  // s - x, s / x, a [1]-shaped tensor, a one-row [H] tensor, silu, sigmoid, neg, maximum.
  require_pass(run_graph(
      graph_json("compile",
                 R"("x": {"shape": [2, 96, 64], "init": "uniform", "low": 0.5, "high": 2.0},
         "c": {"shape": [64]}, "s": {"shape": [1], "init": "ones"})",
                 R"({"op": "sub", "args": [1.5, "x"], "out": "a"},
         {"op": "div", "args": [2.0, "x"], "out": "b"},
         {"op": "mul", "args": ["a", "s"], "out": "a2"},
         {"op": "maximum", "args": ["a2", "c"], "out": "m"},
         {"op": "silu", "args": ["m"], "out": "u"},
         {"op": "sigmoid", "args": ["b"], "out": "v"},
         {"op": "neg", "args": ["v"], "out": "w"},
         {"op": "add", "args": ["u", "w"], "out": "y"})")));
}
TEST_CASE("transpose and a matmul-free graph of several kernels match the reference") {
  require_pass(run_graph(graph_json("eager", R"("x": {"shape": [200, 72]})",
                                    R"({"op": "transpose", "args": ["x"], "out": "t"},
                                       {"op": "exp", "args": ["t"], "out": "y"})")));
}
TEST_CASE("the graph check fails when a kernel computes the wrong thing") {
  // Multiply by gamma becomes an add in the compiled RMSNorm.
  const auto c = run_graph(rmsnorm_graph("compile", 256, 256), [](isa::Program& p) {
    for (auto& in : p.stream(Engine::vector)) {
      if (in.opcode == isa::Opcode::tensor_tensor) in.op0 = isa::AluOp::add;
    }
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
}
TEST_CASE("a compiled GELU MLP (matmul, fused GELU, matmul) matches the reference") {
  require_pass(run_graph(mlp_graph("compile", 160, 128, 256)));
}
TEST_CASE("an eager matmul through the library kernel matches the reference") {
  require_pass(
      run_graph(graph_json("eager", R"("a": {"shape": [200, 96]}, "b": {"shape": [96, 136]})",
                           R"({"op": "matmul", "args": ["a", "b"], "strategy": 1, "out": "y"})")));
}
TEST_CASE("layer_norm and softmax ops run their library kernels and match the reference") {
  require_pass(run_graph(graph_json(
      "eager",
      R"("x": {"shape": [300, 256]}, "g": {"shape": [256], "init": "uniform", "low": 0.5, "high": 1.5},
         "b": {"shape": [256], "std": 0.1})",
      R"({"op": "layer_norm", "args": ["x", "g", "b"], "out": "l"},
         {"op": "softmax", "args": ["l"], "dim": -1, "out": "y"})")));
}
TEST_CASE("causal scaled_dot_product_attention runs the flash kernel and matches the reference") {
  // 2 x 2 heads of 200 queries (a partial query block) and head_dim 64.
  require_pass(run_graph(graph_json(
      "compile",
      R"("q": {"shape": [2, 2, 200, 64]}, "k": {"shape": [2, 2, 200, 64]},
         "v": {"shape": [2, 2, 200, 64]})",
      R"({"op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "is_causal": true,
          "out": "y"})")));
}
TEST_CASE("scaled_dot_product_attention after a projection and a permute matches the reference") {
  // Not causal; q from a matmul, so its input is a stored intermediate (rounded to bf16).
  require_pass(
      run_graph(graph_json("compile",
                           R"("x": {"shape": [256, 128]}, "w": {"shape": [128, 128], "std": 0.088},
         "k": {"shape": [2, 256, 64]}, "v": {"shape": [2, 256, 64]})",
                           R"({"op": "matmul", "args": ["x", "w"], "out": "q2"},
         {"op": "reshape", "args": ["q2"], "shape": [256, 2, 64], "out": "q3"},
         {"op": "permute", "args": ["q3"], "dims": [1, 0, 2], "out": "q"},
         {"op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "out": "y"})")));
}
