#include "sim/report/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "base/names.hpp"

namespace trnsim::sim {

using nlohmann::json;

namespace {

double seconds(Picoseconds t) {
  return static_cast<double>(t.value) * 1e-12;
}

double percent(Picoseconds part, Picoseconds whole) {
  return whole.value > 0 ? 100.0 * static_cast<double>(part.value) / whole.value : 0.0;
}

uint64_t hbm_bytes(const RunReport& r) {
  return r.stats.traffic(isa::Memory::hbm).read + r.stats.traffic(isa::Memory::hbm).written;
}

// TensorE's bf16 peak over the run, the MFU and HFU denominator.
double peak_flops(const RunReport& r) {
  return r.arch.tensor_peak_flops_bf16() * seconds(r.total);
}

using Compute = std::function<json(const RunReport&)>;

Metric summary_row(std::string key, MetricUnit unit, std::string section, std::string label,
                   std::string description, Compute compute) {
  Metric m;
  m.object = "summary";
  m.key = std::move(key);
  m.unit = unit;
  m.section = std::move(section);
  m.label = std::move(label);
  m.description = std::move(description);
  m.compute = std::move(compute);
  return m;
}

Metric host_row(std::string key, MetricUnit unit, std::string label, std::string description) {
  Metric m;
  m.object = "host";
  m.key = std::move(key);
  m.unit = unit;
  m.section = "host (graph workloads)";
  m.label = std::move(label);
  m.description = std::move(description);
  return m;
}

std::vector<Metric> make_table() {
  using U = MetricUnit;
  std::vector<Metric> t;
  auto add = [&](Metric m) -> Metric& {
    t.push_back(std::move(m));
    return t.back();
  };
  const std::string time = "time and utilization";
  add(summary_row("total_time", U::seconds, time, "total time",
                  "kernel form: end of the last instruction or transfer. Graph form (host "
                  "model): from the first op's dispatch to the host's return from the final "
                  "synchronization",
                  [](const RunReport& r) { return json(seconds(r.total)); }));
  add(summary_row("total_time_ps", U::picoseconds, time, "total time (ps)",
                  "`total_time` in picoseconds, exact",
                  [](const RunReport& r) { return json(r.total.value); }))
      .golden_default = true;
  add(summary_row("neuroncore_cycle_count", U::cycles, time, "NeuronCore cycles",
                  "T x `base_mhz` (the NeuronCore's base clock), rounded",
                  [](const RunReport& r) { return json(to_cycles(r.total, r.arch.base_mhz)); }))
      .golden_default = true;
  add(summary_row("model_flops", U::flops, time, "model FLOPs",
                  "FLOPs the operation needs, independent of the lowering: matmul 2MKN; "
                  "elementwise 1 per output element; reductions 1 per input element; RMSNorm 4 "
                  "and LayerNorm/softmax 5 per element",
                  [](const RunReport& r) { return json(r.kernel.model_flops); }));
  add(summary_row(
      "hardware_flops", U::flops, time, "hardware FLOPs",
      "FLOPs TensorE executed: 2 x K x M x N per matmul instruction, as issued (padding "
      "included)",
      [](const RunReport& r) { return json(r.stats.engine(Engine::tensor).flops); }));
  add(summary_row("mfu_estimated_percent", U::percent, time, "MFU (estimated)",
                  "100 x `model_flops` / (TensorE bf16 peak x T); peak = 2 x `pe_rows` x "
                  "`pe_columns` x TensorE clock",
                  [](const RunReport& r) {
                    const double peak = peak_flops(r);
                    return json(peak > 0 ? 100.0 * r.kernel.model_flops / peak : 0.0);
                  }));
  add(summary_row("hfu_estimated_percent", U::percent, time, "HFU (estimated)",
                  "100 x `hardware_flops` / (TensorE bf16 peak x T)", [](const RunReport& r) {
                    const double peak = peak_flops(r);
                    const uint64_t flops = r.stats.engine(Engine::tensor).flops;
                    return json(peak > 0 ? 100.0 * flops / peak : 0.0);
                  }));
  // As the Neuron profiler defines it (X2: achieved HBM bytes over the bytes the hardware could
  // move in the time, `total_bandwidth_available`): the bandwidth available is that of the HBM
  // stacks the run's cores use, which the memory model lets them fill, so MBU cannot pass 100%.
  // It once divided by a core's share of its stack (the stack's peak over
  // `hbm.cores_per_stack`), which a core running alone exceeds: 116% on micro_stream_read.
  add(summary_row(
      "mbu_estimated_percent", U::percent, time, "MBU (estimated)",
      "100 x (`hbm_read_bytes` + `hbm_write_bytes`) / (`hbm_peak_bytes_per_second` x T): the "
      "HBM bytes moved over what the HBM stacks the run uses could move in T; at most 100",
      [](const RunReport& r) { return json(memory_figures(r).percent_of_hbm_peak()); }));

  add(host_row("total_time", U::seconds, "total time", "T, as in the summary"));
  add(host_row("device_time", U::seconds, "device time",
               "sum of kernel durations (start to end, see kernels)"));
  add(host_row("device_time_percent", U::percent, "device time share", "100 x `device_time` / T"));
  add(host_row("host_cpu_time", U::seconds, "host CPU time",
               "framework dispatch plus launch calls (CPU busy)"));
  add(host_row("host_blocked_time", U::seconds, "blocked on the launch queue",
               "launch calls blocked because `host.max_inflight` kernels were in flight"));
  add(host_row("synchronize_time", U::seconds, "final synchronize",
               "from the end of the last launch call to the host's return (waiting for the "
               "device, then `host.sync_ns`)"));
  add(host_row("first_kernel_start_time", U::seconds, "first kernel starts",
               "when the first kernel started on the device, from the start of the run"));
  add(host_row("kernel_launches", U::count, "kernel launches", "kernels launched"));
  add(host_row("host_ops", U::count, "host ops",
               "ops of the host program the framework dispatched"));
  add(host_row("host_copy_time", U::seconds, "copies for ops run on the host",
               "ops with no lowering, run on the host: their copies of inputs to the host "
               "(after waiting for the device) and of results back"));

  // Per engine, in the order of kAllEngines; a docs row per family.
  const std::string engines = "{tensor,vector,scalar,gpsimd,sync}_engine_";
  for (Engine e : kAllEngines) {
    const std::string k = fmt::format("{}_engine_", key_of(e));
    const std::string section(name_of(e));
    Metric& active = add(summary_row(
        k + "active_time", U::seconds, section, "active time",
        "sum over the engine's instructions of (end - start), semaphore and port waits excluded",
        [e](const RunReport& r) { return json(seconds(r.stats.engine(e).active)); }));
    active.family = engines + "active_time";
    active.golden_default = active.time_part = true;
    add(summary_row(
            k + "active_time_percent", U::percent, section, "active share", "100 x active time / T",
            [e](const RunReport& r) { return json(percent(r.stats.engine(e).active, r.total)); }))
        .family = engines + "active_time_percent";
    Metric& count = add(summary_row(
        k + "instruction_count", U::count, section, "instructions",
        "instructions the engine ran (DMA triggers count on the engine that issues them)",
        [e](const RunReport& r) { return json(r.stats.engine(e).instructions); }));
    count.family = engines + "instruction_count";
    count.golden_default = true;
    add(summary_row(
            k + "semaphore_wait_time", U::seconds, section, "semaphore wait",
            "sum of (semaphore condition met - ready to issue)",
            [e](const RunReport& r) { return json(seconds(r.stats.engine(e).semaphore_wait)); }))
        .family = engines + "semaphore_wait_time";
    add(summary_row(k + "port_wait_time", U::seconds, section, "port wait",
                    "sum of time waiting for an SBUF/PSUM port or PSUM bank another engine holds",
                    [e](const RunReport& r) { return json(seconds(r.stats.engine(e).port_wait)); }))
        .family = engines + "port_wait_time";
    add(summary_row(
            k + "pipeline_wait_time", U::seconds, section, "pipeline wait",
            "sum of time waiting for a same-engine producer's results or a semaphore's wake "
            "latency",
            [e](const RunReport& r) { return json(seconds(r.stats.engine(e).pipeline_wait)); }))
        .family = engines + "pipeline_wait_time";
  }

  const std::string dma = "DMA";
  add(summary_row("dma_transfer_count", U::count, dma, "transfers", "transfers completed",
                  [](const RunReport& r) { return json(r.stats.transfers()); }))
      .golden_default = true;
  add(summary_row("dma_transfer_bytes", U::bytes, dma, "bytes moved",
                  "bytes of the completed transfers",
                  [](const RunReport& r) { return json(r.stats.dma_bytes()); }))
      .golden_default = true;
  add(summary_row("dma_transfer_average_bytes", U::bytes, dma, "average transfer",
                  "`dma_transfer_bytes` / `dma_transfer_count`, rounded down",
                  [](const RunReport& r) {
                    const StatsCollector& s = r.stats;
                    return json(s.transfers() ? s.dma_bytes() / s.transfers() : uint64_t{0});
                  }));
  Metric& dma_active =
      add(summary_row("dma_active_time", U::seconds, dma, "active time",
                      "the union of all transfers' [start, end] intervals",
                      [](const RunReport& r) { return json(seconds(r.stats.dma_active())); }));
  dma_active.golden_default = dma_active.time_part = true;
  add(summary_row("dma_active_time_percent", U::percent, dma, "active share",
                  "100 x `dma_active_time` / T",
                  [](const RunReport& r) { return json(percent(r.stats.dma_active(), r.total)); }));
  add(summary_row("dma_achieved_bytes_per_second", U::bytes_per_second, dma, "achieved bandwidth",
                  "`dma_transfer_bytes` / T", [](const RunReport& r) {
                    return json(r.total.value > 0 ? r.stats.dma_bytes() / seconds(r.total) : 0.0);
                  }));
  add(summary_row("cores", U::count, dma, "simulated cores",
                  "NeuronCores simulated (the engine rows sum them)",
                  [](const RunReport& r) { return json(r.result.cores); }));
  add(summary_row("dma_peak_bytes_per_second", U::bytes_per_second, dma, "DMA engines' peak",
                  "DMA engines x per-engine bandwidth x cores",
                  [](const RunReport& r) { return json(memory_figures(r).dma_peak * 1e9); }));
  add(summary_row("memory_limit_bytes_per_second", U::bytes_per_second, dma,
                  "limit for this traffic",
                  "min(DMA peak, HBM peak x DMA bytes / HBM bytes): what this traffic could "
                  "reach (an HBM-to-HBM byte costs HBM twice, SBUF-to-SBUF nothing)",
                  [](const RunReport& r) { return json(memory_figures(r).limit * 1e9); }));
  add(summary_row("dma_achieved_percent_of_limit", U::percent, dma, "achieved / limit",
                  "100 x `dma_achieved_bytes_per_second` / `memory_limit_bytes_per_second`",
                  [](const RunReport& r) { return json(memory_figures(r).percent_of_limit()); }));

  const std::string memory = "memory";
  const std::string memories = "{hbm,sbuf,psum}_";
  struct Memory {
    const char* key;
    const char* name;
    isa::Memory memory;
  };
  for (const Memory& mem :
       {Memory{"hbm", "HBM", isa::Memory::hbm}, Memory{"sbuf", "SBUF", isa::Memory::sbuf},
        Memory{"psum", "PSUM", isa::Memory::psum}}) {
    const isa::Memory which = mem.memory;
    add(summary_row(fmt::format("{}_read_bytes", mem.key), U::bytes, memory,
                    fmt::format("{} read", mem.name),
                    "bytes read from the memory, counted from every operand's access pattern "
                    "(DMA on completion)",
                    [which](const RunReport& r) { return json(r.stats.traffic(which).read); }))
        .family = memories + "read_bytes";
    add(summary_row(fmt::format("{}_write_bytes", mem.key), U::bytes, memory,
                    fmt::format("{} written", mem.name),
                    "bytes written to the memory, counted likewise",
                    [which](const RunReport& r) { return json(r.stats.traffic(which).written); }))
        .family = memories + "write_bytes";
  }
  add(summary_row("hbm_stacks", U::count, memory, "HBM stacks",
                  "HBM stacks the simulated cores use (`hbm.cores_per_stack` cores share one)",
                  [](const RunReport& r) { return json(r.result.hbm_stacks); }));
  add(summary_row("hbm_peak_bytes_per_second", U::bytes_per_second, memory, "HBM peak",
                  "the used stacks' peak: `hbm_stacks` x `hbm.stack_bytes_per_ns`",
                  [](const RunReport& r) { return json(memory_figures(r).hbm_peak * 1e9); }));
  add(summary_row("hbm_achieved_bytes_per_second", U::bytes_per_second, memory, "HBM achieved",
                  "(`hbm_read_bytes` + `hbm_write_bytes`) / T",
                  [](const RunReport& r) { return json(memory_figures(r).hbm_achieved * 1e9); }));
  // The DRAM controller model's counters (models/hbm). The flow memory model has no rows,
  // refresh or turnarounds, so its runs leave these out; stats.json's memory_model says which
  // model ran.
  const std::string absent = "; absent when the flow memory model ran (`dma_flow_model=true`)";
  struct Counter {
    const char* key;
    const char* label;
    const char* description;  // models/hbm/hbm.hpp, HbmCounters
    uint64_t models::HbmCounters::*field;
  };
  const Counter hbm_counters[] = {
      {"hbm_column_accesses", "column accesses", "column reads and writes the controllers issued",
       &models::HbmCounters::column_accesses},
      {"hbm_row_hits", "row hits", "column accesses that found their row open",
       &models::HbmCounters::row_hits},
      {"hbm_row_misses", "row misses", "column accesses that found the bank closed (activate)",
       &models::HbmCounters::row_misses},
      {"hbm_row_conflicts", "row conflicts",
       "column accesses that found another row open (precharge, activate)",
       &models::HbmCounters::row_conflicts},
      {"hbm_refresh_stalls", "refresh stalls", "pieces delayed or re-opened by a refresh",
       &models::HbmCounters::refresh_stalls},
      {"hbm_read_write_turnarounds", "read/write turnarounds",
       "read/write direction switches on a data bus", &models::HbmCounters::turnarounds}};
  add(summary_row("hbm_row_buffer_hit_rate", U::fraction, memory, "row-buffer hit rate",
                  "`hbm_row_hits` / `hbm_column_accesses`, from 0 to 1" + absent,
                  [](const RunReport& r) { return json(r.result.hbm.row_hit_rate()); }))
      .detailed_memory_model_only = true;
  for (const Counter& c : hbm_counters) {
    const auto field = c.field;
    add(summary_row(c.key, U::count, memory, c.label, c.description + absent,
                    [field](const RunReport& r) { return json(r.result.hbm.*field); }))
        .detailed_memory_model_only = true;
  }
  return t;
}

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string_view unit_text(MetricUnit u) {
  switch (u) {
    case MetricUnit::seconds:
      return "s";
    case MetricUnit::picoseconds:
      return "ps";
    case MetricUnit::cycles:
      return "cycles";
    case MetricUnit::count:
      return "count";
    case MetricUnit::flops:
      return "FLOP";
    case MetricUnit::percent:
      return "%";
    case MetricUnit::fraction:
      return "fraction";
    case MetricUnit::bytes:
      return "B";
    case MetricUnit::bytes_per_second:
      return "B/s";
  }
  return "?";
}

const std::vector<Metric>& metric_table() {
  static const std::vector<Metric> table = make_table();
  return table;
}

const Metric* find_metric(std::string_view id) {
  for (const Metric& m : metric_table()) {
    if (m.id() == id) return &m;
  }
  return nullptr;
}

std::string unknown_metric_text(std::string_view id) {
  std::vector<std::string> ids;
  for (const Metric& m : metric_table()) ids.push_back(m.id());
  const std::string near = base::closest_name(std::string(id), ids);
  return fmt::format("unknown metric \"{}\"{} (trnsim metrics lists them)", id,
                     near.empty() ? "" : fmt::format("; did you mean \"{}\"?", near));
}

const Metric& metric(std::string_view id) {
  if (const Metric* m = find_metric(id)) return *m;
  throw UnknownMetric(unknown_metric_text(id));
}

json summary_json(const RunReport& r) {
  json summary = json::object();
  for (const Metric& m : metric_table()) {
    if (m.object != "summary") continue;
    if (m.detailed_memory_model_only && r.result.flow_memory_model) continue;
    summary[m.key] = m.compute(r);
  }
  return summary;
}

const json* metric_json(const json& stats, std::string_view id) {
  const Metric& m = metric(id);
  if (!stats.is_object()) return nullptr;
  const auto object = stats.find(m.object);
  if (object == stats.end() || !object->is_object()) return nullptr;
  const auto v = object->find(m.key);
  if (v == object->end() || !v->is_number()) return nullptr;
  return &*v;
}

std::optional<double> metric_value(const json& stats, std::string_view id) {
  const json* v = metric_json(stats, id);
  if (v == nullptr) return std::nullopt;
  return v->get<double>();
}

double metric_or_zero(const json& stats, std::string_view id) {
  return metric_value(stats, id).value_or(0.0);
}

MemoryFigures memory_figures(const RunReport& r) {
  const StatsCollector& s = r.stats;
  MemoryFigures m;
  const uint64_t hbm = hbm_bytes(r);
  if (r.total.value > 0) {
    m.dma_achieved = s.dma_bytes() / r.total.ns();
    m.hbm_achieved = hbm / r.total.ns();
  }
  m.dma_peak = r.arch.dma_peak_bytes_per_ns() * r.result.cores;
  m.hbm_peak = r.result.hbm_stack_peak_bytes_per_ns * r.result.hbm_stacks;
  // An HBM->HBM byte costs HBM twice; SBUF->SBUF costs it nothing.
  m.limit = hbm > 0 && s.dma_bytes() > 0
                ? std::min(m.dma_peak, m.hbm_peak * s.dma_bytes() / static_cast<double>(hbm))
                : m.dma_peak;
  return m;
}

std::string metrics_listing(bool markdown) {
  const auto& table = metric_table();
  std::string out;
  if (!markdown) {
    for (const Metric& m : table) {
      out +=
          fmt::format("{:<40} {:<8} {}: {}\n", m.id(), unit_text(m.unit), m.section, m.description);
    }
    return out;
  }
  // One table per stats.json object; a family (the per-engine and per-memory metrics) is one
  // row, at its first member.
  for (const std::string object : {"summary", "host"}) {
    out += fmt::format("{}## {}\n\n| key | unit | formula / meaning |\n|---|---|---|\n",
                       object == "summary" ? "" : "\n",
                       object == "summary" ? "summary" : "host (graph workloads)");
    std::set<std::string> families;
    for (const Metric& m : table) {
      if (m.object != object) continue;
      if (!m.family.empty() && !families.insert(m.family).second) continue;
      out +=
          fmt::format("| `{}` | {} | {} |\n", m.family.empty() ? m.key : m.family,
                      markdown_cell(std::string(unit_text(m.unit))), markdown_cell(m.description));
    }
  }
  return out;
}

json metric_table_json() {
  json out = json::array();
  for (const Metric& m : metric_table()) {
    out.push_back({{"object", m.object},
                   {"key", m.key},
                   {"unit", std::string(unit_text(m.unit))},
                   {"section", m.section},
                   {"label", m.label},
                   {"description", m.description},
                   {"detailed_memory_model_only", m.detailed_memory_model_only}});
  }
  return out;
}

}  // namespace trnsim::sim
