// One run of the simulator: load, lower, validate, simulate, check, report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/io/exit_codes.hpp"

namespace trnsim::sim {

struct RunOptions {
  std::string workload;  // path to workload JSON
  std::string arch;      // preset name; empty: the file's .arch, else trn2
  std::string out = "trnsim-out";
  bool timing_only = false;
  std::vector<std::string> sets;  // "name=value" arch overrides (trnsim params lists them)
  bool perf = false;              // write perf.json (wall times, peak memory; not deterministic)
  std::vector<std::string> trace_filter;  // --trace-filter terms (sim/trace_filter.hpp)
  bool report = true;                     // write report.html (docs/report.md)
};

struct RunOutcome {
  int exit_code = kBadInput;
  nlohmann::json stats;  // stats.json's content, when the run got that far
  std::string summary;   // the printed summary
};

// Runs and writes the outputs; prints only errors (stderr).
RunOutcome execute(const RunOptions& options);

// Prints the summary to stdout and errors to stderr; returns the process exit code.
int run(const RunOptions& options);

}  // namespace trnsim::sim
