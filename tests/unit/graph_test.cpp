// Graph workloads without simulation: parsing and its errors, the fusion pass, the reference,
// and .npy files.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>

#include "../support/graphs.hpp"
#include "config/arch.hpp"
#include "workloads/graph/graph.hpp"
#include "workloads/graph/graph_lowering.hpp"
#include "workloads/graph/npy.hpp"
#include "workloads/lowering.hpp"

using Catch::Matchers::Contains;
using namespace trnsim;
using namespace trnsim::workloads;
using namespace trnsim_test;

namespace {

std::string error_of(const std::string& text) {
  try {
    const Workload w = parse(text);
    lower(w, config::trn2(), false);
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

std::string one_op(const std::string& op, const std::string& inputs = R"("x": {"shape": [4, 8]})") {
  return graph_json("eager", inputs, op);
}

size_t kernels_of(const std::string& text) {
  const Workload w = parse(text);
  return plan_graph(*w.graph, w.file).kernels.size();
}

}  // namespace

TEST_CASE("a graph workload parses with its inferred shapes") {
  const Workload w = parse(rmsnorm_graph("eager", 256, 512));
  REQUIRE(w.graph);
  CHECK(w.kernel == "graph");
  CHECK(w.variant == "eager");
  CHECK(w.graph->ops.size() == 6);
  CHECK(w.graph->find("ms")->shape == std::vector<int64_t>{256, 1});
  CHECK(w.graph->find("y")->shape == std::vector<int64_t>{256, 512});
  CHECK(w.graph->outputs == std::vector<std::string>{"y"});
}

TEST_CASE("graph errors name the op and field, and suggest names") {
  CHECK_THAT(error_of(one_op(R"({"op": "expp", "args": ["x"], "out": "y"})")),
             Contains("/ops/0/op") && Contains("did you mean \"exp\""));
  CHECK_THAT(error_of(one_op(R"({"op": "exp", "args": ["z"], "out": "y"})")),
             Contains("/ops/0/args/0") && Contains("no tensor \"z\""));
  CHECK_THAT(error_of(one_op(R"({"op": "sum", "args": ["x"], "dim": 0, "out": "y"})")),
             Contains("/ops/0/dim") && Contains("only the last dimension"));
  CHECK_THAT(error_of(one_op(R"({"op": "sum", "args": ["x"], "out": "y"})")),
             Contains("/ops/0/dim") && Contains("missing"));
  CHECK_THAT(error_of(one_op(R"({"op": "add", "args": ["x", "w"], "out": "y"})",
                             R"("x": {"shape": [4, 8]}, "w": {"shape": [3]})")),
             Contains("/ops/0/args") && Contains("do not broadcast"));
  CHECK_THAT(error_of(one_op(R"({"op": "pow", "args": ["x", "x"], "out": "y"})")),
             Contains("/ops/0/args/1"));
  CHECK_THAT(error_of(one_op(R"({"op": "exp", "args": ["x"], "out": "x"})")),
             Contains("/ops/0/out") && Contains("already defined"));
  CHECK_THAT(error_of(one_op(R"({"op": "exp", "args": ["x"], "out": "y", "dimm": 1})")),
             Contains("/ops/0/dimm"));
  CHECK_THAT(error_of(one_op(R"({"op": "matmul", "args": ["x", "x"], "out": "y"})")),
             Contains("matmul takes [M, K] and [K, N]"));
  CHECK_THAT(error_of(R"({"mode": "lazy", "inputs": {"x": {"shape": [2]}}, "ops": []})"),
             Contains("/mode"));
  CHECK_THAT(
      error_of(
          R"({"inputs": {"x": {"shape": [2, 0]}}, "ops": [{"op": "exp", "args": ["x"], "out": "y"}]})"),
      Contains("/inputs/x/shape/1"));
  CHECK_THAT(
      error_of(
          R"({"inputs": {"x": {"shape": [2], "dtype": "int8"}}, "ops": [{"op": "exp", "args": ["x"], "out": "y"}]})"),
      Contains("/inputs/x/dtype"));
  // A broadcast along the rows fits no row kernel.
  CHECK_THAT(error_of(one_op(R"({"op": "add", "args": ["x", "w"], "out": "y"})",
                             R"("x": {"shape": [4, 2, 8]}, "w": {"shape": [2, 1]})")),
             Contains("/ops/0") && Contains("not supported"));
}

TEST_CASE("eager mode makes one kernel per op") {
  CHECK(kernels_of(rmsnorm_graph("eager", 256, 512)) == 6);
  CHECK(kernels_of(layernorm_graph("eager", 256, 512)) == 9);
}

TEST_CASE("the fusion pass fuses the decomposed RMSNorm into one kernel") {
  const Workload w = parse(rmsnorm_graph("compile", 2048, 4096));
  const GraphPlan plan = plan_graph(*w.graph, w.file);
  REQUIRE(plan.kernels.size() == 1);
  CHECK(plan.kernels[0].ops.size() == 6);
  // Nothing between the ops goes through HBM: only x, gamma and y are tensors there.
  const LoweredKernel k = lower(w, config::trn2(), false);
  CHECK(k.program.dram_tensors.size() == 3);
  CHECK(k.program.kernel_count() == 1);
}

TEST_CASE("the fusion pass fuses decomposed LayerNorm, softmax and GELU with no pattern for them") {
  CHECK(kernels_of(layernorm_graph("compile", 256, 512)) == 1);
  CHECK(kernels_of(softmax_graph("compile", 256, 512)) == 1);
  // matmul, the GELU's eight elementwise ops, matmul.
  CHECK(kernels_of(mlp_graph("compile", 128, 256, 512)) == 3);
  CHECK(kernels_of(mlp_graph("eager", 128, 256, 512)) == 10);
}

TEST_CASE("eager kernels pass every intermediate through HBM") {
  const LoweredKernel k = lower(parse(rmsnorm_graph("eager", 256, 512)), config::trn2(), false);
  CHECK(k.program.dram_tensors.size() == 2 + 6);
  CHECK(k.program.kernel_count() == 6);
  REQUIRE(k.program.host_ops.size() == 6);
  CHECK(k.program.host_ops[0].name == "aten::pow");
}

TEST_CASE("compile mode sums squares in the activation that squares them") {
  const LoweredKernel k = lower(parse(rmsnorm_graph("compile", 256, 512)), config::trn2(), false);
  size_t folded = 0, reductions = 0;
  for (const auto& in : k.program.stream(Engine::scalar)) {
    if (in.opcode == isa::Opcode::activation && in.function == isa::ActivationFunction::square &&
        in.accumulate->present()) {
      ++folded;
    }
  }
  for (const auto& in : k.program.stream(Engine::vector)) {
    reductions += in.opcode == isa::Opcode::tensor_reduce;
  }
  CHECK(folded == 2);  // one per 128-row tile
  CHECK(reductions == 0);
}

TEST_CASE("compile mode chooses buffers that fit SBUF and overlap DMA with compute") {
  config::ArchConfig arch = config::trn2();
  const LoweredKernel k = lower(parse(rmsnorm_graph("compile", 2048, 4096)), arch, false);
  CHECK(k.choices["kernels"][0]["bufs"] == 3);
  // A small SBUF makes it choose fewer buffers, then fail with a clear message.
  arch.sbuf_partition_bytes = 40 * 1024;
  const LoweredKernel small = lower(parse(rmsnorm_graph("compile", 2048, 4096)), arch, false);
  CHECK(small.choices["kernels"][0]["bufs"] == 1);
  arch.sbuf_partition_bytes = 8 * 1024;
  try {
    lower(parse(rmsnorm_graph("compile", 2048, 4096)), arch, false);
    FAIL("lowered into 8 KiB of SBUF");
  } catch (const WorkloadError& e) {
    CHECK_THAT(e.what(), Contains("/ops/0") && Contains("bytes per partition of SBUF"));
  }
}

TEST_CASE("the graph reference follows the ops, rounding what goes through HBM") {
  const Workload w = parse(graph_json("eager", R"("x": {"shape": [2, 3]})",
                                      R"({"op": "mul", "args": ["x", 3], "out": "t"},
                                         {"op": "sum", "args": ["t"], "dim": -1, "out": "y"})"));
  const GraphValues v = evaluate_graph(*w.graph, {{1, 2, 3, 4, 5, 6.01f}}, {});
  REQUIRE(v.find("y") != nullptr);
  CHECK(v.find("y")->at(0) == Approx(18));
  CHECK(v.find("y")->at(1) == Approx(45.03).epsilon(1e-6));
  // t goes through HBM: y sums its bf16 values (18.03 is 18 in bf16).
  const GraphValues r = evaluate_graph(*w.graph, {{1, 2, 3, 4, 5, 6.01f}}, {"t"});
  CHECK(r.find("y")->at(1) == 12 + 15 + isa::round_to(isa::DType::bf16, 18.03f));
  CHECK(r.find("y")->at(1) == 45);
  // Only what a later op reads and the outputs are kept: t is released after its last reader.
  REQUIRE(r.find("t") != nullptr);
  CHECK(r.find("t")->empty());
}

TEST_CASE("npy files round-trip and bad ones are refused with a reason") {
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.5f};
  const std::string bytes = npy_bytes({2, 3}, v);
  CHECK(bytes.size() % 64 == 24 % 64);  // 64-byte header, then 24 bytes of data
  const NpyArray a = parse_npy(bytes);
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(a.values == v);
  CHECK_THROWS_WITH(parse_npy("hello"), Contains("magic"));
  std::string wrong = bytes;
  wrong.replace(wrong.find("<f4"), 3, "<i4");
  CHECK_THROWS_WITH(parse_npy(wrong), Contains("'<i4' is not supported"));
  CHECK_THROWS_WITH(parse_npy(bytes.substr(0, bytes.size() - 4)), Contains("expected 24 bytes"));
}

TEST_CASE("the ops PyTorch programs need: errors name the op and field") {
  CHECK_THAT(error_of(one_op(R"({"op": "permute", "args": ["x"], "dims": [0, 0], "out": "y"})")),
             Contains("/ops/0/dims/1") && Contains("each dimension of a rank-2 tensor once"));
  CHECK_THAT(error_of(one_op(R"({"op": "reshape", "args": ["x"], "shape": [5, 7], "out": "y"})")),
             Contains("/ops/0/shape") && Contains("x has 32 elements; shape [5,7] has 35"));
  CHECK_THAT(error_of(one_op(R"({"op": "to", "args": ["x"], "out": "y"})")),
             Contains("/ops/0/dtype") && Contains("missing"));
  CHECK_THAT(error_of(one_op(R"({"op": "host", "args": ["x"], "out": "y"})")),
             Contains("/ops/0/out") && Contains("an op that runs on the host names its results"));
  CHECK_THAT(error_of(one_op(R"({"op": "cat", "args": ["x", "x"], "dim": 3, "out": "y"})")),
             Contains("/ops/0/dim") && Contains("(-2 to 1), got 3"));
  CHECK_THAT(error_of(one_op(R"({"op": "exp", "args": ["x"], "out": "y", "mode": "lazy"})")),
             Contains("/ops/0/mode"));
  CHECK_THAT(error_of(one_op(R"({"op": "exp", "args": ["x"], "out": "y", "call": "a"})")),
             Contains("/ops/0/call") && Contains("non-negative integer"));
}

TEST_CASE("a reshape is no kernel, and permute, slice and cat are a DMA kernel each") {
  CHECK(kernels_of(one_op(R"({"op": "reshape", "args": ["x"], "shape": [8, 4], "out": "r"},
                             {"op": "exp", "args": ["r"], "out": "y"})")) == 1);
  CHECK(kernels_of(one_op(R"({"op": "permute", "args": ["x"], "dims": [1, 0], "out": "p"},
                             {"op": "slice", "args": ["p"], "dim": 0, "start": 2, "out": "s"},
                             {"op": "cat", "args": ["s", "s"], "dim": 1, "out": "y"})")) == 3);
}

namespace {
// A .npy file (version 1.0) with `header` as its dict and `data` as its bytes.
std::string npy_file(const std::string& header, const std::string& data) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}
std::string floats(const std::vector<float>& v, bool big_endian = false) {
  std::string out(v.size() * 4, '\0');
  std::memcpy(out.data(), v.data(), out.size());
  if (big_endian) {
    for (size_t i = 0; i < out.size(); i += 4) std::reverse(out.begin() + i, out.begin() + i + 4);
  }
  return out;
}
}  // namespace

// Issue 18, item 1: a Fortran-ordered file was read as C order (the header reader took
// 'fortran_order': True for False), and so was the reference: a silent wrong answer.
TEST_CASE("npy: Fortran order and big-endian data are read in the tensor's C order") {
  // A 2 x 3 x 4 array a[i][j][k] = 100i + 10j + k, stored Fortran order (i fastest).
  std::vector<float> c_order, f_order;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) c_order.push_back(static_cast<float>(100 * i + 10 * j + k));
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) f_order.push_back(static_cast<float>(100 * i + 10 * j + k));
  const NpyArray f = parse_npy(
      npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4), }", floats(f_order)));
  CHECK(f.shape == std::vector<int64_t>{2, 3, 4});
  CHECK(f.values == c_order);
  const NpyArray be = parse_npy(npy_file(
      "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3, 4), }", floats(c_order, true)));
  CHECK(be.values == c_order);
  const NpyArray both = parse_npy(npy_file(
      "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3, 4), }", floats(f_order, true)));
  CHECK(both.values == c_order);
  // One dimension, and no dimension (a scalar), are the same in either order.
  CHECK(parse_npy(
            npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", floats({1, 2, 3})))
            .values == std::vector<float>{1, 2, 3});
  const NpyArray scalar =
      parse_npy(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", floats({7})));
  CHECK(scalar.shape.empty());
  CHECK(scalar.values == std::vector<float>{7});
}

TEST_CASE("npy: a header that is not numpy's dict of descr, fortran_order and shape is refused") {
  const std::string six = floats({1, 2, 3, 4, 5, 6});
  auto error_of = [&](const std::string& header) {
    try {
      parse_npy(npy_file(header, six));
    } catch (const NpyError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK_THAT(error_of("{'descr': '<f4', 'shape': (2, 3), }"), Contains("no 'fortran_order'"));
  CHECK_THAT(error_of("{'descr': '<f4', 'fortran_order': 'True', 'shape': (2, 3), }"),
             Contains("'fortran_order' is not True or False"));
  CHECK_THAT(error_of("{'descr': '<f4', 'fortran_order': False, 'fortran_order': True, "
                      "'shape': (2, 3), }"),
             Contains("names 'fortran_order' twice"));
  CHECK_THAT(error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"),
             Contains("malformed header"));
  CHECK_THAT(error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 'y'}"),
             Contains("unknown key 'x'"));
  CHECK_THAT(error_of("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }"),
             Contains("structured"));
  CHECK_THAT(error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }"),
             Contains("malformed header"));
  CHECK_THAT(
      error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }"),
      Contains("expected 36 bytes of data (9 elements of 4 bytes) for shape (3, 3), found 24"));
  CHECK_THAT(error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x"),
             Contains("after its closing"));
  CHECK_THAT(error_of("{'descr': '|u1', 'fortran_order': False, 'shape': (24,), }"),
             Contains("dtype '|u1' is not supported"));
  CHECK_THAT(error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
                      "4294967296, 4294967296), }"),
             Contains("shape too large"));
}

TEST_CASE("scaled_dot_product_attention: one library kernel over the leading dimensions' heads") {
  const std::string inputs =
      R"("q": {"shape": [2, 3, 256, 64]}, "k": {"shape": [2, 3, 256, 64]},
         "v": {"shape": [2, 3, 256, 64]}, "w": {"shape": [2, 3, 128, 64]},
         "f": {"shape": [2, 3, 256, 64], "dtype": "fp32"})";
  const std::string sdpa =
      R"({"op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "is_causal": true,
          "out": "y"})";
  const Workload w = parse(graph_json("compile", inputs, sdpa));
  REQUIRE(w.graph);
  CHECK(w.graph->ops[0].causal);
  CHECK(w.graph->ops[0].out.shape == std::vector<int64_t>{2, 3, 256, 64});
  CHECK(kernels_of(graph_json("compile", inputs, sdpa)) == 1);
  // The kernel sees 6 heads of [256, 64], causal: half of 4 * heads * seq^2 * head_dim.
  const LoweredKernel k = lower(w, config::trn2(), false);
  CHECK(k.model_flops == 4ull * 6 * 256 * 256 * 64 / 2);
  CHECK(k.choices["kernels"][0]["choices"]["causal"] == true);

  CHECK_THAT(error_of(graph_json(
                 "eager", inputs,
                 R"({"op": "scaled_dot_product_attention", "args": ["q", "w", "v"], "out": "y"})")),
             Contains("/ops/0/args/1") && Contains("one shape and dtype"));
  CHECK_THAT(error_of(graph_json(
                 "eager", inputs,
                 R"({"op": "scaled_dot_product_attention", "args": ["q", "k", "f"], "out": "y"})")),
             Contains("/ops/0/args/2"));
  CHECK_THAT(error_of(graph_json("eager", inputs,
                                 R"({"op": "scaled_dot_product_attention", "args": ["q", "k", "v"],
                                     "is_causal": 1, "out": "y"})")),
             Contains("/ops/0/is_causal") && Contains("true or false"));
  CHECK_THAT(error_of(graph_json(
                 "eager", inputs,
                 R"({"op": "scaled_dot_product_attention", "args": ["q", "k"], "out": "y"})")),
             Contains("takes 3 arguments"));
  // head_dim over the 128 partitions: the kernel's own limit, named at the op.
  CHECK_THAT(error_of(graph_json(
                 "eager", R"("q": {"shape": [2, 128, 256]}, "k": {"shape": [2, 128, 256]},
                      "v": {"shape": [2, 128, 256]})",
                 R"({"op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "out": "y"})")),
             Contains("/ops/0") && Contains("the attention kernel cannot run this op"));
}

TEST_CASE("the graph reference of scaled_dot_product_attention is the attention kernel's") {
  // One head of 3 queries: causal softmax(q k^T / sqrt(d)) v by hand for the first two rows.
  const Workload w = parse(graph_json(
      "eager",
      R"("q": {"shape": [1, 3, 2], "init": "arange"}, "k": {"shape": [1, 3, 2], "init": "ones"},
         "v": {"shape": [1, 3, 2], "init": "arange"})",
      R"({"op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "is_causal": true,
          "out": "y"})"));
  std::vector<std::vector<float>> in;
  for (const GraphInput& i : w.graph->inputs) {
    in.push_back(i.tensor.name == "k" ? std::vector<float>{1, 1, 1, 1, 1, 1}
                                      : std::vector<float>{0, 1, 2, 3, 4, 5});
  }
  const GraphValues v = evaluate_graph(*w.graph, in, {});
  const std::vector<double>& y = *v.find("y");
  // Row 0 sees key 0 alone: v[0]. Row 1 sees keys 0 and 1 with equal scores (k is all ones):
  // the mean of v[0] and v[1].
  CHECK(y[0] == Approx(0.0));
  CHECK(y[1] == Approx(1.0));
  CHECK(y[2] == Approx(1.0));
  CHECK(y[3] == Approx(2.0));
  CHECK(y[4] == Approx(2.0));  // the mean of v's rows 0..2: (0 + 2 + 4) / 3
  CHECK(y[5] == Approx(3.0));
}

// The check's tolerance: one kernel's for a one-kernel graph, then sqrt(n) times it for n rounded
// tensors on the longest input-to-output path (Higham and Mary's probabilistic bound).
TEST_CASE("graph check tolerance widens as the square root of the roundings on the longest path") {
  const config::ArchConfig arch = config::trn2();
  const LoweredKernel one =
      lower(parse(one_op(R"({"op": "exp", "args": ["x"], "out": "y"})")), arch, false);
  CHECK(one.tolerance.atol == Approx(1e-2));
  CHECK(one.tolerance.rtol == Approx(2e-2));
  // Eager: each of the four ops stores its result in bf16, and they form one chain.
  const std::string chain = one_op(R"({"op": "exp", "args": ["x"], "out": "a"},
      {"op": "mul", "args": ["a", 2], "out": "b"},
      {"op": "add", "args": ["b", 1], "out": "c"},
      {"op": "neg", "args": ["c"], "out": "y"})");
  const LoweredKernel four = lower(parse(chain), arch, false);
  CHECK(four.tolerance.atol == Approx(2e-2));
  CHECK(four.tolerance.rtol == Approx(4e-2));
  // Two branches of two roundings joined by a third: the longest path has three, not five.
  const std::string branches = one_op(R"({"op": "exp", "args": ["x"], "out": "a"},
      {"op": "mul", "args": ["a", 2], "out": "b"},
      {"op": "neg", "args": ["x"], "out": "c"},
      {"op": "add", "args": ["c", 1], "out": "d"},
      {"op": "add", "args": ["b", "d"], "out": "y"})");
  const LoweredKernel three = lower(parse(branches), arch, false);
  CHECK(three.tolerance.rtol == Approx(2e-2 * std::sqrt(3.0)));
}

// A bf16 matmul's reference sums in fp32 (matmul_reference), an fp32 one in double: on the same
// bf16-exact inputs, at K = 2048, both with and without transpose_b, the two agree far inside
// the bf16 check's allowance (1e-2 absolute at these magnitudes).
TEST_CASE("the graph reference sums a low-precision matmul in fp32, as close as double") {
  const int64_t m = 64, k = 2048, n = 96;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = isa::round_to(isa::DType::bf16, std::sin(0.37f * static_cast<float>(i)));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = isa::round_to(isa::DType::bf16, std::cos(0.11f * static_cast<float>(i)) / 32);
  for (const bool transpose : {false, true}) {
    const std::string bshape = transpose ? "[96, 2048]" : "[2048, 96]";
    const std::string op = std::string(R"({"op": "matmul", "args": ["a", "b"], "out": "y")") +
                           (transpose ? R"(, "transpose_b": true})" : "}");
    const std::string inputs = R"("a": {"shape": [64, 2048]}, "b": {"shape": )" + bshape + "}";
    std::string low = graph_json("eager", inputs, op);
    std::string high = low;
    high.replace(high.find("\"bf16\""), 6, "\"fp32\"");
    const GraphValues lo = evaluate_graph(*parse(low).graph, {a, b}, {});
    const GraphValues hi = evaluate_graph(*parse(high).graph, {a, b}, {});
    double worst = 0;
    for (size_t i = 0; i < lo.find("y")->size(); ++i)
      worst = std::max(worst, std::fabs(lo.find("y")->at(i) - hi.find("y")->at(i)));
    INFO("transpose_b " << transpose << ": largest difference " << worst);
    CHECK(worst > 0);     // the two paths are different sums
    CHECK(worst < 1e-4);  // and agree to 1% of the check's absolute allowance
  }
}
