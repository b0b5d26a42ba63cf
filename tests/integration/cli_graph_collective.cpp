// Graph workloads on several cores through the binary (issue 22): each collective op simulated
// functionally on 2 to 4 cores, every core checked against its own reference; bad graphs
// refused; the data-parallel training step of the library.
#include <catch2/catch.hpp>

#include "cli_support.hpp"
#include "workloads/graph/npy.hpp"

using Catch::Matchers::Contains;
using trnsim_test::example;
using trnsim_test::fresh_dir;
using trnsim_test::Invocation;
using trnsim_test::read_json;
using trnsim_test::rejected_input;
using trnsim_test::slurp;
using trnsim_test::write_file;

namespace {

// x per core, a kernel before the collective and one after it, so that the collective reads a
// value computed on the core and its result is used again.
std::string graph(const std::string& dtype, int cores, const std::string& collective) {
  return R"({"mode": "compile", "dtype": ")" + dtype + R"(", "cores": )" + std::to_string(cores) +
         R"(,
      "inputs": {"x": {"shape": [256, 96], "per_core": true}, "w": {"shape": [96]}},
      "ops": [{"op": "mul", "args": ["x", "w"], "out": "a"},
              )" +
         collective + R"(,
              {"op": "add", "args": ["b", 1], "out": "y"}]})";
}

nlohmann::json run_functional(const std::string& text, const std::string& tag) {
  const std::string dir = fresh_dir("graph_cc_" + tag);
  const std::string w = write_file(dir, "g.json", text);
  const Invocation r = trnsim_test::trnsim(w + " --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("check: PASS"));
  return read_json(dir + "/out/stats.json");
}

}  // namespace

TEST_CASE("graph collectives on 2 to 4 cores match every core's reference") {
  const std::vector<std::pair<std::string, int>> cases = {
      {R"({"op": "all_reduce", "args": ["a"], "out": "b"})", 4},
      {R"({"op": "all_reduce", "args": ["a"], "reduce_op": "max", "out": "b"})", 2},
      {R"({"op": "all_reduce", "args": ["a"], "reduce_op": "min", "out": "b"})", 3},
      {R"({"op": "all_gather", "args": ["a"], "out": "b"})", 4},
      {R"({"op": "reduce_scatter", "args": ["a"], "out": "b"})", 4},
      {R"({"op": "all_to_all", "args": ["a"], "out": "b"})", 2},
      {R"({"op": "all_reduce", "args": ["a"], "group": 2, "out": "b"})", 4},
  };
  int i = 0;
  for (const auto& [op, cores] : cases) {
    for (const char* dtype : {"fp32", "bf16"}) {
      INFO(op << " on " << cores << " cores, " << dtype);
      const nlohmann::json stats = run_functional(graph(dtype, cores, op), std::to_string(i++));
      CHECK(stats["check"]["status"] == "pass");
      CHECK(stats["check"]["mismatches"] == 0);
    }
  }
}

TEST_CASE("a graph collective on one core is a copy") {
  const nlohmann::json stats = run_functional(
      graph("fp32", 1, R"({"op": "all_reduce", "args": ["a"], "out": "b"})"), "one_core");
  CHECK(stats["check"]["status"] == "pass");
}

TEST_CASE("a per-core input gives each core its own draws: all_gather holds both") {
  const std::string dir = fresh_dir("graph_cc_values");
  const std::string w = write_file(dir, "g.json", R"({"dtype": "fp32", "cores": 2,
      "inputs": {"x": {"shape": [128, 4], "per_core": true, "init": "uniform"}},
      "ops": [{"op": "all_gather", "args": ["x"], "out": "y"}]})");
  const Invocation r = trnsim_test::trnsim(w + " --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto y = trnsim::workloads::parse_npy(slurp(dir + "/out/y.npy"));
  REQUIRE(y.shape == std::vector<int64_t>{256, 4});
  // Core 0's half and core 1's half hold different draws.
  const std::vector<float> first(y.values.begin(), y.values.begin() + 512);
  const std::vector<float> second(y.values.begin() + 512, y.values.end());
  CHECK(first != second);
}

TEST_CASE("bad graph collectives exit 2 naming the file, the op and what was expected") {
  CHECK_THAT(rejected_input("g.json", R"({"inputs": {"x": {"shape": [4, 8]}},
      "ops": [{"op": "all_reduce", "args": ["x"], "out": "y"}]})"),
             Contains("/ops/0") && Contains("\"cores\""));
  CHECK_THAT(rejected_input("g.json", R"({"cores": 8, "inputs": {"x": {"shape": [4, 8]}},
      "ops": [{"op": "reduce_scatter", "args": ["x"], "out": "y"}]})"),
             Contains("/ops/0/args/0") && Contains("not a multiple of 8"));
  CHECK_THAT(rejected_input("g.json", R"({"cores": 2, "inputs": {"x": {"shape": [4, 8]}},
      "ops": [{"op": "all_reduce", "args": ["x"], "reduce_op": "prod", "out": "y"}]})"),
             Contains("/ops/0/reduce_op"));
  CHECK_THAT(rejected_input("g.json", R"({"cores": 16, "inputs": {"x": {"shape": [4, 8]}},
      "ops": [{"op": "all_reduce", "args": ["x"], "out": "y"}]})"),
             Contains("/cores"));
}

TEST_CASE("the data-parallel MLP step: gradients all-reduced over 8 cores, every core checked") {
  const std::string dir = fresh_dir("graph_cc_dp");
  const Invocation r =
      trnsim_test::trnsim(example("chip/dp_mlp_step.json") + " --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("check: PASS"));
  const nlohmann::json stats = read_json(dir + "/out/stats.json");
  CHECK(stats["check"]["status"] == "pass");
  CHECK(stats["chip"]["cores"] == 8);
}
