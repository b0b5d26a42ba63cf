// `trnsim explain`: on workloads built to have a known bottleneck, the first finding names it.
#include <catch2/catch.hpp>

#include "cli_support.hpp"

using Catch::Matchers::Contains;
using trnsim_test::example;
using trnsim_test::fresh_dir;
using trnsim_test::Invocation;
using trnsim_test::write_file;

namespace {

// Runs the workload (timing only) and returns `trnsim explain --json`'s findings.
nlohmann::json findings_of(const std::string& workload, const std::string& tag) {
  const std::string dir = fresh_dir("explain_" + tag);
  const Invocation run =
      trnsim_test::trnsim(workload + " --timing-only --out " + dir + "/out", dir);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.out, Contains("diagnosis"));
  const Invocation ex = trnsim_test::trnsim("explain --json " + dir + "/out", dir);
  INFO(ex.err);
  REQUIRE(ex.exit_code == 0);
  return nlohmann::json::parse(ex.out)["findings"];
}

std::string first_cause(const nlohmann::json& f) {
  REQUIRE(!f.empty());
  return f[0]["cause"];
}

}  // namespace

TEST_CASE("explain: a small eager graph is bound by host launch overhead") {
  const std::string dir = fresh_dir("explain_small_in");
  const std::string w = write_file(dir, "small.json", R"({"mode": "eager",
      "inputs": {"x": {"shape": [128, 256]}},
      "ops": [{"op": "exp", "args": ["x"], "out": "a"}, {"op": "mul", "args": ["a", 2], "out": "b"},
              {"op": "add", "args": ["b", 1], "out": "y"}]})");
  const auto f = findings_of(w, "small");
  CHECK(first_cause(f) == "host launch overhead");
  CHECK_THAT(f[0]["suggestion"].get<std::string>(), Contains("compile"));
}

TEST_CASE("explain: the eager RMSNorm pays for HBM round trips between its kernels") {
  const auto f = findings_of(example("rmsnorm_eager.json"), "eager");
  CHECK(first_cause(f) == "HBM round trips between kernels");
  CHECK_THAT(f[0]["evidence"].get<std::string>(), Contains("x2") && Contains("xn"));
  // Bytes in MiB, as the summary and report.html give them (issue 18 item 9): 32 MiB of
  // intermediates, which decimal megabytes would call 33.6 MB.
  CHECK_THAT(f[0]["evidence"].get<std::string>(), Contains("32.0 MiB written"));
}

TEST_CASE("explain: the fused RMSNorm kernel is ScalarE-bound and VectorE could take a step") {
  const auto f = findings_of(example("rmsnorm.json"), "fused");
  CHECK(first_cause(f) == "ScalarE");
  CHECK_THAT(f[0]["suggestion"].get<std::string>(), Contains("VectorE"));
}

TEST_CASE("explain: one buffer serializes DMA and compute") {
  const std::string dir = fresh_dir("explain_bufs_in");
  const std::string w = write_file(
      dir, "bufs1.json", R"({"kernel": "rmsnorm", "shape": [2048, 4096], "params": {"bufs": 1}})");
  const auto f = findings_of(w, "bufs1");
  CHECK(first_cause(f) == "serialization (no overlap)");
  CHECK_THAT(f[0]["suggestion"].get<std::string>(), Contains("buffer"));
}

TEST_CASE("explain: 64-byte transfers are bound by DMA fixed costs") {
  const auto f = findings_of(example("micro/copy_sweep_64.json"), "small_dma");
  CHECK(first_cause(f) == "DMA fixed costs (small transfers)");
  CHECK_THAT(f[0]["suggestion"].get<std::string>(), Contains("2048 bytes per partition"));
}

TEST_CASE("explain: the critical path is reported, and a directory without a run is refused") {
  const auto f = findings_of(example("rmsnorm.json"), "path");
  bool path = false;
  for (const auto& x : f) {
    if (x["cause"] == "critical path") {
      path = true;
      CHECK_THAT(x["evidence"].get<std::string>(), Contains("ScalarE"));
    }
  }
  CHECK(path);
  const std::string dir = fresh_dir("explain_empty");
  const Invocation r = trnsim_test::trnsim("explain " + dir, dir);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("no stats.json"));
}
