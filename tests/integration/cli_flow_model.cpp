// The flow-level memory model (--set dma_flow_model=true) against the detailed one on whole
// examples: the simulated total time stays within kTolerance of the detailed model's, the
// functional checks still pass, and stats.json says which model ran and leaves out the
// row-buffer counters the flow model does not have.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>

#include "cli_support.hpp"

using trnsim_test::example;

namespace {

// docs/validation.md section 5 measures every example, the bench --quick workloads and five
// full-size bench cases: the largest difference is 5.7% (micro_hbm_to_hbm, row conflicts the
// flow model does not have), 0.6% among the examples below (rmsnorm). The tolerance is the
// flow matrix's (tests/flow/flow_matrix.py).
constexpr double kTolerance = 0.05;

nlohmann::json run_stats(const std::string& workload, bool flow) {
  return trnsim_test::run_ok(
             example(workload),
             std::string("--no-report --set dma_flow_model=") + (flow ? "true" : "false"),
             std::string("flow_") + (flow ? "on_" : "off_") + workload)
      .stats;
}

}  // namespace

TEST_CASE("the flow memory model stays within the stated tolerance of the detailed model") {
  for (const char* w : {"rmsnorm.json", "matmul_s1.json", "matmul_s2.json", "matmul_s3.json",
                        "matmul_s4.json", "attention.json"}) {
    INFO(w);
    const auto detailed = run_stats(w, false);
    const auto flow = run_stats(w, true);
    const double td = detailed["summary"]["total_time_ps"].get<double>();
    const double tf = flow["summary"]["total_time_ps"].get<double>();
    INFO("detailed " << td << " ps, flow " << tf << " ps");
    CHECK(std::fabs(tf - td) / td <= kTolerance);
    CHECK(flow["check"]["status"] == "pass");
    CHECK(detailed["memory_model"]["name"] == "detailed");
    CHECK(flow["memory_model"]["name"] == "flow");
    // Same bytes to and from HBM; no row-buffer facts the flow model does not have.
    CHECK(flow["summary"]["hbm_read_bytes"] == detailed["summary"]["hbm_read_bytes"]);
    CHECK(flow["summary"]["hbm_write_bytes"] == detailed["summary"]["hbm_write_bytes"]);
    CHECK(detailed["summary"].contains("hbm_row_buffer_hit_rate"));
    CHECK_FALSE(flow["summary"].contains("hbm_row_buffer_hit_rate"));
    CHECK_FALSE(flow["summary"].contains("hbm_row_hits"));
    CHECK_FALSE(flow["summary"].contains("hbm_refresh_stalls"));
  }
}

TEST_CASE("the flow memory model's summary does not claim a row-buffer hit rate") {
  const auto run = trnsim_test::run_ok(example("rmsnorm.json"),
                                       "--timing-only --no-report --set dma_flow_model=true",
                                       "flow_summary_text");
  CHECK(run.invocation.out.find("row buffers not modelled") != std::string::npos);
  CHECK(run.invocation.out.find("row-buffer hit rate") == std::string::npos);
}

TEST_CASE("the flow memory model gives byte-identical outputs run after run") {
  const auto a = trnsim_test::run_ok(example("attention.json"),
                                     "--timing-only --no-report --set dma_flow_model=true",
                                     "flow_determinism_a");
  const auto b = trnsim_test::run_ok(example("attention.json"),
                                     "--timing-only --no-report --set dma_flow_model=true",
                                     "flow_determinism_b");
  CHECK(trnsim_test::slurp(a.out + "/trace.json") == trnsim_test::slurp(b.out + "/trace.json"));
  CHECK(a.stats["summary"] == b.stats["summary"]);
}

TEST_CASE("dma_flow_model works from an arch file and in a sweep") {
  using trnsim_test::fresh_dir;
  using trnsim_test::read_json;
  using trnsim_test::write_file;
  const std::string dir = fresh_dir("flow_arch_sweep");
  const std::string arch =
      write_file(dir, "flow.json",
                 R"({"base": "trn2", "parameters": {"dma_flow_model": {"value": true, "unit": "",)"
                 R"( "source": "model choice: flow"}}})");
  const auto run = trnsim_test::run_ok(
      example("rmsnorm.json"), "--timing-only --no-report --arch " + arch, "flow_arch_file");
  CHECK(run.stats["memory_model"]["name"] == "flow");

  write_file(dir, "s.json",
             R"({"workloads": ")" + example("rmsnorm.json") +
                 R"(", "grid": {"dma_flow_model": [false, true]}})");
  const auto r = trnsim_test::trnsim("sweep " + dir + "/s.json --out " + dir + "/o", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto points = read_json(dir + "/o/results.json")["points"];
  REQUIRE(points.size() == 2);
  const double detailed = points[0]["total_time_us"].get<double>();
  const double flow = points[1]["total_time_us"].get<double>();
  CHECK(flow != detailed);
  CHECK(std::fabs(flow - detailed) / detailed <= kTolerance);
}

TEST_CASE("the flow memory model warns when the window is smaller than it is checked at") {
  const std::string opts = "--timing-only --no-report --arch trn1 ";
  const std::string flow = " --set dma_flow_model=true";
  // A window of 2 chunks of 2 KiB per engine covers trn1's HBM peak 1.70 times at the unloaded
  // round trip, against 3.40 with the preset's 4 chunks; 4 chunks of 512 bytes, 0.85 times.
  const std::pair<const char*, const char*> smaller[] = {
      {"--set dma_engine_outstanding_chunks=2", "1.70 times"},
      {"--set dma_chunk_bytes=512", "0.85 times"}};
  for (const auto& [set, times] : smaller) {
    INFO(set);
    const auto small =
        trnsim_test::run_ok(example("rmsnorm.json"), opts + set + flow, "flow_window_small");
    REQUIRE(small.stats["memory_model"].contains("caveat"));
    const std::string caveat = small.stats["memory_model"]["caveat"].get<std::string>();
    CHECK(caveat.find(times) != std::string::npos);
    CHECK(caveat.find("fewer than on trn1 (3.40)") != std::string::npos);
    CHECK(caveat.find("docs/validation.md 6.2") != std::string::npos);
    CHECK(small.invocation.out.find("optimistic where they limit the DMA") != std::string::npos);
  }

  // The preset's window, a larger one, and the detailed model at any window: nothing to say.
  for (const std::string& set : {std::string(flow), " --set dma_engine_outstanding_chunks=8" + flow,
                                 std::string(" --set dma_engine_outstanding_chunks=1")}) {
    INFO(set);
    const auto run = trnsim_test::run_ok(example("rmsnorm.json"), opts + set, "flow_window_none");
    CHECK_FALSE(run.stats["memory_model"].contains("caveat"));
    CHECK(run.invocation.out.find("optimistic") == std::string::npos);
  }
}
