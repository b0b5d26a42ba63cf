// Graph workloads on several cores (issue 22): the cores and chips keys, per-core inputs, the
// collective ops (all_reduce, all_gather, reduce_scatter, all_to_all), their reference across
// the cores, their kernels and the check tolerance they widen. Without simulation.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "../support/graphs.hpp"
#include "config/arch.hpp"
#include "isa/dtype.hpp"
#include "workloads/graph/graph.hpp"
#include "workloads/graph/graph_lowering.hpp"
#include "workloads/lowering.hpp"

using Catch::Matchers::Contains;
using namespace trnsim;
using namespace trnsim::workloads;
using namespace trnsim_test;

namespace {

// A graph on `cores` cores (no "cores" key when 0) of an fp32 input x [4, 2] and `ops`.
std::string on_cores(int cores, const std::string& ops, const std::string& x_extra = "") {
  return std::string(R"({"dtype": "fp32", )") +
         (cores > 0 ? "\"cores\": " + std::to_string(cores) + ", " : std::string()) +
         R"("inputs": {"x": {"shape": [4, 2])" + x_extra + R"(}}, "ops": [)" + ops + "]}";
}

std::string error_of(const std::string& text) {
  try {
    lower(parse(text), config::trn2(), false);
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

// Core c's x: 8 values c * 10 + i.
std::vector<std::vector<std::vector<float>>> inputs(int cores) {
  std::vector<std::vector<std::vector<float>>> in(static_cast<size_t>(cores));
  for (int c = 0; c < cores; ++c) {
    std::vector<float> x;
    for (int i = 0; i < 8; ++i) x.push_back(static_cast<float>(c * 10 + i));
    in[static_cast<size_t>(c)] = {x};
  }
  return in;
}

std::vector<double> result(const std::string& op, int cores, size_t core) {
  const Workload w = parse(on_cores(cores, op));
  const std::vector<GraphValues> v = evaluate_graph_cores(*w.graph, inputs(cores), {"y"});
  REQUIRE(v.size() == static_cast<size_t>(cores));
  return *v[core].find("y");
}

}  // namespace

TEST_CASE("graph collectives infer their shapes from the ranks") {
  auto shape_of = [](const std::string& op, int cores) {
    const Workload w = parse(on_cores(cores, op));
    return w.graph->find("y")->shape;
  };
  CHECK(shape_of(R"({"op": "all_reduce", "args": ["x"], "out": "y"})", 2) ==
        std::vector<int64_t>{4, 2});
  CHECK(shape_of(R"({"op": "all_gather", "args": ["x"], "out": "y"})", 2) ==
        std::vector<int64_t>{8, 2});
  CHECK(shape_of(R"({"op": "reduce_scatter", "args": ["x"], "out": "y"})", 4) ==
        std::vector<int64_t>{1, 2});
  CHECK(shape_of(R"({"op": "all_to_all", "args": ["x"], "out": "y"})", 4) ==
        std::vector<int64_t>{4, 2});
  // Groups of 2 of the 4 cores: the ranks are the group's.
  CHECK(shape_of(R"({"op": "all_gather", "args": ["x"], "group": 2, "out": "y"})", 4) ==
        std::vector<int64_t>{8, 2});
  const Workload w = parse(on_cores(8, R"({"op": "exp", "args": ["x"], "out": "y"})"));
  CHECK(w.cores == 8);
  CHECK(parse(on_cores(0, R"({"op": "exp", "args": ["x"], "out": "y"})")).cores == 1);
}

TEST_CASE("the graph reference combines every core's values as the collective instruction does") {
  // Cores hold c * 10 + i: all_reduce sums over the ranks in rank order.
  const std::vector<double> sum =
      result(R"({"op": "all_reduce", "args": ["x"], "out": "y"})", 3, 1);
  CHECK(sum == std::vector<double>{30, 33, 36, 39, 42, 45, 48, 51});
  CHECK(result(R"({"op": "all_reduce", "args": ["x"], "reduce_op": "max", "out": "y"})", 3, 0) ==
        std::vector<double>{20, 21, 22, 23, 24, 25, 26, 27});
  CHECK(result(R"({"op": "all_reduce", "args": ["x"], "reduce_op": "min", "out": "y"})", 3, 2) ==
        std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  // all_gather: the ranks' tensors one after another along dimension 0.
  const std::vector<double> gathered =
      result(R"({"op": "all_gather", "args": ["x"], "out": "y"})", 2, 1);
  CHECK(gathered == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17});
  // reduce_scatter: rank r keeps rows [r * 2, r * 2 + 2) of the sum.
  CHECK(result(R"({"op": "reduce_scatter", "args": ["x"], "out": "y"})", 2, 1) ==
        std::vector<double>{18, 20, 22, 24});
  // all_to_all: rank r receives part r of every rank's tensor, in rank order.
  CHECK(result(R"({"op": "all_to_all", "args": ["x"], "out": "y"})", 2, 0) ==
        std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13});
  // Groups of 2 of 4 cores: core 3 sums cores 2 and 3.
  CHECK(result(R"({"op": "all_reduce", "args": ["x"], "group": 2, "out": "y"})", 4, 3) ==
        std::vector<double>{50, 52, 54, 56, 58, 60, 62, 64});
  // One core: a copy.
  CHECK(result(R"({"op": "all_reduce", "args": ["x"], "out": "y"})", 1, 0) ==
        std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("a reduced collective is rounded once to its dtype after the fp32 sum") {
  // bf16: 256 + 1 + 1 in fp32 is 258, exact in bf16 (its spacing at 256 is 2); rounding after
  // each addition would have given 256 (256 + 1 ties to even) twice.
  const Workload w = parse(R"({"dtype": "bf16", "cores": 3, "inputs": {"x": {"shape": [1]}},
      "ops": [{"op": "all_reduce", "args": ["x"], "out": "y"}]})");
  const std::vector<GraphValues> v = evaluate_graph_cores(*w.graph, {{{256}}, {{1}}, {{1}}}, {});
  CHECK(*v[0].find("y") == std::vector<double>{258});
}

TEST_CASE("per_core inputs differ across cores, replicated inputs do not") {
  const Workload w = parse(R"({"dtype": "fp32", "cores": 2,
      "inputs": {"x": {"shape": [4, 8], "per_core": true}, "w": {"shape": [4, 8]}},
      "ops": [{"op": "add", "args": ["x", "w"], "out": "s"},
              {"op": "all_reduce", "args": ["s"], "out": "y"}]})");
  const LoweredKernel k = lower(w, config::trn2(), true);
  REQUIRE(k.core_inputs.size() == 2);
  REQUIRE(k.core_expected.size() == 2);
  // Inputs come in name order (w, then x).
  REQUIRE(k.core_inputs[0][1].name == "x");
  CHECK(k.core_inputs[0][1].values != k.core_inputs[1][1].values);
  CHECK(k.core_inputs[0][0].values == k.core_inputs[1][0].values);
  // all_reduce leaves every core with the same values.
  CHECK(k.core_expected[0][0].values == k.core_expected[1][0].values);
  // Core 0 draws what a graph without cores draws.
  const Workload one = parse(R"({"dtype": "fp32",
      "inputs": {"x": {"shape": [4, 8]}, "w": {"shape": [4, 8]}},
      "ops": [{"op": "add", "args": ["x", "w"], "out": "y"}]})");
  const LoweredKernel k1 = lower(one, config::trn2(), true);
  CHECK(k1.inputs[1].values == k.core_inputs[0][1].values);
}

TEST_CASE("a collective is a kernel of its own: an eager launch, a fusion boundary when compiled") {
  const std::string ops = R"({"op": "mul", "args": ["x", 2], "out": "a"},
      {"op": "all_reduce", "args": ["a"], "out": "b"},
      {"op": "add", "args": ["b", 1], "out": "y"})";
  for (const char* mode : {"eager", "compile"}) {
    const Workload w =
        parse(std::string(R"({"mode": ")") + mode +
              R"(", "cores": 2, "inputs": {"x": {"shape": [256, 64]}}, "ops": [)" + ops + "]}");
    const GraphPlan plan = plan_graph(*w.graph, w.file);
    REQUIRE(plan.kernels.size() == 3);
    CHECK_FALSE(plan.kernels[1].row);
    const LoweredKernel k = lower(w, config::trn2(), false);
    CHECK(k.program.kernel_count() == 3);
    // Eager: three dispatches; compiled: one call launching the three kernels.
    CHECK(k.program.host_ops.size() == (std::string(mode) == "eager" ? 3u : 1u));
  }
}

TEST_CASE("a reducing collective widens the check tolerance by the ranks' roundings") {
  // exp stores a (1 rounding); all_reduce over 4 ranks adds 4 such independent errors, three
  // fp32 additions and its own store: 4 + 3 + 1 = 8 on the longest path.
  const Workload w = parse(R"({"dtype": "bf16", "cores": 4, "inputs": {"x": {"shape": [4, 8]}},
      "ops": [{"op": "exp", "args": ["x"], "out": "a"},
              {"op": "all_reduce", "args": ["a"], "out": "y"}]})");
  const LoweredKernel k = lower(w, config::trn2(), false);
  CHECK(k.tolerance.rtol == Approx(2e-2 * std::sqrt(8.0)));
  // all_gather moves values: its store alone.
  const Workload g = parse(R"({"dtype": "bf16", "cores": 4, "inputs": {"x": {"shape": [4, 8]}},
      "ops": [{"op": "exp", "args": ["x"], "out": "a"},
              {"op": "all_gather", "args": ["a"], "out": "y"}]})");
  CHECK(lower(g, config::trn2(), false).tolerance.rtol == Approx(2e-2 * std::sqrt(2.0)));
}

TEST_CASE("graph collective errors name the op, the field and what was expected") {
  CHECK_THAT(error_of(on_cores(0, R"({"op": "all_reduce", "args": ["x"], "out": "y"})")),
             Contains("/ops/0") && Contains("no \"cores\" key"));
  CHECK_THAT(error_of(on_cores(3, R"({"op": "reduce_scatter", "args": ["x"], "out": "y"})")),
             Contains("/ops/0/args/0") && Contains("4 is not a multiple of 3"));
  CHECK_THAT(error_of(on_cores(3, R"({"op": "all_to_all", "args": ["x"], "out": "y"})")),
             Contains("/ops/0/args/0") && Contains("not a multiple of 3"));
  CHECK_THAT(error_of(on_cores(
                 2, R"({"op": "all_reduce", "args": ["x"], "reduce_op": "avg", "out": "y"})")),
             Contains("/ops/0/reduce_op") && Contains("\"sum\", \"max\" or \"min\""));
  CHECK_THAT(error_of(on_cores(
                 2, R"({"op": "all_gather", "args": ["x"], "reduce_op": "sum", "out": "y"})")),
             Contains("/ops/0/reduce_op") && Contains("unknown key"));
  CHECK_THAT(
      error_of(on_cores(4, R"({"op": "all_reduce", "args": ["x"], "group": 3, "out": "y"})")),
      Contains("/ops/0/group") && Contains("dividing the graph's 4 cores"));
  CHECK_THAT(
      error_of(on_cores(2, R"({"op": "all_reduce", "args": ["x"], "dtype": "bf16", "out": "y"})")),
      Contains("/ops/0/dtype") && Contains("unknown key"));
  CHECK_THAT(
      error_of(on_cores(0, R"({"op": "exp", "args": ["x"], "out": "y"})", R"(, "per_core": true)")),
      Contains("/inputs/x/per_core") && Contains("no \"cores\" key"));
  CHECK_THAT(error_of(on_cores(2, R"({"op": "exp", "args": ["x"], "out": "y"})",
                               R"(, "init": "ones", "per_core": true)")),
             Contains("/inputs/x/per_core") && Contains("init \"ones\""));
  CHECK_THAT(
      error_of(on_cores(2, R"({"op": "exp", "args": ["x"], "out": "y"})", R"(, "per_core": 1)")),
      Contains("/inputs/x/per_core") && Contains("true or false"));
  CHECK_THAT(error_of(R"({"cores": 0, "inputs": {"x": {"shape": [4]}},
      "ops": [{"op": "exp", "args": ["x"], "out": "y"}]})"),
             Contains("/cores") && Contains("positive integer"));
  CHECK_THAT(error_of(R"({"chips": 2, "inputs": {"x": {"shape": [4]}},
      "ops": [{"op": "exp", "args": ["x"], "out": "y"}]})"),
             Contains("/chips") && Contains("\"cores\""));
  // More cores than a chip has: the lowering's check, as for the kernel form.
  CHECK_THAT(error_of(on_cores(64, R"({"op": "exp", "args": ["x"], "out": "y"})")),
             Contains("/cores"));
}
