// One run of the simulator: load, lower, validate, simulate, check, report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/io/exit_codes.hpp"
#include "sim/io/progress.hpp"
#include "sim/run/load.hpp"

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
  // The trace's format: "json" (trace.json, the default), "perfetto" (trace.pftrace, Perfetto's
  // protobuf trace) or "none" (no trace).
  std::string trace_format = "json";
  // The progress line on stderr (sim/io/progress.hpp): automatic, or forced on or off.
  ProgressMode progress = ProgressMode::automatic;
  // SPMD over a logical core (LNC): the program files of cores 1.. (the NKI tracer's, one per
  // physical core); `workload` is core 0's. The cores share one HBM address space.
  std::vector<std::string> core_programs;
  // A program of this many instructions or more (the kernel's estimate) is lowered while it runs
  // and freed behind the run, so that memory stays flat (kernels that can: engine_stream, matmul,
  // mlp; one core only).
  uint64_t stream_from = workloads::kStreamFromDefault;
};

struct RunOutcome {
  int exit_code = kBadInput;
  nlohmann::json stats;  // stats.json's content, when the run got that far
  std::string summary;   // the printed summary
  // HostData::fetch's tensors after the run (core 0), as bytes in their dtypes.
  std::vector<std::pair<std::string, std::string>> tensors;
};

// Data a caller that is not a file hands a run and takes back (the Python module): inputs as
// bytes in each HBM tensor's dtype, written over what lowering loaded; the tensors to return.
struct HostData {
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::string> fetch;
};

// Runs and writes the outputs; prints only errors (stderr).
RunOutcome execute(const RunOptions& options);
// The same for a workload already loaded and lowered (options.workload only names it in
// messages): what the Python module runs after tracing a kernel.
RunOutcome execute(const RunOptions& options, LoadedWorkload loaded, const HostData& data = {});

// Prints the summary to stdout and errors to stderr; returns the process exit code.
int run(const RunOptions& options);

}  // namespace trnsim::sim
