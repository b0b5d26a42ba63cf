#include "sim/report/summary.hpp"

#include "isa/collective.hpp"
#include "models/collective/fabric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "config/arch_file.hpp"
#include "config/parameters.hpp"
#include "models/dma/flow_model.hpp"
#include "sim/report/metrics.hpp"

namespace trnsim::sim {

using nlohmann::json;

namespace {

std::string grouped(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string duration(Picoseconds t) {
  if (t.value >= 1'000'000'000) return fmt::format("{:.2f} ms", t.value / 1e9);
  if (t.value >= 1'000'000) return fmt::format("{:.1f} us", t.us());
  return fmt::format("{:.1f} ns", t.ns());
}

std::string bytes_text(uint64_t b) {
  if (b >= (1ULL << 30)) return fmt::format("{:.2f} GiB", b / double(1ULL << 30));
  if (b >= (1ULL << 20)) return fmt::format("{:.1f} MiB", b / double(1ULL << 20));
  if (b >= (1ULL << 10)) return fmt::format("{:.1f} KiB", b / double(1ULL << 10));
  return fmt::format("{} B", b);
}

double percent(Picoseconds part, Picoseconds whole) {
  return whole.value > 0 ? 100.0 * static_cast<double>(part.value) / whole.value : 0.0;
}

double seconds(Picoseconds t) {
  return static_cast<double>(t.value) * 1e-12;
}

// Every parameter of the parameter table (isa/parameters.cpp), by its --set name.
json arch_json(const config::ArchConfig& a) {
  json parameters = json::object();
  for (const auto& p : config::parameters()) {
    const double v = p.get(a);
    switch (p.kind) {
      case config::Parameter::Kind::flag:
        parameters[std::string(p.name)] = v != 0;
        break;
      case config::Parameter::Kind::integer:
        parameters[std::string(p.name)] = static_cast<uint64_t>(v);
        break;
      case config::Parameter::Kind::real:
        parameters[std::string(p.name)] = v;
        break;
    }
  }
  return {{"name", a.name}, {"parameters", parameters}};
}

const char* status_name(CheckResult::Status s) {
  switch (s) {
    case CheckResult::Status::pass:
      return "pass";
    case CheckResult::Status::fail:
      return "fail";
    case CheckResult::Status::skipped:
      return "skipped";
  }
  return "?";
}

}  // namespace

namespace {
// The flow model is checked against the detailed one on the presets (tests/flow/flow_matrix.py
// runs every library kernel on each). Its window term takes a chunk's unloaded round trip and
// leaves out the queueing and refresh that hold the detailed engines' chunks longer, so a run
// whose DMA windows cover the HBM peak fewer times than on its preset (or, for an arch not named
// after one, than on every preset) is outside what was checked, and far more optimistic where
// the window limits the DMA (docs/validation.md 6.2, "The window away from its default").
struct WindowCheck {
  double coverage = 0;  // this run's (models::FlowMemoryModel::window_coverage)
  double checked = 0;   // that of the preset it is compared with
  std::string against;  // that preset, or "any preset"
};

std::optional<WindowCheck> flow_window_unchecked(const RunReport& r) {
  if (!r.result.flow_memory_model) return std::nullopt;
  WindowCheck w;
  w.coverage = models::FlowMemoryModel::window_coverage(r.arch);
  if (const auto own = config::preset(r.arch.name)) {
    w.checked = models::FlowMemoryModel::window_coverage(*own);
    w.against = r.arch.name;
  } else {
    w.checked = std::numeric_limits<double>::infinity();
    for (const std::string& name : config::preset_name_list()) {
      w.checked =
          std::min(w.checked, models::FlowMemoryModel::window_coverage(*config::preset(name)));
    }
    w.against = "any preset";
  }
  // (A run of the preset itself computes the same figure; the margin only absorbs rounding.)
  if (w.coverage >= w.checked * (1 - 1e-9)) return std::nullopt;
  return w;
}

json memory_model_json(const RunReport& r) {
  if (!r.result.flow_memory_model) {
    return {{"name", "detailed"},
            {"note", "DMA engines move chunks; HBM pieces go through FR-FCFS schedulers"}};
  }
  json j = {{"name", "flow"},
            {"note",
             "dma_flow_model=true: transfers share DMA engines and HBM stack peaks as fluid flows "
             "(max-min fair rates). HBM read/write bytes are counted; row-buffer hits, misses and "
             "conflicts, column accesses, refresh stalls and read/write turnarounds are not "
             "modelled, so the hbm_row_* and related summary fields are left out"}};
  if (const auto w = flow_window_unchecked(r)) {
    j["caveat"] = fmt::format(
        "the DMA engines' outstanding windows (dma_engine_outstanding_chunks {} x dma_chunk_bytes "
        "{}) cover the HBM stack's peak {:.2f} times at a chunk's unloaded round trip, fewer "
        "than on {} ({:.2f}), where the flow model is checked against the detailed one. Its "
        "window term leaves out the queueing and refresh that lengthen the round trip, so where "
        "the window limits the DMA it is far more optimistic than the detailed model "
        "(docs/validation.md 6.2, \"The window away from its default\"): make this what-if "
        "with the detailed model",
        r.arch.dma_engine_outstanding_chunks, r.arch.dma_chunk_bytes, w->coverage, w->against,
        w->checked);
  }
  return j;
}

// The end of the summary's HBM line: the row-buffer hit rate, or what the flow model leaves out.
std::string hbm_line_end(const RunReport& r) {
  if (!r.result.flow_memory_model) {
    return fmt::format("row-buffer hit rate {:.1f}%", 100.0 * r.result.hbm.row_hit_rate());
  }
  std::string end = "flow memory model (dma_flow_model): row buffers not modelled";
  if (flow_window_unchecked(r)) {
    end +=
        "; its DMA windows are smaller than it is checked with, and it is optimistic where they "
        "limit the DMA (stats.json memory_model.caveat)";
  }
  return end;
}
}  // namespace

namespace {
// The chip's time in collectives (the longest of the cores' unions of their collectives'
// windows: the same for every core unless groups differ) and the share of it the cores'
// compute engines sat idle, over all the cores.
struct ChipCollectives {
  Picoseconds in_collectives;
  double exposed_percent = 0;
};
ChipCollectives chip_collectives(const StatsCollector& s) {
  ChipCollectives out;
  double exposed = 0, in = 0;
  for (uint32_t c = 0; c < s.cores(); ++c) {
    const StatsCollector::CollectiveOverlap o = s.collective_overlap(c);
    out.in_collectives = max(out.in_collectives, o.in_collectives);
    exposed += static_cast<double>(o.exposed.value);
    in += static_cast<double>(o.in_collectives.value);
  }
  out.exposed_percent = in > 0 ? 100.0 * exposed / in : 0.0;
  return out;
}

// Mean over max of each core's busiest resource: 1 when every core has as much work as the
// most loaded one, 1/cores when one core does it all.
double core_load_balance(const StatsCollector& s) {
  double sum = 0, most = 0;
  for (uint32_t c = 0; c < s.cores(); ++c) {
    const double w = static_cast<double>(s.core_work(c).value);
    sum += w;
    most = std::max(most, w);
  }
  return most > 0 ? sum / s.cores() / most : 1.0;
}
}  // namespace

json stats_json(const RunReport& r) {
  const StatsCollector& s = r.stats;
  // Row by row from the declared metric table (sim/report/metrics.cpp).
  const json summary = summary_json(r);

  json w = {{"name", r.workload.name},
            {"kernel", r.workload.kernel},
            {"variant", r.workload.variant},
            {"shape", r.workload.shape},
            {"dtype", std::string(isa::name_of(r.workload.dtype))},
            {"eps", r.workload.eps},
            {"seed", r.workload.seed}};
  const json profile = r.profile.json(r.total);
  json queues = json::array();
  for (uint32_t c = 0; c < s.cores(); ++c) {
    for (size_t q = 0; q < r.kernel.program.queues.size(); ++q) {
      const QueueStats& qs = s.queue(c, q);
      queues.push_back({{"core", c},
                        {"queue", r.kernel.program.queues[q].name},
                        {"transfers", qs.transfers},
                        {"bytes", qs.bytes},
                        {"busy_time", seconds(qs.busy)},
                        {"busy_time_percent", percent(qs.busy, r.total)}});
    }
  }
  json check = {{"status", status_name(r.check.status)}};
  json per_core = json::array();
  for (uint32_t c = 0; s.cores() > 1 && c < s.cores(); ++c) {
    const CoreStats& cs = s.core(c);
    json active = json::object();
    for (Engine e : kAllEngines) active[std::string(name_of(e))] = seconds(cs.active[index_of(e)]);
    per_core.push_back({{"core", c},
                        {"end_time", seconds(cs.end)},
                        {"instructions", cs.instructions},
                        {"dma_bytes", cs.dma_bytes},
                        {"dma_active_time", seconds(s.core_dma_active(c))},
                        {"engine_active_time", active},
                        {"busiest_time", seconds(s.core_work(c))}});
    if (!s.collectives().empty()) {
      const StatsCollector::CollectiveOverlap o = s.collective_overlap(c);
      per_core.back()["collective_overlapped_time"] = seconds(o.overlapped);
      per_core.back()["collective_exposed_time"] = seconds(o.exposed);
    }
  }
  if (r.check.status != CheckResult::Status::skipped) {
    check["max_abs_error"] = r.check.max_abs_error;
    // null when no element reaches the floor: there is no relative error to speak of.
    check["max_rel_error"] =
        r.check.rel_error_elements > 0 ? json(r.check.max_rel_error) : json(nullptr);
    check["rel_error_floor"] = r.check.rel_error_floor;
    check["rel_error_elements"] = r.check.rel_error_elements;
    check["elements"] = r.check.elements;
    check["mismatches"] = r.check.mismatches;
    check["atol"] = r.check.tolerance.atol;
    check["rtol"] = r.check.tolerance.rtol;
  }
  json out = {{"trnsim_version", "0.1.0"},
              {"mode", r.timing_only ? "timing-only" : "full"},
              {"workload", w},
              {"summary", summary},
              {"dma_queues", queues},
              {"kernels", profile["kernels"]},
              {"host", profile.value("host", json())},
              {"key_averages", profile.value("key_averages", json::array())},
              {"profiler_key_averages", profile.value("profiler_key_averages", json::array())},
              {"choices", r.kernel.choices},
              {"check", check},
              {"memory_model", memory_model_json(r)},
              {"arch", arch_json(r.arch)}};
  // Multi-core runs only: single-core stats.json stays as it was.
  if (s.cores() > 1) {
    out["cores"] = per_core;
    out["chip"] = {{"cores", s.cores()}, {"load_balance", core_load_balance(s)}};
    if (r.lnc > 1) out["chip"]["lnc"] = r.lnc;
    if (!s.collectives().empty()) {
      const ChipCollectives cc = chip_collectives(s);
      out["chip"]["collective_time"] = seconds(cc.in_collectives);
      out["chip"]["collective_time_percent"] = percent(cc.in_collectives, r.total);
      out["chip"]["collective_exposed_percent"] = cc.exposed_percent;
    }
  }
  // Only a program with collectives has these: the others' stats.json is as it was.
  if (!s.collectives().empty()) {
    json list = json::array();
    Picoseconds total;
    for (const models::CollectiveRecord& c : s.collectives()) {
      const Picoseconds d = c.end - c.triggered;
      total = total + d;
      list.push_back({{"index", c.index},
                      {"op", std::string(models::collective_op_name(c.op, c.point_to_point))},
                      {"algorithm", models::collective_algorithms().at(c.algorithm)},
                      {"bytes", c.bytes},
                      {"ranks", c.ranks},
                      {"first_core", c.first_core},
                      {"chips", c.chips},
                      {"steps", c.steps},
                      {"first_trigger_ns", c.first_trigger.ns()},
                      {"trigger_ns", c.triggered.ns()},
                      {"start_ns", c.start.ns()},
                      {"end_ns", c.end.ns()},
                      {"duration_ns", d.ns()}});
      // A send/recv: from first_core to peer_core (only these have the key).
      if (c.point_to_point) list.back()["peer_core"] = c.peer_core;
    }
    out["collectives"] = list;
    out["collective_time"] = seconds(total);
  }
  return out;
}

namespace {
// One row per core, then the chip's load balance.
std::string cores_text(const StatsCollector& s, Picoseconds total) {
  std::string out = fmt::format("{:<6}{:>12}{:>9}{:>12}{:>12}{:>12}\n", "core", "instr", "busiest",
                                "work", "ends", "DMA moved");
  uint32_t last = 0;
  for (uint32_t c = 0; c < s.cores(); ++c) {
    const CoreStats& cs = s.core(c);
    std::string busiest = "DMA";
    Picoseconds most = s.core_dma_active(c);
    for (Engine e : kAllEngines) {
      if (cs.active[index_of(e)] > most) {
        most = cs.active[index_of(e)];
        busiest = std::string(name_of(e));
      }
    }
    if (cs.end > s.core(last).end) last = c;
    out += fmt::format("{:<6}{:>12}{:>9}{:>12}{:>12}{:>12}\n", c, grouped(cs.instructions), busiest,
                       duration(most), duration(cs.end), bytes_text(cs.dma_bytes));
  }
  out += fmt::format(
      "chip: {} cores, load balance {:.1f}% (mean / max of each core's busiest work); core {} "
      "ends last\n",
      s.cores(), 100.0 * core_load_balance(s), last);
  if (!s.collectives().empty()) {
    const ChipCollectives cc = chip_collectives(s);
    out += fmt::format(
        "chip: collectives {} ({:.1f}% of the run), exposed {:.1f}% of it (no compute on the "
        "core meanwhile), overlapped {:.1f}%\n",
        duration(cc.in_collectives), percent(cc.in_collectives, total), cc.exposed_percent,
        100.0 - cc.exposed_percent);
  }
  return out;
}
}  // namespace

std::string summary_text(const RunReport& r) {
  const StatsCollector& s = r.stats;
  std::string out;
  // The times are a warm device's: trnsim models no model load and no first-run warm-up, so a
  // first measured run on hardware is slower than it says (docs/metrics.md).
  out += fmt::format(
      "trnsim 0.1.0  {}  arch={}  mode={}{}  steady state (no first-run warm-up)\n",
      r.workload.name, r.arch.name, r.timing_only ? "timing-only" : "full",
      r.lnc > 1 ? fmt::format("  lnc={} (cores 0-{}; engine rows sum them)", r.lnc, r.lnc - 1)
      : r.result.cores > 1 ? fmt::format("  cores={} (engine rows sum them)", r.result.cores)
                           : "");
  std::string check;
  switch (r.check.status) {
    case CheckResult::Status::pass:
    case CheckResult::Status::fail:
      check = fmt::format(
          "check: {} (max abs err {:.2e}, {}, {}{})",
          r.check.status == CheckResult::Status::pass ? "PASS" : "FAIL", r.check.max_abs_error,
          r.check.rel_error_elements == 0
              ? fmt::format("rel err n/a: all |ref| < {:.1e}", r.check.rel_error_floor)
          : r.check.rel_error_floor > 0
              ? fmt::format("max rel err {:.2e} where |ref| >= {:.1e}", r.check.max_rel_error,
                            r.check.rel_error_floor)
              : fmt::format("max rel err {:.2e}", r.check.max_rel_error),
          isa::name_of(r.kernel.expected.empty() ? r.workload.dtype
                                                 : r.kernel.expected.front().dtype),
          r.check.mismatches ? fmt::format(", {} of {} elements off", grouped(r.check.mismatches),
                                           grouped(r.check.elements))
                             : "");
      break;
    case CheckResult::Status::skipped:
      check = r.timing_only ? "check: skipped (timing only)" : "check: none (no reference given)";
  }
  out += fmt::format("total {}   NeuronCore cycles {} @{:g} GHz   {}\n", duration(r.total),
                     grouped(to_cycles(r.total, r.arch.base_mhz)), r.arch.base_mhz / 1000.0, check);
  // The busiest resource is what holds the kernel back.
  double busiest = percent(s.dma_active(), r.total);
  int busiest_engine = -1;
  for (Engine e : kAllEngines) {
    const double p = percent(s.engine(e).active, r.total);
    if (p > busiest) {
      busiest = p;
      busiest_engine = index_of(e);
    }
  }
  out += fmt::format("{:<9}{:>8}{:>12}{:>9}{:>14}   {}\n", "engine", "instr", "active", "active%",
                     "sem wait", "note");

  for (Engine e : kAllEngines) {
    const EngineStats& es = s.engine(e);
    if (es.instructions == 0) {
      out += fmt::format("{:<9}{:>8}{:>12}{:>9}{:>14}\n", name_of(e), 0, "-", "-", "-");
      continue;
    }
    out += fmt::format("{:<9}{:>8}{:>12}{:>8.1f}%{:>14}   {}\n", name_of(e),
                       grouped(es.instructions), duration(es.active), percent(es.active, r.total),
                       duration(es.semaphore_wait), busiest_engine == index_of(e) ? "busiest" : "");
  }
  // Achieved bandwidths in B/ns, which is GB/s.
  const MemoryFigures mf = memory_figures(r);
  out += fmt::format("{:<9}{:>8}{:>12}{:>8.1f}%{:>14}   {}\n", "DMA", grouped(s.transfers()),
                     duration(s.dma_active()), percent(s.dma_active(), r.total), "-",
                     busiest_engine < 0 ? "busiest" : "");
  out += fmt::format(
      "DMA {} moved, avg {} per transfer, {:.0f} GB/s = {:.1f}% of the {:.0f} GB/s limit "
      "(DMA engines {:.0f}, HBM {:.0f} GB/s)\n",
      bytes_text(s.dma_bytes()), bytes_text(s.transfers() ? s.dma_bytes() / s.transfers() : 0),
      mf.dma_achieved, mf.percent_of_limit(), mf.limit, mf.dma_peak, mf.hbm_peak);
  out += fmt::format(
      "HBM read {}, written {}, {:.0f} GB/s = MBU {:.1f}% of {} stack{} {:.0f} GB/s; {}\n",
      bytes_text(s.traffic(isa::Memory::hbm).read), bytes_text(s.traffic(isa::Memory::hbm).written),
      mf.hbm_achieved, mf.percent_of_hbm_peak(), r.result.hbm_stacks,
      r.result.hbm_stacks == 1 ? "'s" : "s'", mf.hbm_peak, hbm_line_end(r));
  // The queues, at most four lines; stats.json has all of them.
  size_t shown = 0, total_queues = 0;
  for (uint32_t c = 0; c < s.cores(); ++c) {
    for (size_t q = 0; q < r.kernel.program.queues.size(); ++q) {
      const QueueStats& qs = s.queue(c, q);
      if (qs.transfers == 0) continue;
      ++total_queues;
      if (shown == 4) continue;
      ++shown;
      out += fmt::format("queue {}{}: {} in {} transfers, busy {} ({:.1f}%)\n",
                         r.kernel.program.queues[q].name,
                         s.cores() > 1 ? fmt::format(" core {}", c) : "", bytes_text(qs.bytes),
                         grouped(qs.transfers), duration(qs.busy), percent(qs.busy, r.total));
    }
  }
  if (total_queues > shown) {
    out += fmt::format("... {} more queues in stats.json\n", total_queues - shown);
  }
  if (!s.collectives().empty()) {
    // collectives 2: all_reduce 4.0 MiB ring 31.2 us, ... (from the last trigger to the end)
    std::string line = fmt::format("collectives {}:", s.collectives().size());
    size_t shown_cc = 0;
    for (const models::CollectiveRecord& c : s.collectives()) {
      if (shown_cc++ == 4) {
        line += fmt::format(" ... {} more in stats.json", s.collectives().size() - 4);
        break;
      }
      line += fmt::format("{} {} {} {} {} ranks {}", shown_cc == 1 ? "" : ",",
                          models::collective_op_name(c.op, c.point_to_point), bytes_text(c.bytes),
                          models::collective_algorithms().at(c.algorithm), c.ranks,
                          duration(c.end - c.triggered));
    }
    out += line + "\n";
  }
  if (s.cores() > 1) out += cores_text(s, r.total);
  out += r.profile.text(r.total);
  std::string files = "stats.json";
  if (!r.trace_file.empty()) files += "," + r.trace_file;
  if (r.report_html) files += ",report.html";
  for (const std::string& f : r.npy_files) files += "," + f;
  out += fmt::format("outputs: {}/{{{}}}\n", r.out_dir, files);
  // Rows without a note end without trailing blanks.
  std::string trimmed;
  size_t from = 0;
  while (from < out.size()) {
    const size_t nl = out.find('\n', from);
    const size_t end = out.find_last_not_of(' ', nl - 1);
    trimmed.append(out, from, end == std::string::npos || end < from ? 0 : end - from + 1);
    trimmed += '\n';
    from = nl + 1;
  }
  return trimmed;
}

}  // namespace trnsim::sim
