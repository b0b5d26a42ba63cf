#include "config/parameters.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "base/names.hpp"

namespace trnsim::config {

namespace {

using K = Parameter::Kind;
constexpr double kBig = 1e15;

// One entry per field; `path` is the member path inside ArchConfig. The preset values, with
// their units and sources, are in arch/trn1.json, trn2.json and trn3.json: a new parameter
// needs an entry here, a field in ArchConfig and an entry in each of those files (until it
// has one, the presets refuse to load, naming it, and the unit tests fail).
#define TRNSIM_PARAM(name, path, kind, lo, hi, unit, desc)                                       \
  Parameter {                                                                                    \
    name, kind, lo, hi, unit, desc, [](const ArchConfig& a) { return double(a.path); },          \
        [](ArchConfig& a, double v) { a.path = static_cast<std::decay_t<decltype(a.path)>>(v); } \
  }

const std::vector<Parameter> kParameters = {
    TRNSIM_PARAM("chip_cores", chip_cores, K::integer, 1, 64, "cores",
                 "NeuronCores per chip a run may use"),
    TRNSIM_PARAM("clock.tensor_mhz", engine_mhz[0], K::integer, 1, 100000, "MHz", "TensorE clock"),
    TRNSIM_PARAM("clock.vector_mhz", engine_mhz[1], K::integer, 1, 100000, "MHz", "VectorE clock"),
    TRNSIM_PARAM("clock.scalar_mhz", engine_mhz[2], K::integer, 1, 100000, "MHz", "ScalarE clock"),
    TRNSIM_PARAM("clock.gpsimd_mhz", engine_mhz[3], K::integer, 1, 100000, "MHz", "GpSimdE clock"),
    TRNSIM_PARAM("clock.sync_mhz", engine_mhz[4], K::integer, 1, 100000, "MHz", "SyncE clock"),
    TRNSIM_PARAM("base_mhz", base_mhz, K::integer, 1, 100000, "MHz",
                 "NeuronCore base clock of neuroncore_cycle_count"),
    TRNSIM_PARAM("partitions", partitions, K::integer, 1, 512, "partitions",
                 "SBUF/PSUM partitions (above 128: a what-if no Trainium has)"),
    TRNSIM_PARAM("sbuf_partition_bytes", sbuf_partition_bytes, K::integer, 1024, 1 << 26, "bytes",
                 "SBUF bytes per partition"),
    TRNSIM_PARAM("psum_partition_bytes", psum_partition_bytes, K::integer, 1024, 1 << 22, "bytes",
                 "PSUM bytes per partition"),
    TRNSIM_PARAM("psum_banks", psum_banks, K::integer, 1, 64, "banks",
                 "PSUM banks (accumulation groups in flight)"),
    TRNSIM_PARAM("pe_rows", pe_rows, K::integer, 1, 512, "rows",
                 "PE array rows: the contraction, at most the partitions"),
    TRNSIM_PARAM("pe_columns", pe_columns, K::integer, 1, 1024, "columns",
                 "PE array columns: the widest stationary"),
    TRNSIM_PARAM("matmul_moving_max", matmul_moving_max, K::integer, 1, 4096, "elements",
                 "widest moving tile"),
    TRNSIM_PARAM("matmul_fp32_factor", matmul_fp32_factor, K::integer, 1, 64, "x",
                 "fp32 matmul cost factor"),
    TRNSIM_PARAM("matmul_min_cycles", matmul_min_cycles, K::integer, 0, 4096, "cycles",
                 "the 64 of max(min(64, N_stationary), N_moving)"),
    TRNSIM_PARAM("matmul_fp8_rate", matmul_fp8_rate, K::integer, 1, 8, "x",
                 "fp8 matmul rate over bf16"),
    TRNSIM_PARAM("vector_transpose_max", vector_transpose_max, K::integer, 1, 128, "elements",
                 "VectorE transpose block"),
    TRNSIM_PARAM("min_ii_cycles", min_ii_cycles, K::integer, 0, 100000, "cycles",
                 "MIN_II: the shortest instruction"),
    TRNSIM_PARAM("dma_trigger_ns", dma_trigger_ns, K::real, 0, 1e6, "ns",
                 "a DMA trigger on the issuing engine"),
    TRNSIM_PARAM("pipeline.tensor_latency_cycles", result_latency_cycles[0], K::integer, 0, 100000,
                 "cycles", "TensorE: results committed this long after its initiation interval"),
    TRNSIM_PARAM("pipeline.vector_latency_cycles", result_latency_cycles[1], K::integer, 0, 100000,
                 "cycles", "VectorE: results committed this long after its initiation interval"),
    TRNSIM_PARAM("pipeline.scalar_latency_cycles", result_latency_cycles[2], K::integer, 0, 100000,
                 "cycles", "ScalarE: results committed this long after its initiation interval"),
    TRNSIM_PARAM("pipeline.gpsimd_latency_cycles", result_latency_cycles[3], K::integer, 0, 100000,
                 "cycles", "GpSimdE: results committed this long after its initiation interval"),
    TRNSIM_PARAM("pipeline.semaphore_local_ns", semaphore_local_ns, K::real, 0, 1e6, "ns",
                 "same-engine dependency: producer's results to the dependent's start"),
    TRNSIM_PARAM("pipeline.semaphore_cross_engine_ns", semaphore_cross_engine_ns, K::real, 0, 1e6,
                 "ns", "semaphore update by another engine to the waiting instruction's start"),
    TRNSIM_PARAM("pipeline.dma_completion_wake_ns", dma_completion_wake_ns, K::real, 0, 1e6, "ns",
                 "DMA completion (queue semaphore) to the waiting instruction's start"),
    TRNSIM_PARAM("tensor_throttle.start_fraction", tensor_throttle.start_fraction, K::real, 0.01, 1,
                 "", "TensorE rate when throttling engages (1: no throttling)"),
    TRNSIM_PARAM("tensor_throttle.ramp_ns", tensor_throttle.ramp_ns, K::real, 0, 1e9, "ns",
                 "TensorE throttle ramp to full rate"),
    TRNSIM_PARAM("tensor_throttle.window_ns", tensor_throttle.window_ns, K::real, 1, 1e9, "ns",
                 "TensorE throttle occupancy window"),
    TRNSIM_PARAM("tensor_throttle.threshold", tensor_throttle.threshold, K::real, 0, 1, "",
                 "TensorE occupancy below which the throttle re-engages"),
    TRNSIM_PARAM("gpsimd_fixed_cycles", gpsimd_fixed_cycles, K::integer, 0, 100000, "cycles",
                 "GpSimdE fixed cost (iota, affine_select)"),
    TRNSIM_PARAM("bn_stats_free_max", bn_stats_free_max, K::integer, 1, 65536, "elements",
                 "bn_stats input limit"),
    TRNSIM_PARAM("sbuf_free_elements_max", sbuf_free_elements_max, K::integer, 1, 65536, "elements",
                 "engine free size from SBUF"),
    TRNSIM_PARAM("psum_free_elements_max", psum_free_elements_max, K::integer, 1, 65536, "elements",
                 "engine free size from PSUM"),
    TRNSIM_PARAM("shared_sbuf_psum_ports", shared_sbuf_psum_ports, K::flag, 0, 1, "",
                 "v2 port conflicts (VectorE/GpSimdE SBUF, VectorE/ScalarE PSUM)"),
    TRNSIM_PARAM("vector_perf_modes", vector_perf_modes, K::flag, 0, 1, "",
                 "v3 VectorE 2x/4x performance modes"),
    TRNSIM_PARAM("dma_engines", dma_engines, K::integer, 1, 128, "engines", "DMA engines per core"),
    TRNSIM_PARAM("dma_queues_per_engine", dma_queues_per_engine, K::integer, 1, 64, "queues",
                 "queues per DMA engine"),
    TRNSIM_PARAM("dma_partitions_per_engine", dma_partitions_per_engine, K::integer, 1, 128,
                 "partitions", "partitions one DMA engine takes of a transfer"),
    TRNSIM_PARAM("dma_engine_bytes_per_ns", dma_engine_bytes_per_ns, K::real, 0.01, 10000, "B/ns",
                 "DMA engine bandwidth (GB/s)"),
    TRNSIM_PARAM("dma_descriptor_overhead_ns", dma_descriptor_overhead_ns, K::real, 0, 1e6, "ns",
                 "fixed cost per DMA descriptor"),
    TRNSIM_PARAM("dma_start_latency_ns", dma_start_latency_ns, K::real, 0, 1e7, "ns",
                 "trigger to first byte of a DMA"),
    TRNSIM_PARAM("dma_transfer_setup_ns", dma_transfer_setup_ns, K::real, 0, 1e7, "ns",
                 "a DMA engine's setup of one transfer (one at a time per engine)"),
    TRNSIM_PARAM("dma_chunk_bytes", dma_chunk_bytes, K::integer, 64, 1 << 24, "bytes",
                 "DMA engine chunk between queue arbitrations"),
    TRNSIM_PARAM("dma_engine_outstanding_chunks", dma_engine_outstanding_chunks, K::integer, 1,
                 1024, "chunks", "chunks a DMA engine keeps waiting for HBM"),
    TRNSIM_PARAM("dma_flow_model", dma_flow_model, K::flag, 0, 1, "",
                 "flow-level (fluid) DMA/HBM model instead of chunks and HBM pieces"),
    TRNSIM_PARAM("dma_dge_instruction_ns", dma_dge_instruction_ns, K::real, 0, 1e6, "ns",
                 "DGE DMA instruction cost (0: no DGE)"),
    TRNSIM_PARAM("dma_transpose_hbm_fraction", dma_transpose_hbm_fraction, K::real, 0.01, 1, "",
                 "DMA transpose rate from HBM"),
    TRNSIM_PARAM("dma_transpose_sbuf_fraction", dma_transpose_sbuf_fraction, K::real, 0.01, 1, "",
                 "DMA transpose rate SBUF to SBUF"),
    TRNSIM_PARAM("hbm_capacity_bytes", hbm_capacity_bytes, K::integer, 1 << 20, kBig, "bytes",
                 "HBM per core"),
    TRNSIM_PARAM("hbm_latency_ns", hbm_latency_ns, K::real, 0, 1e6, "ns",
                 "fixed HBM access path latency"),
    TRNSIM_PARAM("hbm.cores_per_stack", hbm.cores_per_stack, K::integer, 1, 64, "cores",
                 "cores sharing one HBM stack"),
    TRNSIM_PARAM("hbm.stack_bytes_per_ns", hbm.stack_bytes_per_ns, K::real, 0.01, 1e6, "B/ns",
                 "one stack's peak (GB/s)"),
    TRNSIM_PARAM("hbm.pseudo_channels", hbm.pseudo_channels, K::integer, 1, 1024, "channels",
                 "pseudo-channels per stack"),
    TRNSIM_PARAM("hbm.bank_groups", hbm.bank_groups, K::integer, 1, 64, "groups",
                 "bank groups per pseudo-channel"),
    TRNSIM_PARAM("hbm.banks_per_group", hbm.banks_per_group, K::integer, 1, 64, "banks",
                 "banks per bank group"),
    TRNSIM_PARAM("hbm.row_bytes", hbm.row_bytes, K::integer, 32, 1 << 20, "bytes",
                 "row buffer per pseudo-channel"),
    TRNSIM_PARAM("hbm.burst_bytes", hbm.burst_bytes, K::integer, 1, 4096, "bytes",
                 "one column access"),
    TRNSIM_PARAM("hbm.interleave_bytes", hbm.interleave_bytes, K::integer, 1, 1 << 20, "bytes",
                 "address-map interleave unit"),
    TRNSIM_PARAM("hbm.t_rcd", hbm.t_rcd, K::real, 0, 1e5, "ns", "activate to column command"),
    TRNSIM_PARAM("hbm.t_rp", hbm.t_rp, K::real, 0, 1e5, "ns", "precharge"),
    TRNSIM_PARAM("hbm.t_ras", hbm.t_ras, K::real, 0, 1e5, "ns", "activate to precharge"),
    TRNSIM_PARAM("hbm.t_cl", hbm.t_cl, K::real, 0, 1e5, "ns", "read latency"),
    TRNSIM_PARAM("hbm.t_cwl", hbm.t_cwl, K::real, 0, 1e5, "ns", "write latency"),
    TRNSIM_PARAM("hbm.t_wr", hbm.t_wr, K::real, 0, 1e5, "ns", "write recovery"),
    TRNSIM_PARAM("hbm.t_rtp", hbm.t_rtp, K::real, 0, 1e5, "ns", "read to precharge"),
    TRNSIM_PARAM("hbm.t_ccd_l", hbm.t_ccd_l, K::real, 0, 1e5, "ns",
                 "column to column, same bank group (0: a burst)"),
    TRNSIM_PARAM("hbm.t_rrd", hbm.t_rrd, K::real, 0, 1e5, "ns", "activate to activate"),
    TRNSIM_PARAM("hbm.t_faw", hbm.t_faw, K::real, 0, 1e5, "ns", "four-activate window"),
    TRNSIM_PARAM("hbm.t_wtr", hbm.t_wtr, K::real, 0, 1e5, "ns", "write to read turnaround"),
    TRNSIM_PARAM("hbm.t_rtw", hbm.t_rtw, K::real, 0, 1e5, "ns", "read to write turnaround"),
    TRNSIM_PARAM("hbm.t_refi", hbm.t_refi, K::real, 1, 1e7, "ns", "refresh interval"),
    TRNSIM_PARAM("hbm.t_rfc", hbm.t_rfc, K::real, 0, 1e6, "ns", "refresh cycle time"),
    TRNSIM_PARAM("hbm.per_bank_refresh", hbm.per_bank_refresh, K::flag, 0, 1, "",
                 "refresh one bank at a time"),
    TRNSIM_PARAM("hbm.channel_hash", hbm.channel_hash, K::flag, 0, 1, "",
                 "permute the pseudo-channels per round of the interleave (XOR fold)"),
    TRNSIM_PARAM("hbm.starvation_limit", hbm.starvation_limit, K::integer, 1, 1 << 20, "decisions",
                 "FR-FCFS: bypasses of the oldest request"),
    TRNSIM_PARAM("hbm.scheduler_window", hbm.scheduler_window, K::integer, 1, 1 << 20, "requests",
                 "FR-FCFS: requests looked at"),
    TRNSIM_PARAM("host.framework_op_ns", host.framework_op_ns, K::real, 0, kBig, "ns",
                 "CPU time to dispatch one framework (PyTorch) op"),
    TRNSIM_PARAM("host.runtime_launch_ns", host.runtime_launch_ns, K::real, 0, kBig, "ns",
                 "CPU time of one kernel launch call to the runtime"),
    TRNSIM_PARAM("host.launch_latency_ns", host.launch_latency_ns, K::real, 0, kBig, "ns",
                 "from a launch call to the device seeing the kernel"),
    TRNSIM_PARAM("host.kernel_setup_ns", host.kernel_setup_ns, K::real, 0, kBig, "ns",
                 "device time to start a kernel, between kernels"),
    TRNSIM_PARAM("host.sync_ns", host.sync_ns, K::real, 0, kBig, "ns",
                 "CPU time of the final synchronization after the device finishes"),
    TRNSIM_PARAM("host.max_inflight", host.max_inflight, K::integer, 1, 1e6, "kernels",
                 "kernels launched and not finished before a launch call blocks"),
    TRNSIM_PARAM("host.transfer_bytes_per_ns", host.transfer_bytes_per_ns, K::real, 1e-3, kBig,
                 "B/ns", "host link bandwidth of a copy between host and device memory"),
    TRNSIM_PARAM("host.transfer_latency_ns", host.transfer_latency_ns, K::real, 0, kBig, "ns",
                 "fixed cost of one copy call between host and device memory"),
    TRNSIM_PARAM("host.cpu_bytes_per_ns", host.cpu_bytes_per_ns, K::real, 1e-3, kBig, "B/ns",
                 "bytes a host (CPU fallback) op reads and writes per ns"),
    TRNSIM_PARAM("instance.torus_x", instance.torus_x, K::integer, 1, 64, "chips",
                 "chips along the instance torus' first axis"),
    TRNSIM_PARAM("instance.torus_y", instance.torus_y, K::integer, 1, 64, "chips",
                 "chips along the instance torus' second axis"),
    TRNSIM_PARAM("instance.switched", instance.switched, K::flag, 0, 1, "",
                 "chips reach each other through a switch (one hop) instead of a torus"),
    TRNSIM_PARAM("link.bytes_per_ns", link.bytes_per_ns, K::real, 1e-3, kBig, "B/ns",
                 "one NeuronLink between two chips, per direction"),
    TRNSIM_PARAM("link.latency_ns", link.latency_ns, K::real, 0, kBig, "ns",
                 "one NeuronLink hop: wire, SerDes, routing"),
    TRNSIM_PARAM("cc.step_ns", cc.step_ns, K::real, 0, kBig, "ns",
                 "fixed cost of one collective algorithm step (alpha)"),
    TRNSIM_PARAM("cc.launch_ns", cc.launch_ns, K::real, 0, kBig, "ns",
                 "from a collective's trigger to its first step"),
    TRNSIM_PARAM("cc.reduce_fraction", cc.reduce_fraction, K::real, 1e-3, 1, "",
                 "a DMA reduction's throughput as a fraction of a copy's"),
    TRNSIM_PARAM("cc.mesh_max_bytes", cc.mesh_max_bytes, K::integer, 0, kBig, "bytes",
                 "collectives smaller than this run the mesh algorithm (when not forced)"),
    TRNSIM_PARAM("cc.rdh_max_bytes", cc.rdh_max_bytes, K::integer, 0, kBig, "bytes",
                 "collectives smaller than this (and not mesh) run recursive doubling/halving"),
    TRNSIM_PARAM("semaphores", semaphores, K::integer, 1, 65535, "semaphores",
                 "semaphores a program may use"),
    TRNSIM_PARAM("max_instructions", max_instructions, K::integer, 1, 1e9, "instructions",
                 "instructions one kernel may hold"),
    TRNSIM_PARAM("dma_queues", dma_queues, K::integer, 1, 4096, "queues",
                 "DMA queues a program may name"),
};

#undef TRNSIM_PARAM

}  // namespace

const std::vector<Parameter>& parameters() {
  return kParameters;
}

const Parameter* find_parameter(std::string_view name) {
  for (const auto& p : kParameters) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string parameter_value_text(const Parameter& p, const ArchConfig& arch) {
  const double v = p.get(arch);
  switch (p.kind) {
    case K::flag:
      return v != 0 ? "true" : "false";
    case K::integer:
      return fmt::format("{}", static_cast<uint64_t>(v));
    case K::real:
      return fmt::format("{}", v);
  }
  return {};
}

std::string arch_consistency_error(const ArchConfig& arch) {
  if (arch.pe_rows > arch.partitions) {
    return fmt::format(
        "pe_rows {} is deeper than the {} partitions: a matmul contracts over SBUF partitions; "
        "set partitions too (--set partitions={})",
        arch.pe_rows, arch.partitions, arch.pe_rows);
  }
  if (arch.pe_columns > arch.partitions) {
    return fmt::format(
        "pe_columns {} is wider than the {} partitions: a matmul writes one PSUM partition per "
        "stationary column; set partitions too (--set partitions={})",
        arch.pe_columns, arch.partitions, arch.pe_columns);
  }
  return "";
}

std::vector<std::string> parameter_names() {
  std::vector<std::string> names;
  for (const auto& q : kParameters) names.emplace_back(q.name);
  return names;
}

std::string unknown_parameter_text(const std::string& name) {
  // Parameters that were dropped, and what to set instead.
  if (name == "dependent_overhead_cycles") {
    return "no longer a parameter: a dependent instruction now waits for its producer's results "
           "(pipeline.*_latency_cycles) and the semaphore's wake latency "
           "(pipeline.semaphore_local_ns, pipeline.semaphore_cross_engine_ns, "
           "pipeline.dma_completion_wake_ns) instead of a fixed overhead";
  }
  if (name == "dma_trigger_cycles") {
    return "no longer a parameter: set dma_trigger_ns (the trigger's time on the issuing engine, "
           "in ns) instead";
  }
  if (name == "hbm_bytes_per_ns") {
    return "no longer a parameter: a core's share of the HBM bandwidth moved nothing but MBU, "
           "which divides by the peak of the HBM stacks the run uses; set hbm.stack_bytes_per_ns "
           "(one stack's peak, B/ns), which drives time and MBU, instead";
  }
  const std::string near = base::closest_name(name, parameter_names());
  return fmt::format("unknown parameter{} (trnsim params lists them)",
                     near.empty() ? "" : fmt::format("; did you mean {}?", near));
}

std::string check_parameter_value(const Parameter& p, double v, const std::string& text) {
  switch (p.kind) {
    case K::flag:
      if (v != 0 && v != 1) return fmt::format("expected true or false, got \"{}\"", text);
      return {};
    case K::integer:
    case K::real:
      if (!std::isfinite(v)) return fmt::format("expected a number, got \"{}\"", text);
      if (p.kind == K::integer && v != std::floor(v)) {
        return fmt::format("expected an integer, got \"{}\"", text);
      }
      if (v < p.min || v > p.max) {
        return fmt::format("{} is out of range [{}, {}]{}{}", text, p.min, p.max,
                           p.unit.empty() ? "" : " ", p.unit);
      }
      return {};
  }
  return {};
}

namespace {

// [+-] digits [. digits] [e [+-] digits], or with the digits only after the point: what a
// person writes as a number. strtod alone also takes hexadecimal (--set pe_rows=0x40 read as
// 64), "inf", "nan" and leading spaces, none of which a parameter value means.
bool is_decimal_number(const std::string& t) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i - from;
  };
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < t.size() && t[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == t.size();
}

}  // namespace

double parse_parameter_value(const Parameter& p, const std::string& text) {
  double v = 0;
  if (p.kind == K::flag) {
    if (text == "true" || text == "1") {
      v = 1;
    } else if (text == "false" || text == "0") {
      v = 0;
    } else {
      throw std::invalid_argument(fmt::format("expected true or false, got \"{}\"", text));
    }
    return v;
  }
  if (!is_decimal_number(text)) {
    throw std::invalid_argument(
        fmt::format("expected a decimal number (such as 64, 1.5 or 2e3), got \"{}\"", text));
  }
  char* end = nullptr;
  v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) {
    throw std::invalid_argument(fmt::format("expected a number, got \"{}\"", text));
  }
  const std::string problem = check_parameter_value(p, v, text);
  if (!problem.empty()) throw std::invalid_argument(problem);
  return v;
}

const Parameter& parse_assignment(const std::string& assignment, double& value) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos) {
    throw std::invalid_argument(
        fmt::format("--set {}: expected name=value (trnsim params lists the names)", assignment));
  }
  const std::string name = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  const Parameter* p = find_parameter(name);
  if (p == nullptr) {
    throw std::invalid_argument(fmt::format("--set {}: {}", name, unknown_parameter_text(name)));
  }
  try {
    value = parse_parameter_value(*p, text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("--set {}: {}", name, e.what()));
  }
  return *p;
}

void set_parameter(ArchConfig& arch, const std::string& assignment) {
  double v = 0;
  const Parameter& p = parse_assignment(assignment, v);
  p.set(arch, v);
}

size_t parameter_index(const Parameter& p) {
  return static_cast<size_t>(&p - kParameters.data());
}

}  // namespace trnsim::config
