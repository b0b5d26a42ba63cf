// The NeuronCore top (SystemC): five engines, each an SC_THREAD running its in-order stream,
// and the semaphores between them. Its DMA triggers go to the memory system (DMA engines and
// HBM), which several cores may share.
#pragma once

#include <systemc>

#include <array>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "models/dma/dma_plan.hpp"
#include "models/neuroncore/pipeline.hpp"
#include "models/records/records.hpp"
#include "models/systemc/collective_module.hpp"
#include "models/systemc/host_module.hpp"
#include "models/systemc/memory_system_module.hpp"
#include "models/systemc/semaphore_file.hpp"

namespace trnsim::models {

class NeuronCore;

// One engine's sequencer: per instruction, wait for its semaphores (and for the results of the
// same engine's instruction it reads, and the semaphore's wake latency: models/neuroncore/
// pipeline.hpp), wait once for its initiation interval, apply its effect, then update its
// semaphores when its results are committed: at once without a result latency, else from the
// engine's write-back thread, so that the engine can issue its next instruction meanwhile.
class EngineModule : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(EngineModule);
  EngineModule(sc_core::sc_module_name name, Engine engine, NeuronCore& core);
  static constexpr size_t kEngineStackBytes = size_t{8} << 20;

  Engine engine() const { return engine_; }
  size_t next() const { return next_; }  // index of the instruction not yet finished
  bool finished() const;
  // What the engine is blocked on when it cannot go on (for deadlock reports).
  const isa::SemaphoreWait* blocked_on() const { return blocked_; }

 private:
  void run();
  void run_streamed();
  void step(const isa::Instruction& in, uint32_t kernel);
  void writeback();

  Engine engine_;
  NeuronCore& core_;
  // Its result latency applies (arch.result_latency_cycles): same-engine producers are found
  // as the instructions issue.
  const bool pipelined_;
  ProducerTracker producers_;
  size_t next_ = 0;
  bool streamed_done_ = false;  // a streamed program: the stream ended for this engine
  const isa::SemaphoreWait* blocked_ = nullptr;
  // When the results of the last kProducerWindow instructions are committed, by stream position.
  std::array<Picoseconds, kProducerWindow> results_{};
  TensorThrottle throttle_;
  // Semaphore updates waiting for their instruction's results, in issue order (one engine's
  // result latency is the same for all its instructions, so they are due in order).
  std::deque<std::pair<Picoseconds, const isa::Instruction*>> pending_updates_;
  std::deque<uint32_t> pending_update_index_;  // a streamed program's: their stream positions
  sc_core::sc_event update_pending_, updates_drained_;
};

// With several kernels, or a host model, a sequencer thread starts each kernel when the
// previous one has drained (every engine finished its part, every transfer delivered), its
// launch has arrived from the host, and the device has set it up (arch.host.kernel_setup_ns).
class NeuronCore : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(NeuronCore);
  NeuronCore(sc_core::sc_module_name name, uint32_t id, const isa::Program& program,
             const config::ArchConfig& arch, isa::MemoryImage* memory, EventSink& sink,
             MemorySystemModule& memory_system, HostModule* host,
             CollectiveModule* collectives = nullptr);

  const uint32_t id;
  const isa::Program& program;
  const config::ArchConfig& arch;
  isa::MemoryImage* memory;
  EventSink& sink;
  MemorySystemModule& memory_system;
  SemaphoreFile semaphores;
  std::vector<std::unique_ptr<EngineModule>> engines;
  uint32_t ports_held = 0;  // shared ports (models::Port bits) in use
  sc_core::sc_event ports_released;
  uint32_t port_waiters = 0;      // engines waiting on ports_released
  HostModule* host;               // nullptr: no host model
  CollectiveModule* collectives;  // nullptr: the program has no collective
  // The kernel the engines may run (-1: none yet) and how many engines finished their part.
  int64_t running_kernel = -1;
  uint32_t engines_finished = 0;
  InFlightTriggers in_flight;  // a streamed program's DMA triggers still in flight
  sc_core::sc_event kernel_started;
  sc_core::sc_event engine_finished;

  std::string deadlock_report() const;

 private:
  void sequence();
};

}  // namespace trnsim::models
