#include "sim/trace_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
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

// The event path formats without fmt and without temporaries: the writer runs once per
// instruction and per transfer.
template <typename Int>
void append_int(TraceText& out, Int v) {
  char* p = out.room(24);
  out.commit(std::to_chars(p, p + 24, v).ptr);
}

// As trace_timestamp(): microseconds with six decimals.
void append_timestamp(TraceText& out, Picoseconds t) {
  const int64_t v = t.value;
  char* p = out.room(32);
  if (v < 0) *p++ = '-';
  const int64_t a = std::abs(v);
  p = std::to_chars(p, p + 24, a / 1000000).ptr;
  *p = '.';
  int64_t f = a % 1000000;
  for (int i = 6; i >= 1; --i, f /= 10) p[i] = static_cast<char>('0' + f % 10);
  out.commit(p + 7);
}

// As json_string(): plain printable ASCII is quoted as is, anything else goes through
// nlohmann::json so that escaping (and its errors) stay the library's.
void append_json_string(TraceText& out, std::string_view s) {
  for (const char c : s) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
      out += json_string(std::string(s));
      return;
    }
  }
  char* p = out.room(s.size() + 2);
  *p++ = '"';
  std::memcpy(p, s.data(), s.size());
  p += s.size();
  *p++ = '"';
  out.commit(p);
}

void append_pattern(TraceText& out, const isa::AccessPattern& ap) {
  out.commit(ap.append_to(out.room(isa::AccessPattern::kMaxTextBytes)));
}
}  // namespace

std::string trace_timestamp(Picoseconds t) {
  TraceText s;
  append_timestamp(s, t);
  return std::string(s.view());
}

TraceWriter::TraceWriter(const std::string& path, const isa::Program& program,
                         const isa::ArchConfig& arch, uint32_t cores)
    : lanes_(2 * static_cast<size_t>(cores)),
      cores_(cores),
      file_(path),
      program_(program),
      arch_(arch) {
  buffer_ += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
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

TraceWriter::~TraceWriter() {
  for (auto& l : lanes_) {
    if (l.spill != nullptr) std::fclose(l.spill);
  }
}

void TraceWriter::event(const std::string& json) {
  start_event() += json;
  finish_event();
}

TraceText& TraceWriter::start_event() {
  if (!first_) buffer_ += ",\n";
  first_ = false;
  return buffer_;
}

void TraceWriter::flush_if_full() {
  if (buffer_.size() < kFlushBytes) return;
  // Called from the engines' SystemC threads: an exception there would reach the user wrapped
  // in a SystemC report. A failed write is kept and thrown by close(), after the run.
  if (write_error_.empty()) {
    try {
      file_.write(buffer_.view());
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
  const auto core = static_cast<uint32_t>(r.core);
  if (isa::is_dma(in.opcode)) {
    add_step(core, Counter::pending_dmas, r.end.value, 1.0);
    ++in_flight_[r.end.value];  // the transfer's issue time (TransferRecord::issued)
  }
  latest_instruction_ = std::max(latest_instruction_, r.end.value);
  const Picoseconds semaphores_met = r.start - r.port_wait;
  auto slice_head = [&](TraceText& out, Picoseconds ts, Picoseconds dur) {
    out += R"({"ph":"X","pid":)";
    append_int(out, kCorePid);
    out += R"(,"tid":)";
    append_int(out, lane);
    out += R"(,"ts":)";
    append_timestamp(out, ts);
    out += R"(,"dur":)";
    append_timestamp(out, dur);
  };
  if (r.port_wait.value > 0) {
    TraceText& out = start_event();
    slice_head(out, semaphores_met, r.port_wait);
    out +=
        R"(,"name":"port wait","cat":"port","args":{"why":"a shared SBUF/PSUM port or PSUM bank is in use by another engine"}})";
    finish_event();
  }
  if (semaphores_met > r.ready && r.blocked_on != models::kNoSemaphore) {
    int64_t value = 0;
    for (const auto& w : in.waits) {
      if (w.semaphore == r.blocked_on) value = w.value;
    }
    const std::string& sem = program_.semaphores[r.blocked_on].name;
    operands_.clear();
    operands_ += "wait ";
    operands_ += sem;
    operands_ += " >= ";
    append_int(operands_, value);
    TraceText& out = start_event();
    slice_head(out, r.ready, semaphores_met - r.ready);
    out += R"(,"name":)";
    append_json_string(out, operands_.view());
    out += R"(,"cat":"semaphore","args":{"semaphore":)";
    append_json_string(out, sem);
    out += R"(,"reaches":)";
    append_int(out, value);
    out += "}}";
    finish_event();
  }
  TraceText& out = start_event();
  slice_head(out, r.start, r.end - r.start);
  out += R"(,"name":")";
  out += isa::profiler_name_of(in.opcode);
  out += R"(","cat":"instruction","args":{"opcode":")";
  out += isa::name_of(in.opcode);
  out += R"(","index":)";
  append_int(out, r.index);
  out += R"(,"label":)";
  append_json_string(out, in.label);
  // Operand text is plain ASCII without quotes or backslashes: quoted as is.
  out += R"(,"operands":"dst=)";
  append_pattern(out, in.dst);
  for (int i = 0; i < 3; ++i) {
    if (!in.src[i].present()) continue;
    out += " src";
    out += static_cast<char>('0' + i);
    out += '=';
    append_pattern(out, in.src[i]);
  }
  out += '"';
  out += R"(,"cycles":)";
  append_int(out, r.cycles.value);
  out += R"(,"flops":)";
  append_int(out, models::instruction_flops(in));
  if (in.opcode == isa::Opcode::activation) {
    out += R"(,"function":")";
    out += isa::name_of(in.function);
    out += '"';
  }
  if (isa::is_dma(in.opcode)) {
    out += R"(,"queue":)";
    append_json_string(out, program_.queues[in.dma_queue].name);
  }
  out += "}}";
  finish_event();
  release_if_safe();
}

void TraceWriter::on_transfer(const models::TransferRecord& r) {
  const isa::Instruction& in = program_.stream(r.issuer)[r.index];
  const int kCorePid = core_pid(static_cast<uint32_t>(r.core));
  const auto core = static_cast<uint32_t>(r.core);
  add_step(core, Counter::pending_dmas, r.end.value, -1.0);
  if (r.end > r.start) {
    // The transfer's average rate over its lifetime, in bytes per ns (GB/s).
    const double rate = static_cast<double>(r.bytes) / (r.end - r.start).ns();
    add_step(core, Counter::dma_throughput, r.start.value, rate);
    add_step(core, Counter::dma_throughput, r.end.value, -rate);
  }
  const auto it = in_flight_.find(r.issued.value);
  if (it != in_flight_.end() && --it->second == 0) in_flight_.erase(it);
  TraceText& out = start_event();
  out += R"({"ph":"X","pid":)";
  append_int(out, kCorePid);
  out += R"(,"tid":)";
  append_int(out, queue_lane(r.queue));
  out += R"(,"ts":)";
  append_timestamp(out, r.start);
  out += R"(,"dur":)";
  append_timestamp(out, r.end - r.start);
  out += R"(,"name":)";
  if (in.label.empty()) {
    out += R"("dma_copy")";
  } else {
    append_json_string(out, in.label);
  }
  out += R"(,"cat":"dma","args":{"bytes":)";
  append_int(out, r.bytes);
  out += R"(,"dma_engines":)";
  append_int(out, r.engines);
  out += R"(,"descriptors":)";
  append_int(out, r.descriptors);
  out += R"(,"issued_by":")";
  out += isa::name_of(r.issuer);
  out += R"(","issued_at_us":)";
  append_timestamp(out, r.issued);
  out += R"(,"src":")";
  append_pattern(out, in.src[0]);
  out += R"(","dst":")";
  append_pattern(out, in.dst);
  out += '"';
  out += "}}";
  finish_event();
  release_if_safe();
}

void TraceWriter::add_step(uint32_t core, Counter counter, int64_t time, double delta) {
  auto& held = lane(core, counter).held;
  held.push_back(CounterStep{time, step_seq_++, delta});
  std::push_heap(held.begin(), held.end(), std::greater<CounterStep>());
}

void TraceWriter::release_if_safe() {
  int64_t before = latest_instruction_;
  if (!in_flight_.empty()) before = std::min(before, in_flight_.begin()->first);
  release_steps(before);
}

void TraceWriter::release_steps(int64_t before) {
  for (size_t l = 0; l < lanes_.size(); ++l) {
    CounterLane& lane = lanes_[l];
    const bool pending = l % 2 == static_cast<int>(Counter::pending_dmas);
    auto& held = lane.held;
    while (!held.empty() && held.front().time < before) {
      std::pop_heap(held.begin(), held.end(), std::greater<CounterStep>());
      const CounterStep s = held.back();
      held.pop_back();
      lane.value += s.delta;
      // One sample per distinct time: the value after every change at that time.
      if (!held.empty() && held.front().time == s.time) continue;
      if (std::abs(lane.value) < 1e-9) lane.value = 0;  // rates added and removed leave dust
      TraceText& out = lane.samples;
      out += R"(,
{"ph":"C","pid":)";
      append_int(out, core_pid(static_cast<uint32_t>(l / 2)));
      out += R"(,"ts":)";
      append_timestamp(out, Picoseconds(s.time));
      if (pending) {
        out += R"(,"name":"pending DMAs","args":{"transfers":)";
        append_int(out, static_cast<int64_t>(lane.value));
      } else {
        out += R"(,"name":"DMA throughput","args":{"GB/s":)";
        out += fmt::format("{:.3f}", lane.value);
      }
      out += "}}";
      if (out.size() >= kFlushBytes) spill(lane);
    }
  }
}

void TraceWriter::spill(CounterLane& lane) {
  if (lane.spill == nullptr) lane.spill = std::tmpfile();
  // No temporary file (no writable tmp directory): the samples stay in memory.
  if (lane.spill == nullptr) return;
  if (std::fwrite(lane.samples.view().data(), 1, lane.samples.size(), lane.spill) !=
          lane.samples.size() &&
      write_error_.empty()) {
    write_error_ = "cannot write the trace's counters to a temporary file";
  }
  lane.samples.clear();
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
  release_steps(std::numeric_limits<int64_t>::max());
  for (CounterLane& lane : lanes_) {
    if (lane.spill != nullptr) {
      spill(lane);
      std::rewind(lane.spill);
      char chunk[1 << 16];
      size_t n = 0;
      while ((n = std::fread(chunk, 1, sizeof chunk, lane.spill)) > 0) {
        buffer_.append(chunk, n);
        flush_if_full();
      }
      if (std::ferror(lane.spill) && write_error_.empty()) {
        write_error_ = "cannot read the trace's counters back from a temporary file";
      }
      std::fclose(lane.spill);
      lane.spill = nullptr;
    }
    buffer_ += lane.samples.view();
    lane.samples.clear();
    flush_if_full();
  }
}

void TraceWriter::close() {
  if (!write_error_.empty()) throw OutputError(write_error_);
  // The samples each start with ",\n": the metadata events always come first.
  write_counters();
  if (!write_error_.empty()) throw OutputError(write_error_);
  buffer_ += "\n]}\n";
  file_.write(buffer_.view());
  buffer_.clear();
  file_.close();
}

}  // namespace trnsim::sim
