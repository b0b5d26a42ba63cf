// One run of the simulator: load, lower, validate, simulate, check, report.
#pragma once

#include <string>

namespace trnsim::sim {

enum ExitCode : int { kSuccess = 0, kCheckFailed = 1, kBadInput = 2 };

struct RunOptions {
  std::string workload;  // path to workload JSON
  std::string arch;      // preset name; empty: the file's .arch, else trn2
  std::string out = "trnsim-out";
  bool timing_only = false;
};

// Prints the summary to stdout and errors to stderr; returns the process exit code.
int run(const RunOptions& options);

}  // namespace trnsim::sim
