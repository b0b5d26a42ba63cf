// The printed summary and stats.json: what a person reads first, and what tools read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "models/chip/simulate.hpp"
#include "sim/report/profile.hpp"
#include "sim/report/stats.hpp"
#include "workloads/lowering.hpp"

namespace trnsim::sim {

using workloads::CheckResult;

struct RunReport {
  const workloads::Workload& workload;
  const config::ArchConfig& arch;
  const workloads::LoweredKernel& kernel;
  const StatsCollector& stats;
  const ProfileCollector& profile;
  const models::SimulationResult& result;
  Picoseconds total;
  bool timing_only = false;
  CheckResult check;
  std::string out_dir;
  std::vector<std::string> npy_files;     // written into out_dir
  bool report_html = false;               // report.html written into out_dir
  std::string trace_file = "trace.json";  // the trace written into out_dir; empty: none
  uint32_t lnc = 1;  // physical cores per logical core: >1, an SPMD grid spread over cores
};

nlohmann::json stats_json(const RunReport& r);
std::string summary_text(const RunReport& r);

}  // namespace trnsim::sim
