#include "sim/trace_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "models/neuroncore/cost.hpp"

namespace trnsim::sim {

namespace {
constexpr size_t kFlushBytes = 1 << 16;
int core_pid(uint32_t core) {
  return 1 + static_cast<int>(core);
}

std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump();
}
}  // namespace

std::string trace_timestamp(Picoseconds t) {
  const int64_t v = t.value;
  return fmt::format("{}{}.{:06}", v < 0 ? "-" : "", std::abs(v) / 1000000, std::abs(v) % 1000000);
}

TraceWriter::TraceWriter(const std::string& path, const isa::Program& program,
                         const isa::ArchConfig& arch, uint32_t cores)
    : cores_(cores), file_(path), program_(program), arch_(arch) {
  buffer_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  if (!program.host_ops.empty()) {
    event(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":"Host"}}}})",
                      kHostPid));
    for (const auto& [tid, name] :
         {std::pair<int, const char*>{kFrameworkLane, "framework"}, {kRuntimeLane, "runtime"}}) {
      event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"{}"}}}})", kHostPid,
          tid, name));
      event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
          kHostPid, tid, tid));
    }
  }
  for (uint32_t core = 0; core < cores_; ++core) {
    const int kCorePid = core_pid(core);
    event(fmt::format(
        R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})", kCorePid,
        json_string(fmt::format("NeuronCore {} ({}) {}", core, arch.name, program.name))));
    event(fmt::format(
        R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"Kernels"}}}})",
        kCorePid, kKernelLane));
    event(fmt::format(
        R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":-1}}}})",
        kCorePid, kKernelLane));
    for (isa::Engine e : isa::kAllEngines) {
      event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"{}"}}}})", kCorePid,
          engine_lane(e), isa::name_of(e)));
      event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
          kCorePid, engine_lane(e), engine_lane(e)));
    }
    for (size_t q = 0; q < program.queues.size(); ++q) {
      const int lane = queue_lane(static_cast<uint16_t>(q));
      event(
          fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})",
                      kCorePid, lane, json_string("DMA " + program.queues[q].name)));
      event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
          kCorePid, lane, lane));
    }
  }
}

void TraceWriter::event(const std::string& json) {
  if (!first_) buffer_ += ",\n";
  first_ = false;
  buffer_ += json;
  flush_if_full();
}

void TraceWriter::flush_if_full() {
  if (buffer_.size() < kFlushBytes) return;
  // Called from the engines' SystemC threads: an exception there would reach the user wrapped
  // in a SystemC report. A failed write is kept and thrown by close(), after the run.
  if (write_error_.empty()) {
    try {
      file_.write(buffer_);
    } catch (const OutputError& e) {
      write_error_ = e.what();
    }
  }
  buffer_.clear();
}

void TraceWriter::on_instruction(const models::InstructionRecord& r) {
  const isa::Instruction& in = program_.stream(r.engine)[r.index];
  const int lane = engine_lane(r.engine);
  const int kCorePid = core_pid(static_cast<uint32_t>(r.core));
  if (isa::is_dma(in.opcode)) {
    steps_.push_back({r.end.value, static_cast<uint32_t>(r.core), Counter::pending_dmas, 1.0});
  }
  const Picoseconds semaphores_met = r.start - r.port_wait;
  if (r.port_wait.value > 0) {
    event(fmt::format(
        R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"port wait","cat":"port","args":{{"why":"a shared SBUF/PSUM port or PSUM bank is in use by another engine"}}}})",
        kCorePid, lane, trace_timestamp(semaphores_met), trace_timestamp(r.port_wait)));
  }
  if (semaphores_met > r.ready && r.blocked_on != models::kNoSemaphore) {
    int64_t value = 0;
    for (const auto& w : in.waits) {
      if (w.semaphore == r.blocked_on) value = w.value;
    }
    const std::string& sem = program_.semaphores[r.blocked_on].name;
    event(fmt::format(
        R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"semaphore","args":{{"semaphore":{},"reaches":{}}}}})",
        kCorePid, lane, trace_timestamp(r.ready), trace_timestamp(semaphores_met - r.ready),
        json_string(fmt::format("wait {} >= {}", sem, value)), json_string(sem), value));
  }
  std::string operands = fmt::format("dst={}", in.dst.to_string());
  for (int i = 0; i < 3; ++i) {
    if (in.src[i].present()) operands += fmt::format(" src{}={}", i, in.src[i].to_string());
  }
  std::string args =
      fmt::format(R"("opcode":"{}","index":{},"label":{},"operands":{},"cycles":{},"flops":{})",
                  isa::name_of(in.opcode), r.index, json_string(in.label), json_string(operands),
                  r.cycles.value, models::instruction_flops(in));
  if (in.opcode == isa::Opcode::activation) {
    args += fmt::format(R"(,"function":"{}")", isa::name_of(in.function));
  }
  if (isa::is_dma(in.opcode)) {
    args += fmt::format(R"(,"queue":{})", json_string(program_.queues[in.dma_queue].name));
  }
  event(fmt::format(
      R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"{}","cat":"instruction","args":{{{}}}}})",
      kCorePid, lane, trace_timestamp(r.start), trace_timestamp(r.end - r.start),
      isa::profiler_name_of(in.opcode), args));
}

void TraceWriter::on_transfer(const models::TransferRecord& r) {
  const isa::Instruction& in = program_.stream(r.issuer)[r.index];
  const std::string name = in.label.empty() ? std::string("dma_copy") : in.label;
  const int kCorePid = core_pid(static_cast<uint32_t>(r.core));
  const auto core = static_cast<uint32_t>(r.core);
  steps_.push_back({r.end.value, core, Counter::pending_dmas, -1.0});
  if (r.end > r.start) {
    // The transfer's average rate over its lifetime, in bytes per ns (GB/s).
    const double rate = static_cast<double>(r.bytes) / (r.end - r.start).ns();
    steps_.push_back({r.start.value, core, Counter::dma_throughput, rate});
    steps_.push_back({r.end.value, core, Counter::dma_throughput, -rate});
  }
  event(fmt::format(
      R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"dma","args":{{"bytes":{},"dma_engines":{},"descriptors":{},"issued_by":"{}","issued_at_us":{},"src":{},"dst":{}}}}})",
      kCorePid, queue_lane(r.queue), trace_timestamp(r.start), trace_timestamp(r.end - r.start),
      json_string(name), r.bytes, r.engines, r.descriptors, isa::name_of(r.issuer),
      trace_timestamp(r.issued), json_string(in.src[0].to_string()),
      json_string(in.dst.to_string())));
}

void TraceWriter::on_kernel(const models::KernelRecord& r) {
  const int pid = core_pid(static_cast<uint32_t>(r.core));
  const std::string name =
      program_.kernels.empty() ? program_.name : program_.kernels[r.kernel].name;
  event(fmt::format(
      R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"kernel","args":{{"kernel":{},"launch_arrived_us":{}}}}})",
      pid, kKernelLane, trace_timestamp(r.start), trace_timestamp(r.end - r.start),
      json_string(name), r.kernel, trace_timestamp(r.arrived)));
  if (!program_.host_ops.empty()) {
    // The end of the launch's flow arrow, bound to this kernel's slice.
    event(fmt::format(
        R"({{"ph":"f","bp":"e","pid":{},"tid":{},"ts":{},"id":{},"name":"launch","cat":"launch"}})",
        pid, kKernelLane, trace_timestamp(r.start), r.kernel * 64 + r.core + 1));
  }
}

void TraceWriter::on_host(const models::HostRecord& r) {
  const std::string op = program_.host_ops.empty() ? "" : program_.host_ops[r.op].name;
  const auto kernel_name = [&] {
    return program_.kernels.empty() ? program_.name : program_.kernels[r.kernel].name;
  };
  std::string name;
  switch (r.activity) {
    case models::HostActivity::dispatch:
      name = op;
      break;
    case models::HostActivity::launch:
      name = "launch " + kernel_name();
      break;
    case models::HostActivity::queue_full:
      name = fmt::format("queue full: {} kernels in flight", arch_.host.max_inflight);
      break;
    case models::HostActivity::synchronize:
      name = "synchronize";
      break;
  }
  const int tid = r.lane == models::HostLane::framework ? kFrameworkLane : kRuntimeLane;
  event(fmt::format(
      R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"host","args":{{"op":{},"kernel":{}}}}})",
      kHostPid, tid, trace_timestamp(r.start), trace_timestamp(r.end - r.start), json_string(name),
      json_string(op), r.kernel));
  if (r.activity == models::HostActivity::launch) {
    for (uint32_t c = 0; c < cores_; ++c) {
      event(fmt::format(
          R"({{"ph":"s","pid":{},"tid":{},"ts":{},"id":{},"name":"launch","cat":"launch"}})",
          kHostPid, tid, trace_timestamp(r.end - Picoseconds(1)), r.kernel * 64 + c + 1));
    }
  }
}

void TraceWriter::write_counters() {
  std::stable_sort(steps_.begin(), steps_.end(), [](const CounterStep& a, const CounterStep& b) {
    if (a.core != b.core) return a.core < b.core;
    if (a.counter != b.counter) return a.counter < b.counter;
    return a.time < b.time;
  });
  double value = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const CounterStep& s = steps_[i];
    if (i == 0 || s.core != steps_[i - 1].core || s.counter != steps_[i - 1].counter) value = 0;
    value += s.delta;
    // One sample per distinct time: the value after every change at that time.
    const bool last_at_time = i + 1 == steps_.size() || steps_[i + 1].time != s.time ||
                              steps_[i + 1].core != s.core || steps_[i + 1].counter != s.counter;
    if (!last_at_time) continue;
    const bool pending = s.counter == Counter::pending_dmas;
    if (std::abs(value) < 1e-9) value = 0;  // rates added and removed leave rounding dust
    event(fmt::format(
        R"({{"ph":"C","pid":{},"ts":{},"name":"{}","args":{{"{}":{}}}}})", core_pid(s.core),
        trace_timestamp(Picoseconds(s.time)), pending ? "pending DMAs" : "DMA throughput",
        pending ? "transfers" : "GB/s",
        pending ? fmt::format("{}", static_cast<int64_t>(value)) : fmt::format("{:.3f}", value)));
  }
}

void TraceWriter::close() {
  if (!write_error_.empty()) throw OutputError(write_error_);
  write_counters();
  buffer_ += "\n]}\n";
  file_.write(buffer_);
  buffer_.clear();
  file_.close();
}

}  // namespace trnsim::sim
