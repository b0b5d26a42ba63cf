// A DMA queue (SystemC shell): transfers complete in the order they were queued; each
// completion writes the data (functional mode) and raises the queue's semaphore by the number
// of DMA engines that took part (D1).
#pragma once

#include <systemc>

#include <deque>

#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "models/dma/dma_timing.hpp"
#include "models/events.hpp"
#include "models/neuroncore/semaphores.hpp"

namespace trnsim::models {

struct QueuedTransfer {
  const isa::Instruction* instruction = nullptr;
  uint32_t index = 0;
  Picoseconds issued;
  DmaTiming timing;
  const DmaPlan* plan = nullptr;
};

class DmaQueueModule : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(DmaQueueModule);
  DmaQueueModule(sc_core::sc_module_name name, uint16_t id, const isa::DmaQueue& queue,
                 SemaphoreFile& semaphores, isa::MemoryImage* memory, EventSink& sink);

  void push(const QueuedTransfer& t);
  size_t pending() const { return pending_.size(); }

 private:
  void run();

  uint16_t id_;
  const isa::DmaQueue& queue_;
  SemaphoreFile& semaphores_;
  isa::MemoryImage* memory_;
  EventSink& sink_;
  std::deque<QueuedTransfer> pending_;
  sc_core::sc_event arrived_;
};

}  // namespace trnsim::models
