// The memory system of one or more NeuronCores, plain C++ (no SystemC): per core 16 DMA
// engines with 16 queues each (D1), and the HBM stacks they share (models/hbm).
//
// A transfer of P partitions is spread over ceil(P / partitions_per_engine) engines (D1),
// starting at the engine of its first partition. Each engine's part is a list of descriptors,
// one per element run that is contiguous on both sides. An engine moves its parts in chunks of
// at most dma_chunk_bytes: per chunk it pays dma_descriptor_overhead_ns for every descriptor it
// starts and the bytes at dma_engine_bytes_per_ns (times the transpose fraction for a
// transposing transfer), and issues the chunk's HBM reads or writes. A chunk is done when both
// the engine's time and the HBM have finished; an engine keeps at most
// dma_engine_outstanding_chunks chunks in flight. Between chunks the engine picks the next of
// its queues that has work, round-robin (v2/v3); within a queue it works in order.
//
// A transfer becomes ready dma_start_latency_ns after its trigger (D2's 1.3 us, a pipeline
// latency that holds no engine). It completes when its last chunk is done, but never before the
// transfer queued ahead of it on the same queue (in-order completion, D1).
//
// The model is event-driven: its cost grows with chunks and HBM pieces, not with cycles.
//
// With the arch flag dma_flow_model set, MemorySystem keeps its TransferBook (ids, in-order
// completion) and hands the moving of the bytes to the flow-level model of
// models/dma/flow_model.hpp (same transfer semantics, cost per transfer rather than per byte,
// no row-buffer effects).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"
#include "models/hbm/hbm.hpp"

namespace trnsim::models {

// A singly linked list by index (head and tail; each element keeps its own `next`): a queue's
// transfers in order, an engine queue's parts.
struct IndexList {
  uint32_t head = UINT32_MAX;
  uint32_t tail = UINT32_MAX;
};

struct DmaPlan {
  uint64_t bytes = 0;
  uint32_t engines = 0;       // DMA engines that take part: the semaphore rises by this
  uint32_t first_engine = 0;  // the engine of the first partition
  uint32_t partitions = 0;
  uint32_t partitions_per_engine = 0;
  uint64_t run_elements = 0;  // elements of one descriptor
  uint64_t run_bytes = 0;     // bytes of one element run (one descriptor)
  uint64_t runs_per_partition = 0;
  uint64_t descriptors = 0;        // over all engines
  double engine_bytes_per_ns = 0;  // the engines' rate for this transfer
  Picoseconds engine_time;         // busy time of the most loaded engine, with no contention
  uint64_t hbm_bytes = 0;          // bytes read from plus written to HBM
  bool reads_hbm = false;
  bool writes_hbm = false;
  bool transpose = false;  // through the DMA transpose unit (dma_transpose, or a flagged copy)
};

DmaPlan plan_transfer(const isa::Instruction& dma, const config::ArchConfig& arch);

// Busy time of a DMA engine that moves `partitions` partitions of the transfer alone: a
// descriptor overhead plus its bytes at the transfer's engine rate, per descriptor.
Picoseconds engine_time_for(const DmaPlan& plan, const config::ArchConfig& arch,
                            uint64_t partitions);

// Byte address in HBM of byte `offset_in_run` of descriptor `descriptor` (partition-major) of
// the HBM-side access pattern `ap`.
uint64_t run_address(const isa::AccessPattern& ap, const DmaPlan& plan, uint64_t descriptor);

struct DmaTransfer {
  const isa::Instruction* instruction = nullptr;
  const DmaPlan* plan = nullptr;
  uint32_t core = 0;
  uint16_t queue = 0;
  uint32_t index = 0;         // position of the DMA instruction in its issuer's stream
  Picoseconds issued;         // trigger completed on the issuing engine
  Picoseconds start{kNever};  // first chunk started on an engine
  Picoseconds end;            // completed (semaphore raised)
  uint32_t parts_open = 0;    // engine parts not fully cut into chunks
  uint32_t chunks_open = 0;   // chunks in flight
  bool data_done = false;
  bool completed = false;
  uint32_t next_in_queue = UINT32_MAX;  // in-order completion list of its queue
};

// The memory models' pending events, earliest first; events at the same time in the order
// they were scheduled (so a run is deterministic).
template <typename Kind>
class EventHeap {
 public:
  struct Event {
    int64_t time;
    uint64_t seq;
    Kind kind;
    uint32_t id;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  void reserve(size_t n) { events_.reserve(n); }
  void push(Picoseconds t, Kind kind, uint32_t id) {
    events_.push_back(Event{t.value, seq_++, kind, id});
    std::push_heap(events_.begin(), events_.end(), std::greater<Event>());
  }
  bool empty() const { return events_.empty(); }
  int64_t next_time() const { return events_.empty() ? kNever : events_.front().time; }
  Event pop() {
    std::pop_heap(events_.begin(), events_.end(), std::greater<Event>());
    const Event e = events_.back();
    events_.pop_back();
    return e;
  }

 private:
  std::vector<Event> events_;  // min-heap
  uint64_t seq_ = 0;
};

// The transfers in flight, shared by both memory models: ids (reused once a completion is
// consumed), per-queue in-order completion (D1) and the list of completions to deliver.
class TransferBook {
 public:
  TransferBook(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers);
  // Enters a transfer whose trigger completed at `issued`; returns its id.
  uint32_t add(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan, uint32_t index,
               Picoseconds issued);
  DmaTransfer& operator[](uint32_t id) { return transfers_[id]; }
  const DmaTransfer& operator[](uint32_t id) const { return transfers_[id]; }
  // Transfer `id` has moved its data at `now`: it and the finished transfers queued behind it
  // complete, in queue order, unless a transfer ahead of it on its queue is still moving.
  void data_done(uint32_t id, Picoseconds now);
  const std::vector<uint32_t>& completions() const { return completions_; }
  void consume_completions();
  size_t submitted() const { return submitted_; }
  size_t incomplete() const { return submitted_ - completed_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  IndexList& order(uint32_t core, uint16_t queue) { return queue_order_[core * queues_ + queue]; }
  uint32_t queues_;
  std::vector<DmaTransfer> transfers_;
  std::vector<uint32_t> free_transfers_;  // ids whose completion was consumed
  size_t submitted_ = 0;
  std::vector<IndexList> queue_order_;  // in-order completion list per queue of each core
  std::vector<uint32_t> completions_;
  size_t completed_ = 0;
};

// Counters of one queue of one core, over the run.
struct DmaQueueCounters {
  uint64_t bytes = 0;
  uint64_t transfers = 0;
};

class FlowMemorySystem;

class MemorySystem {
 public:
  // `max_transfers`: how many transfers the run will submit (sizes the tables up front, so
  // that the event path does not allocate).
  MemorySystem(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers);
  ~MemorySystem();
  MemorySystem(const MemorySystem&) = delete;
  MemorySystem& operator=(const MemorySystem&) = delete;
  // The flow-level model runs (arch.dma_flow_model).
  bool flow_model() const { return flow_ != nullptr; }

  // A DMA trigger completed at `issued`. Returns the transfer's id.
  uint32_t submit(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan, uint32_t index,
                  Picoseconds issued);

  // Processes every event earlier than `horizon`. Events a later submit() can cause are at
  // least lookahead() after the submit, so a caller at time t may run until t + lookahead().
  void run_until(Picoseconds horizon);
  // Runs until nothing is left to do (plain C++ callers: tests, benchmarks).
  void run_to_completion() { run_until(Picoseconds(kNever)); }
  Picoseconds next_event_time() const;
  // Internal events (transfer ready, engine free, HBM decision, chunk done; in the flow model:
  // transfer ready, rate changes, transfer done) processed so far: the memory system's share
  // of the simulation's work, for bench/.
  uint64_t events_processed() const { return flow_ ? flow_events() : events_processed_; }
  Picoseconds lookahead() const { return lookahead_; }

  // Completed transfers in completion order (times never decrease). The caller delivers them
  // and calls consume_completions() once it has delivered all of them; their ids (and table
  // entries) are then reused, so the tables hold the transfers in flight, not the whole run.
  const std::vector<uint32_t>& completions() const { return book_.completions(); }
  void consume_completions();

  // A transfer by id: valid from submit() until its completion is consumed.
  const DmaTransfer& transfer(uint32_t id) const { return book_[id]; }
  size_t transfer_count() const { return book_.submitted(); }
  size_t incomplete() const { return book_.incomplete(); }
  // The HBM stacks (stacks(), stack_peak_bytes_per_ns()). Its counters are the detailed
  // model's: use hbm_counters(), which holds the flow model's when that runs.
  const HbmModel& hbm() const { return hbm_; }
  const HbmCounters& hbm_counters() const;
  uint32_t cores() const { return cores_; }
  // Busy time of DMA engine `engine` of `core` (chunks moving), for statistics.
  Picoseconds engine_busy(uint32_t core, uint32_t engine) const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  enum class EventKind : uint8_t { transfer_ready, engine_free, hbm_decide, chunk_done };
  struct EnginePart {  // one engine's share of one transfer
    uint32_t transfer = 0;
    uint32_t first_partition = 0;  // relative to the transfer
    uint64_t next_descriptor = 0;
    uint64_t end_descriptor = 0;
    uint64_t byte_in_run = 0;
    uint32_t next = kNone;
  };
  struct DmaEngine {
    uint32_t core = 0;
    std::vector<IndexList> queues;
    uint32_t round_robin = 0;  // the queue to look at first
    uint32_t outstanding = 0;
    bool running = false;  // an engine_free event is pending
    Picoseconds busy;
  };
  struct Chunk {
    uint32_t transfer = 0;
    uint32_t engine = 0;
    uint32_t pieces = 0;  // HBM pieces not yet served
    Picoseconds engine_end;
    Picoseconds hbm_done;
    uint32_t next_free = kNone;
  };

  uint64_t flow_events() const;
  void schedule(Picoseconds t, EventKind kind, uint32_t id);
  void on_ready(uint32_t transfer, Picoseconds now);
  void on_engine_free(uint32_t engine, Picoseconds now);
  void on_hbm_decide(uint32_t channel, Picoseconds now);
  void on_chunk_done(uint32_t chunk, Picoseconds now);
  void wake(uint32_t engine, Picoseconds now);
  uint32_t issue_hbm(uint32_t chunk, const DmaTransfer& t, uint64_t descriptor, uint64_t offset,
                     uint64_t bytes, Picoseconds now);

  const config::ArchConfig& arch_;
  uint32_t cores_;
  Picoseconds lookahead_;
  HbmModel hbm_;
  EventHeap<EventKind> events_;
  uint64_t events_processed_ = 0;
  TransferBook book_;
  std::vector<EnginePart> parts_;
  std::vector<uint32_t> free_parts_;  // parts fully cut into chunks
  std::vector<DmaEngine> engines_;
  std::vector<Chunk> chunks_;
  uint32_t free_chunk_ = kNone;
  // Set (arch.dma_flow_model): the flow model moves the transfers of book_ instead.
  std::unique_ptr<FlowMemorySystem> flow_;
};

}  // namespace trnsim::models
