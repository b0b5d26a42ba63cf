// `trnsim compare DIR...`: several runs side by side (e.g. the eager, fused and compiled
// RMSNorm): total and device time, launches, per-engine active time, DMA and HBM traffic, and
// each run's top finding from the diagnosis.
#pragma once

#include <string>
#include <vector>

namespace trnsim::sim {

struct CompareOptions {
  std::vector<std::string> dirs;  // --out directories of finished runs
  bool json = false;
  std::string report = "trnsim-compare/report.html";  // the comparison report (docs/report.md)
  bool no_report = false;
};
int compare(const CompareOptions& o);

}  // namespace trnsim::sim
