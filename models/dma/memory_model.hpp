// The memory system of one or more NeuronCores (plain C++, no SystemC): the DMA engines and
// queues of every core and the HBM stacks they share. One interface, two models, chosen by one
// factory from the arch flag dma_flow_model:
//   - DetailedMemoryModel (models/dma/detailed_model.hpp, the default): chunks on the DMA
//     engines, 256-byte HBM pieces through FR-FCFS schedulers (models/hbm);
//   - FlowMemoryModel (models/dma/flow_model.hpp): transfers as fluid flows sharing the engines
//     and the HBM pseudo-channels, a few events per transfer.
// Both keep the same transfer semantics: a transfer is ready for its data dma_start_latency_ns
// after its trigger (a pipeline latency that holds nothing) plus the setup of each DMA engine it
// uses (dma_transfer_setup_ns: descriptor processing; A1: "each DMA engine can process one DMA
// transfer at a time", so an engine sets up one transfer after another, while moving the data of
// the one before); it is spread as its DmaPlan says
// (models/dma/dma_plan.hpp), and completes in order within its queue (D1); the SystemC shell
// (models/systemc/memory_system_module.hpp) delivers completions and raises the semaphores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"
#include "models/dma/dma_plan.hpp"
#include "models/dma/transfer_book.hpp"
#include "models/hbm/hbm.hpp"

namespace trnsim::models {

class MemoryModel {
 public:
  virtual ~MemoryModel() = default;
  MemoryModel(const MemoryModel&) = delete;
  MemoryModel& operator=(const MemoryModel&) = delete;

  // "detailed" or "flow" (stats.json's memory_model.name).
  virtual std::string_view name() const = 0;

  // A DMA trigger completed at `issued`. Returns the transfer's id.
  uint32_t submit(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan, uint32_t index,
                  Picoseconds issued);

  // Processes every event earlier than `horizon`. Events a later submit() can cause are at
  // least lookahead() after the submit, so a caller at time t may run until t + lookahead().
  virtual void run_until(Picoseconds horizon) = 0;
  // Runs until nothing is left to do (plain C++ callers: tests, benchmarks).
  void run_to_completion() { run_until(Picoseconds(kNever)); }
  virtual Picoseconds next_event_time() const = 0;
  // Internal events processed so far: the memory system's share of the simulation's work, for
  // bench/.
  virtual uint64_t events_processed() const = 0;
  Picoseconds lookahead() const { return lookahead_; }

  // Completed transfers in completion order (times never decrease). The caller delivers them
  // and calls consume_completions(n) for the first n it has delivered; their ids (and table
  // entries) are then reused, so the tables hold the transfers in flight, not the whole run.
  const std::vector<uint32_t>& completions() const { return book_.completions(); }
  void consume_completions(size_t delivered) { book_.consume_completions(delivered); }
  // The earliest trigger time of the transfers submitted and not yet consumed (kNever if none).
  Picoseconds earliest_issued() const { return book_.earliest_issued(); }

  // A transfer by id: valid from submit() until its completion is consumed.
  const DmaTransfer& transfer(uint32_t id) const { return book_[id]; }
  size_t transfer_count() const { return book_.submitted(); }
  size_t incomplete() const { return book_.incomplete(); }
  // The HBM stacks (stacks(), stack_peak_bytes_per_ns()).
  const HbmModel& hbm() const { return hbm_; }
  // The DRAM-side counters of the model that ran (the flow model keeps bytes and bus time only).
  virtual const HbmCounters& hbm_counters() const = 0;
  uint32_t cores() const { return cores_; }
  // The queue collectives' traffic travels on (models/systemc/collective_module.hpp): one past
  // the program's queues, with a hardware queue of its own on every engine (the collective
  // engines' DMA rings), so it shares the engines and HBM with the kernel's transfers without
  // waiting behind them in a queue.
  uint16_t collective_queue() const { return static_cast<uint16_t>(arch_.dma_queues); }
  // The hardware queue of each engine a transfer on `queue` uses.
  uint32_t hw_queue(uint32_t queue) const {
    const uint32_t per_engine = std::max(1u, arch_.dma_queues_per_engine);
    return queue == arch_.dma_queues ? per_engine : queue % per_engine;
  }
  // Busy time of DMA engine `engine` of `core`, for statistics.
  virtual Picoseconds engine_busy(uint32_t core, uint32_t engine) const = 0;

 protected:
  // `max_transfers`: how many transfers the run will submit (sizes the tables up front, so that
  // the event path does not allocate).
  MemoryModel(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers);
  // Transfer `id` of book_ is ready for its data to move at `ready`.
  virtual void on_submit(uint32_t id, Picoseconds ready) = 0;

  const config::ArchConfig& arch_;
  uint32_t cores_;
  Picoseconds lookahead_;
  HbmModel hbm_;
  TransferBook book_;

 private:
  // When each DMA engine (core * dma_engines + engine) finishes setting up its last transfer.
  std::vector<Picoseconds> setup_free_;
  Picoseconds start_latency_, setup_;
};

// The model arch.dma_flow_model asks for.
std::unique_ptr<MemoryModel> make_memory_model(const config::ArchConfig& arch, uint32_t cores,
                                               size_t max_transfers);

}  // namespace trnsim::models
