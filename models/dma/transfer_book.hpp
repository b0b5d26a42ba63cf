// The transfers in flight, shared by both memory models: ids, per-queue in-order completion (D1),
// the completions to deliver, and the event queue both models schedule on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/large_page_allocator.hpp"
#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"
#include "models/dma/dma_plan.hpp"
#include "models/hbm/hbm.hpp"

namespace trnsim::models {

// A singly linked list by index (head and tail; each element keeps its own `next`): a queue's
// transfers in order, an engine queue's parts.
struct IndexList {
  uint32_t head = UINT32_MAX;
  uint32_t tail = UINT32_MAX;
};

// A slot of `pool` for reuse: the last one freed (taken off `free`), or a new, default-made
// one at the end. Returns its index. (Transfers, engine parts and flows are kept this way.)
template <typename Pool>
uint32_t take_slot(Pool& pool, std::vector<uint32_t>& free) {
  if (free.empty()) {
    pool.emplace_back();
    return static_cast<uint32_t>(pool.size() - 1);
  }
  const uint32_t slot = free.back();
  free.pop_back();
  return slot;
}

struct DmaTransfer {
  const isa::Instruction* instruction = nullptr;
  DmaPlan plan;  // a copy: the engine that triggers a transfer keeps no plan of its own
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
// they were scheduled (so a run is deterministic). (time, seq) orders the events strictly, so
// which event leaves next does not depend on how the queue is kept.
//
// A 4-ary min-heap: a memory model keeps a few dozen events pending (about 40 on matmul s1)
// and schedules one or more per HBM piece, so the sift is on the hot path. Four children per
// node halve the levels a pop walks down against a binary heap, and the comparison has no
// branch (which event is earlier is data the branch predictor cannot learn).
template <typename Kind>
class EventHeap {
 public:
  struct Event {
    int64_t time;
    uint64_t seq;
    Kind kind;
    uint32_t id;
  };
  void reserve(size_t n) { events_.reserve(n); }
  void push(Picoseconds t, Kind kind, uint32_t id) {
    const Event e{t.value, seq_++, kind, id};
    size_t hole = events_.size();
    events_.push_back(e);
    while (hole > 0) {
      const size_t parent = (hole - 1) / kArity;
      if (!before(e, events_[parent])) break;
      events_[hole] = events_[parent];
      hole = parent;
    }
    events_[hole] = e;
  }
  bool empty() const { return events_.empty(); }
  int64_t next_time() const { return events_.empty() ? kNever : events_.front().time; }
  Event pop() {
    const Event top = events_.front();
    const Event last = events_.back();
    events_.pop_back();
    const size_t n = events_.size();
    if (n == 0) return top;
    size_t hole = 0;
    for (;;) {
      const size_t first = hole * kArity + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = std::min(first + kArity, n);
      for (size_t c = first + 1; c < end; ++c) best = before(events_[c], events_[best]) ? c : best;
      if (!before(events_[best], last)) break;
      events_[hole] = events_[best];
      hole = best;
    }
    events_[hole] = last;
    return top;
  }

 private:
  static constexpr size_t kArity = 4;
  static bool before(const Event& a, const Event& b) {
    return static_cast<bool>(
        static_cast<int>(a.time < b.time) |
        (static_cast<int>(a.time == b.time) & static_cast<int>(a.seq < b.seq)));
  }
  std::vector<Event> events_;  // a 4-ary min-heap by (time, seq)
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
  // The first `delivered` completions were delivered: their ids are free for new transfers.
  void consume_completions(size_t delivered);
  // The earliest trigger time of the transfers entered and not yet consumed (kNever if none):
  // the ones still moving (each queue's oldest, since a queue's transfers are entered in
  // trigger order) and the completions not yet consumed.
  Picoseconds earliest_issued() const;
  size_t submitted() const { return submitted_; }
  size_t incomplete() const { return submitted_ - completed_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  IndexList& order(uint32_t core, uint16_t queue) { return queue_order_[core * queues_ + queue]; }
  uint32_t queues_;
  std::vector<DmaTransfer, base::LargePageAllocator<DmaTransfer>> transfers_;  // huge pages
  std::vector<uint32_t> free_transfers_;  // ids whose completion was consumed
  size_t submitted_ = 0;
  std::vector<IndexList> queue_order_;  // in-order completion list per queue of each core
  std::vector<uint32_t> completions_;
  size_t completed_ = 0;
};

}  // namespace trnsim::models
