#include "models/dma/memory_model.hpp"

#include <algorithm>

#include "models/dma/detailed_model.hpp"
#include "models/dma/flow_model.hpp"

namespace trnsim::models {

MemoryModel::MemoryModel(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers)
    : arch_(arch),
      cores_(cores == 0 ? 1 : cores),
      // Nothing a submit at t causes happens before t + start latency + setup.
      lookahead_(max(from_ns(arch.dma_start_latency_ns) + from_ns(arch.dma_transfer_setup_ns),
                     Picoseconds(1))),
      hbm_(arch, (cores_ + arch.hbm.cores_per_stack - 1) / std::max(1u, arch.hbm.cores_per_stack)),
      book_(arch, cores_, max_transfers),
      setup_free_(static_cast<size_t>(cores_) * arch.dma_engines),
      start_latency_(from_ns(arch.dma_start_latency_ns)),
      setup_(from_ns(arch.dma_transfer_setup_ns)) {}

uint32_t MemoryModel::submit(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan,
                             uint32_t index, Picoseconds issued) {
  const uint32_t id = book_.add(core, dma, plan, index, issued);
  // Each engine the transfer uses sets it up after its previous setup; the data moves once
  // every engine has (the parts of one transfer start together).
  const Picoseconds arrives = issued + start_latency_;
  Picoseconds ready = arrives + setup_;
  for (uint32_t i = 0; i < plan.engines; ++i) {
    Picoseconds& free =
        setup_free_[core * arch_.dma_engines + (plan.first_engine + i) % arch_.dma_engines];
    free = max(arrives, free) + setup_;
    ready = max(ready, free);
  }
  on_submit(id, ready);
  return id;
}

std::unique_ptr<MemoryModel> make_memory_model(const config::ArchConfig& arch, uint32_t cores,
                                               size_t max_transfers) {
  if (arch.dma_flow_model) return std::make_unique<FlowMemoryModel>(arch, cores, max_transfers);
  return std::make_unique<DetailedMemoryModel>(arch, cores, max_transfers);
}

}  // namespace trnsim::models
