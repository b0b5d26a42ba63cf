// Runs one Program on simulated NeuronCores. This header hides SystemC: callers see plain
// C++. SystemC cannot be elaborated twice in one process, so simulate() may be called once per
// process; a second call throws std::logic_error.
#pragma once

#include <string>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "models/hbm/hbm.hpp"
#include "models/records/records.hpp"

namespace trnsim::models {

struct SimulationResult {
  bool completed = false;  // every engine ran its whole stream
  Picoseconds end_time;    // when the last instruction or transfer finished
  std::string deadlock;    // when !completed: what each blocked engine waits for
  // When the run was stopped by bad input found only while running (ranks that disagree about
  // a collective): why. Not a deadlock.
  std::string error;
  uint32_t cores = 1;
  HbmCounters hbm;  // the memory system's DRAM-side counters
  // The flow-level memory model ran (arch.dma_flow_model): hbm holds bytes and bus time only,
  // no row-buffer, refresh or turnaround counts.
  bool flow_memory_model = false;
  uint32_t hbm_stacks = 1;
  double hbm_stack_peak_bytes_per_ns = 0;
  std::vector<Picoseconds> dma_engine_busy;  // per core, summed over its DMA engines
  uint64_t memory_system_events = 0;         // internal events of the DMA/HBM model (bench/)
};

// Runs `program` on memories.size() NeuronCores (at least one) that share one memory system:
// each core has its own engines, semaphores and DMA engines, and its own HBM address space;
// cores share HBM stacks as the preset says (arch.hbm.cores_per_stack). memories[c] is core
// c's functional state (SBUF, PSUM, HBM), or nullptr for timing only. The program must have
// passed isa::validate().
// `chips`: the cores spread evenly over that many chips (core g is core g % (cores / chips) of
// chip g / (cores / chips)), which the collectives' fabric sees; each chip's cores have their
// own HBM stacks.
SimulationResult simulate(const isa::Program& program, const config::ArchConfig& arch,
                          const std::vector<isa::MemoryImage*>& memories, EventSink& sink,
                          uint32_t chips = 1);
// One program per core (SPMD over a logical core): core c runs *programs[c] on memories[c]
// (memories empty: timing only). The programs must use the same HBM tensors; to give the cores
// one HBM address space, make memories[1..] share core 0's HBM (isa::MemoryImage::share_hbm).
// Host ops are taken from programs[0] only. Each program must have passed isa::validate().
SimulationResult simulate(const std::vector<const isa::Program*>& programs,
                          const config::ArchConfig& arch,
                          const std::vector<isa::MemoryImage*>& memories, EventSink& sink,
                          uint32_t chips = 1);
// One core.
SimulationResult simulate(const isa::Program& program, const config::ArchConfig& arch,
                          isa::MemoryImage* memory, EventSink& sink);

}  // namespace trnsim::models
