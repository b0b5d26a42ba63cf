// The metric table (sim/report/metrics.cpp) against what runs write and what the docs say:
// stats.json's summary holds exactly the declared metrics (less the detailed memory model's
// counters under the flow model), a graph run's host object exactly the declared host metrics,
// docs/metrics.md embeds `trnsim metrics --markdown`, and a golden file that names a metric the
// table does not declare is refused with a message, not checked as "missing" forever.
#include <catch2/catch.hpp>

#include <set>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {

// The declared keys of one stats.json object; `detailed_only` keeps only the metrics the flow
// memory model leaves out.
std::set<std::string> declared(const nlohmann::json& table, const std::string& object,
                               bool detailed_only = false) {
  std::set<std::string> keys;
  for (const auto& m : table) {
    if (m["object"] != object) continue;
    if (detailed_only && !m["detailed_memory_model_only"].get<bool>()) continue;
    keys.insert(m["key"].get<std::string>());
  }
  return keys;
}

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& item : object.items()) keys.insert(item.key());
  return keys;
}

nlohmann::json metric_table(const std::string& dir) {
  const Invocation r = trnsim("metrics --json", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("trnsim metrics --markdown is contained verbatim in docs/metrics.md") {
  const std::string dir = fresh_dir("metrics_markdown");
  const Invocation r = trnsim("metrics --markdown", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("## summary\n\n| key | unit |") == 0);
  INFO("docs/metrics.md must embed the output of `trnsim metrics --markdown`");
  CHECK(slurp(std::string(TRNSIM_SOURCE_DIR) + "/docs/metrics.md").find(r.out) !=
        std::string::npos);
  // Every metric in the text listing, the per-engine ones too.
  const Invocation text = trnsim("metrics", dir);
  REQUIRE(text.exit_code == 0);
  for (const char* id : {"total_time_ps", "gpsimd_engine_port_wait_time", "host.device_time",
                         "hbm_row_conflicts", "sync_engine_semaphore_wait_time"}) {
    CHECK(text.out.find(std::string(id) + " ") != std::string::npos);
  }
  CHECK(trnsim("metrics --markdown --json", dir).exit_code == 2);
}

TEST_CASE("stats.json's summary holds exactly the declared metrics, under both memory models") {
  const std::string dir = fresh_dir("metrics_declared");
  const nlohmann::json table = metric_table(dir);
  const std::set<std::string> summary = declared(table, "summary");
  const std::set<std::string> detailed_only = declared(table, "summary", true);
  CHECK(detailed_only.size() == 7);  // the row-buffer hit rate and six counters
  for (const char* e : {"tensor", "vector", "scalar", "gpsimd", "sync"}) {
    for (const char* m : {"active_time", "active_time_percent", "instruction_count",
                          "semaphore_wait_time", "port_wait_time"}) {
      CHECK(summary.count(std::string(e) + "_engine_" + m) == 1);
    }
  }
  const Run detailed = run_ok(example("rmsnorm.json"), "--timing-only --no-report", "metrics_det");
  CHECK(keys_of(detailed.stats["summary"]) == summary);

  const Run flow = run_ok(example("rmsnorm.json"),
                          "--timing-only --no-report --set dma_flow_model=true", "metrics_flow");
  std::set<std::string> expected;
  for (const std::string& k : summary) {
    if (!detailed_only.count(k)) expected.insert(k);
  }
  CHECK(keys_of(flow.stats["summary"]) == expected);

  // A graph run's host object: the declared host metrics; a kernel run has none.
  const Run graph =
      run_ok(example("gelu_mlp_eager.json"), "--timing-only --no-report", "metrics_graph");
  REQUIRE(graph.stats["host"].is_object());
  CHECK(keys_of(graph.stats["host"]) == declared(table, "host"));
  CHECK(keys_of(graph.stats["summary"]) == summary);
  CHECK(detailed.stats["host"].is_null());
}

TEST_CASE("a golden file naming a metric the table does not declare exits 2 and says so") {
  const std::string dir = fresh_dir("metrics_golden_unknown");
  auto g = read_json(std::string(TRNSIM_SOURCE_DIR) + "/tests/golden/rmsnorm.json");
  g["workload"] = example("rmsnorm.json");
  g["summary"]["neuroncore_cycles_count"] = 150935;
  const std::string path = write_file(dir, "golden.json", g.dump(2));
  const Invocation r = trnsim("check --golden " + path + " --out " + dir + "/o", dir);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(path + ": /summary/neuroncore_cycles_count: unknown metric "
                          "\"neuroncore_cycles_count\"; did you mean \"neuroncore_cycle_count\"? "
                          "(trnsim metrics lists them)") != std::string::npos);

  // A host metric is not a summary metric; a tolerance for an unknown metric is refused too.
  g["summary"].erase("neuroncore_cycles_count");
  g["summary"]["device_time"] = 1;
  CHECK(trnsim("check --golden " + write_file(dir, "host.json", g.dump(2)) + " --out " + dir + "/o",
               dir)
            .exit_code == 2);
  g["summary"].erase("device_time");
  g["tolerance"] = {{"default", {{"rel", 0.01}}}, {"dma_transfers", {{"abs", 1}}}};
  const std::string tol = write_file(dir, "tolerance.json", g.dump(2));
  const Invocation t = trnsim("check --golden " + tol + " --out " + dir + "/o", dir);
  INFO(t.err);
  CHECK(t.exit_code == 2);
  CHECK(t.err.find(tol + ": /tolerance/dma_transfers: unknown metric \"dma_transfers\"") !=
        std::string::npos);
  // The same file with the metric spelt right passes.
  g["tolerance"].erase("dma_transfers");
  g["tolerance"]["dma_transfer_count"] = {{"abs", 1}};
  CHECK(trnsim("check --golden " + write_file(dir, "ok.json", g.dump(2)) + " --out " + dir + "/o",
               dir)
            .exit_code == 0);
}
