// The memory system's SystemC shell: one SC_THREAD that advances the plain-C++ MemoryModel
// (models/dma/memory_model.hpp) and delivers completed transfers: the data is copied (functional
// mode), the queue's semaphore rises by the number of DMA engines that took part (D1), and a
// TransferRecord goes to the sink.
//
// It does not wait once per internal event. A transfer submitted at time t cannot touch an
// engine or HBM before t + dma_start_latency_ns, so at time t everything the memory system
// does before t + lookahead is already decided: the thread runs the plain model that far,
// then sleeps until the next completion or until the horizon must move. It wakes early when
// an engine submits a transfer.
#pragma once

#include <systemc>

#include <functional>
#include <vector>

#include <algorithm>
#include <array>
#include <deque>
#include "isa/program.hpp"
#include "isa/semantics.hpp"

#include "models/dma/in_flight_triggers.hpp"
#include "models/dma/memory_model.hpp"
#include "models/records/records.hpp"
#include "models/systemc/semaphore_file.hpp"

namespace trnsim::models {

// What a completion touches on one core.
struct CoreEndpoints {
  const isa::Program* program = nullptr;
  uint32_t kernel = 0;  // the kernel running (for the records)
  SemaphoreFile* semaphores = nullptr;
  isa::MemoryImage* memory = nullptr;     // nullptr: timing only
  InFlightTriggers* in_flight = nullptr;  // a streamed program's (nullptr: a whole program)
};

class MemorySystemModule : public sc_core::sc_module, private TransferHorizon {
 public:
  SC_HAS_PROCESS(MemorySystemModule);
  MemorySystemModule(sc_core::sc_module_name name, MemoryModel& memory, EventSink& sink);

  void attach(const CoreEndpoints& core) {
    cores_.push_back(core);
    outstanding_.push_back(0);
  }
  void set_kernel(uint32_t core, uint32_t kernel) { cores_[core].kernel = kernel; }
  // A DMA trigger completed now on `core`'s engine.
  void submit(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan, uint32_t index);
  // Collective traffic (models/systemc/collective_module.hpp): a transfer on the collectives'
  // queue that moves no data and raises no semaphore; when it completes, `done(tag, transfer)`
  // is called.
  // Not counted in outstanding().
  void submit_collective(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan,
                         uint32_t tag);
  uint16_t collective_queue() const { return memory_.collective_queue(); }
  void on_collective_done(std::function<void(uint32_t tag, const DmaTransfer&)> done) {
    collective_done_ = std::move(done);
  }
  // Transfers of `core` submitted and not yet delivered; delivered() fires on every delivery.
  uint64_t outstanding(uint32_t core) const { return outstanding_[core]; }
  sc_core::sc_event& delivered() { return delivered_; }

 private:
  void run();
  void deliver(uint32_t transfer);
  // A transfer starts after its trigger: those submitted and not yet delivered were triggered
  // no earlier than the earliest of them, and those still to come will be triggered now or
  // later.
  Picoseconds later_starts_from() const override {
    const Picoseconds issued = memory_.earliest_issued();
    return issued < now() ? issued : now();
  }

  MemoryModel& memory_;
  EventSink& sink_;
  std::vector<CoreEndpoints> cores_;
  std::vector<uint64_t> outstanding_;
  std::function<void(uint32_t, const DmaTransfer&)> collective_done_;
  sc_core::sc_event submitted_;
  sc_core::sc_event delivered_;
};

}  // namespace trnsim::models
