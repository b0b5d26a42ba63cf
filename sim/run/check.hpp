// `trnsim check`: compares a run's metrics with a golden file, within per-metric tolerances,
// and says where the time moved when they drift. `--update` rewrites the golden file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trnsim::sim {

struct CheckOptions {
  std::string workload;  // empty: the golden file's "workload"
  std::string golden;
  std::string arch;  // empty: the golden file's "arch"
  std::vector<std::string> sets;
  std::string out = "trnsim-out/check";
  bool update = false;
  bool full = false;  // run the functional model too (default: timing only)
};

// Exit code: 0 within tolerance (or updated), 1 drift, 2 bad input.
int check(const CheckOptions& options);

struct Tolerance {
  double abs = 0;
  double rel = 0;
};

struct MetricDrift {
  std::string metric;
  double golden = 0;
  double now = 0;
  Tolerance tolerance;
  bool missing = false;
};

// The metrics of `golden` (its "summary") that `stats` (a stats.json) does not reproduce
// within the golden file's "tolerance" ({"default": {"abs", "rel"}, "<metric>": {...}}).
std::vector<MetricDrift> compare_to_golden(const nlohmann::json& golden,
                                           const nlohmann::json& stats);

// The metrics a new golden file pins: cycle count, total time, per engine instruction count
// and active time, DMA transfers, bytes and active time.
std::vector<std::string> default_golden_metrics();

}  // namespace trnsim::sim
