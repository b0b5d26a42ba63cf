#include "models/systemc/memory_system_module.hpp"

namespace trnsim::models {

MemorySystemModule::MemorySystemModule(sc_core::sc_module_name name, MemoryModel& memory,
                                       EventSink& sink)
    : sc_module(name), memory_(memory), sink_(sink) {
  SC_THREAD(run);
}

void MemorySystemModule::submit(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan,
                                uint32_t index) {
  memory_.submit(core, dma, plan, index, now());
  ++outstanding_[core];
  submitted_.notify(sc_core::SC_ZERO_TIME);
}

void MemorySystemModule::submit_collective(uint32_t core, const isa::Instruction& dma,
                                           const DmaPlan& plan, uint32_t tag) {
  memory_.submit(core, dma, plan, tag, now());
  submitted_.notify(sc_core::SC_ZERO_TIME);
}

void MemorySystemModule::run() {
  size_t next = 0;  // first completion not yet delivered
  for (;;) {
    memory_.run_until(now() + memory_.lookahead());
    const auto& done = memory_.completions();
    while (next < done.size() && memory_.transfer(done[next]).end <= now()) deliver(done[next++]);
    // The delivered ones free their ids, even while later completions wait for their time: a
    // model that runs ahead always has one waiting, and the table would grow with the run.
    if (next > 0) {
      memory_.consume_completions(next);
      next = 0;
    }
    int64_t wake = kNever;
    if (next < done.size()) wake = memory_.transfer(done[next]).end.value;
    const Picoseconds pending = memory_.next_event_time();
    if (pending.value != kNever) {
      // Run the model again when its next event comes within the horizon.
      wake = std::min(wake, pending.value - memory_.lookahead().value + 1);
    }
    if (wake == kNever) {
      wait(submitted_);
    } else {
      wait(to_sc_time(Picoseconds(std::max<int64_t>(wake - now().value, 0))), submitted_);
    }
  }
}

void MemorySystemModule::deliver(uint32_t id) {
  const DmaTransfer& t = memory_.transfer(id);
  if (t.queue == memory_.collective_queue()) {
    collective_done_(t.index, t);
    return;
  }
  CoreEndpoints& core = cores_[t.core];
  if (core.memory != nullptr) isa::execute(*t.instruction, *core.memory);
  core.semaphores->apply(
      isa::SemaphoreUpdate{core.program->queues[t.queue].semaphore, isa::SemaphoreUpdateKind::add,
                           static_cast<int64_t>(t.plan.engines)},
      SemaphoreFile::kDmaQueue);
  --outstanding_[t.core];
  delivered_.notify(sc_core::SC_ZERO_TIME);
  TransferRecord r;
  r.core = static_cast<int>(t.core);
  r.kernel = core.kernel;
  r.queue = t.queue;
  r.issuer = t.instruction->engine;
  r.index = t.index;
  r.issued = t.issued;
  r.start = t.start;
  r.end = t.end;
  r.bytes = t.plan.bytes;
  r.engines = t.plan.engines;
  r.descriptors = t.plan.descriptors;
  r.horizon = this;
  sink_.on_transfer(r);
  // Last: the sinks read the instruction above.
  if (core.in_flight != nullptr) core.in_flight->delivered(r.issuer, r.index);
}

}  // namespace trnsim::models
