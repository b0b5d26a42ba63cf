// Graph workloads through the binary: the three RMSNorm examples (eager, fused op, compiled)
// tell the story of the project: eager is slowest, compiled fastest, and the outputs show why.
#include <catch2/catch.hpp>
#include <set>

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

using trnsim_test::Run;

// `tag` keeps the scratch directories of test cases that ctest runs in parallel apart.
Run run_example(const std::string& name, const std::string& extra, const std::string& tag) {
  return trnsim_test::run_ok(example(name + ".json"), extra, "graph_" + tag + "_" + name);
}

}  // namespace

TEST_CASE("the three RMSNorm paths: eager slowest, compiled fastest, host and device reported") {
  const Run eager = run_example("rmsnorm_eager", "--timing-only", "paths");
  const Run fused = run_example("rmsnorm_fused", "--timing-only", "paths");
  const Run compiled = run_example("rmsnorm_compiled", "--timing-only", "paths");
  const double te = eager.stats["summary"]["total_time"];
  const double tf = fused.stats["summary"]["total_time"];
  const double tc = compiled.stats["summary"]["total_time"];
  CHECK(te > tf);
  CHECK(tf > tc);
  for (const Run* r : {&eager, &fused, &compiled}) {
    CHECK(r->stats["host"]["device_time"].get<double>() > 0);
    CHECK(r->stats["host"]["host_cpu_time"].get<double>() > 0);
    CHECK_THAT(r->invocation.out, Contains("key_averages") && Contains("host:"));
  }
  // Why: six launches and five intermediates through HBM against one kernel.
  CHECK(eager.stats["host"]["kernel_launches"] == 6);
  CHECK(compiled.stats["host"]["kernel_launches"] == 1);
  CHECK(eager.stats["summary"]["hbm_read_bytes"].get<double>() >
        2 * compiled.stats["summary"]["hbm_read_bytes"].get<double>());
  REQUIRE(eager.stats["key_averages"].size() == 5);  // pow, mean, add, rsqrt, mul (x2)
  CHECK(eager.stats["key_averages"][0]["name"] == "aten::mul");
  CHECK(eager.stats["key_averages"][0]["calls"] == 2);
  CHECK_THAT(eager.invocation.out, Contains("aten::mul") && Contains("aten::rsqrt"));
}

TEST_CASE("a graph trace has host lanes, a kernel lane and a flow from each launch to its kernel") {
  const Run eager = run_example("rmsnorm_eager", "--timing-only", "trace");
  std::set<std::string> lanes;
  size_t launches = 0, kernels = 0, flow_starts = 0, flow_ends = 0;
  for (const auto& e : eager.trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") lanes.insert(e["args"]["name"]);
    if (e["ph"] == "X" && e["cat"] == "host" &&
        e["name"].get<std::string>().rfind("launch ", 0) == 0) {
      ++launches;
    }
    if (e["ph"] == "X" && e["cat"] == "kernel") ++kernels;
    if (e["ph"] == "s" && e["cat"] == "launch") ++flow_starts;
    if (e["ph"] == "f" && e["cat"] == "launch") ++flow_ends;
  }
  CHECK(lanes.count("framework") == 1);
  CHECK(lanes.count("runtime") == 1);
  CHECK(lanes.count("Kernels") == 1);
  CHECK(launches == 6);
  CHECK(kernels == 6);
  CHECK(flow_starts == 6);
  CHECK(flow_ends == 6);
}

TEST_CASE("a functional graph run passes its check and writes its outputs as .npy") {
  const std::string dir = fresh_dir("graph_npy");
  const std::string w = write_file(dir, "g.json", R"({"mode": "compile", "dtype": "fp32",
      "inputs": {"x": {"shape": [130, 64], "init": "arange"}},
      "ops": [{"op": "mul", "args": ["x", 0.5], "out": "h"},
              {"op": "sum", "args": ["h"], "dim": -1, "keepdim": true, "out": "y"}],
      "outputs": ["h", "y"]})");
  const Invocation r = trnsim_test::trnsim(w + " --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("check: PASS") && Contains("h.npy") && Contains("y.npy"));
  const auto y = trnsim::workloads::parse_npy(slurp(dir + "/out/y.npy"));
  CHECK(y.shape == std::vector<int64_t>{130, 1});
  // Row 1 holds 64..127: half their sum.
  CHECK(y.values[1] == Approx(0.5 * (64 + 127) * 64 / 2));
}

TEST_CASE("a graph input can come from a .npy file, and a bad one is refused") {
  const std::string dir = fresh_dir("graph_npy_in");
  std::ofstream(dir + "/x.npy", std::ios::binary)
      << trnsim::workloads::npy_bytes({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const std::string w = write_file(dir, "g.json", R"({"dtype": "fp32",
      "inputs": {"x": {"shape": [2, 4], "npy": "x.npy"}},
      "ops": [{"op": "sum", "args": ["x"], "dim": -1, "out": "y"}]})");
  const Invocation r = trnsim_test::trnsim(w + " --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto y = trnsim::workloads::parse_npy(slurp(dir + "/out/y.npy"));
  CHECK(y.values == std::vector<float>{10, 26});
  const std::string err = rejected_input("g.json", R"({"dtype": "fp32",
      "inputs": {"x": {"shape": [2, 5], "npy": "missing.npy"}},
      "ops": [{"op": "sum", "args": ["x"], "dim": -1, "out": "y"}]})");
  CHECK_THAT(err, Contains("/inputs/x/npy") && Contains("cannot read"));
}

TEST_CASE("trnsim compare shows the three RMSNorm paths side by side with each one's bottleneck") {
  const std::string dir = fresh_dir("graph_compare");
  std::string dirs;
  for (const char* n : {"rmsnorm_eager", "rmsnorm_fused", "rmsnorm_compiled"}) {
    const Invocation r = trnsim_test::trnsim(
        example(std::string(n) + ".json") + " --timing-only --out " + dir + "/" + n, dir);
    REQUIRE(r.exit_code == 0);
    dirs += " " + dir + "/" + n;
  }
  const Invocation c = trnsim_test::trnsim("compare --no-report" + dirs, dir);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK_THAT(c.out, Contains("kernel launches") && Contains("device time") &&
                        Contains("rmsnorm_eager: HBM round trips") &&
                        Contains("rmsnorm_fused: ScalarE") &&
                        Contains("rmsnorm_compiled: DMA bandwidth"));
  const Invocation j = trnsim_test::trnsim("compare --json --no-report" + dirs, dir);
  REQUIRE(j.exit_code == 0);
  const auto runs = nlohmann::json::parse(j.out)["runs"];
  REQUIRE(runs.size() == 3);
  CHECK(runs[0]["kernel_launches"] == 6);
  CHECK(trnsim_test::trnsim("compare " + dir + "/nothing", dir).exit_code == 2);
}

// The reduced-size Llama decoder layer of the library (scripts/decoder-layers; its full-size
// versions are in workloads/examples/scale/, measured by bench/): every op of the layer
// (RMSNorm, Q/K/V projections, RoPE by slices, neg, cat and fused row ops, permutes, causal
// flash attention, output projection, residual adds, SwiGLU MLP) runs functionally and its
// output matches the graph's double-precision reference. In fp32, so that the check's
// tolerance (1e-4 + 1e-3 |ref|) is tight: in bf16 a few of the 65,536 outputs drift past the
// per-element bf16 tolerance through the chain of a dozen stored roundings (docs/workloads.md).
TEST_CASE("the small Llama decoder layer runs every op and matches the reference") {
  const std::string dir = fresh_dir("graph_decoder_small");
  std::string text = slurp(example("decoder_layer_small.json"));
  const auto at = text.find("\"dtype\": \"bf16\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 15, "\"dtype\": \"fp32\"");
  const std::string w = write_file(dir, "decoder_fp32.json", text);
  const Invocation r = trnsim_test::trnsim(w + " --no-report --out " + dir + "/out", dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("check: PASS") && Contains("layers.0.y.npy"));
  const auto stats = read_json(dir + "/out/stats.json");
  std::set<std::string> ops;
  for (const auto& k : stats["choices"]["kernels"]) {
    for (const auto& op : k["ops"]) ops.insert(op.get<std::string>());
  }
  for (const char* op : {"pow", "mean", "rsqrt", "matmul", "slice", "neg", "cat", "permute",
                         "scaled_dot_product_attention", "silu", "mul", "add"}) {
    INFO(op);
    CHECK(ops.count(op) == 1);
  }
  const auto y = trnsim::workloads::parse_npy(slurp(dir + "/out/layers.0.y.npy"));
  CHECK(y.shape == std::vector<int64_t>{256, 256});
}
