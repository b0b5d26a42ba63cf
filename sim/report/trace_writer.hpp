// trace.json in Chrome trace-event format (what Perfetto and chrome://tracing open), written
// as a stream while the simulation runs: one slice per instruction and per DMA transfer, a
// slice per semaphore wait, a lane per engine and per DMA queue (more lanes for a queue's
// transfers in flight together: slices on one lane nest) and a lane of kernels, one
// process per NeuronCore, and counters per core: pending DMA transfers, DMA throughput, HBM
// read and write bandwidth (GB/s), TensorE utilization (% of peak FLOP/s) and SBUF in use (KiB
// per partition). Flow arrows go from the instruction or transfer that raised a semaphore to
// the instruction whose wait it released and, with a host model (a Host process with
// `framework` and `runtime` lanes), from each kernel launch to the kernel on the device.
// A TraceFilter keeps only some lanes or a time window.
//
// The same trace can be written as Perfetto's own protobuf format instead (trace.pftrace,
// --trace-format perfetto): the same lanes (tracks under a track per process, in the JSON's
// sort order), slices (a begin and an end event each), counters and flows, with names interned
// so that a repeated name costs a varint. docs/metrics.md describes the mapping.
#pragma once

#include <array>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "models/records/records.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/trace_filter.hpp"
#include "sim/report/trace_lanes.hpp"
#include "sim/report/trace_text.hpp"

namespace trnsim::sim {

enum class TraceFormat : uint8_t {
  json,      // trace.json: Chrome trace-event JSON (the default)
  perfetto,  // trace.pftrace: Perfetto's protobuf trace (TracePacket / TrackEvent)
};
// The SBUF bytes per partition that operands touch: disjoint [begin, end) ranges, merged as
// they are added (tiles reuse a few buffers, so the set stays small however long the kernel).
class SbufRanges {
 public:
  void add(const isa::AccessPattern& ap);
  void add_operands(const isa::Instruction& in);
  uint64_t bytes() const;

 private:
  std::map<int64_t, int64_t> ranges_;
};

class TraceWriter : public models::EventSink {
 public:
  TraceWriter(const std::string& path, const isa::Program& program, const config::ArchConfig& arch,
              uint32_t cores = 1, TraceFilter filter = {}, TraceFormat format = TraceFormat::json);
  // The names of the lanes and counters a trace of `program` has (what --trace-filter matches).
  static std::vector<std::string> lane_names(const isa::Program& program,
                                             const config::ArchConfig& arch);
  void on_instruction(const models::InstructionRecord& r) override;
  void on_transfer(const models::TransferRecord& r) override;
  void on_kernel(const models::KernelRecord& r) override;
  void on_host(const models::HostRecord& r) override;
  // SPMD over a logical core: core c ran *programs[c] (same queues and tensors as `program`).
  void set_core_programs(std::vector<const isa::Program*> programs);
  void on_collective(const models::CollectiveRecord& r) override;
  void on_collective_transfer(const models::CollectiveTransferRecord& r) override;
  // Writes the counters, closes the JSON and the file (throws OutputError), then commit()
  // moves it into place.
  void close();
  void commit() { file_.commit(); }
  // Counter steps held back because an earlier one may still come (for tests: it stays
  // bounded by the transfers in flight).
  size_t held_counter_steps() const {
    size_t n = 0;
    for (const auto& l : lanes_) n += l.held.size();
    return n;
  }
  // Events written so far (JSON: slices, flows, counter samples, metadata; Perfetto: packets,
  // two per slice), for perf.json.
  uint64_t events_written() const { return events_; }
  ~TraceWriter() override;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Lane (thread id) of an engine and of a DMA queue within the NeuronCore process.
  static int engine_lane(Engine e) { return index_of(e); }
  // The process (pid) of a NeuronCore; the host's is kHostPid.
  static int core_pid(uint32_t core) { return 1 + static_cast<int>(core); }
  static int queue_lane(uint16_t q) { return 100 + q; }
  // A queue's transfers overlap (several in flight); slices on one lane must nest, so a
  // transfer that starts before the lane's last one ends goes on another lane of that queue:
  // sub-lane k (k >= 1) of queue q, "DMA <queue> #<k+1>", sorted right after the queue's lane.
  static int queue_sublane(uint16_t q, uint32_t k) {
    return k == 0 ? queue_lane(q) : queue_lane(q) + 1000 * static_cast<int>(k);
  }
  static int queue_of_lane(int tid) { return (tid - 100) % 1000; }
  // The kernels lane of a NeuronCore (the profiler's nc_exec_running), and the host's lanes.
  static constexpr int kKernelLane = 50;
  // The collectives lane of a NeuronCore (only for a program with collectives).
  static constexpr int kCollectiveLane = 51;
  // Its collectives' traffic in the memory system (docs/chip.md): one slice per transfer.
  static constexpr int kCollectiveDmaLane = 52;
  static constexpr int kHostPid = 0;
  static constexpr int kFrameworkLane = 1;
  static constexpr int kRuntimeLane = 2;

 private:
  void event(const std::string& json);
  // Starts an event in buffer_ (the separator); finish_event() flushes when the buffer is full.
  TraceText& start_event();
  void finish_event() { flush_if_full(); }
  void flush_if_full();

  // Counters (pending DMA transfers and DMA throughput per core) are written after the slices,
  // sorted by core, counter and time, one sample per distinct time. Their steps arrive out of
  // time order (a transfer's start is known when it completes), so each (core, counter) lane
  // holds the steps that may still be followed by an earlier one, and turns the rest into
  // samples as the run goes, into a temporary file. Nothing earlier than the issue of the
  // oldest transfer in flight, or than the latest instruction, can still arrive: the steps held
  // are those of the transfers in flight, not of the whole run.
  enum class Counter : uint8_t {
    pending_dmas,
    dma_throughput,
    hbm_read,
    hbm_write,
    tensor_utilization,  // steps in time order: each core's TensorE runs one at a time
    sbuf_in_use,         // steps in time order: kernels run one after another
  };
  static constexpr int kCounters = 6;
  static const char* counter_name(Counter c);
  static const char* counter_unit(Counter c);
  struct CounterStep {
    int64_t time;
    uint64_t seq;  // arrival order: steps at one time are added in it
    double delta;
    bool operator>(const CounterStep& o) const {
      return time != o.time ? time > o.time : seq > o.seq;
    }
  };
  struct CounterLane {
    std::vector<CounterStep> held;  // min-heap by (time, seq)
    double value = 0;
    TraceText samples;           // written samples, each ",\n{...}", until spilled
    std::FILE* spill = nullptr;  // a temporary file (deleted on close), once samples grow
    // Steps of an in-order counter before `bound` can be released (later ones cannot come
    // earlier); the other counters use the run-wide bound of release_if_safe().
    bool in_order = false;
    int64_t bound = std::numeric_limits<int64_t>::min();
    bool kept = true;
    bool changed_before_window = false;  // a sample at the window's start is owed
    double value_at_window_start = 0;
  };
  void add_step(uint32_t core, Counter counter, int64_t time, double delta);
  // Turns the held steps earlier than `before` into samples.
  void release_steps(int64_t before);
  void release_if_safe();
  void spill(CounterLane& lane);
  void write_sample(size_t lane_index, int64_t time);
  void append_sample(size_t lane_index, int64_t time, double value);
  void write_counters();
  CounterLane& lane(uint32_t core, Counter c) {
    return lanes_[core * kCounters + static_cast<int>(c)];
  }

  // Semaphore flow arrows: the last updates of each (core, semaphore), so that an instruction
  // that waited can find the update that released it (the one at the time its wait was met).
  struct SemaphoreUpdateSite {
    int64_t time = -1;  // when the semaphore changed
    int64_t slice_start = 0, slice_end = 0;
    uint32_t kernel = 0;
    int tid = 0;
  };
  static constexpr size_t kUpdatesKept = 16;
  struct SemaphoreUpdates {
    std::array<SemaphoreUpdateSite, kUpdatesKept> ring{};
    size_t next = 0;
  };
  void note_update(uint32_t core, uint32_t semaphore, const SemaphoreUpdateSite& site);
  void semaphore_flow(const models::InstructionRecord& r, int64_t met);
  void flow(int from_pid, int from_tid, int64_t from_ts, int to_pid, int to_tid, int64_t to_ts,
            uint64_t id, const char* name);
  std::vector<SemaphoreUpdates> updates_;  // per core and semaphore
  size_t sem_stride_ = 0;                  // semaphores per core in updates_
  std::vector<const isa::Program*> core_programs_;
  const isa::Program& program_of(int core) const {
    return static_cast<size_t>(core) < core_programs_.size() ? *core_programs_[core] : program_;
  }
  // The lane of a transfer on [start, end) of queue q: the first of the queue's lanes whose last
  // transfer has ended (transfers arrive in the order they end, so no earlier one on that lane
  // can overlap), named when first used.
  int transfer_lane(uint32_t core, uint16_t queue, int64_t start, int64_t end);
  std::vector<std::vector<int64_t>> queue_lane_ends_;  // per core and queue: each lane's last end
  uint64_t next_flow_id_ = uint64_t{1} << 32;
  std::map<uint32_t, int64_t> launch_end_;  // when the host's launch of each kernel ended
  std::vector<double> sbuf_kib_;            // per kernel: SBUF in use, KiB per partition
  SbufRanges streamed_sbuf_;                // a streamed program's, gathered as it runs

  TraceFilter filter_;
  std::array<bool, kEngineCount> keep_engine_{};
  std::vector<bool> keep_queue_;
  bool keep_kernels_ = true, keep_framework_ = true, keep_runtime_ = true;
  bool keep_collectives_ = true, keep_collective_dma_ = true;
  std::vector<int64_t> collective_dma_end_;  // per core: where its last traffic slice ended
  bool collectives_ = false;                 // the program has collectives (the Collectives lanes)
  std::vector<CounterLane> lanes_;           // per core, kCounters each
  uint64_t step_seq_ = 0;
  size_t held_steps_ = 0;  // over all lanes: release_steps() has nothing to do at 0
  // Issue times of the DMA transfers not yet completed (count per time), and the end of the
  // latest instruction: later records cannot bring steps before the smaller of the two.
  std::map<int64_t, uint32_t> in_flight_;  // empty when the filter keeps no counter
  bool counters_kept_ = false;
  int64_t latest_instruction_ = 0;
  uint32_t cores_;

  OutputFile file_;
  const isa::Program& program_;
  const config::ArchConfig& arch_;
  TraceText buffer_{2 << 16};  // flushed at 64 KiB
  TraceText operands_;         // an instruction's operands, before they are quoted
  // Operand text by pattern (append_pattern): a direct-mapped cache.
  struct CachedPattern {
    isa::AccessPattern ap;
    bool valid = false;
    uint16_t size = 0;
    std::array<char, isa::AccessPattern::kMaxTextBytes> text;
  };
  static constexpr size_t kPatternCacheSize = 256;
  std::vector<CachedPattern> pattern_cache_ = std::vector<CachedPattern>(kPatternCacheSize);
  void append_pattern(TraceText& out, const isa::AccessPattern& ap);
  // Perfetto's protobuf form (format perfetto): the same records, another encoding.
  enum class Category : uint8_t {
    instruction,
    dma,
    kernel,
    host,
    pipeline,
    port,
    semaphore,
    launch,
    collective,  // appended: written to the trace's tables only when it has collectives
  };
  enum class Arg : uint8_t {
    why,
    semaphore,
    reaches,
    opcode,
    index,
    label,
    operands,
    cycles,
    flops,
    function,
    queue,
    source,
    bytes,
    dma_engines,
    descriptors,
    issued_by,
    issued_at_us,
    src,
    dst,
    kernel,
    launch_arrived_us,
    op,
    // Appended for collectives: written to the trace's tables only when it has collectives.
    algorithm,
    ranks,
    steps,
    first_trigger_us,
  };
  static constexpr uint64_t track_uuid(int pid, int tid) {
    return (static_cast<uint64_t>(pid) + 1) << 32 | (static_cast<uint64_t>(tid) + 1);
  }
  static constexpr uint64_t process_uuid(int pid) { return (static_cast<uint64_t>(pid) + 1) << 32; }
  static constexpr uint64_t counter_uuid(size_t lane_index) {
    return (static_cast<uint64_t>(lane_index / kCounters) + 2) << 32 | 0x80000000u |
           (lane_index % kCounters);
  }
  void proto_open(const std::vector<TraceLane>& lanes);
  void proto_lane(int pid, int tid, std::string_view name, int sort_index);
  // "wait <semaphore> >= <value>" for the semaphore r waited on, into operands_; returns the
  // value (both trace formats name the wait slice so).
  int64_t semaphore_wait_text(const models::InstructionRecord& r, const isa::Instruction& in);
  void proto_instruction(const models::InstructionRecord& r, const isa::Instruction& in,
                         Picoseconds semaphores_met, Picoseconds port_from);
  void proto_transfer(const models::TransferRecord& r, const isa::Instruction& in, int tid);
  // A slice: proto_begin() starts its begin event in event_, args are added, proto_end()
  // writes it and its end event.
  void proto_begin(uint64_t track, std::string_view name, Category category,
                   uint64_t type = 1 /* TYPE_SLICE_BEGIN; an instant: 3 */);
  void proto_end(uint64_t track, Picoseconds start, Picoseconds end);
  void proto_flow(uint64_t track, int64_t ts_ps, uint64_t id, bool start, const char* name);
  void arg(Arg a, std::string_view value);
  void arg(Arg a, int64_t value);
  void arg_double(Arg a, double value);
  // Wraps event_ (and the names interned since the last packet) as one Trace.packet.
  void proto_packet(TraceText& out, uint64_t timestamp_ns);
  void proto_descriptor(TraceText& out, const TraceText& descriptor);
  bool proto_ = false;
  TraceText event_;     // the TrackEvent being written
  TraceText interned_;  // InternedData entries not yet written
  TraceText scratch_;   // a descriptor being written
  // Event names interned the second time they come (a name seen once, such as the label of one
  // transfer, is written in full): a direct-mapped table of the names seen, so that memory stays
  // bounded however many distinct labels a program has. A name evicted and seen again is
  // interned again under a new iid (allowed: an iid never names two strings).
  struct NameSlot {
    std::string name;
    uint64_t iid = 0;  // 0: seen once, not interned
    bool used = false;
  };
  static constexpr size_t kNameSlots = 4096;
  std::vector<NameSlot> name_slots_ = std::vector<NameSlot>(kNameSlots);
  uint64_t next_name_iid_ = 0;
  std::vector<bool> counter_described_;  // per counter lane

  std::string write_error_;  // a write that failed during the run, reported by close()
  bool first_ = true;
  uint64_t events_ = 0;
};

// SBUF bytes per partition that kernel `kernel` of `program` uses: the union of the byte
// ranges its instructions' SBUF operands cover (what its tile buffers occupy; the trace's
// "SBUF in use" counter while the kernel runs).
uint64_t sbuf_bytes_per_partition(const isa::Program& program, size_t kernel);

// Picoseconds as the microseconds Chrome traces use, exactly: "12.345678".
std::string trace_timestamp(Picoseconds t);

// The nearest whole nanosecond (halves up). Slices, flows and kernels are written on whole
// nanoseconds, start and end each rounded and the duration their difference: Perfetto rounds
// "ts" and "dur" to nanoseconds separately, which made back-to-back slices overlap by 1 ns;
// rounding the ends keeps every nesting of the exact times.
Picoseconds to_whole_ns(Picoseconds t);

}  // namespace trnsim::sim
