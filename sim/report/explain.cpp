#include "sim/report/explain.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "base/json.hpp"
#include "sim/io/exit_codes.hpp"
#include "sim/io/input_file.hpp"
#include "sim/report/metrics.hpp"

namespace trnsim::sim {

using nlohmann::json;

namespace {

struct Slice {
  double start = 0, end = 0;  // microseconds, as in the trace
  int lane = 0;               // index into lanes
  int group = 0;              // what its time counts for: its lane, or its source line
};

std::string us(double seconds) {
  if (seconds >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.1f} us", seconds * 1e6);
}

double number(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

namespace {

// The critical-path walk (critical_path's comment), with its time grouped by lane, or by the
// slices' `by` argument ("source": the kernel's file:line; slices without one by lane).
std::vector<std::pair<std::string, double>> walk_critical_path(const json& trace,
                                                               const std::string& by) {
  std::map<std::pair<int, int>, std::string> names;
  for (const json& e : trace.value("traceEvents", json::array())) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name") {
      names[{e.value("pid", 0), e.value("tid", 0)}] = e["args"].value("name", "");
    }
  }
  std::map<std::pair<int, int>, int> lane_of;
  std::map<std::string, int> group_of;  // source line -> its entry in lanes
  std::vector<std::string> lanes;
  std::vector<Slice> slices;
  for (const json& e : trace.value("traceEvents", json::array())) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const std::pair<int, int> key{e.value("pid", 0), e.value("tid", 0)};
    if (cat != "instruction" && cat != "dma") continue;
    auto [lane_it, lane_fresh] = lane_of.emplace(key, static_cast<int>(lanes.size()));
    if (lane_fresh)
      lanes.push_back(names.count(key) ? names[key] : fmt::format("lane {}", key.second));
    int group = lane_it->second;
    const json& args = e.value("args", json::object());
    const auto grouped = by.empty() ? args.end() : args.find(by);
    if (grouped != args.end() && grouped->is_string()) {
      auto [g, g_fresh] = group_of.emplace(grouped->get<std::string>(), 0);
      if (g_fresh) {
        g->second = static_cast<int>(lanes.size());
        lanes.push_back(g->first);
      }
      group = g->second;
    }
    slices.push_back({number(e, "ts"), number(e, "ts") + number(e, "dur"), lane_it->second, group});
  }
  std::vector<std::pair<std::string, double>> out;
  if (slices.empty()) return out;
  // Per lane, slices by start; all slices by end.
  std::vector<std::vector<size_t>> by_lane(lanes.size());
  std::sort(slices.begin(), slices.end(),
            [](const Slice& a, const Slice& b) { return a.start < b.start; });
  for (size_t i = 0; i < slices.size(); ++i) by_lane[slices[i].lane].push_back(i);
  std::vector<size_t> by_end(slices.size());
  for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
  std::sort(by_end.begin(), by_end.end(),
            [&](size_t a, size_t b) { return slices[a].end < slices[b].end; });
  std::vector<double> on_path(lanes.size() + 1, 0.0);  // the last: idle
  size_t cur = by_end.back();
  std::vector<size_t> pos_in_lane(slices.size());
  for (auto& l : by_lane) {
    for (size_t i = 0; i < l.size(); ++i) pos_in_lane[l[i]] = i;
  }
  for (size_t steps = 0; steps < slices.size(); ++steps) {
    const Slice& s = slices[cur];
    on_path[s.group] += s.end - s.start;
    // Candidates: the lane's previous slice, and the slice on any lane that ended last before
    // this one started (what released its semaphore wait, or triggered its transfer). The
    // later-ending one is the predecessor; a gap before it is latency or idle time.
    long best = -1;
    double best_end = -1;
    const size_t p = pos_in_lane[cur];
    if (p > 0) {
      best = static_cast<long>(by_lane[s.lane][p - 1]);
      best_end = slices[best].end;
    }
    {
      auto it = std::upper_bound(by_end.begin(), by_end.end(), s.start + 1e-7,
                                 [&](double t, size_t i) { return t < slices[i].end; });
      while (it != by_end.begin()) {
        --it;
        if (*it == cur || slices[*it].start >= s.start) continue;
        if (slices[*it].end > best_end) {
          best = static_cast<long>(*it);
          best_end = slices[*it].end;
        }
        break;
      }
    }
    if (best < 0) {
      on_path.back() += s.start;  // idle from time 0 (waiting for the launch)
      break;
    }
    on_path.back() += std::max(0.0, s.start - best_end);
    cur = static_cast<size_t>(best);
  }
  for (size_t l = 0; l < lanes.size(); ++l) {
    if (on_path[l] > 0) out.emplace_back(lanes[l], on_path[l] * 1e-6);
  }
  if (on_path.back() > 0) out.emplace_back("latency or idle", on_path.back() * 1e-6);
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

std::vector<std::pair<std::string, double>> critical_path(const json& trace) {
  return walk_critical_path(trace, "");
}

std::vector<std::pair<std::string, double>> critical_path_lines(const json& trace) {
  bool any = false;
  for (const json& e : trace.value("traceEvents", json::array())) {
    if (e.value("ph", "") == "X" && e.value("args", json::object()).contains("source")) {
      any = true;
      break;
    }
  }
  if (!any) return {};
  return walk_critical_path(trace, "source");
}

std::vector<Finding> diagnose(const json& stats,
                              const std::vector<std::pair<std::string, double>>& path) {
  std::vector<Finding> f;
  // stats.json's summary and host metrics through the metric table, where an undeclared id
  // throws (a misspelt one would otherwise read as 0); a run without one reads 0.
  const double total = metric_or_zero(stats, "total_time");
  const json& host = stats.value("host", json());
  const json& choices = stats.value("choices", json::object());
  const json& kernels = stats.value("kernels", json::array());
  if (host.is_object() && total > 0) {
    const double device = metric_or_zero(stats, "host.device_time");
    const double idle = total - device;
    const auto launches = static_cast<size_t>(metric_or_zero(stats, "host.kernel_launches"));
    if (idle > 0.15 * total) {
      Finding x;
      x.cause = "host launch overhead";
      x.cost_seconds = idle;
      x.evidence = fmt::format(
          "the device is idle {} of the {} total ({:.0f}%): {} kernel launch{}, host CPU {} "
          "(dispatch and launch calls), final synchronization {}",
          us(idle), us(total), 100 * idle / total, launches, launches == 1 ? "" : "es",
          us(metric_or_zero(stats, "host.host_cpu_time")),
          us(metric_or_zero(stats, "host.synchronize_time")));
      x.suggestion = choices.value("mode", "") == "eager" && launches > 1
                         ? "fuse these ops into fewer kernels: run the graph with \"mode\": "
                           "\"compile\", or use a fused op (rms_norm, layer_norm, softmax)"
                         : "give each launch more work (larger or batched inputs); launch "
                           "overhead is fixed per kernel";
      f.push_back(x);
    }
  }
  const double inter = number(choices, "hbm_intermediate_bytes");
  if (inter > 0 && total > 0) {
    // Each intermediate is written once and read at least once.
    const double bw = metric_or_zero(stats, "hbm_peak_bytes_per_second");
    Finding x;
    x.cause = "HBM round trips between kernels";
    // Their share of the HBM traffic, times the device time spent bound by DMA.
    const double traffic =
        metric_or_zero(stats, "hbm_read_bytes") + metric_or_zero(stats, "hbm_write_bytes");
    double dma_bound = 0;
    for (const json& k : kernels) {
      if (k.value("bound_by", "") == "DMA") dma_bound += number(k, "duration");
    }
    x.cost_seconds = std::max(bw > 0 ? 2 * inter / bw : 0.0,
                              traffic > 0 ? std::min(1.0, 2 * inter / traffic) * dma_bound : 0.0);
    std::vector<std::string> names;
    for (const auto& n : choices["hbm_intermediates"]) names.push_back(n.get<std::string>());
    x.evidence = fmt::format(
        "{} intermediate tensors ({}) go to HBM and back: {:.1f} MiB written and read again, at "
        "least {} at the HBM peak",
        names.size(),
        fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 6), ", "),
        inter / 1048576.0, us(x.cost_seconds));
    x.suggestion =
        "fuse the ops that produce and consume them (\"mode\": \"compile\") so the "
        "values stay in SBUF";
    f.push_back(x);
  }
  // Collectives the cores wait for with nothing to compute: exposed communication.
  const json& chip = stats.value("chip", json::object());
  if (chip.contains("collective_time") && total > 0) {
    const double in = number(chip, "collective_time");
    const double exposed = in * number(chip, "collective_exposed_percent") / 100;
    if (exposed > 0.05 * total) {
      const json& list = stats.value("collectives", json::array());
      std::string what;
      for (size_t i = 0; i < list.size() && i < 3; ++i) {
        const json& c = list[i];
        what += fmt::format("{}{} {:.1f} MiB {} over {} ranks {}", i ? ", " : "", c.value("op", ""),
                            number(c, "bytes") / 1048576.0, c.value("algorithm", ""),
                            c.value("ranks", 0), us(number(c, "duration_ns") * 1e-9));
      }
      Finding x;
      x.cause = "collectives (exposed communication)";
      x.cost_seconds = exposed;
      x.evidence = fmt::format(
          "{} of the {} run ({:.0f}%) is inside collectives, {:.0f}% of it with no compute on "
          "the cores: {}{}",
          us(in), us(total), 100 * in / total, number(chip, "collective_exposed_percent"), what,
          list.size() > 3 ? fmt::format(" and {} more", list.size() - 3) : std::string());
      x.suggestion =
          "overlap the collective with independent compute (start reducing the first rows "
          "while later rows are computed), or use fewer ranks or chips for this size: the "
          "collective's steps do not shrink as the cores' work does";
      f.push_back(x);
    }
  }
  // Per kernel: what bounds it.
  std::map<std::string, Finding> by_cause;
  for (const json& k : kernels) {
    const double d = number(k, "duration");
    if (d <= 0) continue;
    const std::string who = k.value("bound_by", "");
    const double pct = number(k, "bound_by_percent");
    const std::string name = k.value("name", "");
    std::string cause, evidence, suggestion;
    const double transfers = number(k, "dma_transfers");
    const double per_partition = transfers > 0 ? number(k, "dma_bytes") / transfers / 128 : 0;
    // Small transfers leave the DMA queues idle while each engine sets the next one up (the
    // setup is not transfer time), so they look like a lack of overlap: named for what they are.
    const bool small_transfers = who == "DMA" && per_partition < 2048;
    if (pct < 55 && !small_transfers) {
      cause = "serialization (no overlap)";
      evidence = fmt::format(
          "in kernel {} ({}), the busiest resource ({}) is busy only {:.0f}% "
          "of the time: DMA and compute wait for each other",
          name, us(d), who, pct);
      suggestion =
          "add a buffer so the next tile's DMA overlaps this tile's compute "
          "(params.bufs), or split the work into more tiles";
    } else if (who == "DMA") {
      if (small_transfers) {
        cause = "DMA fixed costs (small transfers)";
        evidence = fmt::format(
            "kernel {} is DMA-bound ({:.0f}% of {}) with {:.0f} transfers "
            "averaging {:.0f} bytes per partition",
            name, pct, us(d), transfers, per_partition);
        suggestion =
            "make transfers larger than 2048 bytes per partition (fact sheet D2: "
            "under 256 bytes is badly overhead-bound): larger tiles, or more rows per "
            "partition";
      } else {
        cause = "DMA bandwidth";
        evidence = fmt::format(
            "kernel {} is DMA-bound ({:.0f}% of {}): {:.1f} MiB in {:.0f} "
            "transfers of {:.0f} bytes per partition",
            name, pct, us(d), number(k, "dma_bytes") / 1048576.0, transfers, per_partition);
        suggestion =
            "move fewer bytes: keep intermediates on chip (fuse), reuse loaded tiles "
            "(block the loops), or use a narrower dtype";
      }
    } else {
      cause = who;
      // On several cores, an engine's time per core (stats.json sums them).
      const double cores = k.contains("cores") ? number(k, "cores") : 1.0;
      const double vec = number(k, "vector_engine_active_time") / cores;
      const double sca = number(k, "scalar_engine_active_time") / cores;
      evidence = fmt::format(
          "kernel {} is {}-bound: busy {:.0f}% of {}{} (VectorE {}, ScalarE {}, "
          "DMA {})",
          name, who, pct, us(d),
          cores > 1 ? fmt::format(" per core, on average over {:.0f} cores", cores) : std::string(),
          us(vec), us(sca), us(number(k, "dma_active_time")));
      if (who == "ScalarE" && vec < 0.6 * sca) {
        suggestion =
            "move an elementwise step (a multiply or add by a per-row value) from "
            "ScalarE to VectorE (e.g. params.scale_engine \"vector\"), which is idle "
            "for " +
            us(sca - vec);
      } else if (who == "VectorE" && sca < 0.6 * vec) {
        suggestion =
            "move an elementwise step from VectorE to ScalarE (an activation with "
            "scale or bias), which is idle for " +
            us(vec - sca);
      } else if (who == "TensorE") {
        suggestion =
            "the PE array is the limit: larger moving tiles (up to 512 columns) or "
            "fp8 raise its throughput";
      } else {
        suggestion =
            "this engine is the limit: fewer or cheaper instructions on it (bf16 "
            "operands enable VectorE's faster modes on trn2)";
      }
    }
    Finding& x = by_cause[cause];
    if (x.cause.empty()) {
      x.cause = cause;
      x.evidence = evidence;
      x.suggestion = suggestion;
    }
    x.cost_seconds += d * std::min(1.0, pct / 100.0);
  }
  // Round trips are why an eager kernel is DMA-bound: do not count that time twice.
  const auto round_trips = std::find_if(f.begin(), f.end(), [](const Finding& x) {
    return x.cause == "HBM round trips between kernels";
  });
  if (round_trips != f.end() && by_cause.count("DMA bandwidth")) {
    Finding& bw = by_cause["DMA bandwidth"];
    bw.cost_seconds = std::max(0.0, bw.cost_seconds - round_trips->cost_seconds);
  }
  for (auto& [c, x] : by_cause) f.push_back(x);
  if (!path.empty()) {
    std::string text;
    double sum = 0;
    for (const auto& [lane, t] : path) sum += t;
    for (size_t i = 0; i < path.size() && i < 5; ++i) {
      text += fmt::format("{}{} {} ({:.0f}%)", i ? ", " : "", path[i].first, us(path[i].second),
                          sum > 0 ? 100 * path[i].second / sum : 0.0);
    }
    Finding x;
    x.cause = "critical path";
    x.cost_seconds = 0;  // context, not a cause of its own
    x.evidence = "time on the device's critical path by lane: " + text;
    x.suggestion = "speed up the lane at the head of this list first";
    f.push_back(x);
  }
  std::stable_sort(f.begin(), f.end(), [](const Finding& a, const Finding& b) {
    return a.cost_seconds > b.cost_seconds;
  });
  return f;
}

std::string findings_text(const std::vector<Finding>& findings, size_t max_findings) {
  std::string out;
  for (size_t i = 0; i < findings.size() && i < max_findings; ++i) {
    const Finding& x = findings[i];
    out +=
        fmt::format("{}. {}{}\n   evidence: {}\n   suggestion: {}\n", i + 1, x.cause,
                    x.cost_seconds > 0 ? fmt::format(" (costs up to {})", us(x.cost_seconds)) : "",
                    x.evidence, x.suggestion);
  }
  return out;
}

nlohmann::json read_run_stats(const std::string& dir) {
  const std::string path = dir + "/stats.json";
  const std::string text = read_input_file_if_exists(path, "a stats.json");
  if (text.empty()) {
    throw InputError(
        fmt::format("{}: no stats.json here; give the --out directory of a trnsim run", dir));
  }
  json stats;
  try {
    stats = base::parse_json_text<json>(text, path);
  } catch (const base::JsonError& e) {
    throw InputError(fmt::format("{}: {}: {} (a stats.json cut short? run it again)", path,
                                 e.where(), e.what_text()));
  }
  const json* total = nullptr;
  if (stats.is_object() && stats.contains("summary") && stats["summary"].is_object()) {
    const auto it = stats["summary"].find("total_time");
    if (it != stats["summary"].end() && it->is_number()) total = &*it;
  }
  if (total == nullptr || !stats.value("workload", json()).is_object()) {
    throw InputError(
        fmt::format("{}: not a trnsim stats.json (expected an object with /workload and "
                    "/summary/total_time)",
                    path));
  }
  return stats;
}

int explain(const ExplainOptions& o) {
  json stats, trace;
  try {
    stats = read_run_stats(o.dir);
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return kBadInput;
  }
  // The critical path needs trace.json; without a readable one the diagnosis goes on from
  // stats.json alone, and says so.
  std::string trace_problem;
  try {
    const std::string text = read_input_file_if_exists(o.dir + "/trace.json", "a trace.json");
    if (text.empty()) {
      trace_problem = std::filesystem::exists(o.dir + "/trace.pftrace")
                          ? "no trace.json, only trace.pftrace: run with --trace-format json for it"
                          : "no trace.json";
    } else {
      trace = base::parse_json_text<json>(text, o.dir + "/trace.json");
      if (!trace.is_object() || !trace.value("traceEvents", json()).is_array()) {
        trace_problem = "trace.json has no traceEvents array";
        trace = json();
      }
    }
  } catch (const base::JsonError& e) {
    trace_problem = fmt::format("trace.json: {}: {}", e.where(), e.what_text());
  } catch (const InputError& e) {
    trace_problem = e.what();
  }
  std::vector<std::pair<std::string, double>> path, lines;
  std::string filtered;
  if (trace_problem.empty()) {
    path = critical_path(trace);
    lines = critical_path_lines(trace);
    const json other = trace.value("otherData", json::object());
    filtered = other.value("trace_filter", "");
  }
  std::vector<Finding> f = diagnose(stats, path);
  if (!lines.empty()) {
    // A kernel traced from Python (NKI): its lines, not instruction positions.
    double sum = 0;
    for (const auto& l : lines) sum += l.second;
    std::string text;
    for (size_t i = 0; i < lines.size() && i < 5; ++i) {
      text += fmt::format("{}{} {} ({:.0f}%)", i ? ", " : "", lines[i].first, us(lines[i].second),
                          sum > 0 ? 100 * lines[i].second / sum : 0.0);
    }
    Finding x;
    x.cause = "critical path by kernel line";
    x.evidence = "time on the device's critical path by the kernel's source line: " + text;
    x.suggestion = fmt::format("start with {}: the line whose instructions hold the run back most",
                               lines.front().first);
    auto at = std::find_if(f.begin(), f.end(),
                           [](const Finding& g) { return g.cause == "critical path"; });
    f.insert(at == f.end() ? f.end() : at + 1, x);
  }
  if (o.json) {
    json out = json::array();
    for (const Finding& x : f) {
      out.push_back({{"cause", x.cause},
                     {"cost_seconds", x.cost_seconds},
                     {"evidence", x.evidence},
                     {"suggestion", x.suggestion}});
    }
    std::cout << json{{"findings", out}}.dump(2) << "\n";
    return kSuccess;
  }
  const json& w = stats.value("workload", json::object());
  std::cout << fmt::format("trnsim explain  {}  total {}\n", w.value("name", ""),
                           us(metric_or_zero(stats, "total_time")));
  if (!filtered.empty()) {
    std::cout << fmt::format(
        "note: trace.json was written with --trace-filter '{}'; the critical path sees only what "
        "it kept (rerun without the filter for the whole path)\n",
        filtered);
  }
  if (!trace_problem.empty()) {
    std::cout << fmt::format("note: no critical path ({}); from stats.json alone\n", trace_problem);
  }
  std::cout << findings_text(f, 10);
  return kSuccess;
}

}  // namespace trnsim::sim
