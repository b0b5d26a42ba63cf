#include "sim/report/trace_lanes.hpp"

#include <fmt/format.h>

#include "isa/validate.hpp"
#include "sim/report/trace_writer.hpp"

namespace trnsim::sim {

// The ids and names here are TraceWriter's (sim/trace_writer.cpp writes them as it opens the
// trace); tests/integration/cli_report.cpp checks that the two agree.
std::vector<TraceLane> trace_lanes(const isa::Program& program, const config::ArchConfig& arch,
                                   uint32_t cores) {
  std::vector<TraceLane> lanes;
  const bool collectives = isa::has_collectives(program);
  if (!program.host_ops.empty()) {
    lanes.push_back({TraceWriter::kHostPid, TraceWriter::kFrameworkLane, "Host", "framework"});
    lanes.push_back({TraceWriter::kHostPid, TraceWriter::kRuntimeLane, "Host", "runtime"});
  }
  for (uint32_t core = 0; core < cores; ++core) {
    const int pid = TraceWriter::core_pid(core);
    const std::string process = fmt::format("NeuronCore {} ({}) {}", core, arch.name, program.name);
    lanes.push_back({pid, TraceWriter::kKernelLane, process, "Kernels"});
    for (Engine e : kAllEngines) {
      lanes.push_back({pid, TraceWriter::engine_lane(e), process, std::string(name_of(e))});
    }
    for (size_t q = 0; q < program.queues.size(); ++q) {
      lanes.push_back({pid, TraceWriter::queue_lane(static_cast<uint16_t>(q)), process,
                       "DMA " + program.queues[q].name});
    }
    // Last of the core's lanes, so that TimelineLanes' positions of the others stay.
    if (collectives) {
      lanes.push_back({pid, TraceWriter::kCollectiveLane, process, "Collectives"});
      lanes.push_back({pid, TraceWriter::kCollectiveDmaLane, process, "Collective DMA"});
    }
  }
  return lanes;
}

TimelineLanes::TimelineLanes(const isa::Program& program, uint32_t cores)
    : host_lanes_(program.host_ops.empty() ? 0 : 2),
      per_core_(1 + kEngineCount + static_cast<uint32_t>(program.queues.size()) +
                (isa::has_collectives(program) ? 2 : 0)),
      cores_(cores) {}

}  // namespace trnsim::sim
