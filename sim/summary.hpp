// The printed summary and stats.json: what a person reads first, and what tools read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "isa/arch.hpp"
#include "isa/program.hpp"
#include "sim/stats.hpp"
#include "workloads/lowering.hpp"

namespace trnsim::sim {

struct CheckResult {
  enum class Status { pass, fail, skipped } status = Status::skipped;
  double max_abs_error = 0;
  double max_rel_error = 0;
  uint64_t elements = 0;
  uint64_t mismatches = 0;  // elements outside atol + rtol * |reference|
  workloads::Tolerance tolerance;
};

struct RunReport {
  const workloads::Workload& workload;
  const isa::ArchConfig& arch;
  const workloads::LoweredKernel& kernel;
  const StatsCollector& stats;
  Picoseconds total;
  bool timing_only = false;
  CheckResult check;
  std::string out_dir;
};

nlohmann::json stats_json(const RunReport& r);
std::string summary_text(const RunReport& r);

}  // namespace trnsim::sim
