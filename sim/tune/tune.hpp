// `trnsim tune WORKLOAD`: searches the workload's declared choices (its kernel's ParamSpace, a
// graph's, or a Python NKI kernel's declared parameters) with the simulator as the cost model,
// and `trnsim explain --apply WORKLOAD`: the closed loop, each suggestion of the diagnosis that
// maps to a parameter change simulated and its measured gain reported. docs/tune.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/run/nki_kernel.hpp"
#include "sim/sweep/sweep.hpp"

namespace trnsim::sim {

struct TuneOptions {
  std::string workload;  // a workload JSON (kernel or graph form) or an NKI kernel.py
  std::string arch;      // preset or arch file; empty: trn2
  std::vector<std::string> sets;
  uint64_t budget = 100;  // evaluations (simulations), when neither it nor --time is given
  bool budget_given = false;
  std::string time;  // wall-time limit of the search: "600", "90s", "10m", "1h"
  int jobs = 1;
  std::string out;  // empty: trnsim-tune/<the workload's name>
  bool resume = false;
  uint64_t seed = 1;
  size_t batch = 8;  // points proposed at once (more when -j times the ranks is larger)
  std::vector<std::string> fixes;  // "name=value": that parameter is not searched
  bool exhaustive = false;         // every valid point on both fidelities (reference tables)
  size_t top = 5;
  bool check = true;     // re-run the winner functionally; it must pass its check
  bool json = false;     // print results.json instead of the text
  NkiKernelOptions nki;  // a kernel.py's kernel, inputs and grid
};

// Exit code: 0 the search ran and its winner passes its functional check (or could not be
// checked, which it says); 1 the winner failed its check; 2 bad input or options, an empty
// space, a space whose every point is invalid.
int tune(const TuneOptions& options, SweepComm& comm);

// `trnsim tune --list KERNEL|WORKLOAD`: the space, its parameters and its size. A kernel name
// lists the space of an example shape (trnsim tune --list rmsnorm).
int list_space(const std::string& what, const TuneOptions& options);

struct ApplyOptions {
  std::string workload;
  std::string arch;
  std::vector<std::string> sets;
  std::string out;  // empty: trnsim-explain/<the workload's name>
  int jobs = 1;
  bool json = false;
  NkiKernelOptions nki;
};
// `trnsim explain --apply WORKLOAD`: runs the workload, diagnoses it, and simulates each
// suggestion that maps to a parameter change; the findings come back with their measured gains,
// best first. Exit 2 for bad input.
int explain_apply(const ApplyOptions& options);

}  // namespace trnsim::sim
