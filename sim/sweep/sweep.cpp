#include "sim/sweep/sweep.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/json.hpp"
#include "base/names.hpp"
#include "config/arch_file.hpp"
#include "config/parameters.hpp"
#include "sim/io/output_file.hpp"
#include "sim/run/load.hpp"
#include "sim/run/run.hpp"
#include "workloads/workload.hpp"

namespace trnsim::sim {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr size_t kMaxPoints = 100000;
constexpr const char* kVersion = "0.1.0";

const std::vector<std::string> kSweepKeys = {"name", "description", "workloads",   "arch", "set",
                                             "grid", "zip",         "timing_only", "plot"};
const std::vector<std::string> kPlotKeys = {"x", "y", "log_x", "log_y", "title"};

// The stats.json metrics a row carries besides time and cycles, in column order.
const std::vector<std::string> kRowMetrics = {"tensor_engine_active_time_percent",
                                              "vector_engine_active_time_percent",
                                              "scalar_engine_active_time_percent",
                                              "gpsimd_engine_active_time_percent",
                                              "sync_engine_active_time_percent",
                                              "dma_active_time_percent",
                                              "mbu_estimated_percent",
                                              "mfu_estimated_percent",
                                              "hbm_achieved_bytes_per_second",
                                              "dma_achieved_bytes_per_second"};
const std::vector<std::pair<std::string, std::string>> kBusyNames = {
    {"tensor_engine_active_time_percent", "TensorE"},
    {"vector_engine_active_time_percent", "VectorE"},
    {"scalar_engine_active_time_percent", "ScalarE"},
    {"gpsimd_engine_active_time_percent", "GpSimdE"},
    {"sync_engine_active_time_percent", "SyncE"},
    {"dma_active_time_percent", "DMA"}};

// Columns a plot may use as y.
std::vector<std::string> plot_metrics() {
  std::vector<std::string> m = {"total_time_us", "neuroncore_cycle_count", "speedup"};
  m.insert(m.end(), kRowMetrics.begin(), kRowMetrics.end());
  return m;
}

// A bad sweep file: "FILE: WHERE: WHAT".
[[noreturn]] void fail(const std::string& file, const std::string& where, const std::string& what) {
  throw InputError(fmt::format("{}: {}: {}", file, where, what));
}

struct Axis {
  std::vector<std::string> params;               // one for a grid axis, several for a zip group
  std::vector<std::vector<std::string>> values;  // values[i][k]: the i-th step of params[k]
};

struct PlotSpec {
  std::string x, y = "total_time_us", title;
  bool log_x = false, log_y = false;
};

struct SweepSpec {
  std::string file, name, description;
  std::vector<std::string> workloads;       // as written, for the results
  std::vector<std::string> workload_paths;  // absolute, for the runs
  std::string arch;                         // as written
  std::string arch_arg;                     // the runs' --arch: a preset or an absolute path
  config::ArchSpec base;                    // the base arch with the fixed sets applied
  std::vector<std::string> fixed_sets;      // "name=value"
  std::vector<std::string> varied;          // every varied parameter, in column order
  std::vector<Axis> axes;
  bool timing_only = true;
  PlotSpec plot;
};

struct Point {
  size_t index = 0;
  std::string id;  // p000, p001, ...
  size_t workload = 0;
  bool base = false;                // the point speedups of its workload are relative to
  bool extra_base = false;          // the base point, added because no grid point equals it
  std::vector<std::string> values;  // per spec.varied
  std::vector<std::string> sets;    // fixed then varied, "name=value"
  json definition;                  // what the point is, to know a finished one on --resume
};

std::string value_text(const ordered_json& v, const std::string& file, const std::string& where) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  fail(file, where, fmt::format("expected a number or true/false, got {}", v.dump()));
}

// Checks `name`=`text` as --set would, naming the place in the sweep file.
void check_assignment(const std::string& name, const std::string& text, const std::string& file,
                      const std::string& where) {
  try {
    config::ArchConfig scratch;
    config::set_parameter(scratch, name + "=" + text);
  } catch (const std::invalid_argument& e) {
    fail(file, where, e.what());
  }
}

const config::Parameter& checked_parameter(const std::string& name, const std::string& file,
                                           const std::string& where) {
  const config::Parameter* p = config::find_parameter(name);
  if (p == nullptr) fail(file, where, config::unknown_parameter_text(name));
  return *p;
}

void check_keys(const ordered_json& object, const std::vector<std::string>& known,
                const std::string& file, const std::string& where) {
  for (const auto& item : object.items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    const std::string near = base::closest_name(item.key(), known);
    fail(file, where + "/" + item.key(),
         fmt::format("unknown key; expected {}{}", fmt::join(known, ", "),
                     near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
  }
}

std::string stem_of(const std::string& path) {
  return fs::path(path).stem().string();
}

// A path in the sweep file is relative to the file's directory.
std::string resolve(const std::string& path, const std::string& sweep_file) {
  fs::path p(path);
  if (p.is_relative()) p = fs::absolute(sweep_file).parent_path() / p;
  return p.lexically_normal().string();
}

SweepSpec parse_sweep(const std::string& file) {
  const std::string text = read_input_file(file);
  ordered_json doc;
  try {
    doc = base::parse_json_text<ordered_json>(text, file);
  } catch (const base::JsonError& e) {
    throw InputError(e.what());
  }
  if (!doc.is_object())
    fail(file, "/", fmt::format("expected a JSON object, got {}", doc.type_name()));
  check_keys(doc, kSweepKeys, file, "");

  SweepSpec s;
  s.file = file;
  auto string_of = [&](const char* key) {
    if (!doc[key].is_string()) {
      fail(file, fmt::format("/{}", key),
           fmt::format("expected a string, got {}", doc[key].type_name()));
    }
    return doc[key].get<std::string>();
  };
  s.name = doc.contains("name") ? string_of("name") : stem_of(file);
  if (doc.contains("description")) s.description = string_of("description");

  // Workloads: each must exist and, in the kernel form, parse.
  if (!doc.contains("workloads")) {
    fail(file, "/workloads", "missing; expected a workload file or a list of them");
  }
  const ordered_json& w = doc["workloads"];
  std::vector<std::pair<std::string, ordered_json>> listed;
  if (w.is_string()) {
    listed.emplace_back("/workloads", w);
  } else if (w.is_array()) {
    if (w.empty()) fail(file, "/workloads", "empty; expected at least one workload file");
    for (size_t i = 0; i < w.size(); ++i)
      listed.emplace_back(fmt::format("/workloads/{}", i), w[i]);
  } else {
    fail(file, "/workloads",
         fmt::format("expected a workload file or a list of them, got {}", w.type_name()));
  }
  for (const auto& [where, entry] : listed) {
    if (!entry.is_string() || entry.get<std::string>().empty()) {
      fail(file, where, "expected the path of a workload file (relative to the sweep file)");
    }
    const std::string as_written = entry.get<std::string>();
    const std::string path = resolve(as_written, file);
    try {
      const std::string wtext = read_input_file(path);
      const bool program =
          path.size() > 5 && (path.compare(path.size() - 5, 5, ".tasm") == 0 ||
                              wtext.find("\"trnsim-program\"") != std::string::npos);
      if (!program) (void)workloads::parse_workload(wtext, path);
    } catch (const InputError& e) {
      fail(file, where, e.what());
    } catch (const workloads::WorkloadError& e) {
      fail(file, where, e.what());
    }
    if (std::find(s.workload_paths.begin(), s.workload_paths.end(), path) !=
        s.workload_paths.end()) {
      fail(file, where, fmt::format("{} is listed twice", as_written));
    }
    s.workloads.push_back(as_written);
    s.workload_paths.push_back(path);
  }

  // The base arch: a preset name or an arch file relative to the sweep file.
  s.arch = doc.contains("arch") ? string_of("arch") : "trn2";
  s.arch_arg = s.arch;
  if (config::find_preset_spec(s.arch) == nullptr) {
    // A file (relative to the sweep file) if it looks like one; else an unknown preset's name,
    // which load_arch_spec refuses with the nearest preset.
    const std::string path = resolve(s.arch, file);
    std::error_code ec;
    if (s.arch.find('/') != std::string::npos || fs::path(s.arch).extension() == ".json" ||
        fs::exists(path, ec)) {
      s.arch_arg = path;
    }
  }
  try {
    s.base = load_arch_spec(s.arch_arg, {});
  } catch (const InputError& e) {
    fail(file, "/arch", e.what());
  }

  std::map<std::string, std::string> where_of;  // parameter -> where it is set or varied
  auto claim = [&](const std::string& name, const std::string& where) {
    (void)checked_parameter(name, file, where);
    if (where_of.count(name)) {
      fail(file, where, fmt::format("{} is already set or varied at {}", name, where_of[name]));
    }
    where_of[name] = where;
  };

  if (doc.contains("set")) {
    const ordered_json& set = doc["set"];
    if (!set.is_object()) fail(file, "/set", "expected an object of parameter: value");
    for (const auto& item : set.items()) {
      const std::string where = "/set/" + item.key();
      claim(item.key(), where);
      const std::string v = value_text(item.value(), file, where);
      check_assignment(item.key(), v, file, where);
      s.fixed_sets.push_back(item.key() + "=" + v);
      config::set_parameter(s.base, s.fixed_sets.back());
    }
  }

  // A list of values for `name`, each checked as --set would.
  auto values_of = [&](const std::string& name, const ordered_json& list,
                       const std::string& where) {
    if (!list.is_array()) {
      fail(file, where, fmt::format("expected a list of values, got {}", list.type_name()));
    }
    if (list.empty()) fail(file, where, "empty list; expected at least one value");
    std::vector<std::string> out;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = fmt::format("{}/{}", where, i);
      out.push_back(value_text(list[i], file, at));
      check_assignment(name, out.back(), file, at);
    }
    return out;
  };

  if (doc.contains("grid")) {
    const ordered_json& grid = doc["grid"];
    if (!grid.is_object()) fail(file, "/grid", "expected an object of parameter: [values]");
    if (grid.empty()) fail(file, "/grid", "empty; expected at least one parameter: [values]");
    for (const auto& item : grid.items()) {
      const std::string where = "/grid/" + item.key();
      claim(item.key(), where);
      Axis a;
      a.params.push_back(item.key());
      for (const std::string& v : values_of(item.key(), item.value(), where))
        a.values.push_back({v});
      s.axes.push_back(std::move(a));
    }
  }
  if (doc.contains("zip")) {
    const ordered_json& zip = doc["zip"];
    std::vector<std::pair<std::string, const ordered_json*>> groups;
    if (zip.is_object()) {
      groups.emplace_back("/zip", &zip);
    } else if (zip.is_array()) {
      if (zip.empty()) fail(file, "/zip", "empty; expected an object of parameter: [values]");
      for (size_t i = 0; i < zip.size(); ++i)
        groups.emplace_back(fmt::format("/zip/{}", i), &zip[i]);
    } else {
      fail(file, "/zip", "expected an object of parameter: [values] (or a list of such objects)");
    }
    for (const auto& [gwhere, g] : groups) {
      if (!g->is_object()) fail(file, gwhere, "expected an object of parameter: [values]");
      if (g->empty()) fail(file, gwhere, "empty; expected at least one parameter: [values]");
      Axis a;
      size_t length = 0;
      std::string first;
      for (const auto& item : g->items()) {
        const std::string where = gwhere + "/" + item.key();
        claim(item.key(), where);
        const std::vector<std::string> vs = values_of(item.key(), item.value(), where);
        if (a.params.empty()) {
          length = vs.size();
          first = where;
          a.values.resize(length);
        } else if (vs.size() != length) {
          fail(file, where,
               fmt::format("{} value{}, but {} has {}: zipped lists go together, one value "
                           "of each per point",
                           vs.size(), vs.size() == 1 ? "" : "s", first, length));
        }
        a.params.push_back(item.key());
        for (size_t i = 0; i < length; ++i) a.values[i].push_back(vs[i]);
      }
      s.axes.push_back(std::move(a));
    }
  }
  if (s.axes.empty()) {
    fail(file, "/grid",
         "missing; a sweep varies at least one parameter (\"grid\": {\"name\": [values]} or "
         "\"zip\")");
  }
  for (const Axis& a : s.axes) s.varied.insert(s.varied.end(), a.params.begin(), a.params.end());

  if (doc.contains("timing_only")) {
    if (!doc["timing_only"].is_boolean()) fail(file, "/timing_only", "expected true or false");
    s.timing_only = doc["timing_only"].get<bool>();
  }

  s.plot.x = s.varied.front();
  if (doc.contains("plot")) {
    const ordered_json& p = doc["plot"];
    if (!p.is_object()) fail(file, "/plot", "expected an object: x, y, log_x, log_y, title");
    check_keys(p, kPlotKeys, file, "/plot");
    if (p.contains("x")) {
      if (!p["x"].is_string()) fail(file, "/plot/x", "expected a varied parameter's name");
      s.plot.x = p["x"].get<std::string>();
      if (std::find(s.varied.begin(), s.varied.end(), s.plot.x) == s.varied.end()) {
        fail(file, "/plot/x",
             fmt::format("{} is not varied; expected one of {}", s.plot.x,
                         fmt::join(s.varied, ", ")));
      }
    }
    if (p.contains("y")) {
      const std::vector<std::string> m = plot_metrics();
      if (!p["y"].is_string()) fail(file, "/plot/y", "expected a metric's name");
      s.plot.y = p["y"].get<std::string>();
      if (std::find(m.begin(), m.end(), s.plot.y) == m.end()) {
        const std::string near = base::closest_name(s.plot.y, m);
        fail(file, "/plot/y",
             fmt::format("unknown metric; expected one of {}{}", fmt::join(m, ", "),
                         near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
      }
    }
    for (const char* key : {"log_x", "log_y"}) {
      if (!p.contains(key)) continue;
      if (!p[key].is_boolean()) fail(file, fmt::format("/plot/{}", key), "expected true or false");
      (std::string(key) == "log_x" ? s.plot.log_x : s.plot.log_y) = p[key].get<bool>();
    }
    if (p.contains("title")) {
      if (!p["title"].is_string()) fail(file, "/plot/title", "expected a string");
      s.plot.title = p["title"].get<std::string>();
    }
  }
  return s;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// The points in output order: per workload, its added base point (if any), then the grid in
// the file's order, the last axis varying fastest.
std::vector<Point> expand(const SweepSpec& s, bool timing_only) {
  size_t per_workload = 1;
  for (const Axis& a : s.axes) {
    per_workload *= a.values.size();
    if (per_workload > kMaxPoints) break;
  }
  if (per_workload * s.workloads.size() > kMaxPoints) {
    fail(s.file, "/grid", fmt::format("more than {} points; split the sweep", kMaxPoints));
  }
  const auto& table = config::parameters();
  std::vector<Point> points;
  for (size_t w = 0; w < s.workloads.size(); ++w) {
    std::vector<Point> block;
    for (size_t flat = 0; flat < per_workload; ++flat) {
      Point p;
      p.workload = w;
      size_t rest = flat;
      std::vector<size_t> steps(s.axes.size());
      for (size_t a = s.axes.size(); a-- > 0;) {
        steps[a] = rest % s.axes[a].values.size();
        rest /= s.axes[a].values.size();
      }
      for (size_t a = 0; a < s.axes.size(); ++a) {
        for (const std::string& v : s.axes[a].values[steps[a]]) p.values.push_back(v);
      }
      block.push_back(std::move(p));
    }
    // The base: the first grid point whose varied values are the base arch's, else one added.
    int base_at = -1;
    for (size_t i = 0; i < block.size() && base_at < 0; ++i) {
      bool same = true;
      for (size_t k = 0; k < s.varied.size() && same; ++k) {
        const config::Parameter& p = *config::find_parameter(s.varied[k]);
        config::ArchConfig c = s.base.config;
        config::set_parameter(c, s.varied[k] + "=" + block[i].values[k]);
        same = p.get(c) == p.get(s.base.config);
      }
      if (same) base_at = static_cast<int>(i);
    }
    if (base_at < 0) {
      Point b;
      b.workload = w;
      b.extra_base = true;
      for (const std::string& name : s.varied) {
        b.values.push_back(
            config::parameter_value_text(*config::find_parameter(name), s.base.config));
      }
      block.insert(block.begin(), std::move(b));
      base_at = 0;
    }
    block[base_at].base = true;
    for (Point& p : block) points.push_back(std::move(p));
  }

  std::vector<std::string> workload_hashes;
  for (const std::string& path : s.workload_paths) {
    workload_hashes.push_back(fmt::format("{:016x}", fnv1a(read_input_file(path))));
  }
  // Every point's full --set list, checked as the run will check it.
  for (size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    p.index = i;
    p.id = fmt::format("p{:0{}}", i, points.size() > 1000 ? 5 : 3);
    p.sets = s.fixed_sets;
    if (!p.extra_base) {
      for (size_t k = 0; k < s.varied.size(); ++k)
        p.sets.push_back(s.varied[k] + "=" + p.values[k]);
    }
    config::ArchSpec arch = s.base;
    try {
      for (const std::string& set : p.sets) config::set_parameter(arch, set);
    } catch (const std::invalid_argument& e) {
      fail(s.file, fmt::format("point {}", p.id), e.what());
    }
    if (const std::string e = config::arch_consistency_error(arch.config); !e.empty()) {
      std::string values;
      for (size_t k = 0; k < s.varied.size() && !p.extra_base; ++k) {
        values += fmt::format(" {}={}", s.varied[k], p.values[k]);
      }
      fail(s.file, fmt::format("point {} ({})", p.id, values.empty() ? "base" : values.substr(1)),
           e);
    }
    json params = json::object();
    for (const auto& t : table)
      params[std::string(t.name)] = config::parameter_value_text(t, arch.config);
    p.definition = {{"trnsim_version", kVersion},
                    {"workload", s.workload_paths[p.workload]},
                    {"workload_fnv1a", workload_hashes[p.workload]},
                    {"arch", s.arch_arg},
                    {"sets", p.sets},
                    {"timing_only", timing_only},
                    {"arch_parameters", params}};
  }
  return points;
}

// ---- Running the points ------------------------------------------------------------------

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw OutputError("cannot find the trnsim executable (/proc/self/exe)");
  buf[n] = '\0';
  return buf;
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return {};
  try {
    return read_input_file(path);
  } catch (const std::exception&) {
    return {};
  }
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// The child's error output as one line: "trnsim: error: " prefixes dropped, lines joined.
std::string error_line(const std::string& err) {
  std::string out;
  size_t from = 0;
  while (from < err.size()) {
    size_t nl = err.find('\n', from);
    if (nl == std::string::npos) nl = err.size();
    std::string line = err.substr(from, nl - from);
    from = nl + 1;
    for (const char* prefix : {"trnsim: error: ", "trnsim: warning: "}) {
      if (line.rfind(prefix, 0) == 0) line = line.substr(std::strlen(prefix));
    }
    if (line.empty() || line.rfind("usage:", 0) == 0 || line.rfind("       ", 0) == 0) continue;
    out += (out.empty() ? "" : " | ") + line;
  }
  if (out.size() > 600) out = out.substr(0, 597) + "...";
  return out;
}

json number_or_null(const json& summary, const std::string& key) {
  return summary.contains(key) && summary[key].is_number() ? summary[key] : json();
}

// The row of a finished point (its stats.json and exit status).
json make_row(const SweepSpec& s, const Point& p, int exit_code, const std::string& error,
              const json& stats) {
  json row = json::object();
  row["point"] = p.id;
  row["workload"] = s.workloads[p.workload];
  json params = json::object();
  config::ArchConfig c = s.base.config;
  for (const std::string& set : p.sets) config::set_parameter(c, set);
  for (const std::string& name : s.varied) {
    const config::Parameter& t = *config::find_parameter(name);
    const double v = t.get(c);
    switch (t.kind) {
      case config::Parameter::Kind::flag:
        params[name] = v != 0;
        break;
      case config::Parameter::Kind::integer:
        params[name] = static_cast<uint64_t>(v);
        break;
      case config::Parameter::Kind::real:
        params[name] = v;
        break;
    }
  }
  row["parameters"] = params;
  row["base"] = p.base;
  const bool has_stats = stats.is_object() && stats.contains("summary");
  row["status"] = exit_code == 0 ? "ok" : exit_code == 1 && has_stats ? "check failed" : "failed";
  row["exit_code"] = exit_code;
  row["error"] = error;
  if (has_stats) {
    const json& sm = stats["summary"];
    row["kernel"] = stats["workload"].value("name", std::string());
    row["total_time_us"] = sm.value("total_time_ps", int64_t{0}) / 1e6;
    row["neuroncore_cycle_count"] = number_or_null(sm, "neuroncore_cycle_count");
    json metrics = json::object();
    std::string busiest;
    double most = -1;
    for (const std::string& m : kRowMetrics) metrics[m] = number_or_null(sm, m);
    for (const auto& [m, name] : kBusyNames) {
      if (metrics[m].is_number() && metrics[m].get<double>() > most) {
        most = metrics[m].get<double>();
        busiest = name;
      }
    }
    row["busiest"] = busiest;
    row["metrics"] = metrics;
  } else {
    row["kernel"] = "";
    row["total_time_us"] = nullptr;
    row["neuroncore_cycle_count"] = nullptr;
    row["busiest"] = "";
    json metrics = json::object();
    for (const std::string& m : kRowMetrics) metrics[m] = nullptr;
    row["metrics"] = metrics;
  }
  return row;
}

struct PointFiles {
  std::string dir, definition, result, stats, out, err;
};

PointFiles files_of(const std::string& out_dir, const Point& p) {
  const std::string d = out_dir + "/points/" + p.id;
  return {d,
          d + "/point.json",
          d + "/result.json",
          d + "/stats.json",
          d + "/stdout.txt",
          d + "/stderr.txt"};
}

// A finished point's row from an earlier run, when it is this very point and it ran.
std::optional<json> reusable(const PointFiles& f, const Point& p) {
  const std::string text = read_text(f.result);
  if (text.empty() || !fs::exists(f.stats)) return std::nullopt;
  try {
    const json r = json::parse(text);
    if (r.at("point") != p.definition) return std::nullopt;
    const json& row = r.at("row");
    if (row.at("status") == "failed") return std::nullopt;
    return row;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void write_file(const std::string& path, const std::string& text) {
  OutputFile f(path);
  f.write(text);
  f.commit();
}

class Progress {
 public:
  Progress(size_t total, int rank, int ranks)
      : total_(total),
        rank_(rank),
        ranks_(ranks),
        tty_(::isatty(STDERR_FILENO) != 0),
        start_(std::chrono::steady_clock::now()) {}

  void started() {
    ++running_;
    show();
  }
  void reused(size_t n) {
    reused_ += n;
    done_ += n;
    show();
  }
  void finished(const std::string& id, const std::string& label, const json& row) {
    --running_;
    ++done_;
    const bool failed = row["status"] != "ok";
    if (failed) ++failed_;
    std::string line;
    if (failed) {
      line = fmt::format("{}point {} ({}) {}: {}", prefix(), id, label,
                         row["status"].get<std::string>(), row["error"].get<std::string>());
    } else if (!tty_) {
      line = fmt::format("{}[{}/{}] {} {}: {:.3f} us", prefix(), done_, total_, id, label,
                         row["total_time_us"].get<double>());
    }
    if (!line.empty()) {
      clear();
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    show();
  }
  void end() {
    if (tty_ && shown_) {
      clear();
    }
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), status().c_str());
    std::fflush(stderr);
  }

 private:
  std::string prefix() const {
    return ranks_ > 1 ? fmt::format("sweep: rank {} of {}: ", rank_, ranks_) : "sweep: ";
  }
  std::string status() const {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return fmt::format("{}/{} points done ({} running, {} failed, {} reused), {:.1f} s", done_,
                       total_, running_, failed_, reused_, s);
  }
  void clear() {
    if (tty_ && shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }
  void show() {
    if (!tty_) return;
    clear();
    std::fprintf(stderr, "%s%s", prefix().c_str(), status().c_str());
    std::fflush(stderr);
    shown_ = true;
  }

  size_t total_, done_ = 0, running_ = 0, failed_ = 0, reused_ = 0;
  int rank_, ranks_;
  bool tty_, shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

// The running points' process ids, for the signal handler: an interrupted sweep (Ctrl-C, a
// batch system's SIGTERM, mpirun forwarding one to its ranks) stops its points too, so that
// none runs on unattended; --resume redoes them.
constexpr int kMaxJobs = 4096;
volatile pid_t g_children[kMaxJobs] = {};

extern "C" void forward_signal(int sig) {
  for (int i = 0; i < kMaxJobs; ++i) {
    if (g_children[i] > 0) ::kill(g_children[i], sig);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void track(pid_t pid, bool running) {
  for (int i = 0; i < kMaxJobs; ++i) {
    if (running ? g_children[i] == 0 : g_children[i] == pid) {
      g_children[i] = running ? pid : 0;
      return;
    }
  }
}

std::string label_of(const SweepSpec& s, const Point& p) {
  std::string l = fs::path(s.workloads[p.workload]).filename().string();
  for (size_t k = 0; k < s.varied.size(); ++k) l += fmt::format(" {}={}", s.varied[k], p.values[k]);
  return l;
}

// Runs `mine` (indices into points), at most `jobs` child processes at once. Returns the rows.
std::map<size_t, json> run_points(const SweepSpec& s, const std::vector<Point>& points,
                                  const std::vector<size_t>& mine, const SweepOptions& o,
                                  bool timing_only, const std::string& out_dir, int rank,
                                  int ranks) {
  std::map<size_t, json> rows;
  Progress progress(mine.size(), rank, ranks);
  std::vector<size_t> todo;
  size_t reused = 0;
  for (size_t i : mine) {
    const PointFiles f = files_of(out_dir, points[i]);
    if (o.resume) {
      if (auto row = reusable(f, points[i])) {
        rows[i] = *row;
        ++reused;
        continue;
      }
    }
    todo.push_back(i);
  }
  if (reused) progress.reused(reused);

  const std::string exe = self_executable();
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, forward_signal);
  std::map<pid_t, size_t> running;
  size_t next = 0;
  auto start = [&](size_t i) {
    const Point& p = points[i];
    const PointFiles f = files_of(out_dir, p);
    std::error_code ec;
    fs::remove_all(f.dir, ec);
    make_output_directory(f.dir);
    write_file(f.definition, p.definition.dump(2) + "\n");
    std::vector<std::string> args = {
        exe, "run", s.workload_paths[p.workload], "--arch", s.arch_arg, "--out", f.dir,
        // A point's results are its row; a page per point would only cost time and disk.
        "--no-report"};
    if (timing_only) args.push_back("--timing-only");
    for (const std::string& set : p.sets) {
      args.push_back("--set");
      args.push_back(set);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0)
      throw OutputError(fmt::format("cannot start a point: fork: {}", std::strerror(errno)));
    if (pid == 0) {
      // The child: only async-signal-safe calls until exec.
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(f.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(f.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) ::_exit(126);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::execv(exe.c_str(), argv.data());
      static const char msg[] = "trnsim: error: cannot execute the trnsim binary\n";
      (void)!::write(2, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    running[pid] = i;
    track(pid, true);
    progress.started();
  };
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && static_cast<int>(running.size()) < o.jobs) start(todo[next++]);
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw OutputError(fmt::format("waiting for the points: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second;
    running.erase(it);
    track(pid, false);
    const Point& p = points[i];
    const PointFiles f = files_of(out_dir, p);
    int code = 2;
    std::string error;
    if (WIFEXITED(status)) {
      code = WEXITSTATUS(status);
      if (code != 0) error = error_line(read_text(f.err));
      if (code == 126 || code == 127) {
        error = error.empty() ? "the trnsim binary could not be started" : error;
      }
    } else if (WIFSIGNALED(status)) {
      code = 128 + WTERMSIG(status);
      error =
          fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    json stats;
    if (code == 0 || code == 1) {
      try {
        stats = json::parse(read_text(f.stats));
      } catch (const std::exception&) {
        code = 2;
        error = "the run left no readable stats.json";
      }
    }
    if (code != 0 && code != 1 && error.empty()) error = fmt::format("exit code {}", code);
    // Paths as the sweep file wrote them, so that results do not depend on where it lies.
    replace_all(error, s.workload_paths[p.workload], s.workloads[p.workload]);
    if (s.arch_arg != s.arch) replace_all(error, s.arch_arg, s.arch);
    const json row = make_row(s, p, code, error, stats);
    write_file(f.result, json{{"point", p.definition}, {"row", row}}.dump(2) + "\n");
    rows[i] = row;
    progress.finished(p.id, label_of(s, p), row);
  }
  progress.end();
  return rows;
}

// ---- Results ------------------------------------------------------------------------------

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

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
  for (const std::string& name : s.varied)
    units[name] = std::string(config::find_parameter(name)->unit);
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

std::string gnuplot_path() {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t from = 0;
  while (from <= p.size()) {
    size_t colon = p.find(':', from);
    if (colon == std::string::npos) colon = p.size();
    const std::string dir = p.substr(from, colon - from);
    from = colon + 1;
    if (dir.empty()) continue;
    const std::string candidate = dir + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::string gnuplot_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

double row_value(const json& r, const std::string& metric) {
  if (metric == "total_time_us" || metric == "neuroncore_cycle_count" || metric == "speedup") {
    return r[metric].is_number() ? r[metric].get<double>() : NAN;
  }
  const json& v = r["metrics"][metric];
  return v.is_number() ? v.get<double>() : NAN;
}

std::string metric_label(const std::string& m) {
  if (m == "total_time_us") return "total time (us)";
  if (m == "neuroncore_cycle_count") return "NeuronCore cycles";
  if (m == "speedup") return "speedup over the base point";
  return m;
}

// Writes plot.dat and plot.gp and runs gnuplot for plot.svg; returns what to tell the user.
std::string plot(const SweepSpec& s, const std::vector<json>& rows, const std::string& out_dir) {
  // The parameters that move with x (x's own axis: itself, or its zip group).
  std::set<std::string> with_x;
  for (const Axis& a : s.axes) {
    if (std::find(a.params.begin(), a.params.end(), s.plot.x) != a.params.end()) {
      with_x.insert(a.params.begin(), a.params.end());
    }
  }
  // One series per workload and values of the other varied parameters, in first-seen order.
  std::vector<std::string> titles;
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  for (const json& r : rows) {
    const double y = row_value(r, s.plot.y);
    const json& xv = r["parameters"][s.plot.x];
    if (std::isnan(y) || r["status"] == "failed") continue;
    const double x = xv.is_boolean() ? (xv.get<bool>() ? 1 : 0) : xv.get<double>();
    std::string title = fs::path(r["workload"].get<std::string>()).stem().string();
    for (size_t k = 0; k < s.varied.size(); ++k) {
      if (with_x.count(s.varied[k])) continue;
      title += fmt::format(" {}={}", s.varied[k], json_text(r["parameters"][s.varied[k]]));
    }
    if (!series.count(title)) titles.push_back(title);
    series[title].emplace_back(x, y);
  }
  if (titles.empty()) return "plot: skipped, no point finished";
  std::string dat;
  for (const std::string& t : titles) {
    auto& pts = series[t];
    std::stable_sort(pts.begin(), pts.end());
    dat += "# " + t + "\n";
    for (const auto& [x, y] : pts) dat += fmt::format("{} {}\n", x, y);
    dat += "\n\n";
  }
  const std::string unit(config::find_parameter(s.plot.x)->unit);
  std::string gp;
  gp += "# Generated by trnsim sweep: gnuplot plot.gp (in this directory) redraws plot.svg.\n";
  gp += "set terminal svg size 800,500 dynamic font 'Helvetica,13' background rgb 'white'\n";
  gp += "set output 'plot.svg'\n";
  gp += "set termoption noenhanced\n";
  gp += fmt::format(
      "set title {}\n",
      gnuplot_string(s.plot.title.empty() ? fmt::format("{}: {} against {}", s.name,
                                                        metric_label(s.plot.y), s.plot.x)
                                          : s.plot.title));
  gp +=
      fmt::format("set xlabel {}\n",
                  gnuplot_string(unit.empty() ? s.plot.x : fmt::format("{} ({})", s.plot.x, unit)));
  gp += fmt::format("set ylabel {}\n", gnuplot_string(metric_label(s.plot.y)));
  gp += "set grid\nset key outside bottom center horizontal\n";
  if (s.plot.log_x) gp += "set logscale x 2\n";
  if (s.plot.log_y) gp += "set logscale y\n";
  if (!s.plot.log_y) gp += "set yrange [0:*]\n";
  gp += "plot ";
  for (size_t i = 0; i < titles.size(); ++i) {
    gp += fmt::format("{}'plot.dat' index {} using 1:2 with linespoints lw 2 pt 7 title {}",
                      i ? ", \\\n     " : "", i, gnuplot_string(titles[i]));
  }
  gp += "\n";
  write_file(out_dir + "/plot.dat", dat);
  write_file(out_dir + "/plot.gp", gp);

  const std::string gnuplot = gnuplot_path();
  if (gnuplot.empty()) {
    return fmt::format(
        "plot: gnuplot is not installed, so no plot.svg (apt-get install gnuplot-nox; then "
        "gnuplot plot.gp in {})",
        out_dir);
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(out_dir.c_str()) != 0) ::_exit(126);
    const int null = ::open("/dev/null", O_RDWR);
    const int log = ::open("plot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
    }
    if (log >= 0) ::dup2(log, 2);
    ::execl(gnuplot.c_str(), "gnuplot", "plot.gp", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fmt::format("plot: gnuplot failed on {0}/plot.gp (see {0}/plot.log); no plot.svg",
                       out_dir);
  }
  return fmt::format("plot: {}/plot.svg", out_dir);
}

// Removes point directories of an earlier, larger sweep (only ones a sweep made).
void remove_stale_points(const std::string& out_dir, const std::vector<Point>& points) {
  std::set<std::string> current;
  for (const Point& p : points) current.insert(p.id);
  std::error_code ec;
  const fs::path dir = fs::path(out_dir) / "points";
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && !current.count(e.path().filename().string()) &&
        fs::exists(e.path() / "point.json")) {
      stale.push_back(e.path());
    }
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

}  // namespace

int sweep(const SweepOptions& o, SweepComm& comm) {
  const int rank = comm.rank(), ranks = comm.size();
  SweepSpec spec;
  std::vector<Point> points;
  std::string out_dir = o.out;
  bool timing_only = true;
  std::string error;
  try {
    if (o.jobs < 1 || o.jobs > kMaxJobs) {
      throw InputError(fmt::format("-j {}: expected 1 to {}", o.jobs, kMaxJobs));
    }
    spec = parse_sweep(o.file);
    if (o.full && o.timing_only) throw InputError("--full and --timing-only: expected one of them");
    timing_only = o.full ? false : o.timing_only ? true : spec.timing_only;
    points = expand(spec, timing_only);
    if (out_dir.empty()) out_dir = "trnsim-sweep/" + stem_of(o.file);
    if (rank == 0) {
      make_output_directory(out_dir + "/points");
      if (!o.resume) remove_stale_points(out_dir, points);
    }
  } catch (const InputError& e) {
    error = e.what();
  } catch (const OutputError& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = fmt::format("{}: {}", o.file, e.what());
  }
  // Every rank read the file; if any could not, none runs anything.
  const std::vector<std::string> errors = comm.gather(error);
  int status = kSuccess;
  if (rank == 0) {
    for (size_t r = 0; r < errors.size(); ++r) {
      if (errors[r].empty()) continue;
      spdlog::error("{}{}", r > 0 ? fmt::format("rank {}: ", r) : "", errors[r]);
      status = kBadInput;
      break;
    }
  }
  if (comm.broadcast(status) != kSuccess) return kBadInput;

  std::vector<size_t> mine;
  for (size_t i = 0; i < points.size(); ++i) {
    if (static_cast<int>(i % ranks) == rank) mine.push_back(i);
  }
  if (rank == 0) {
    std::fprintf(stderr, "sweep: %s: %zu points%s, -j %d, outputs in %s%s\n", spec.name.c_str(),
                 points.size(), ranks > 1 ? fmt::format(" over {} MPI ranks", ranks).c_str() : "",
                 o.jobs, out_dir.c_str(), o.resume ? " (resuming)" : "");
  }
  std::map<size_t, json> rows;
  std::string run_error;
  try {
    make_output_directory(out_dir + "/points");
    rows = run_points(spec, points, mine, o, timing_only, out_dir, rank, ranks);
  } catch (const std::exception& e) {
    run_error = e.what();
  }

  // Rank 0 gathers every rank's rows and writes the outputs.
  json mine_json = json::object();
  mine_json["error"] = run_error;
  json list = json::array();
  for (const auto& [i, row] : rows) list.push_back({{"index", i}, {"row", row}});
  mine_json["rows"] = list;
  const std::vector<std::string> all = comm.gather(mine_json.dump());
  int code = kSuccess;
  if (rank == 0) {
    try {
      std::vector<json> ordered(points.size());
      std::vector<bool> have(points.size(), false);
      for (size_t r = 0; r < all.size(); ++r) {
        const json part = json::parse(all[r]);
        if (!part["error"].get<std::string>().empty()) {
          throw OutputError(fmt::format("{}{}", r > 0 ? fmt::format("rank {}: ", r) : "",
                                        part["error"].get<std::string>()));
        }
        for (const json& e : part["rows"]) {
          const size_t i = e["index"].get<size_t>();
          ordered.at(i) = e["row"];
          have.at(i) = true;
        }
      }
      for (size_t i = 0; i < points.size(); ++i) {
        if (!have[i]) throw OutputError(fmt::format("point {} has no result", points[i].id));
      }
      add_speedups(ordered);
      size_t failed = 0;
      for (const json& r : ordered) failed += r["status"] != "ok";
      write_file(out_dir + "/results.csv", csv_text(spec, ordered));
      write_file(out_dir + "/results.json",
                 results_json(spec, timing_only, ordered).dump(2) + "\n");
      const std::string table = table_text(spec, ordered);
      write_file(out_dir + "/table.txt", table);
      const std::string plot_note = plot(spec, ordered, out_dir);
      std::cout << fmt::format("sweep {}: {} points, {} ok, {} failed; * marks the base point\n",
                               spec.name, ordered.size(), ordered.size() - failed, failed)
                << table
                << fmt::format("results: {0}/results.csv, {0}/results.json\n{1}\n", out_dir,
                               plot_note)
                << std::flush;
      code = failed ? kCheckFailed : kSuccess;
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      code = kBadInput;
    }
  }
  return comm.broadcast(code);
}

int launcher_ranks() {
  // OpenMPI's mpirun, MPICH/Hydra and PMI-1/2 launchers, or srun with PMIx (size: Slurm's).
  const bool pmix = std::getenv("PMIX_RANK") != nullptr;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", pmix ? "SLURM_NTASKS" : nullptr}) {
    if (var == nullptr) continue;
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return pmix ? 2 : 1;  // under PMIx with no size known: more than one, to be safe
}

}  // namespace trnsim::sim
