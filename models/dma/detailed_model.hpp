// The detailed memory model (the default; arch.dma_flow_model false), behind MemoryModel
// (models/dma/memory_model.hpp). Plain C++.
//
// An engine moves its parts in chunks of at most dma_chunk_bytes: per chunk it pays
// dma_descriptor_overhead_ns for every descriptor it starts and the bytes at the transfer's
// engine rate, and issues the chunk's HBM reads or writes (models/hbm: 256-byte pieces through
// FR-FCFS schedulers per pseudo-channel). A chunk is done when both the engine's time and the
// HBM have finished; an engine keeps at most dma_engine_outstanding_chunks chunks in flight.
// Between chunks the engine picks the next of its queues that has work, round-robin (v2/v3);
// within a queue it works in order. A transfer completes when its last chunk is done, but never
// before the transfer queued ahead of it on the same queue (in-order completion, D1).
//
// Event-driven: its cost grows with chunks and HBM pieces, not with cycles.
#pragma once

#include <cstdint>
#include <vector>

#include "models/dma/memory_model.hpp"

namespace trnsim::models {

class DetailedMemoryModel final : public MemoryModel {
 public:
  DetailedMemoryModel(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers);
  std::string_view name() const override { return "detailed"; }
  void run_until(Picoseconds horizon) override;
  Picoseconds next_event_time() const override { return Picoseconds(events_.next_time()); }
  uint64_t events_processed() const override { return events_processed_; }
  const HbmCounters& hbm_counters() const override { return hbm_.counters(); }
  Picoseconds engine_busy(uint32_t core, uint32_t engine) const override {
    return engines_[core * arch_.dma_engines + engine].busy;
  }

 private:
  void on_submit(uint32_t id, Picoseconds ready) override;
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

  void schedule(Picoseconds t, EventKind kind, uint32_t id);
  void on_ready(uint32_t transfer, Picoseconds now);
  void on_engine_free(uint32_t engine, Picoseconds now);
  void on_hbm_decide(uint32_t channel, Picoseconds now);
  void on_chunk_done(uint32_t chunk, Picoseconds now);
  void wake(uint32_t engine, Picoseconds now);
  uint32_t issue_hbm(uint32_t chunk, const DmaTransfer& t, uint64_t descriptor, uint64_t offset,
                     uint64_t bytes, Picoseconds now);

  EventHeap<EventKind> events_;
  uint64_t events_processed_ = 0;
  std::vector<EnginePart> parts_;
  std::vector<uint32_t> free_parts_;  // parts fully cut into chunks
  std::vector<DmaEngine> engines_;
  std::vector<Chunk> chunks_;
  uint32_t free_chunk_ = kNone;
};

}  // namespace trnsim::models
