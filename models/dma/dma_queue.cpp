#include "models/dma/dma_queue.hpp"

namespace trnsim::models {

DmaQueueModule::DmaQueueModule(sc_core::sc_module_name name, uint16_t id,
                               const isa::DmaQueue& queue, SemaphoreFile& semaphores,
                               isa::MemoryImage* memory, EventSink& sink)
    : sc_module(name),
      id_(id),
      queue_(queue),
      semaphores_(semaphores),
      memory_(memory),
      sink_(sink) {
  SC_THREAD(run);
}

void DmaQueueModule::push(const QueuedTransfer& t) {
  pending_.push_back(t);
  arrived_.notify(sc_core::SC_ZERO_TIME);
}

void DmaQueueModule::run() {
  for (;;) {
    while (pending_.empty()) wait(arrived_);
    const QueuedTransfer t = pending_.front();
    // In order within the queue: a transfer completes no earlier than the one before it,
    // which this thread has already completed.
    const Picoseconds done = t.timing.end;
    if (done > now()) wait(to_sc_time(done - now()));
    pending_.pop_front();
    if (memory_ != nullptr) isa::execute(*t.instruction, *memory_);
    semaphores_.apply(isa::SemaphoreUpdate{queue_.semaphore, isa::SemaphoreUpdateKind::add,
                                           static_cast<int64_t>(t.plan->engines)});
    TransferRecord r;
    r.queue = id_;
    r.issuer = t.instruction->engine;
    r.index = t.index;
    r.issued = t.issued;
    r.start = t.timing.start;
    r.end = now();
    r.bytes = t.plan->bytes;
    r.engines = t.plan->engines;
    r.descriptors = t.plan->descriptors;
    sink_.on_transfer(r);
  }
}

}  // namespace trnsim::models
