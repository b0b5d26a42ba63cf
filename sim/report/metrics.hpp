// The declared metric table: every metric of stats.json's "summary" (and of its "host" object,
// which graph workloads have), with its unit, where it is shown, what it means and how it is
// computed. stats.json's summary is written from it; compare, explain, check, sweep and the
// report page read metrics through it, so that a key the code names but nothing declares is an
// error rather than a silent 0; docs/metrics.md embeds its Markdown listing (`trnsim metrics
// --markdown`), which a test keeps equal to the code.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/report/summary.hpp"

namespace trnsim::sim {

enum class MetricUnit {
  seconds,
  picoseconds,
  cycles,
  count,
  flops,
  percent,
  fraction,  // 0 to 1
  bytes,
  bytes_per_second,
};

// "s", "ps", "cycles", ...: the unit as docs/metrics.md and the report page name it.
std::string_view unit_text(MetricUnit u);

struct Metric {
  std::string object;       // where it sits in stats.json: "summary" or "host"
  std::string key;          // its key there
  MetricUnit unit;          //
  std::string section;      // the heading it is shown under (report page, docs/metrics.md)
  std::string label;        // its short name in the report page
  std::string description;  // formula or meaning; T is total_time
  // The docs row it shares with its siblings ("{tensor,...}_engine_active_time"); empty: its own.
  std::string family;
  // Its value in stats.json, from the run. Empty for the host rows, which ProfileCollector
  // writes with the rest of the host model's output (the table declares them).
  std::function<nlohmann::json(const RunReport&)> compute;
  // Only the detailed memory model has it (rows, refresh, turnarounds): the flow model's
  // stats.json leaves it out rather than report a 0 it did not measure.
  bool detailed_memory_model_only = false;
  bool golden_default = false;  // pinned by a new golden file (trnsim check --update)
  bool time_part = false;       // an engine's or the DMA's active time ("where the time moved")

  // How code names it: the key for the summary, "host.KEY" for the host object (host and
  // summary both have a total_time).
  std::string id() const { return object == "summary" ? key : object + "." + key; }
};

// A metric the code names that the table does not declare: a programming error.
class UnknownMetric : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Every metric, in the order the report page and docs/metrics.md show them.
const std::vector<Metric>& metric_table();

// The metric with this id; throws UnknownMetric if there is none.
const Metric& metric(std::string_view id);
// The metric with this id, or nullptr (for ids from user input, such as a golden file's).
const Metric* find_metric(std::string_view id);
// "unknown metric \"x\"; did you mean \"y\"? (trnsim metrics lists them)".
std::string unknown_metric_text(std::string_view id);

// stats.json's "summary" of a run, row by row from the table.
nlohmann::json summary_json(const RunReport& r);

// Metric `id`'s JSON value in a stats.json as written (an integer stays one), or nullptr when
// this run has none. Throws UnknownMetric for an id the table does not declare.
const nlohmann::json* metric_json(const nlohmann::json& stats, std::string_view id);
// The value of metric `id` in a stats.json, or nullopt when this run has none (the flow memory
// model's row-buffer counters, the host metrics of a kernel run, a non-number). Throws
// UnknownMetric for an id the table does not declare.
std::optional<double> metric_value(const nlohmann::json& stats, std::string_view id);
// The same, with 0 for a metric this run does not have.
double metric_or_zero(const nlohmann::json& stats, std::string_view id);

// Achieved memory bandwidth against what the hardware allows, in bytes per ns (GB/s); the
// summary's DMA and HBM rows and the printed summary share it.
struct MemoryFigures {
  double dma_achieved = 0;  // DMA bytes over the run
  double hbm_achieved = 0;  // HBM bytes read plus written over the run
  double dma_peak = 0;      // every simulated core's DMA engines, theoretical
  double hbm_peak = 0;      // the HBM stacks the simulated cores use
  double limit = 0;         // what the DMA traffic could reach: min of the two, per DMA byte
  double percent_of_limit() const { return limit > 0 ? 100.0 * dma_achieved / limit : 0.0; }
  double percent_of_hbm_peak() const { return hbm_peak > 0 ? 100.0 * hbm_achieved / hbm_peak : 0; }
};
MemoryFigures memory_figures(const RunReport& r);

// The table for people: text (`trnsim metrics`) or Markdown (docs/metrics.md embeds it).
std::string metrics_listing(bool markdown);
// The table for the report page: object, key, unit, section, label, description per metric.
nlohmann::json metric_table_json();

}  // namespace trnsim::sim
