#include "models/systemc/neuroncore_module.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "models/neuroncore/cost.hpp"

namespace trnsim::models {

EngineModule::EngineModule(sc_core::sc_module_name name, Engine engine, NeuronCore& core)
    : sc_module(name),
      engine_(engine),
      core_(core),
      pipelined_(core.arch.result_latency_cycles[index_of(engine)] > 0),
      throttle_(core.arch) {
  SC_THREAD(run);
  // The functional model runs on this thread: Eigen's matrix products put their blocking
  // buffers on the stack (up to EIGEN_STACK_ALLOCATION_LIMIT, 128 KiB), more than SystemC's
  // default coroutine stack holds once a matmul contracts over 256 partitions (it crashed).
  // The stack is reserved, not committed: untouched pages cost nothing.
  set_stack_size(kEngineStackBytes);  // of the process just declared: run
  SC_THREAD(writeback);               // applies semaphore updates only: the default stack
}

bool EngineModule::finished() const {
  // A streamed program's stream may end for this engine while the lowering goes on.
  if (core_.program.feed != nullptr) return streamed_done_;
  return next_ == core_.program.stream(engine_).size();
}

void EngineModule::run() {
  if (core_.program.feed != nullptr) {
    run_streamed();
    return;
  }
  const auto& stream = core_.program.stream(engine_);
  for (size_t k = 0; k < core_.program.kernel_count(); ++k) {
    while (core_.running_kernel < static_cast<int64_t>(k)) wait(core_.kernel_started);
    const auto [begin, end] = core_.program.kernel_range(k, engine_);
    for (next_ = begin; next_ < end; ++next_) step(stream[next_], static_cast<uint32_t>(k));
    while (!pending_updates_.empty()) wait(updates_drained_);
    ++core_.engines_finished;
    core_.engine_finished.notify(sc_core::SC_ZERO_TIME);
  }
}

// A streamed program (one kernel): each instruction is asked for as the engine reaches it, and
// the stream is told every few thousand instructions how far back no one needs it any more:
// this engine has issued everything below next_, and what it holds beyond that (updates due
// later, transfers in flight) keeps its instruction.
void EngineModule::run_streamed() {
  const isa::Program& program = core_.program;
  assert(program.kernels.empty());  // a streamed program is one kernel (isa::StreamFeed)
  const auto& stream = program.stream(engine_);
  constexpr size_t kReleaseEvery = 4096;
  while (core_.running_kernel < 0) wait(core_.kernel_started);
  for (next_ = 0; program.has(engine_, next_); ++next_) {
    if (next_ % kReleaseEvery == 0 && next_ > 0) {
      size_t keep = core_.in_flight.oldest(engine_, next_);
      if (!pending_update_index_.empty())
        keep = std::min<size_t>(keep, pending_update_index_.front());
      program.passed(engine_, keep);
    }
    step(stream[next_], 0);
  }
  streamed_done_ = true;
  while (!pending_updates_.empty()) wait(updates_drained_);
  ++core_.engines_finished;
  core_.engine_finished.notify(sc_core::SC_ZERO_TIME);
}

void EngineModule::step(const isa::Instruction& in, uint32_t kernel) {
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
  // The instruction's cost, worked out as it issues (no table sized by the stream).
  const Cycles cycles = instruction_cycles(in, core_.arch);
  const Picoseconds time = instruction_time(cycles, in, core_.arch);
  const Picoseconds latency = result_latency(in, core_.arch);
  // The tracker counts the instructions it has seen: this one must be at its stream position
  // (kernels are consecutive ranges of the stream, stepped in order; isa::validate checks it).
  assert(!pipelined_ || producers_.count() == next_);
  const int32_t producer = pipelined_ ? producers_.next(in) : -1;
  // Pipeline constraints: the results this instruction reads from its own engine, and the wake
  // latency of a wait met by the semaphore's last update (an update long before, when the value
  // had already reached the target, adds nothing).
  Picoseconds earliest = now();
  if (producer >= 0) {
    earliest = max(earliest, results_[producer % kProducerWindow] +
                                 wake_latency(SemaphoreSource::same_engine, core_.arch));
  }
  for (const isa::SemaphoreWait& w : in.waits) {
    const SemaphoreFile::LastUpdate& u = core_.semaphores.last_update(w.semaphore);
    if (u.before >= w.value) continue;
    const SemaphoreSource source =
        u.updater == SemaphoreFile::kDmaQueue
            ? SemaphoreSource::dma_queue
            : (u.updater == index_of(engine_) ? SemaphoreSource::same_engine
                                              : SemaphoreSource::other_engine);
    earliest = max(earliest, u.at + wake_latency(source, core_.arch));
  }
  if (earliest > now()) {
    r.pipeline_wait = earliest - now();
    wait(to_sc_time(r.pipeline_wait));
  }
  const uint32_t ports = ports_of(in, core_.arch);
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
  const Picoseconds busy =
      throttle_.enabled() && engine_ == Engine::tensor && !isa::is_dma(in.opcode)
          ? throttle_.busy_time(r.start, time)
          : time;
  wait(to_sc_time(busy));
  if (ports != 0) {
    core_.ports_held &= ~ports;
    // Only a waiting engine needs waking: no delta cycle per instruction otherwise.
    if (core_.port_waiters > 0) core_.ports_released.notify(sc_core::SC_ZERO_TIME);
  }
  if (isa::is_dma(in.opcode)) {
    if (core_.program.feed != nullptr) core_.in_flight.issued(engine_, r.index);
    core_.memory_system.submit(core_.id, in, plan_transfer(in, core_.arch), r.index);
  } else if (isa::is_collective(in.opcode)) {
    // Its updates fire on every rank when it ends (CollectiveModule), not on this engine.
    core_.collectives->trigger(core_.id, in);
    results_[next_ % kProducerWindow] = now();
    r.end = now();
    r.results = now();
    r.cycles = cycles;
    core_.sink.on_instruction(r);
    return;
  } else if (core_.memory != nullptr) {
    // Applied now, before the results are due: whoever reads them waits for the semaphore
    // update or for results_ below, both at the results' time.
    isa::execute(in, *core_.memory);
  }
  const Picoseconds results = now() + latency;
  results_[next_ % kProducerWindow] = results;
  if (latency.value == 0 || in.updates.empty()) {
    for (const isa::SemaphoreUpdate& u : in.updates) {
      core_.semaphores.apply(u, static_cast<int8_t>(index_of(engine_)));
    }
  } else {
    pending_updates_.emplace_back(results, &in);
    if (core_.program.feed != nullptr) pending_update_index_.push_back(r.index);
    update_pending_.notify(sc_core::SC_ZERO_TIME);
  }
  r.end = now();
  r.results = results;
  r.cycles = cycles;
  core_.sink.on_instruction(r);
}

void EngineModule::writeback() {
  for (;;) {
    while (pending_updates_.empty()) wait(update_pending_);
    const auto [at, in] = pending_updates_.front();
    if (at > now()) wait(to_sc_time(at - now()));
    for (const isa::SemaphoreUpdate& u : in->updates) {
      core_.semaphores.apply(u, static_cast<int8_t>(index_of(engine_)));
    }
    pending_updates_.pop_front();
    if (!pending_update_index_.empty()) pending_update_index_.pop_front();
    if (pending_updates_.empty()) updates_drained_.notify(sc_core::SC_ZERO_TIME);
  }
}

void NeuronCore::sequence() {
  const size_t kernels = program.kernel_count();
  auto drained = [&] {
    return engines_finished == kEngineCount && memory_system.outstanding(id) == 0 &&
           (collectives == nullptr || collectives->outstanding(id) == 0);
  };
  const Picoseconds setup(
      host == nullptr ? 0 : static_cast<int64_t>(std::llround(arch.host.kernel_setup_ns * 1000)));
  KernelRecord record;
  record.core = static_cast<int>(id);
  for (size_t k = 0; k <= kernels; ++k) {
    if (k > 0) {
      while (!drained()) {
        if (collectives != nullptr) {
          wait(engine_finished | memory_system.delivered() | collectives->ended());
        } else {
          wait(engine_finished | memory_system.delivered());
        }
      }
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
                       const config::ArchConfig& arch_, isa::MemoryImage* memory_, EventSink& sink_,
                       MemorySystemModule& memory_system_, HostModule* host_,
                       CollectiveModule* collectives_)
    : sc_module(name),
      id(id_),
      program(program_),
      arch(arch_),
      memory(memory_),
      sink(sink_),
      memory_system(memory_system_),
      semaphores(program_.semaphores.size()),
      host(host_),
      collectives(collectives_) {
  memory_system.attach(CoreEndpoints{&program, 0, &semaphores, memory,
                                     program.feed != nullptr ? &in_flight : nullptr});
  if (collectives != nullptr) collectives->attach(id, &semaphores, memory);
  for (Engine e : kAllEngines) {
    engines.push_back(std::make_unique<EngineModule>(std::string(key_of(e)).c_str(), e, *this));
  }
  SC_THREAD(sequence);
}

std::string NeuronCore::deadlock_report() const {
  std::string out;
  for (const auto& eng : engines) {
    if (eng->finished()) continue;
    const auto& stream = program.stream(eng->engine());
    if (eng->next() >= stream.size() || eng->next() < stream.released()) {
      out += fmt::format("  {} stopped at instruction {}\n", name_of(eng->engine()), eng->next());
      continue;
    }
    const auto& in = stream[eng->next()];
    out += fmt::format("  {} stopped at instruction {} ({}{})", name_of(eng->engine()), eng->next(),
                       isa::name_of(in.opcode),
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

}  // namespace trnsim::models
