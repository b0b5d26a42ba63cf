#include "models/chip/simulate.hpp"

#include <fmt/format.h>

#include <memory>

#include "models/systemc/host_module.hpp"
#include "models/systemc/memory_system_module.hpp"
#include "models/systemc/neuroncore_module.hpp"
#include "models/systemc/sanitizer.hpp"
#include "models/systemc/sc_time.hpp"

namespace trnsim::models {

namespace {
bool g_simulated = false;
}

SimulationResult simulate(const isa::Program& program, const config::ArchConfig& arch,
                          const std::vector<isa::MemoryImage*>& memories, EventSink& sink,
                          uint32_t chips) {
  const std::vector<const isa::Program*> programs(std::max<size_t>(1, memories.size()), &program);
  return simulate(programs, arch, memories, sink, chips);
}

SimulationResult simulate(const std::vector<const isa::Program*>& programs,
                          const config::ArchConfig& arch,
                          const std::vector<isa::MemoryImage*>& memories, EventSink& sink,
                          uint32_t chips) {
  if (programs.empty()) throw std::invalid_argument("simulate: no program");
  if (!memories.empty() && memories.size() != programs.size()) {
    throw std::invalid_argument("simulate: one memory image per program, or none");
  }
  const isa::Program& program = *programs[0];
  if (g_simulated) {
    throw std::logic_error("SystemC allows one simulation per process; run another process");
  }
  g_simulated = true;
  const auto cores = static_cast<uint32_t>(programs.size());
  size_t dma_instructions = 0, collective_instructions = 0;
  for (const isa::Program* p : programs) {
    for (Engine e : kAllEngines) {
      for (const auto& in : p->stream(e)) {
        dma_instructions += isa::is_dma(in.opcode);
        collective_instructions += isa::is_collective(in.opcode);
      }
    }
  }
  // A streamed program's DMAs are not there yet: its transfer table (ids are reused, so it holds
  // what is in flight) starts at up to 65,536 and grows past that if need be.
  if (program.feed != nullptr) {
    dma_instructions = std::min<size_t>(program.feed->expected_instructions, 65536);
  }
  const std::unique_ptr<MemoryModel> memory_model =
      make_memory_model(arch, cores, dma_instructions);
  MemoryModel& memory_system = *memory_model;
  MemorySystemModule memory_module("memory", memory_system, sink);
  std::unique_ptr<HostModule> host;
  if (!program.host_ops.empty()) {
    host = std::make_unique<HostModule>("host", program, arch, cores, sink);
  }
  // Only a program with collectives has the rendezvous: no cost for the others.
  std::unique_ptr<CollectiveModule> collectives;
  // A streamed program's instructions are not there yet: its lowering says.
  if (collective_instructions > 0 || (program.feed != nullptr && program.feed->collectives)) {
    collectives = std::make_unique<CollectiveModule>("collectives", arch, cores, chips, sink);
    collectives->attach_memory(memory_module);
  }
  std::vector<std::unique_ptr<NeuronCore>> nc;
  for (uint32_t c = 0; c < cores; ++c) {
    nc.push_back(std::make_unique<NeuronCore>(fmt::format("nc{}", c).c_str(), c, *programs[c], arch,
                                              memories.empty() ? nullptr : memories[c], sink,
                                              memory_module, host.get(), collectives.get()));
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
  if (collectives != nullptr) {
    result.error = collectives->error();
    if (result.error.empty()) result.deadlock += collectives->deadlock_report();
  }
  result.completed = result.error.empty() && result.deadlock.empty() &&
                     memory_system.incomplete() == 0 && (host == nullptr || host->finished());
  result.cores = cores;
  result.hbm = memory_system.hbm_counters();
  result.flow_memory_model = memory_system.name() == "flow";
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

SimulationResult simulate(const isa::Program& program, const config::ArchConfig& arch,
                          isa::MemoryImage* memory, EventSink& sink) {
  return simulate(program, arch, std::vector<isa::MemoryImage*>{memory}, sink);
}

}  // namespace trnsim::models
