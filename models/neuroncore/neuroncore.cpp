#include "models/neuroncore/neuroncore.hpp"

#include <fmt/format.h>

#include "models/neuroncore/cost.hpp"
#include "models/neuroncore/simulate.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TRNSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRNSIM_ASAN 1
#endif
#endif
#ifdef TRNSIM_ASAN
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace trnsim::models {

namespace {
// AddressSanitizer builds only. SystemC's coroutines switch stacks; after sc_start returns,
// ASan still believes this thread runs on the last coroutine's stack (seen: "stack top:
// 0x7f2614600000" against a main-stack sp), so the next exception thrown on the main stack
// is not unpoisoned and ASan reports a false stack-buffer-overflow in its own sigaltstack call
// (google/sanitizers#189). Announcing a switch to the main thread's real stack puts its
// bounds back.
void restore_sanitizer_stack_bounds() {
#ifdef TRNSIM_ASAN
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* bottom = nullptr;
  size_t size = 0;
  const bool ok = pthread_attr_getstack(&attr, &bottom, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!ok) return;
  __sanitizer_start_switch_fiber(nullptr, bottom, size);
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}
}  // namespace

EngineModule::EngineModule(sc_core::sc_module_name name, isa::Engine engine, NeuronCore& core)
    : sc_module(name), engine_(engine), core_(core) {
  const auto& stream = core.program.stream(engine);
  steps_.reserve(stream.size());
  for (const auto& in : stream) {
    StepCost c;
    c.cycles = instruction_cycles(in, core.arch);
    c.time = instruction_time(c.cycles, in, core.arch);  // the cycles worked out once
    c.ports = ports_of(in, core.arch);
    if (isa::is_dma(in.opcode)) {
      c.plan = static_cast<uint32_t>(core.dma_plans.size());
      core.dma_plans.push_back(plan_transfer(in, core.arch));
    }
    steps_.push_back(c);
  }
  SC_THREAD(run);
  // The functional model runs on this thread: Eigen's matrix products put their blocking
  // buffers on the stack (up to EIGEN_STACK_ALLOCATION_LIMIT, 128 KiB), more than SystemC's
  // default coroutine stack holds once a matmul contracts over 256 partitions (it crashed).
  // The stack is reserved, not committed: untouched pages cost nothing.
  set_stack_size(kEngineStackBytes);
}

bool EngineModule::finished() const {
  return next_ == core_.program.stream(engine_).size();
}

void EngineModule::run() {
  const auto& stream = core_.program.stream(engine_);
  for (size_t k = 0; k < core_.program.kernel_count(); ++k) {
    while (core_.running_kernel < static_cast<int64_t>(k)) wait(core_.kernel_started);
    const auto [begin, end] = core_.program.kernel_range(k, engine_);
    for (next_ = begin; next_ < end; ++next_) step(stream[next_], static_cast<uint32_t>(k));
    ++core_.engines_finished;
    core_.engine_finished.notify(sc_core::SC_ZERO_TIME);
  }
}

void EngineModule::step(const isa::Instruction& in, uint32_t kernel) {
  {
    InstructionRecord r;
    r.core = static_cast<int>(core_.id);
    r.kernel = kernel;
    r.engine = engine_;
    r.index = static_cast<uint32_t>(next_);
    r.ready = now();
    for (const isa::SemaphoreWait& w : in.waits) {
      while (core_.semaphores.value(w.semaphore) < w.value) {
        blocked_ = &w;
        r.blocked_on = w.semaphore;
        core_.semaphores.wait_for_change(w.semaphore);
      }
    }
    blocked_ = nullptr;
    const StepCost& cost = steps_[next_];
    const uint32_t ports = cost.ports;
    if (ports != 0) {
      const Picoseconds want = now();
      while ((core_.ports_held & ports) != 0) {
        ++core_.port_waiters;
        wait(core_.ports_released);
        --core_.port_waiters;
      }
      r.port_wait = now() - want;
      core_.ports_held |= ports;
    }
    r.start = now();
    wait(to_sc_time(cost.time));
    if (ports != 0) {
      core_.ports_held &= ~ports;
      // Only a waiting engine needs waking: no delta cycle per instruction otherwise.
      if (core_.port_waiters > 0) core_.ports_released.notify(sc_core::SC_ZERO_TIME);
    }
    if (isa::is_dma(in.opcode)) {
      core_.memory_system.submit(core_.id, in, core_.dma_plans[cost.plan], r.index);
    } else if (core_.memory != nullptr) {
      isa::execute(in, *core_.memory);
    }
    for (const isa::SemaphoreUpdate& u : in.updates) core_.semaphores.apply(u);
    r.end = now();
    r.cycles = cost.cycles;
    core_.sink.on_instruction(r);
  }
}

void NeuronCore::sequence() {
  const size_t kernels = program.kernel_count();
  auto drained = [&] {
    return engines_finished == isa::kEngineCount && memory_system.outstanding(id) == 0;
  };
  const Picoseconds setup(
      host == nullptr ? 0 : static_cast<int64_t>(std::llround(arch.host.kernel_setup_ns * 1000)));
  KernelRecord record;
  record.core = static_cast<int>(id);
  for (size_t k = 0; k <= kernels; ++k) {
    if (k > 0) {
      while (!drained()) wait(engine_finished | memory_system.delivered());
      record.end = now();
      sink.on_kernel(record);
      if (host != nullptr) host->kernel_done(k - 1);
    }
    if (k == kernels) break;
    record.kernel = static_cast<uint32_t>(k);
    if (host != nullptr) {
      while (!host->launched(k)) wait(host->launch_event());
      if (now() < host->arrival(k)) wait(to_sc_time(host->arrival(k) - now()));
      record.arrived = now();
      wait(to_sc_time(setup));
    }
    semaphores.reset();
    engines_finished = 0;
    memory_system.set_kernel(id, static_cast<uint32_t>(k));
    record.start = now();
    running_kernel = static_cast<int64_t>(k);
    kernel_started.notify(sc_core::SC_ZERO_TIME);
  }
}

NeuronCore::NeuronCore(sc_core::sc_module_name name, uint32_t id_, const isa::Program& program_,
                       const isa::ArchConfig& arch_, isa::MemoryImage* memory_, EventSink& sink_,
                       MemorySystemModule& memory_system_, HostModule* host_)
    : sc_module(name),
      id(id_),
      program(program_),
      arch(arch_),
      memory(memory_),
      sink(sink_),
      memory_system(memory_system_),
      semaphores(program_.semaphores.size()),
      host(host_) {
  size_t dma_instructions = 0;
  for (isa::Engine e : isa::kAllEngines) {
    for (const auto& in : program.stream(e)) dma_instructions += isa::is_dma(in.opcode);
  }
  // Filled by the engines as they are built; never reallocated after (transfers point in).
  dma_plans.reserve(dma_instructions);
  memory_system.attach(CoreEndpoints{&program, 0, &semaphores, memory});
  for (isa::Engine e : isa::kAllEngines) {
    engines.push_back(
        std::make_unique<EngineModule>(std::string(isa::key_of(e)).c_str(), e, *this));
  }
  SC_THREAD(sequence);
}

std::string NeuronCore::deadlock_report() const {
  std::string out;
  for (const auto& eng : engines) {
    if (eng->finished()) continue;
    const auto& in = program.stream(eng->engine())[eng->next()];
    out += fmt::format("  {} stopped at instruction {} ({}{})", isa::name_of(eng->engine()),
                       eng->next(), isa::name_of(in.opcode),
                       in.label.empty() ? "" : fmt::format(" '{}'", in.label));
    if (const isa::SemaphoreWait* w = eng->blocked_on()) {
      out += fmt::format(": waits for semaphore {} ({}) to reach {}; it holds {}", w->semaphore,
                         program.semaphores[w->semaphore].name, w->value,
                         semaphores.value(w->semaphore));
    }
    out += "\n";
  }
  return out;
}

namespace {
bool g_simulated = false;
}

SimulationResult simulate(const isa::Program& program, const isa::ArchConfig& arch,
                          const std::vector<isa::MemoryImage*>& memories, EventSink& sink) {
  if (g_simulated) {
    throw std::logic_error("SystemC allows one simulation per process; run another process");
  }
  g_simulated = true;
  const auto cores = static_cast<uint32_t>(std::max<size_t>(1, memories.size()));
  size_t dma_instructions = 0;
  for (isa::Engine e : isa::kAllEngines) {
    for (const auto& in : program.stream(e)) dma_instructions += isa::is_dma(in.opcode);
  }
  MemorySystem memory_system(arch, cores, dma_instructions * cores);
  MemorySystemModule memory_module("memory", memory_system, sink);
  std::unique_ptr<HostModule> host;
  if (!program.host_ops.empty()) {
    host = std::make_unique<HostModule>("host", program, arch, cores, sink);
  }
  std::vector<std::unique_ptr<NeuronCore>> nc;
  for (uint32_t c = 0; c < cores; ++c) {
    nc.push_back(std::make_unique<NeuronCore>(fmt::format("nc{}", c).c_str(), c, program, arch,
                                              memories.empty() ? nullptr : memories[c], sink,
                                              memory_module, host.get()));
  }
  sc_core::sc_start();  // returns when no event is left: every stream done, or a deadlock
  restore_sanitizer_stack_bounds();
  SimulationResult result;
  result.end_time = now();
  for (const auto& core : nc) {
    const std::string report = core->deadlock_report();
    if (!report.empty() && cores > 1) result.deadlock += fmt::format(" core {}:\n", core->id);
    result.deadlock += report;
  }
  result.completed = result.deadlock.empty() && memory_system.incomplete() == 0 &&
                     (host == nullptr || host->finished());
  result.cores = cores;
  result.hbm = memory_system.hbm_counters();
  result.flow_memory_model = memory_system.flow_model();
  result.memory_system_events = memory_system.events_processed();
  result.hbm_stacks = memory_system.hbm().stacks();
  result.hbm_stack_peak_bytes_per_ns = memory_system.hbm().stack_peak_bytes_per_ns();
  for (uint32_t c = 0; c < cores; ++c) {
    Picoseconds busy;
    for (uint32_t e = 0; e < arch.dma_engines; ++e) busy = busy + memory_system.engine_busy(c, e);
    result.dma_engine_busy.push_back(busy);
  }
  return result;
}

SimulationResult simulate(const isa::Program& program, const isa::ArchConfig& arch,
                          isa::MemoryImage* memory, EventSink& sink) {
  return simulate(program, arch, std::vector<isa::MemoryImage*>{memory}, sink);
}

}  // namespace trnsim::models
