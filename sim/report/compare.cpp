#include "sim/report/compare.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "sim/io/exit_codes.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/explain.hpp"
#include "sim/report/metrics.hpp"
#include "sim/report/report_html.hpp"

namespace trnsim::sim {

using nlohmann::json;

int compare(const CompareOptions& o) {
  std::vector<json> runs;
  std::vector<std::string> names;
  for (const std::string& d : o.dirs) {
    try {
      runs.push_back(read_run_stats(d));
    } catch (const InputError& e) {
      spdlog::error("{}", e.what());
      return kBadInput;
    }
    names.push_back(runs.back()["workload"].value("name", d));
  }
  // The comparison report, before anything is printed: a run without a report is bad input.
  if (!o.no_report) {
    try {
      std::vector<ReportRun> reports;
      for (const std::string& d : o.dirs) reports.push_back(read_report_run(d));
      const std::filesystem::path parent = std::filesystem::path(o.report).parent_path();
      if (!parent.empty()) make_output_directory(parent.string());
      write_comparison_report(o.report, reports);
    } catch (const InputError& e) {
      spdlog::error("{}", e.what());
      return kBadInput;
    } catch (const OutputError& e) {
      spdlog::error("{}", e.what());
      return kBadInput;
    }
  }
  // Metrics by their id in the metric table (sim/report/metrics.cpp); a run without one (a
  // kernel run has no host metrics) shows 0.
  struct Row {
    std::string label, id;
    double scale;
    const char* unit;
  };
  const std::vector<Row> rows = {
      {"total time", "total_time", 1e6, "us"},
      {"device time", "host.device_time", 1e6, "us"},
      {"host CPU time", "host.host_cpu_time", 1e6, "us"},
      {"kernel launches", "host.kernel_launches", 1, ""},
      {"TensorE active", "tensor_engine_active_time", 1e6, "us"},
      {"VectorE active", "vector_engine_active_time", 1e6, "us"},
      {"ScalarE active", "scalar_engine_active_time", 1e6, "us"},
      {"GpSimdE active", "gpsimd_engine_active_time", 1e6, "us"},
      {"DMA active", "dma_active_time", 1e6, "us"},
      {"DMA transfers", "dma_transfer_count", 1, ""},
      {"HBM read", "hbm_read_bytes", 1.0 / 1048576, "MiB"},
      {"HBM written", "hbm_write_bytes", 1.0 / 1048576, "MiB"},
      {"MBU", "mbu_estimated_percent", 1, "%"},
  };
  if (o.json) {
    json out = json::array();
    for (size_t r = 0; r < runs.size(); ++r) {
      json e = {{"dir", o.dirs[r]}, {"name", names[r]}};
      for (const Row& row : rows) e[metric(row.id).key] = metric_or_zero(runs[r], row.id);
      const auto f = diagnose(runs[r]);
      if (!f.empty()) e["top_finding"] = f.front().cause;
      out.push_back(e);
    }
    // The same JSON with or without a report (its path is --report's).
    std::cout << json{{"runs", out}}.dump(2) << "\n";
    return kSuccess;
  }
  const double base = metric_or_zero(runs.front(), "total_time");
  std::string text = fmt::format("{:<18}", "");
  for (const auto& n : names) text += fmt::format("{:>20}", n.size() > 19 ? n.substr(0, 19) : n);
  text += "\n";
  for (const Row& row : rows) {
    bool any = false;
    for (const json& r : runs) any = any || metric_or_zero(r, row.id) != 0;
    if (!any) continue;
    text += fmt::format("{:<18}", row.label);
    for (const json& r : runs) {
      const double v = metric_or_zero(r, row.id) * row.scale;
      text += fmt::format(
          "{:>20}", row.unit[0] ? fmt::format("{:.1f} {}", v, row.unit) : fmt::format("{:.0f}", v));
    }
    text += "\n";
  }
  text += fmt::format("{:<18}", "vs the first");
  for (const json& r : runs) {
    const double t = metric_or_zero(r, "total_time");
    text += fmt::format("{:>20}", t > 0 ? fmt::format("{:.2f}x faster", base / t) : "-");
  }
  text += "\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto f = diagnose(runs[r]);
    if (f.empty()) continue;
    text += fmt::format("{}: {} (up to {:.1f} us): {}\n", names[r], f.front().cause,
                        f.front().cost_seconds * 1e6, f.front().suggestion);
  }
  if (!o.no_report) {
    text +=
        fmt::format("report: {} (open it in a browser: the runs on one time scale)\n", o.report);
  }
  std::cout << text;
  return kSuccess;
}

}  // namespace trnsim::sim
