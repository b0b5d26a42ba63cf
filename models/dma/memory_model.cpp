#include "models/dma/memory_model.hpp"

#include <algorithm>

#include "models/dma/detailed_model.hpp"
#include "models/dma/flow_model.hpp"

namespace trnsim::models {

MemoryModel::MemoryModel(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers)
    : arch_(arch),
      cores_(cores == 0 ? 1 : cores),
      lookahead_(max(from_ns(arch.dma_start_latency_ns), Picoseconds(1))),
      hbm_(arch, (cores_ + arch.hbm.cores_per_stack - 1) / std::max(1u, arch.hbm.cores_per_stack)),
      book_(arch, cores_, max_transfers) {}

uint32_t MemoryModel::submit(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan,
                             uint32_t index, Picoseconds issued) {
  const uint32_t id = book_.add(core, dma, plan, index, issued);
  on_submit(id, issued);
  return id;
}

std::unique_ptr<MemoryModel> make_memory_model(const config::ArchConfig& arch, uint32_t cores,
                                               size_t max_transfers) {
  if (arch.dma_flow_model) return std::make_unique<FlowMemoryModel>(arch, cores, max_transfers);
  return std::make_unique<DetailedMemoryModel>(arch, cores, max_transfers);
}

}  // namespace trnsim::models
