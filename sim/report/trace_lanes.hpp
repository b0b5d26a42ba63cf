// The lanes of a run's timeline, named as trace.json names its threads (and so as the Neuron
// profiler names them): with a host model, a Host process with `framework` and `runtime`
// lanes; per NeuronCore a process with a Kernels lane, a lane per engine and one per DMA queue.
// report.html shows the same lanes with the same names; the report test checks them against
// trace.json's thread_name metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"

namespace trnsim::sim {

struct TraceLane {
  int pid = 0;  // trace.json's process id
  int tid = 0;  // and thread id
  std::string process;
  std::string name;
};

// Every lane, host lanes first, then per core: Kernels, the engines (kAllEngines order),
// the DMA queues (program order). TimelineLanes gives a record's position in this list.
std::vector<TraceLane> trace_lanes(const isa::Program& program, const config::ArchConfig& arch,
                                   uint32_t cores);

// Positions in trace_lanes()'s list, without building it.
class TimelineLanes {
 public:
  TimelineLanes(const isa::Program& program, uint32_t cores);
  uint32_t framework() const { return 0; }
  uint32_t runtime() const { return 1; }
  uint32_t kernels(uint32_t core) const { return core_base(core); }
  uint32_t engine(uint32_t core, Engine e) const {
    return core_base(core) + 1 + static_cast<uint32_t>(index_of(e));
  }
  uint32_t queue(uint32_t core, uint16_t q) const { return core_base(core) + 1 + kEngineCount + q; }
  uint32_t count() const { return core_base(cores_); }

 private:
  uint32_t core_base(uint32_t core) const { return host_lanes_ + core * per_core_; }
  uint32_t host_lanes_;
  uint32_t per_core_;
  uint32_t cores_;
};

}  // namespace trnsim::sim
