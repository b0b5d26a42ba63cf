#include "sim/run/check.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "config/arch_file.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/metrics.hpp"
#include "sim/run/load.hpp"
#include "sim/run/run.hpp"
#include "workloads/workload.hpp"

namespace trnsim::sim {

using nlohmann::json;

// The metric table marks them (golden_default).
std::vector<std::string> default_golden_metrics() {
  std::vector<std::string> m;
  for (const Metric& x : metric_table()) {
    if (x.golden_default) m.push_back(x.id());
  }
  return m;
}

namespace {

// A metric's own entry replaces the default entry entirely; missing keys are 0.
Tolerance tolerance_of(const json& golden, const std::string& metric) {
  Tolerance t;
  if (!golden.contains("tolerance") || !golden["tolerance"].is_object()) return t;
  const json& all = golden["tolerance"];
  const char* key = all.contains(metric) ? metric.c_str() : "default";
  if (!all.contains(key) || !all[key].is_object()) return t;
  const json& x = all[key];
  if (x.contains("abs") && x["abs"].is_number()) t.abs = x["abs"].get<double>();
  if (x.contains("rel") && x["rel"].is_number()) t.rel = x["rel"].get<double>();
  return t;
}

std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.6g}", v);
}

std::string change_text(double golden, double now) {
  const double d = now - golden;
  if (golden == 0) return fmt::format("{:+}", number(d));
  return fmt::format("{}{} ({:+.2f}%)", d >= 0 ? "+" : "", number(d), 100.0 * d / golden);
}

// Engine and DMA active times of one run (the table's time_part rows): what a kernel's time is
// made of.
std::vector<std::pair<std::string, double>> time_parts(const json& stats) {
  std::vector<std::pair<std::string, double>> parts;
  for (const Metric& m : metric_table()) {
    if (!m.time_part) continue;
    if (const auto v = metric_value(stats, m.id())) parts.emplace_back(m.id(), *v);
  }
  return parts;
}

void validate_golden(const json& g, const std::string& path) {
  if (!g.is_object()) throw InputError(fmt::format("{}: /: expected a JSON object", path));
  if (!g.contains("summary") || !g["summary"].is_object()) {
    throw InputError(fmt::format("{}: /summary: expected an object of metric: value", path));
  }
  // Metrics of stats.json's summary, as the metric table declares them (trnsim metrics): a
  // misspelt one would otherwise drift as "missing" forever.
  for (const auto& item : g["summary"].items()) {
    if (!item.value().is_number()) {
      throw InputError(fmt::format("{}: /summary/{}: expected a number", path, item.key()));
    }
    const Metric* m = find_metric(item.key());
    if (m == nullptr || m->object != "summary") {
      throw InputError(
          fmt::format("{}: /summary/{}: {}", path, item.key(), unknown_metric_text(item.key())));
    }
  }
  for (const char* key : {"workload", "arch"}) {
    if (g.contains(key) && !g[key].is_string()) {
      throw InputError(fmt::format("{}: /{}: expected a string", path, key));
    }
  }
  if (g.contains("tolerance")) {
    if (!g["tolerance"].is_object())
      throw InputError(fmt::format("{}: /tolerance: expected an object", path));
    for (const auto& item : g["tolerance"].items()) {
      const std::string where = fmt::format("{}: /tolerance/{}", path, item.key());
      const Metric* m = find_metric(item.key());
      if (item.key() != "default" && (m == nullptr || m->object != "summary")) {
        throw InputError(
            fmt::format("{}: {} (or \"default\")", where, unknown_metric_text(item.key())));
      }
      if (!item.value().is_object())
        throw InputError(where + ": expected {\"abs\": x, \"rel\": y}");
      for (const auto& t : item.value().items()) {
        if ((t.key() != "abs" && t.key() != "rel") || !t.value().is_number() ||
            t.value().get<double>() < 0) {
          throw InputError(
              fmt::format("{}/{}: expected abs or rel, a non-negative number", where, t.key()));
        }
      }
    }
  }
}

namespace fs = std::filesystem;

// A golden file names its workload (and an arch file) relative to its own directory, so that
// the pair can move together: a repository checked out elsewhere, a project's source tree.
// Golden files written before named the path as given on the command line (relative to where
// trnsim ran, or absolute); such a relative path still works when the file is not beside the
// golden file but is there from the current directory, with a warning saying how to move on.
std::string path_from_golden(const std::string& stored, const std::string& golden,
                             const char* key) {
  if (stored.empty() || fs::path(stored).is_absolute()) return stored;
  const fs::path beside = (fs::path(golden).parent_path() / stored).lexically_normal();
  std::error_code ec;
  if (fs::exists(beside, ec) || !fs::exists(stored, ec)) return beside.string();
  spdlog::warn(
      "{}: /{}: {} is not beside the golden file; taken from the current directory as golden "
      "files of earlier versions meant it (check --update rewrites it relative to the golden "
      "file)",
      golden, key, stored);
  return stored;
}

// `path` as the golden file stores it: relative to the golden file's directory (absolute only
// when there is no relative way, another drive or root).
std::string path_for_golden(const std::string& path, const std::string& golden) {
  const fs::path target = fs::absolute(path).lexically_normal();
  const fs::path dir = fs::absolute(golden).parent_path().lexically_normal();
  const fs::path rel = target.lexically_relative(dir);
  return rel.empty() ? target.string() : rel.generic_string();
}

}  // namespace

std::vector<MetricDrift> compare_to_golden(const json& golden, const json& stats) {
  std::vector<MetricDrift> drift;
  for (const auto& item : golden["summary"].items()) {
    MetricDrift d;
    d.metric = item.key();
    d.golden = item.value().get<double>();
    d.tolerance = tolerance_of(golden, d.metric);
    // Declared (validate_golden checked it) but not in this run: the flow memory model has no
    // row-buffer counters.
    const std::optional<double> v = metric_value(stats, d.metric);
    if (!v) {
      d.missing = true;
      drift.push_back(d);
      continue;
    }
    d.now = *v;
    if (std::fabs(d.now - d.golden) > d.tolerance.abs + d.tolerance.rel * std::fabs(d.golden)) {
      drift.push_back(d);
    }
  }
  return drift;
}

int check(const CheckOptions& o) {
  try {
    json golden = json::object();
    const bool exists = !read_input_file_if_exists(o.golden, "a golden file").empty();
    if (exists) {
      golden = workloads::parse_json(read_input_file(o.golden, "a golden file"), o.golden);
      validate_golden(golden, o.golden);
    } else if (!o.update) {
      throw InputError(fmt::format("{}: cannot be read (use --update to create it)", o.golden));
    }
    RunOptions run;
    run.workload = !o.workload.empty() ? o.workload
                                       : path_from_golden(golden.value("workload", std::string()),
                                                          o.golden, "workload");
    if (run.workload.empty()) {
      throw InputError(
          fmt::format("{}: /workload: missing; give the workload on the command line", o.golden));
    }
    run.arch = o.arch;
    if (run.arch.empty()) {
      run.arch = golden.value("arch", std::string());
      if (!config::find_preset_spec(run.arch))
        run.arch = path_from_golden(run.arch, o.golden, "arch");
    }
    run.sets = o.sets;
    run.out = o.out;
    run.timing_only = !o.full;
    run.report = false;  // a check compares counts; the page would only cost time
    const RunOutcome r = execute(run);
    if (r.exit_code == kBadInput) return kBadInput;
    const std::string name = r.stats["workload"].value("name", std::string("kernel"));
    const std::string arch_name = r.stats["arch"].value("name", std::string());

    if (o.update) {
      json updated = golden;
      updated["workload"] = path_for_golden(run.workload, o.golden);
      // A preset by name; an arch file by its path, relative to the golden file as the
      // workload's is.
      updated["arch"] = !run.arch.empty() && !config::find_preset_spec(run.arch)
                            ? path_for_golden(run.arch, o.golden)
                            : arch_name;
      std::vector<std::string> metrics;
      if (exists) {
        for (const auto& item : golden["summary"].items()) metrics.push_back(item.key());
      } else {
        metrics = default_golden_metrics();
      }
      json values = json::object();
      std::string changes;
      for (const auto& m : metrics) {
        const json* v = metric_json(r.stats, m);
        if (v == nullptr) continue;  // declared, but not in this run (the flow memory model)
        values[m] = *v;
        if (exists && golden["summary"].contains(m) && golden["summary"][m] != *v) {
          changes +=
              fmt::format("  {:<34} {:>16} -> {:<16} {}\n", m,
                          number(golden["summary"][m].get<double>()), number(v->get<double>()),
                          change_text(golden["summary"][m].get<double>(), v->get<double>()));
        }
      }
      updated["summary"] = values;
      OutputFile f(o.golden);
      f.write(updated.dump(2) + "\n");
      f.commit();
      if (!exists) {
        std::cout << fmt::format("check: created {} with {} metrics of {} ({})\n", o.golden,
                                 values.size(), name, arch_name);
      } else if (changes.empty()) {
        std::cout << fmt::format("check: {} unchanged\n", o.golden);
      } else {
        std::cout << fmt::format("check: updated {}:\n{}", o.golden, changes);
      }
      return kSuccess;
    }

    const std::vector<MetricDrift> drift = compare_to_golden(golden, r.stats);
    if (drift.empty()) {
      std::cout << fmt::format("check: PASS {} ({}): {} metrics within tolerance of {}\n", name,
                               arch_name, golden["summary"].size(), o.golden);
      return r.exit_code;  // 1 if the functional check (--full) failed
    }
    std::string out =
        fmt::format("check: DRIFT {} ({}): {} of {} metrics moved beyond tolerance of {}\n", name,
                    arch_name, drift.size(), golden["summary"].size(), o.golden);
    out += fmt::format("  {:<34} {:>16} {:>16}  {:<26} {}\n", "metric", "golden", "now", "change",
                       "tolerance");
    for (const auto& d : drift) {
      const std::string tol =
          fmt::format("abs {} + rel {}", number(d.tolerance.abs), number(d.tolerance.rel));
      if (d.missing) {
        out += fmt::format("  {:<34} {:>16} {:>16}  {:<26} {}\n", d.metric, number(d.golden),
                           "(missing)", "-", tol);
      } else {
        out += fmt::format("  {:<34} {:>16} {:>16}  {:<26} {}\n", d.metric, number(d.golden),
                           number(d.now), change_text(d.golden, d.now), tol);
      }
    }
    // Where the time moved: the kernel's engine and DMA active times, largest change first.
    std::vector<std::tuple<double, std::string, double, double>> moved;
    for (const auto& [k, now_v] : time_parts(r.stats)) {
      if (!golden["summary"].contains(k)) continue;
      const double g = golden["summary"][k].get<double>();
      if (now_v != g) moved.emplace_back(std::fabs(now_v - g), k, g, now_v);
    }
    std::sort(moved.begin(), moved.end(),
              [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
    if (!moved.empty()) {
      out += fmt::format("  where the time moved in kernel {}:\n", name);
      for (const auto& [mag, k, g, now_v] : moved) {
        (void)mag;
        out += fmt::format("    {:<32} {:>12.3f} us -> {:>12.3f} us  {:+.3f} us\n", k, g * 1e6,
                           now_v * 1e6, (now_v - g) * 1e6);
      }
    }
    out += "  (trnsim check --update rewrites the golden file if the change is intended)\n";
    std::cout << out << std::flush;
    return kCheckFailed;
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
  } catch (const workloads::WorkloadError& e) {
    spdlog::error("{}", e.what());
  } catch (const OutputError& e) {
    spdlog::error("{}", e.what());
  } catch (const std::exception& e) {
    spdlog::error("{}: {}", o.golden, e.what());
  }
  return kBadInput;
}

}  // namespace trnsim::sim
