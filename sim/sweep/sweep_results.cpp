// `trnsim sweep`: the results, one row per point, as CSV, JSON and the printed table.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "config/parameters.hpp"
#include "sim/sweep/sweep_internal.hpp"

namespace trnsim::sim::sweep_internal {

namespace fs = std::filesystem;

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string json_text(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

// Speedups against each workload's base point.
void add_speedups(std::vector<json>& rows) {
  std::map<std::string, double> base;
  for (const json& r : rows) {
    if (r["base"].get<bool>() && r["total_time_us"].is_number()) {
      base[r["workload"].get<std::string>()] = r["total_time_us"].get<double>();
    }
  }
  for (json& r : rows) {
    const auto it = base.find(r["workload"].get<std::string>());
    if (it != base.end() && r["total_time_us"].is_number() &&
        r["total_time_us"].get<double>() > 0) {
      r["speedup"] = it->second / r["total_time_us"].get<double>();
    } else {
      r["speedup"] = nullptr;
    }
  }
}

std::string csv_text(const SweepSpec& s, const std::vector<json>& rows) {
  std::vector<std::string> header = {"point", "workload", "base"};
  header.insert(header.end(), s.varied.begin(), s.varied.end());
  header.insert(header.end(),
                {"status", "total_time_us", "neuroncore_cycle_count", "speedup", "busiest"});
  header.insert(header.end(), kRowMetrics.begin(), kRowMetrics.end());
  header.push_back("error");
  std::string out;
  for (size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + csv_field(header[i]);
  out += "\n";
  for (const json& r : rows) {
    std::vector<std::string> f = {r["point"].get<std::string>(), r["workload"].get<std::string>(),
                                  r["base"].get<bool>() ? "yes" : ""};
    for (const std::string& name : s.varied) f.push_back(json_text(r["parameters"][name]));
    f.push_back(r["status"].get<std::string>());
    f.push_back(json_text(r["total_time_us"]));
    f.push_back(json_text(r["neuroncore_cycle_count"]));
    f.push_back(json_text(r["speedup"]));
    f.push_back(r["busiest"].get<std::string>());
    for (const std::string& m : kRowMetrics) f.push_back(json_text(r["metrics"][m]));
    f.push_back(r["error"].get<std::string>());
    for (size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + csv_field(f[i]);
    out += "\n";
  }
  return out;
}

json results_json(const SweepSpec& s, bool timing_only, const std::vector<json>& rows) {
  json units = json::object();
  for (const std::string& name : s.varied) units[name] = axis_unit(name);
  return {{"trnsim_version", kVersion},
          {"sweep", s.name},
          {"description", s.description},
          {"arch", s.arch},
          {"set", s.fixed_sets},
          {"timing_only", timing_only},
          {"parameters", s.varied},
          {"units", units},
          {"points", rows}};
}

std::string table_text(const SweepSpec& s, const std::vector<json>& rows) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"point", "workload"};
  header.insert(header.end(), s.varied.begin(), s.varied.end());
  header.insert(header.end(), {"time us", "cycles", "speedup", "busiest", "MBU%", "status"});
  cells.push_back(header);
  for (const json& r : rows) {
    std::vector<std::string> c = {
        r["point"].get<std::string>() + (r["base"].get<bool>() ? "*" : ""),
        fs::path(r["workload"].get<std::string>()).filename().string()};
    for (const std::string& name : s.varied) c.push_back(json_text(r["parameters"][name]));
    const bool ran = r["total_time_us"].is_number();
    c.push_back(ran ? fmt::format("{:.2f}", r["total_time_us"].get<double>()) : "-");
    c.push_back(ran ? json_text(r["neuroncore_cycle_count"]) : "-");
    c.push_back(r["speedup"].is_number() ? fmt::format("{:.2f}x", r["speedup"].get<double>())
                                         : "-");
    c.push_back(ran ? r["busiest"].get<std::string>() : "-");
    const json& mbu = r["metrics"]["mbu_estimated_percent"];
    c.push_back(mbu.is_number() ? fmt::format("{:.1f}", mbu.get<double>()) : "-");
    c.push_back(r["status"].get<std::string>());
    cells.push_back(std::move(c));
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  // Numbers right-aligned; point, workload, busiest and status left-aligned.
  const size_t first_number = 2, busiest = header.size() - 3, status = header.size() - 1;
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const bool left = i < first_number || i == busiest || i == status;
      line += (i ? "  " : "") + (left ? fmt::format("{:<{}}", row[i], width[i])
                                      : fmt::format("{:>{}}", row[i], width[i]));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace trnsim::sim::sweep_internal
