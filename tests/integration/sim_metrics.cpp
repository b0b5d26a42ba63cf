// The metric table's lookups (sim/report/metrics.hpp): a metric the code names but the table
// does not declare is an UnknownMetric (a programming error) wherever it is read, never a 0;
// a declared metric a run does not have reads as absent.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>

#include "sim/report/explain.hpp"
#include "sim/report/metrics.hpp"
#include "sim/run/check.hpp"

using trnsim::sim::metric;
using trnsim::sim::metric_table;
using trnsim::sim::metric_value;
using trnsim::sim::UnknownMetric;

TEST_CASE("metric lookups: an undeclared id throws, a declared absent one is empty") {
  CHECK(metric("total_time").unit == trnsim::sim::MetricUnit::seconds);
  CHECK(metric("host.total_time").object == "host");
  CHECK_THROWS_AS(metric("total_tme"), UnknownMetric);
  CHECK_THROWS_WITH(metric("total_tme"), Catch::Contains("did you mean \"total_time\""));
  // device_time is a host metric: without "host." it is not declared.
  CHECK_THROWS_AS(metric("device_time"), UnknownMetric);

  const nlohmann::json stats = {{"summary", {{"total_time", 2e-6}, {"hbm_row_hits", 7}}}};
  CHECK(metric_value(stats, "total_time") == 2e-6);
  CHECK(metric_value(stats, "hbm_row_hits") == 7.0);
  CHECK_FALSE(metric_value(stats, "hbm_row_misses").has_value());    // the flow model's case
  CHECK_FALSE(metric_value(stats, "host.device_time").has_value());  // a kernel run
  CHECK_THROWS_AS(metric_value(stats, "hbm_row_hit"), UnknownMetric);
  CHECK_THROWS_AS(trnsim::sim::metric_or_zero(stats, "mbu_percent"), UnknownMetric);
}

TEST_CASE("the metric table: ids unique, every summary row computed, check's defaults declared") {
  std::set<std::string> ids;
  for (const auto& m : metric_table()) {
    INFO(m.id());
    CHECK(ids.insert(m.id()).second);
    CHECK((m.object == "summary" || m.object == "host"));
    CHECK(static_cast<bool>(m.compute) == (m.object == "summary"));
    CHECK_FALSE(m.label.empty());
    CHECK_FALSE(m.description.empty());
    CHECK_FALSE(m.section.empty());
  }
  const auto defaults = trnsim::sim::default_golden_metrics();
  CHECK(defaults.size() == 15);  // cycles, time in ps, 5 engines x 2, DMA count, bytes, time
  for (const std::string& d : defaults) CHECK(metric(d).object == "summary");
}

TEST_CASE(
    "explain and check read through the table: a stats.json without a metric is not an error") {
  // The diagnosis of a stats.json with a bare summary: every metric it reads is declared (an
  // undeclared one would throw here), absent ones read 0.
  const nlohmann::json stats = {{"summary", {{"total_time", 1e-6}}}};
  CHECK_NOTHROW(trnsim::sim::diagnose(stats));
  const nlohmann::json golden = {{"summary", {{"hbm_row_hits", 3}, {"total_time", 1e-6}}}};
  const auto drift = trnsim::sim::compare_to_golden(golden, stats);
  REQUIRE(drift.size() == 1);
  CHECK(drift[0].metric == "hbm_row_hits");
  CHECK(drift[0].missing);
}
