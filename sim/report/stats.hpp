// Statistics gathered from the event stream as it runs (no event is kept), with the Neuron
// profiler's metric names where one exists (fact sheet, section 7).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "models/records/records.hpp"

namespace trnsim::sim {

struct EngineStats {
  uint64_t instructions = 0;
  Picoseconds active;          // instructions running, semaphore waits excluded
  Picoseconds semaphore_wait;  // ready to issue until the condition was met
  Picoseconds port_wait;       // waiting for a port shared with another engine
  Picoseconds pipeline_wait;   // waiting for a producer's results or a semaphore's wake
  uint64_t flops = 0;
};

// One DMA queue of one core over the run.
struct QueueStats {
  uint64_t bytes = 0;
  uint64_t transfers = 0;
  Picoseconds busy;  // union of its transfers' [start, end]
  Picoseconds covered_to;
};

// One core of a multi-core run: what the chip summary compares across cores.
struct CoreStats {
  std::array<Picoseconds, kEngineCount> active{};  // per engine, as EngineStats::active
  uint64_t instructions = 0;
  uint64_t dma_bytes = 0;
  Picoseconds end;  // its last instruction, transfer or collective finished
};

struct MemoryTraffic {
  uint64_t read = 0;
  uint64_t written = 0;
};

class StatsCollector : public models::EventSink {
 public:
  StatsCollector(const isa::Program& program, const config::ArchConfig& arch, uint32_t cores = 1);
  void on_instruction(const models::InstructionRecord& r) override;
  void on_transfer(const models::TransferRecord& r) override;
  // SPMD over a logical core: core c ran *programs[c] (same queues and tensors as `program`).
  void set_core_programs(std::vector<const isa::Program*> programs) {
    core_programs_ = std::move(programs);
    for (const isa::Program* p : core_programs_) track_compute_ |= has_collective(*p);
  }
  // A collective ends its ranks' work too (cores first_core .. first_core + ranks - 1, or a
  // send/recv's sender first_core and receiver peer_core).
  void on_collective(const models::CollectiveRecord& r) override {
    collectives_.push_back(r);
    if (r.point_to_point) {
      for (const uint32_t c : {r.first_core, r.peer_core})
        if (c < per_core_.size()) per_core_[c].end = max(per_core_[c].end, r.end);
      return;
    }
    for (uint32_t c = r.first_core; c < r.first_core + r.ranks && c < per_core_.size(); ++c) {
      per_core_[c].end = max(per_core_[c].end, r.end);
    }
  }

  const EngineStats& engine(Engine e) const { return engines_[index_of(e)]; }
  uint64_t transfers() const { return transfers_; }
  uint64_t dma_bytes() const { return dma_bytes_; }
  Picoseconds dma_active() const;  // union of transfer intervals over every queue
  // Pieces of that union held (the rest are summed): bounded by what is in flight.
  size_t dma_pieces_held() const { return dma_intervals_.size(); }
  const MemoryTraffic& traffic(isa::Memory m) const { return traffic_[static_cast<int>(m)]; }
  uint32_t cores() const { return cores_; }
  const CoreStats& core(uint32_t c) const { return per_core_[c]; }
  // Union of the core's transfer intervals over its queues.
  Picoseconds core_dma_active(uint32_t c) const;
  // The core's busiest resource: its most active engine, or its DMA (busy union).
  Picoseconds core_work(uint32_t c) const;
  // Core c's time inside its collectives (from each one's first trigger to its end, their
  // union; a collective of a group counts for the group's cores only) split into the part its
  // compute engines (TensorE, VectorE, ScalarE, GpSimdE) were busy (overlapped) and the part they
  // were all idle (exposed). Multi-core runs only.
  struct CollectiveOverlap {
    Picoseconds in_collectives, overlapped, exposed;
  };
  CollectiveOverlap collective_overlap(uint32_t c) const;
  // The program's collectives in the order they ended (empty without collectives).
  const std::vector<models::CollectiveRecord>& collectives() const { return collectives_; }
  // Queue q of core c.
  const QueueStats& queue(uint32_t core, size_t q) const {
    return queues_[core * program_.queues.size() + q];
  }

 private:
  void count(const isa::AccessPattern& ap, bool write);
  const isa::Program& program_of(uint32_t core) const {
    return core < core_programs_.size() ? *core_programs_[core] : program_;
  }

  const isa::Program& program_;
  std::vector<const isa::Program*> core_programs_;
  const config::ArchConfig& arch_;
  uint32_t cores_;
  std::vector<QueueStats> queues_;
  std::vector<CoreStats> per_core_;
  using Intervals = std::vector<std::pair<Picoseconds, Picoseconds>>;
  // The part of a DMA busy union summed and dropped (fold()), and the list length at which
  // fold() looks again.
  struct Folded {
    static constexpr size_t kFoldAt = 4096;
    Picoseconds length;
    size_t fold_at = kFoldAt;
  };
  // The pieces of `pieces` (a union's, sorted and disjoint) that end before any transfer still
  // to come can start (TransferRecord::horizon) are summed into `f` and dropped, once the list
  // has reached f.fold_at: the list holds the recent ones, not one per gap of the whole run.
  static void fold(Folded& f, Intervals& pieces, const models::TransferHorizon* horizon);
  std::vector<Intervals> core_dma_intervals_;
  std::vector<Folded> core_dma_;
  // Per core, when its compute engines ran (multi-core runs only: for collective_overlap).
  std::vector<Intervals> core_compute_intervals_;
  // Only a multi-core run with collectives keeps the compute intervals (what it costs grows
  // with the program; only collective_overlap reads them).
  bool track_compute_ = false;
  static bool has_collective(const isa::Program& p);
  std::array<EngineStats, kEngineCount> engines_{};
  std::array<MemoryTraffic, 3> traffic_{};
  uint64_t transfers_ = 0;
  uint64_t dma_bytes_ = 0;
  // DMA busy time: transfers complete in order per queue, so intervals arrive nearly sorted;
  // merged on the fly into a running union, its old pieces folded (fold()).
  Intervals dma_intervals_;
  Folded dma_;
  std::vector<models::CollectiveRecord> collectives_;
};

}  // namespace trnsim::sim
