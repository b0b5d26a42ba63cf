#include "sim/report/trace_writer.hpp"

#include "isa/validate.hpp"
#include "models/collective/fabric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "models/neuroncore/cost.hpp"
#include "sim/report/perfetto_proto.hpp"
#include "sim/report/trace_lanes.hpp"

namespace trnsim::sim {

namespace {
constexpr size_t kFlushBytes = 1 << 16;

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

// `v` with `decimals` digits after the point, as "{:.Nf}" prints it, without a temporary string
// (a counter sample is written per transfer start and end).
void append_fixed(TraceText& out, double v, int decimals) {
  constexpr size_t kRoom = 330;  // DBL_MAX has 309 digits before the point
  char* p = out.room(kRoom);
  out.commit(std::to_chars(p, p + kRoom, v, std::chars_format::fixed, decimals).ptr);
}

// "00" to "99": two digits per lookup.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// As trace_timestamp(): microseconds with six decimals. Two or three per slice: the fraction
// goes in three two-digit lookups (callgrind: about a third of this function's instructions
// went to the six divisions of a digit loop).
void append_timestamp(TraceText& out, Picoseconds t) {
  const int64_t v = t.value;
  char* p = out.room(32);
  if (v < 0) *p++ = '-';
  const auto a = static_cast<uint64_t>(v < 0 ? -v : v);
  p = std::to_chars(p, p + 24, a / 1000000).ptr;
  *p = '.';
  const auto f = static_cast<uint32_t>(a % 1000000);
  std::memcpy(p + 1, kDigitPairs + 2 * (f / 10000), 2);
  std::memcpy(p + 3, kDigitPairs + 2 * (f / 100 % 100), 2);
  std::memcpy(p + 5, kDigitPairs + 2 * (f % 100), 2);
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

}  // namespace

void SbufRanges::add(const isa::AccessPattern& ap) {
  if (!ap.present() || ap.memory != isa::Memory::sbuf) return;
  const auto size = static_cast<int64_t>(isa::size_of(ap.dtype));
  int64_t begin = static_cast<int64_t>(ap.offset) + ap.min_element_offset() * size;
  int64_t end = static_cast<int64_t>(ap.offset) + ap.max_element_offset_exclusive() * size;
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin()) {
    const auto prev = std::prev(it);
    // Already covered (the common case: tiles reuse their buffers): nothing to merge, and
    // no erase and insert of the same range.
    if (prev->second >= end) return;
    if (prev->second >= begin) it = prev;
  }
  while (it != ranges_.end() && it->first <= end) {
    begin = std::min(begin, it->first);
    end = std::max(end, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace(begin, end);
}

void SbufRanges::add_operands(const isa::Instruction& in) {
  isa::for_each_operand(in, [&](const isa::AccessPattern& ap, bool) { add(ap); });
}

uint64_t SbufRanges::bytes() const {
  uint64_t bytes = 0;
  for (const auto& [begin, end] : ranges_) bytes += static_cast<uint64_t>(end - begin);
  return bytes;
}

uint64_t sbuf_bytes_per_partition(const isa::Program& program, size_t kernel) {
  SbufRanges ranges;
  for (Engine e : kAllEngines) {
    const auto [first, last] = program.kernel_range(kernel, e);
    for (uint32_t i = first; i < last; ++i) ranges.add_operands(program.stream(e)[i]);
  }
  return ranges.bytes();
}

Picoseconds to_whole_ns(Picoseconds t) {
  const int64_t v = t.value;
  const int64_t floor_ns = v >= 0 ? v / 1000 : -((-v + 999) / 1000);
  return Picoseconds((v - floor_ns * 1000 >= 500 ? floor_ns + 1 : floor_ns) * 1000);
}

std::string trace_timestamp(Picoseconds t) {
  TraceText s;
  append_timestamp(s, t);
  return std::string(s.view());
}

void TraceWriter::set_core_programs(std::vector<const isa::Program*> programs) {
  core_programs_ = std::move(programs);
  for (const isa::Program* p : core_programs_)
    sem_stride_ = std::max(sem_stride_, p->semaphores.size());
  updates_.assign(static_cast<size_t>(cores_) * sem_stride_, SemaphoreUpdates{});
}

std::vector<std::string> TraceWriter::lane_names(const isa::Program& program,
                                                 const config::ArchConfig& arch) {
  std::vector<std::string> names;
  for (const TraceLane& l : trace_lanes(program, arch, 1)) names.push_back(l.name);
  for (int c = 0; c < kCounters; ++c) names.emplace_back(counter_name(static_cast<Counter>(c)));
  return names;
}
// The unit of a counter's values: the JSON's argument name, Perfetto's unit_name.
const char* TraceWriter::counter_unit(Counter c) {
  switch (c) {
    case Counter::pending_dmas:
      return "transfers";
    case Counter::tensor_utilization:
      return "percent";
    case Counter::sbuf_in_use:
      return "KiB per partition";
    default:
      return "GB/s";
  }
}

const char* TraceWriter::counter_name(Counter c) {
  switch (c) {
    case Counter::pending_dmas:
      return "pending DMAs";
    case Counter::dma_throughput:
      return "DMA throughput";
    case Counter::hbm_read:
      return "HBM read bandwidth";
    case Counter::hbm_write:
      return "HBM write bandwidth";
    case Counter::tensor_utilization:
      return "TensorE utilization";
    case Counter::sbuf_in_use:
      return "SBUF in use";
  }
  return "";
}

TraceWriter::TraceWriter(const std::string& path, const isa::Program& program,
                         const config::ArchConfig& arch, uint32_t cores, TraceFilter filter,
                         TraceFormat format)
    : updates_(static_cast<size_t>(cores) * program.semaphores.size()),
      sem_stride_(program.semaphores.size()),
      queue_lane_ends_(static_cast<size_t>(cores) * program.queues.size()),
      filter_(std::move(filter)),
      lanes_(kCounters * static_cast<size_t>(cores)),
      cores_(cores),
      file_(path),
      program_(program),
      arch_(arch) {
  // Which lanes the filter keeps, by the names trace_lanes() gives them (the same on every
  // core, so the host's and core 0's lanes decide).
  const std::vector<TraceLane> lanes = trace_lanes(program, arch, cores);
  collectives_ = isa::has_collectives(program);
  keep_queue_.resize(program.queues.size());
  for (const TraceLane& l : lanes) {
    const bool kept = filter_.keeps_lane(l.name);
    if (l.pid == kHostPid) {
      (l.tid == kFrameworkLane ? keep_framework_ : keep_runtime_) = kept;
    } else if (l.pid == core_pid(0)) {
      if (l.tid == kKernelLane) {
        keep_kernels_ = kept;
      } else if (l.tid == kCollectiveLane) {
        keep_collectives_ = kept;
      } else if (l.tid == kCollectiveDmaLane) {
        keep_collective_dma_ = kept;
      } else if (l.tid >= queue_lane(0)) {
        keep_queue_[static_cast<size_t>(l.tid - queue_lane(0))] = kept;
      } else {
        keep_engine_[static_cast<size_t>(l.tid)] = kept;
      }
    }
  }
  // A streamed program's instructions come as it runs: its one kernel's SBUF is gathered from
  // them (on_instruction) and known when the kernel ends (on_kernel), where it is used.
  for (size_t k = 0; k < program.kernel_count() && program.feed == nullptr; ++k) {
    sbuf_kib_.push_back(static_cast<double>(sbuf_bytes_per_partition(program, k)) / 1024.0);
  }
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const auto c = static_cast<Counter>(l % kCounters);
    lanes_[l].in_order = c == Counter::tensor_utilization || c == Counter::sbuf_in_use;
    lanes_[l].kept = filter_.keeps_lane(counter_name(c));
    counters_kept_ = counters_kept_ || lanes_[l].kept;
  }
  if (format == TraceFormat::perfetto) {
    proto_ = true;
    counter_described_.resize(lanes_.size());
    proto_open(lanes);
    return;
  }

  buffer_ += "{\"displayTimeUnit\":\"ns\",";
  if (!filter_.keeps_everything()) {
    buffer_ += R"("otherData":{"trace_filter":)";
    append_json_string(buffer_, filter_.text);
    buffer_ += "},";
  }
  buffer_ += "\"traceEvents\":[\n";
  // The lanes as sim/trace_lanes.hpp lists them (the report shows the same): a process name
  // when its first lane comes (the host's only if one of its lanes is kept), then each kept
  // lane's name and place (Kernels first in its process).
  int named_pid = -1;
  for (const TraceLane& l : lanes) {
    const bool kept = filter_.keeps_lane(l.name);
    if (l.pid != named_pid && (l.pid != kHostPid || keep_framework_ || keep_runtime_)) {
      named_pid = l.pid;
      event(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})",
                        l.pid, json_string(l.process)));
    }
    if (!kept) continue;
    event(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})",
                      l.pid, l.tid, json_string(l.name)));
    event(fmt::format(
        R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
        l.pid, l.tid, l.tid == kKernelLane ? -1 : l.tid));
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
  ++events_;
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

// Operand text repeats: tiles cycle through a few buffers, and a stream of one instruction
// repeats its patterns. A direct-mapped cache keyed by the pattern's fields turns most of the
// formatting (AccessPattern::append_to, about 220 machine instructions) into a copy.
void TraceWriter::append_pattern(TraceText& out, const isa::AccessPattern& ap) {
  uint64_t h = ap.offset * 0x9E3779B97F4A7C15ull;
  h ^= (static_cast<uint64_t>(ap.start_partition) << 32 | ap.partitions) * 0xC2B2AE3D27D4EB4Full;
  h ^= static_cast<uint64_t>(ap.dims[ap.ndims > 0 ? ap.ndims - 1 : 0].count) << 7;
  h ^= static_cast<uint64_t>(ap.memory) << 3 ^ static_cast<uint64_t>(ap.dtype) << 5;
  CachedPattern& c = pattern_cache_[(h >> 40) % kPatternCacheSize];
  if (!c.valid || c.ap != ap) {
    c.ap = ap;
    c.size = static_cast<uint16_t>(ap.append_to(c.text.data()) - c.text.data());
    c.valid = true;
  }
  out.append(c.text.data(), c.size);
}

void TraceWriter::on_instruction(const models::InstructionRecord& r) {
  const isa::Instruction& in = program_of(r.core).stream(r.engine)[r.index];
  if (program_.feed != nullptr) streamed_sbuf_.add_operands(in);
  const int lane = engine_lane(r.engine);
  const int kCorePid = core_pid(static_cast<uint32_t>(r.core));
  const auto core = static_cast<uint32_t>(r.core);
  if (isa::is_dma(in.opcode)) {
    add_step(core, Counter::pending_dmas, r.end.value, 1.0);
    // The transfer's issue time (TransferRecord::issued); only the counters need it.
    if (counters_kept_) ++in_flight_[r.end.value];
  }
  latest_instruction_ = std::max(latest_instruction_, r.end.value);
  if (r.engine == Engine::tensor && r.end > r.start) {
    // The FLOP/s the instruction reaches against TensorE's bf16 peak, while it runs.
    const double peak_per_ns = arch_.tensor_peak_flops_bf16() * 1e-9;
    const double percent =
        std::min(100.0, 100.0 * static_cast<double>(models::instruction_flops(in)) /
                            ((r.end - r.start).ns() * peak_per_ns));
    add_step(core, Counter::tensor_utilization, r.start.value, percent);
    add_step(core, Counter::tensor_utilization, r.end.value, -percent);
    // The next TensorE instruction starts no earlier.
    this->lane(core, Counter::tensor_utilization).bound = r.end.value;
  }
  for (const isa::SemaphoreUpdate& u : in.updates) {
    // Updates fire when the results are committed (at or after the instruction's end).
    note_update(core, u.semaphore,
                SemaphoreUpdateSite{r.results.value, r.start.value, r.end.value, r.kernel, lane});
  }
  const Picoseconds port_from = r.start - r.port_wait;
  const Picoseconds semaphores_met = port_from - r.pipeline_wait;
  if (semaphores_met > r.ready && r.blocked_on != models::kNoSemaphore) {
    semaphore_flow(r, semaphores_met.value);
  }
  const bool kept = keep_engine_[index_of(r.engine)];
  if (proto_) {
    if (kept) proto_instruction(r, in, semaphores_met, port_from);
    release_if_safe();
    return;
  }
  auto slice_head = [&](TraceText& out, Picoseconds from, Picoseconds to) {
    out += R"({"ph":"X","pid":)";
    append_int(out, kCorePid);
    out += R"(,"tid":)";
    append_int(out, lane);
    out += R"(,"ts":)";
    append_timestamp(out, to_whole_ns(from));
    out += R"(,"dur":)";
    append_timestamp(out, to_whole_ns(to) - to_whole_ns(from));
  };
  if (kept && r.pipeline_wait.value > 0 &&
      filter_.keeps_span(semaphores_met.value, port_from.value)) {
    TraceText& out = start_event();
    slice_head(out, semaphores_met, port_from);
    out +=
        R"(,"name":"pipeline wait","cat":"pipeline","args":{"why":"a producer's results on this engine, or the wake latency of a met semaphore"}})";
    finish_event();
  }
  if (kept && r.port_wait.value > 0 && filter_.keeps_span(port_from.value, r.start.value)) {
    TraceText& out = start_event();
    slice_head(out, port_from, r.start);
    out +=
        R"(,"name":"port wait","cat":"port","args":{"why":"a shared SBUF/PSUM port or PSUM bank is in use by another engine"}})";
    finish_event();
  }
  if (kept && semaphores_met > r.ready && r.blocked_on != models::kNoSemaphore &&
      filter_.keeps_span(r.ready.value, semaphores_met.value)) {
    const int64_t value = semaphore_wait_text(r, in);
    const std::string& sem = program_of(r.core).semaphores[r.blocked_on].name;
    TraceText& out = start_event();
    slice_head(out, r.ready, semaphores_met);
    out += R"(,"name":)";
    append_json_string(out, operands_.view());
    out += R"(,"cat":"semaphore","args":{"semaphore":)";
    append_json_string(out, sem);
    out += R"(,"reaches":)";
    append_int(out, value);
    out += "}}";
    finish_event();
  }
  if (!kept || !filter_.keeps_span(r.start.value, r.end.value)) {
    release_if_safe();
    return;
  }
  TraceText& out = start_event();
  slice_head(out, r.start, r.end);
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
    if (!in.src[i]->present()) continue;
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
  if (in.source != 0) {  // the Python file:line that emitted it (NKI kernels)
    out += R"(,"source":)";
    append_json_string(out, program_.source_of(in));
  }
  out += "}}";
  finish_event();
  release_if_safe();
}

void TraceWriter::on_transfer(const models::TransferRecord& r) {
  const isa::Instruction& in = program_of(r.core).stream(r.issuer)[r.index];
  const int kCorePid = core_pid(static_cast<uint32_t>(r.core));
  const auto core = static_cast<uint32_t>(r.core);
  add_step(core, Counter::pending_dmas, r.end.value, -1.0);
  if (r.end > r.start) {
    // The transfer's average rate over its lifetime, in bytes per ns (GB/s).
    const double rate = static_cast<double>(r.bytes) / (r.end - r.start).ns();
    add_step(core, Counter::dma_throughput, r.start.value, rate);
    add_step(core, Counter::dma_throughput, r.end.value, -rate);
  }
  if (r.end > r.start) {
    const double rate = static_cast<double>(r.bytes) / (r.end - r.start).ns();
    if (in.src[0]->memory == isa::Memory::hbm) {
      add_step(core, Counter::hbm_read, r.start.value, rate);
      add_step(core, Counter::hbm_read, r.end.value, -rate);
    }
    if (in.dst->memory == isa::Memory::hbm) {
      add_step(core, Counter::hbm_write, r.start.value, rate);
      add_step(core, Counter::hbm_write, r.end.value, -rate);
    }
  }
  if (counters_kept_) {
    const auto it = in_flight_.find(r.issued.value);
    if (it != in_flight_.end() && --it->second == 0) in_flight_.erase(it);
  }
  // The queue's semaphore counts completed transfers: this one raised it at r.end.
  const int tid = transfer_lane(core, r.queue, r.start.value, r.end.value);
  note_update(core, program_of(core).queues[r.queue].semaphore,
              SemaphoreUpdateSite{r.end.value, r.start.value, r.end.value, r.kernel, tid});
  if (!keep_queue_[r.queue] || !filter_.keeps_span(r.start.value, r.end.value)) {
    release_if_safe();
    return;
  }
  if (proto_) {
    proto_transfer(r, in, tid);
    release_if_safe();
    return;
  }
  TraceText& out = start_event();
  out += R"({"ph":"X","pid":)";
  append_int(out, kCorePid);
  out += R"(,"tid":)";
  append_int(out, tid);
  out += R"(,"ts":)";
  append_timestamp(out, to_whole_ns(r.start));
  out += R"(,"dur":)";
  append_timestamp(out, to_whole_ns(r.end) - to_whole_ns(r.start));
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
  out += name_of(r.issuer);
  out += R"(","issued_at_us":)";
  append_timestamp(out, r.issued);
  out += R"(,"src":")";
  append_pattern(out, in.src[0]);
  out += R"(","dst":")";
  append_pattern(out, in.dst);
  out += '"';
  if (in.source != 0) {
    out += R"(,"source":)";
    append_json_string(out, program_.source_of(in));
  }
  out += "}}";
  finish_event();
  release_if_safe();
}

int TraceWriter::transfer_lane(uint32_t core, uint16_t queue, int64_t start, int64_t end) {
  std::vector<int64_t>& ends = queue_lane_ends_[core * program_.queues.size() + queue];
  uint32_t k = 0;
  while (k < ends.size() && ends[k] > start) ++k;
  if (k == ends.size()) {
    ends.push_back(end);
    if (k > 0 && keep_queue_[queue] && proto_) {
      proto_lane(core_pid(core), queue_sublane(queue, k),
                 fmt::format("DMA {} #{}", program_.queues[queue].name, k + 1), queue_lane(queue));
    } else if (k > 0 && keep_queue_[queue]) {
      const int pid = core_pid(core);
      const int tid = queue_sublane(queue, k);
      event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})", pid, tid,
          json_string(fmt::format("DMA {} #{}", program_.queues[queue].name, k + 1))));
      // The queue's own sort index: Perfetto orders equal indices by thread id, so the
      // sub-lanes follow the queue's lane and come before the next queue's.
      event(fmt::format(
          R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
          pid, tid, queue_lane(queue)));
    }
  } else {
    ends[k] = end;
  }
  return queue_sublane(queue, k);
}

void TraceWriter::add_step(uint32_t core, Counter counter, int64_t time, double delta) {
  // A counter the filter drops is not computed: its steps would only be thrown away.
  if (!lane(core, counter).kept) return;
  auto& held = lane(core, counter).held;
  held.push_back(CounterStep{time, step_seq_++, delta});
  std::push_heap(held.begin(), held.end(), std::greater<CounterStep>());
  ++held_steps_;
}

void TraceWriter::release_if_safe() {
  int64_t before = latest_instruction_;
  if (!in_flight_.empty()) before = std::min(before, in_flight_.begin()->first);
  release_steps(before);
}

void TraceWriter::release_steps(int64_t before) {
  if (held_steps_ == 0) return;  // most instructions change no counter
  for (size_t l = 0; l < lanes_.size(); ++l) {
    CounterLane& lane = lanes_[l];
    const int64_t bound =
        lane.in_order && before != std::numeric_limits<int64_t>::max() ? lane.bound : before;
    auto& held = lane.held;
    while (!held.empty() && held.front().time < bound) {
      std::pop_heap(held.begin(), held.end(), std::greater<CounterStep>());
      const CounterStep s = held.back();
      held.pop_back();
      --held_steps_;
      lane.value += s.delta;
      // One sample per distinct time: the value after every change at that time.
      if (!held.empty() && held.front().time == s.time) continue;
      if (std::abs(lane.value) < 1e-9) lane.value = 0;  // rates added and removed leave dust
      write_sample(l, s.time);
    }
  }
}

void TraceWriter::write_sample(size_t l, int64_t time) {
  CounterLane& lane = lanes_[l];
  if (!lane.kept || time > filter_.to_ps) return;
  if (time < filter_.from_ps) {
    lane.changed_before_window = true;
    lane.value_at_window_start = lane.value;
    return;
  }
  // The value the counter held when the window opened, if it changed before.
  if (lane.changed_before_window && time > filter_.from_ps) {
    append_sample(l, filter_.from_ps, lane.value_at_window_start);
  }
  lane.changed_before_window = false;
  append_sample(l, time, lane.value);
}

void TraceWriter::append_sample(size_t l, int64_t time, double value) {
  CounterLane& lane = lanes_[l];
  const auto c = static_cast<Counter>(l % kCounters);
  ++events_;
  TraceText& out = lane.samples;
  if (proto_) {
    namespace f = perfetto::field;
    if (!counter_described_[l]) {
      counter_described_[l] = true;
      scratch_.clear();
      perfetto::uint_field(scratch_, f::kUuid, counter_uuid(l));
      perfetto::uint_field(scratch_, f::kParentUuid,
                           process_uuid(core_pid(static_cast<uint32_t>(l / kCounters))));
      perfetto::bytes_field(scratch_, f::kTrackName, counter_name(c));
      const char* unit = counter_unit(c);
      perfetto::tag(scratch_, f::kCounter, perfetto::kBytes);
      perfetto::varint(scratch_, 1 + perfetto::varint_size(std::strlen(unit)) + std::strlen(unit));
      perfetto::bytes_field(scratch_, f::kUnitName, unit);
      proto_descriptor(out, scratch_);
    }
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    event_.clear();
    char* p = event_.room(32);
    p = perfetto::put_uint(p, f::kType, f::kCounterValue);
    p = perfetto::put_uint(p, f::kTrackUuid, counter_uuid(l));
    p = perfetto::put_fixed64(p, f::kDoubleCounterValue, bits);
    event_.commit(p);
    proto_packet(out, static_cast<uint64_t>(to_whole_ns(Picoseconds(time)).value / 1000));
    if (lane.samples.size() >= kFlushBytes) spill(lane);
    return;
  }
  out += R"(,
{"ph":"C","pid":)";
  append_int(out, core_pid(static_cast<uint32_t>(l / kCounters)));
  out += R"(,"ts":)";
  append_timestamp(out, Picoseconds(time));
  out += R"(,"name":")";
  out += std::string_view(counter_name(c));
  out += R"(","args":{")";
  out += std::string_view(counter_unit(c));
  out += R"(":)";
  switch (c) {
    case Counter::pending_dmas:
      append_int(out, static_cast<int64_t>(value));
      break;
    case Counter::tensor_utilization:
      append_fixed(out, value, 2);
      break;
    default:
      append_fixed(out, value, 3);
      break;
  }
  out += "}}";
  if (lane.samples.size() >= kFlushBytes) spill(lane);
}

void TraceWriter::note_update(uint32_t core, uint32_t semaphore, const SemaphoreUpdateSite& site) {
  SemaphoreUpdates& u = updates_[core * sem_stride_ + semaphore];
  u.ring[u.next] = site;
  u.next = (u.next + 1) % kUpdatesKept;
}

void TraceWriter::semaphore_flow(const models::InstructionRecord& r, int64_t met) {
  const auto core = static_cast<uint32_t>(r.core);
  const SemaphoreUpdates& u = updates_[core * sem_stride_ + static_cast<uint32_t>(r.blocked_on)];
  // The wait was met when the semaphore last changed, at `met`: the latest update at that
  // time in this kernel (updates of one time are applied in the order they are noted).
  const SemaphoreUpdateSite* site = nullptr;
  for (size_t i = 0; i < kUpdatesKept; ++i) {
    const SemaphoreUpdateSite& s = u.ring[(u.next + kUpdatesKept - 1 - i) % kUpdatesKept];
    if (s.time == met && s.kernel == r.kernel) {
      site = &s;
      break;
    }
  }
  if (site == nullptr) return;  // older than the updates kept: no arrow
  const bool from_queue = site->tid >= queue_lane(0);
  const bool from_kept = from_queue ? keep_queue_[static_cast<size_t>(queue_of_lane(site->tid))]
                                    : keep_engine_[static_cast<size_t>(site->tid)];
  if (!from_kept || !keep_engine_[index_of(r.engine)] ||
      !filter_.keeps_span(site->slice_start, site->slice_end) ||
      !filter_.keeps_span(r.start.value, r.end.value)) {
    return;
  }
  const int pid = core_pid(core);
  // Each end sits inside its slice, which Perfetto binds the arrow to.
  flow(pid, site->tid, (site->slice_start + site->slice_end) / 2, pid, engine_lane(r.engine),
       (r.start.value + r.end.value) / 2, next_flow_id_++, "semaphore");
}

void TraceWriter::flow(int from_pid, int from_tid, int64_t from_ts, int to_pid, int to_tid,
                       int64_t to_ts, uint64_t id, const char* name) {
  if (proto_) {
    proto_flow(track_uuid(from_pid, from_tid), from_ts, id, true, name);
    proto_flow(track_uuid(to_pid, to_tid), to_ts, id, false, name);
    return;
  }
  for (const bool start : {true, false}) {
    TraceText& out = start_event();
    out += std::string_view(start ? R"({"ph":"s","pid":)" : R"({"ph":"f","bp":"e","pid":)");
    append_int(out, start ? from_pid : to_pid);
    out += R"(,"tid":)";
    append_int(out, start ? from_tid : to_tid);
    out += R"(,"ts":)";
    append_timestamp(out, to_whole_ns(Picoseconds(start ? from_ts : to_ts)));
    out += R"(,"id":)";
    append_int(out, id);
    out += R"(,"name":")";
    out += std::string_view(name);
    out += R"(","cat":")";
    out += std::string_view(name);
    out += "\"}";
    finish_event();
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
  const auto core = static_cast<uint32_t>(r.core);
  if (program_.feed != nullptr && sbuf_kib_.empty()) {
    sbuf_kib_.push_back(static_cast<double>(streamed_sbuf_.bytes()) / 1024.0);
  }
  if (r.kernel < sbuf_kib_.size() && sbuf_kib_[r.kernel] > 0) {
    add_step(core, Counter::sbuf_in_use, r.start.value, sbuf_kib_[r.kernel]);
    add_step(core, Counter::sbuf_in_use, r.end.value, -sbuf_kib_[r.kernel]);
    lane(core, Counter::sbuf_in_use).bound = r.end.value;  // the next kernel starts no earlier
  }
  const std::string name =
      program_.kernels.empty() ? program_.name : program_.kernels[r.kernel].name;
  if (keep_kernels_ && filter_.keeps_span(r.start.value, r.end.value) && proto_) {
    const uint64_t track = track_uuid(pid, kKernelLane);
    proto_begin(track, name, Category::kernel);
    arg(Arg::kernel, static_cast<int64_t>(r.kernel));
    arg_double(Arg::launch_arrived_us, static_cast<double>(r.arrived.value) * 1e-6);
    proto_end(track, r.start, r.end);
  } else if (keep_kernels_ && filter_.keeps_span(r.start.value, r.end.value)) {
    event(fmt::format(
        R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"kernel","args":{{"kernel":{},"launch_arrived_us":{}}}}})",
        pid, kKernelLane, trace_timestamp(to_whole_ns(r.start)),
        trace_timestamp(to_whole_ns(r.end) - to_whole_ns(r.start)), json_string(name), r.kernel,
        trace_timestamp(r.arrived)));
  }
  // The launch's flow arrow: from the host's launch call to this kernel's slice.
  const auto launch = launch_end_.find(r.kernel);
  if (launch != launch_end_.end()) {
    const int64_t launched = launch->second;
    if (keep_kernels_ && keep_runtime_ && filter_.keeps_span(launched, launched) &&
        filter_.keeps_span(r.start.value, r.end.value)) {
      flow(kHostPid, kRuntimeLane, launched, pid, kKernelLane, r.start.value,
           uint64_t{r.kernel} * 64 + core + 1, "launch");
    }
  }
  release_if_safe();
}

void TraceWriter::on_collective(const models::CollectiveRecord& r) {
  if (!keep_collectives_ || !filter_.keeps_span(r.triggered.value, r.end.value)) return;
  const std::string op(models::collective_op_name(r.op, r.point_to_point));
  const std::string& algorithm = models::collective_algorithms().at(r.algorithm);
  const std::string name = fmt::format("{} {} {}", op, algorithm, r.bytes);
  // One slice per rank, from the last rank's trigger to the end (the same on every core).
  // A send/recv: on the sender's and the receiver's lanes.
  std::vector<uint32_t> cores;
  if (r.point_to_point) {
    cores = {r.first_core, r.peer_core};
  } else {
    for (uint32_t c = r.first_core; c < r.first_core + r.ranks; ++c) cores.push_back(c);
  }
  for (const uint32_t c : cores) {
    if (c >= cores_) continue;
    const int pid = core_pid(c);
    if (proto_) {
      const uint64_t track = track_uuid(pid, kCollectiveLane);
      proto_begin(track, name, Category::collective);
      arg(Arg::index, static_cast<int64_t>(r.index));
      arg(Arg::op, op);
      arg(Arg::algorithm, algorithm);
      arg(Arg::bytes, static_cast<int64_t>(r.bytes));
      arg(Arg::ranks, static_cast<int64_t>(r.ranks));
      arg(Arg::steps, static_cast<int64_t>(r.steps));
      arg_double(Arg::first_trigger_us, static_cast<double>(r.first_trigger.value) * 1e-6);
      proto_end(track, r.triggered, r.end);
      continue;
    }
    event(fmt::format(
        R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"collective","args":{{"index":{},"op":{},"algorithm":{},"bytes":{},"ranks":{},"steps":{},"first_trigger_us":{}}}}})",
        pid, kCollectiveLane, trace_timestamp(to_whole_ns(r.triggered)),
        trace_timestamp(to_whole_ns(r.end) - to_whole_ns(r.triggered)), json_string(name), r.index,
        json_string(op), json_string(algorithm), r.bytes, r.ranks, r.steps,
        trace_timestamp(r.first_trigger)));
  }
}

void TraceWriter::on_collective_transfer(const models::CollectiveTransferRecord& r) {
  const auto core = static_cast<uint32_t>(r.core);
  if (collective_dma_end_.size() < cores_) collective_dma_end_.assign(cores_, 0);
  // A core's traffic completes in order but may start while the one before is still moving:
  // its slice starts where the previous one ended, so that the lane's slices never overlap.
  const Picoseconds start(std::max(r.start.value, collective_dma_end_[core]));
  collective_dma_end_[core] = std::max(collective_dma_end_[core], r.end.value);
  if (!keep_collective_dma_ || core >= cores_ || !filter_.keeps_span(start.value, r.end.value) ||
      start >= r.end) {
    return;
  }
  const int pid = core_pid(core);
  const std::string name =
      fmt::format("{} #{} traffic", r.point_to_point ? "send" : "collective", r.collective);
  if (proto_) {
    const uint64_t track = track_uuid(pid, kCollectiveDmaLane);
    proto_begin(track, name, Category::dma);
    arg(Arg::index, static_cast<int64_t>(r.collective));
    arg(Arg::bytes, static_cast<int64_t>(r.bytes));
    arg_double(Arg::issued_at_us, static_cast<double>(r.issued.value) * 1e-6);
    proto_end(track, start, r.end);
    return;
  }
  event(fmt::format(
      R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"dma","args":{{"index":{},"bytes":{},"issued_at_us":{}}}}})",
      pid, kCollectiveDmaLane, trace_timestamp(to_whole_ns(start)),
      trace_timestamp(to_whole_ns(r.end) - to_whole_ns(start)), json_string(name), r.collective,
      r.bytes, trace_timestamp(r.issued)));
}

void TraceWriter::on_host(const models::HostRecord& r) {
  if (r.activity == models::HostActivity::launch) {
    launch_end_[static_cast<uint32_t>(r.kernel)] = (r.end - Picoseconds(1)).value;
  }
  const bool framework = r.lane == models::HostLane::framework;
  if (!(framework ? keep_framework_ : keep_runtime_) ||
      !filter_.keeps_span(r.start.value, r.end.value)) {
    return;
  }
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
    case models::HostActivity::to_host:
      name = fmt::format("copy {} to host", program_.host_ops[r.op].to_host[r.copy].tensor);
      break;
    case models::HostActivity::host_compute:
      name = op + " on host";
      break;
    case models::HostActivity::to_device:
      name = fmt::format("copy {} to device", program_.host_ops[r.op].to_device[r.copy].tensor);
      break;
  }
  const int tid = framework ? kFrameworkLane : kRuntimeLane;
  if (proto_) {
    const uint64_t track = track_uuid(kHostPid, tid);
    proto_begin(track, name, Category::host);
    arg(Arg::op, op);
    arg(Arg::kernel, static_cast<int64_t>(r.kernel));
    proto_end(track, r.start, r.end);
    return;
  }
  event(fmt::format(
      R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"cat":"host","args":{{"op":{},"kernel":{}}}}})",
      kHostPid, tid, trace_timestamp(to_whole_ns(r.start)),
      trace_timestamp(to_whole_ns(r.end) - to_whole_ns(r.start)), json_string(name),
      json_string(op), r.kernel));
}

void TraceWriter::write_counters() {
  release_steps(std::numeric_limits<int64_t>::max());
  for (size_t l = 0; l < lanes_.size(); ++l) {
    // A counter that changed before the window and not within it: its value in the window.
    if (lanes_[l].kept && lanes_[l].changed_before_window && filter_.from_ps > 0) {
      append_sample(l, filter_.from_ps, lanes_[l].value_at_window_start);
    }
  }
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
  if (!proto_) buffer_ += "\n]}\n";
  file_.write(buffer_.view());
  buffer_.clear();
  file_.close();
}

// ---- Perfetto's protobuf form (trace.pftrace) ----

namespace {
namespace f = perfetto::field;

// Debug annotation names and categories, interned once in the first packet (iid = index + 1),
// in the order of TraceWriter::Arg and TraceWriter::Category.
constexpr const char* kArgNames[] = {"why",       "semaphore",       "reaches",
                                     "opcode",    "index",           "label",
                                     "operands",  "cycles",          "flops",
                                     "function",  "queue",           "source",
                                     "bytes",     "dma_engines",     "descriptors",
                                     "issued_by", "issued_at_us",    "src",
                                     "dst",       "kernel",          "launch_arrived_us",
                                     "op",        "algorithm",       "ranks",
                                     "steps",     "first_trigger_us"};
constexpr const char* kCategoryNames[] = {"instruction", "dma",      "kernel",
                                          "host",        "pipeline", "port",
                                          "semaphore",   "launch",   "collective"};
// The entries before the collectives' (appended): a trace without collectives interns only
// these, so that it stays byte for byte what it was.
constexpr size_t kArgNamesWithoutCollectives = 22;
constexpr size_t kCategoryNamesWithoutCollectives = 8;
static_assert(std::size(kArgNames) < 128 && std::size(kCategoryNames) < 128,
              "TraceWriter::arg writes an argument name's iid in one byte");
constexpr uint32_t kSequence = 1;             // every packet is on one sequence
constexpr uint64_t kSequenceIdFieldSize = 2;  // tag and the varint 1

uint64_t ns_of(Picoseconds t) {
  return static_cast<uint64_t>(std::max<int64_t>(0, to_whole_ns(t).value / 1000));
}
}  // namespace

void TraceWriter::proto_descriptor(TraceText& out, const TraceText& descriptor) {
  ++events_;
  const size_t size = descriptor.size();
  const size_t packet = 2 + perfetto::varint_size(size) + size;  // TracePacket.track_descriptor
  perfetto::tag(out, f::kTracePacket, perfetto::kBytes);
  perfetto::varint(out, packet);
  perfetto::tag(out, f::kTrackDescriptor, perfetto::kBytes);
  perfetto::varint(out, size);
  out += descriptor.view();
}

void TraceWriter::proto_packet(TraceText& out, uint64_t timestamp_ns) {
  ++events_;
  const size_t interned = interned_.size();
  const size_t event = event_.size();
  size_t packet = 1 + perfetto::varint_size(timestamp_ns) + kSequenceIdFieldSize + 2 + 1 +
                  perfetto::varint_size(event) + event;
  if (interned > 0) packet += 1 + perfetto::varint_size(interned) + interned;
  char* p = out.room(packet + 16);
  p = perfetto::put_varint(p, f::kTracePacket << 3 | perfetto::kBytes);
  p = perfetto::put_varint(p, packet);
  p = perfetto::put_uint(p, f::kTimestamp, timestamp_ns);
  p = perfetto::put_uint(p, f::kSequenceId, kSequence);
  p = perfetto::put_uint(p, f::kSequenceFlags, f::kNeedsIncrementalState);
  if (interned > 0) {
    p = perfetto::put_bytes(p, f::kInternedData, interned_.view());
    interned_.clear();
  }
  p = perfetto::put_bytes(p, f::kTrackEvent, event_.view());
  out.commit(p);
}

void TraceWriter::proto_open(const std::vector<TraceLane>& lanes) {
  // The first packet starts the sequence's interning state with the fixed tables.
  const size_t arg_names = collectives_ ? std::size(kArgNames) : kArgNamesWithoutCollectives;
  const size_t categories =
      collectives_ ? std::size(kCategoryNames) : kCategoryNamesWithoutCollectives;
  for (size_t i = 0; i < arg_names; ++i) {
    perfetto::interned_entry(interned_, f::kDebugAnnotationNames, i + 1, kArgNames[i]);
  }
  for (size_t i = 0; i < categories; ++i) {
    perfetto::interned_entry(interned_, f::kEventCategories, i + 1, kCategoryNames[i]);
  }
  ++events_;
  const size_t packet =
      kSequenceIdFieldSize + 2 + 1 + perfetto::varint_size(interned_.size()) + interned_.size();
  perfetto::tag(buffer_, f::kTracePacket, perfetto::kBytes);
  perfetto::varint(buffer_, packet);
  perfetto::uint_field(buffer_, f::kSequenceId, kSequence);
  perfetto::uint_field(buffer_, f::kSequenceFlags, f::kIncrementalStateCleared);
  perfetto::tag(buffer_, f::kInternedData, perfetto::kBytes);
  perfetto::varint(buffer_, interned_.size());
  buffer_ += interned_.view();
  interned_.clear();
  // The same tracks as the JSON's processes and threads, in the same order (its
  // thread_sort_index as the sibling rank).
  int described_pid = -1;
  for (const TraceLane& l : lanes) {
    if (l.pid != described_pid && (l.pid != kHostPid || keep_framework_ || keep_runtime_)) {
      described_pid = l.pid;
      TraceText process;
      perfetto::uint_field(process, f::kPid, static_cast<uint64_t>(l.pid));
      perfetto::bytes_field(process, f::kProcessName, l.process);
      scratch_.clear();
      perfetto::uint_field(scratch_, f::kUuid, process_uuid(l.pid));
      perfetto::bytes_field(scratch_, f::kProcess, process.view());
      perfetto::uint_field(scratch_, f::kChildOrdering, f::kExplicitOrdering);
      proto_descriptor(buffer_, scratch_);
    }
    if (!filter_.keeps_lane(l.name)) continue;
    proto_lane(l.pid, l.tid, l.name, l.tid == kKernelLane ? -1 : l.tid);
  }
  flush_if_full();
}

void TraceWriter::proto_lane(int pid, int tid, std::string_view name, int sort_index) {
  scratch_.clear();
  perfetto::uint_field(scratch_, f::kUuid, track_uuid(pid, tid));
  perfetto::uint_field(scratch_, f::kParentUuid, process_uuid(pid));
  perfetto::bytes_field(scratch_, f::kTrackName, name);
  perfetto::int_field(scratch_, f::kSiblingOrderRank, sort_index);
  proto_descriptor(buffer_, scratch_);
  flush_if_full();
}

void TraceWriter::proto_begin(uint64_t track, std::string_view name, Category category,
                              uint64_t type) {
  event_.clear();
  char* p = event_.room(48 + name.size());
  p = perfetto::put_uint(p, f::kType, type);
  p = perfetto::put_uint(p, f::kTrackUuid, track);
  p = perfetto::put_uint(p, f::kCategoryIids, static_cast<uint64_t>(category) + 1);
  NameSlot& slot = name_slots_[std::hash<std::string_view>{}(name) % kNameSlots];
  if (slot.used && slot.name == name) {
    if (slot.iid == 0) {
      slot.iid = ++next_name_iid_;
      perfetto::interned_entry(interned_, f::kEventNames, slot.iid, name);
    }
    p = perfetto::put_uint(p, f::kNameIid, slot.iid);
  } else {
    slot.name.assign(name.data(), name.size());  // no allocation once it has grown
    slot.used = true;
    slot.iid = 0;
    p = perfetto::put_bytes(p, f::kName, name);
  }
  event_.commit(p);
}

void TraceWriter::proto_end(uint64_t track, Picoseconds start, Picoseconds end) {
  proto_packet(buffer_, ns_of(start));
  event_.clear();
  char* p = event_.room(24);
  p = perfetto::put_uint(p, f::kType, f::kSliceEnd);
  p = perfetto::put_uint(p, f::kTrackUuid, track);
  event_.commit(p);
  proto_packet(buffer_, ns_of(end));
  flush_if_full();
}

// A DebugAnnotation {name_iid, value}: the argument names' iids are below 128 (one byte).
void TraceWriter::arg(Arg a, std::string_view value) {
  const uint64_t iid = static_cast<uint64_t>(a) + 1;
  const size_t size = 2 + 1 + perfetto::varint_size(value.size()) + value.size();
  char* p = event_.room(size + 12);
  p = perfetto::put_varint(p, f::kDebugAnnotations << 3 | perfetto::kBytes);
  p = perfetto::put_varint(p, size);
  p = perfetto::put_uint(p, f::kAnnotationNameIid, iid);
  p = perfetto::put_bytes(p, f::kStringValue, value);
  event_.commit(p);
}

void TraceWriter::arg(Arg a, int64_t value) {
  const uint64_t iid = static_cast<uint64_t>(a) + 1;
  const auto v = static_cast<uint64_t>(value);
  char* p = event_.room(24);
  p = perfetto::put_varint(p, f::kDebugAnnotations << 3 | perfetto::kBytes);
  char* size_at = p++;  // below 128: 2 + 1 + at most 10
  p = perfetto::put_uint(p, f::kAnnotationNameIid, iid);
  p = perfetto::put_uint(p, f::kIntValue, v);
  *size_at = static_cast<char>(p - size_at - 1);
  event_.commit(p);
}

void TraceWriter::arg_double(Arg a, double value) {
  const uint64_t iid = static_cast<uint64_t>(a) + 1;
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  char* p = event_.room(24);
  p = perfetto::put_varint(p, f::kDebugAnnotations << 3 | perfetto::kBytes);
  char* size_at = p++;
  p = perfetto::put_uint(p, f::kAnnotationNameIid, iid);
  p = perfetto::put_fixed64(p, f::kDoubleValue, bits);
  *size_at = static_cast<char>(p - size_at - 1);
  event_.commit(p);
}

// A flow's ends are instants inside the two slices it joins (the JSON's "s" and "f" events,
// at the same times): TrackEvent flows attach to events, and the slice it starts from was
// written before the wait it released was known.
void TraceWriter::proto_flow(uint64_t track, int64_t ts_ps, uint64_t id, bool start,
                             const char* name) {
  proto_begin(track, name,
              std::string_view(name) == "semaphore" ? Category::semaphore : Category::launch,
              f::kInstant);
  perfetto::fixed64_field(event_, start ? f::kFlowIds : f::kTerminatingFlowIds, id);
  proto_packet(buffer_, ns_of(Picoseconds(ts_ps)));
  flush_if_full();
}

int64_t TraceWriter::semaphore_wait_text(const models::InstructionRecord& r,
                                         const isa::Instruction& in) {
  int64_t value = 0;
  for (const auto& w : in.waits) {
    if (w.semaphore == r.blocked_on) value = w.value;
  }
  operands_.clear();
  operands_ += "wait ";
  operands_ += program_of(r.core).semaphores[r.blocked_on].name;
  operands_ += " >= ";
  append_int(operands_, value);
  return value;
}

void TraceWriter::proto_instruction(const models::InstructionRecord& r, const isa::Instruction& in,
                                    Picoseconds semaphores_met, Picoseconds port_from) {
  const uint64_t track = track_uuid(core_pid(static_cast<uint32_t>(r.core)), engine_lane(r.engine));
  // In time order on the lane (the JSON writes the semaphore wait third): a slice's end and
  // the next one's begin at one time must come in that order.
  if (semaphores_met > r.ready && r.blocked_on != models::kNoSemaphore &&
      filter_.keeps_span(r.ready.value, semaphores_met.value)) {
    const int64_t value = semaphore_wait_text(r, in);
    const std::string& sem = program_of(r.core).semaphores[r.blocked_on].name;
    proto_begin(track, operands_.view(), Category::semaphore);
    arg(Arg::semaphore, sem);
    arg(Arg::reaches, value);
    proto_end(track, r.ready, semaphores_met);
  }
  if (r.pipeline_wait.value > 0 && filter_.keeps_span(semaphores_met.value, port_from.value)) {
    proto_begin(track, "pipeline wait", Category::pipeline);
    arg(Arg::why, "a producer's results on this engine, or the wake latency of a met semaphore");
    proto_end(track, semaphores_met, port_from);
  }
  if (r.port_wait.value > 0 && filter_.keeps_span(port_from.value, r.start.value)) {
    proto_begin(track, "port wait", Category::port);
    arg(Arg::why, "a shared SBUF/PSUM port or PSUM bank is in use by another engine");
    proto_end(track, port_from, r.start);
  }
  if (!filter_.keeps_span(r.start.value, r.end.value)) return;
  proto_begin(track, isa::profiler_name_of(in.opcode), Category::instruction);
  arg(Arg::opcode, isa::name_of(in.opcode));
  arg(Arg::index, static_cast<int64_t>(r.index));
  arg(Arg::label, in.label);
  operands_.clear();
  operands_ += "dst=";
  append_pattern(operands_, in.dst);
  for (int i = 0; i < 3; ++i) {
    if (!in.src[i]->present()) continue;
    operands_ += " src";
    operands_ += static_cast<char>('0' + i);
    operands_ += '=';
    append_pattern(operands_, in.src[i]);
  }
  arg(Arg::operands, operands_.view());
  arg(Arg::cycles, static_cast<int64_t>(r.cycles.value));
  arg(Arg::flops, static_cast<int64_t>(models::instruction_flops(in)));
  if (in.opcode == isa::Opcode::activation) arg(Arg::function, isa::name_of(in.function));
  if (isa::is_dma(in.opcode)) arg(Arg::queue, program_.queues[in.dma_queue].name);
  if (in.source != 0) arg(Arg::source, program_.source_of(in));
  proto_end(track, r.start, r.end);
}

void TraceWriter::proto_transfer(const models::TransferRecord& r, const isa::Instruction& in,
                                 int tid) {
  const uint64_t track = track_uuid(core_pid(static_cast<uint32_t>(r.core)), tid);
  proto_begin(track, in.label.empty() ? std::string_view("dma_copy") : in.label, Category::dma);
  arg(Arg::bytes, static_cast<int64_t>(r.bytes));
  arg(Arg::dma_engines, static_cast<int64_t>(r.engines));
  arg(Arg::descriptors, static_cast<int64_t>(r.descriptors));
  arg(Arg::issued_by, name_of(r.issuer));
  arg_double(Arg::issued_at_us, static_cast<double>(r.issued.value) * 1e-6);
  operands_.clear();
  append_pattern(operands_, in.src[0]);
  arg(Arg::src, operands_.view());
  operands_.clear();
  append_pattern(operands_, in.dst);
  arg(Arg::dst, operands_.view());
  if (in.source != 0) arg(Arg::source, program_.source_of(in));
  proto_end(track, r.start, r.end);
}

}  // namespace trnsim::sim
