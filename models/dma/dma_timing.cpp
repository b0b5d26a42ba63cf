#include "models/dma/dma_timing.hpp"

#include <algorithm>
#include <numeric>

namespace trnsim::models {

DmaPlan plan_transfer(const isa::Instruction& dma, const isa::ArchConfig& arch) {
  const auto& src = dma.src[0];
  const auto& dst = dma.dst;
  DmaPlan plan;
  plan.bytes = dst.bytes();
  const uint32_t parts = dst.partitions;
  plan.engines = arch.dma_engines_for(parts);
  plan.partitions_per_engine = (parts + plan.engines - 1) / plan.engines;
  // A descriptor moves one run that is contiguous on both sides.
  const uint64_t run = std::gcd(src.contiguous_run_elements(), dst.contiguous_run_elements());
  const uint64_t runs_per_partition = dst.free_elements() / run;
  plan.run_bytes = run * isa::size_of(dst.dtype);
  plan.descriptors = runs_per_partition * parts;
  double bytes_per_ns = arch.dma_engine_bytes_per_ns;
  if (dma.opcode == isa::Opcode::dma_transpose) {
    bytes_per_ns *= src.memory == isa::Memory::hbm ? arch.dma_transpose_hbm_fraction
                                                   : arch.dma_transpose_sbuf_fraction;
  }
  const double per_descriptor_ns =
      arch.dma_descriptor_overhead_ns + static_cast<double>(plan.run_bytes) / bytes_per_ns;
  plan.engine_time = from_ns(per_descriptor_ns * static_cast<double>(runs_per_partition) *
                             plan.partitions_per_engine);
  plan.hbm_bytes = (src.memory == isa::Memory::hbm ? plan.bytes : 0) +
                   (dst.memory == isa::Memory::hbm ? plan.bytes : 0);
  return plan;
}

DmaEngineSet::DmaEngineSet(const isa::ArchConfig& arch)
    : free_at_(arch.dma_engines),
      order_(arch.dma_engines),
      start_latency_(from_ns(arch.dma_start_latency_ns)) {}

DmaTiming DmaEngineSet::schedule(const DmaPlan& plan, Picoseconds issued, HbmModel& hbm) {
  std::iota(order_.begin(), order_.end(), 0u);
  std::stable_sort(order_.begin(), order_.end(),
                   [this](uint32_t a, uint32_t b) { return free_at_[a] < free_at_[b]; });
  const Picoseconds ready = issued + start_latency_;
  Picoseconds start(INT64_MAX);
  Picoseconds data_end = ready;
  for (uint32_t i = 0; i < plan.engines; ++i) {
    const Picoseconds s = max(ready, free_at_[order_[i]]);
    start = s < start ? s : start;
    data_end = max(data_end, s + plan.engine_time);
  }
  Picoseconds end = data_end;
  Picoseconds hbm_end;
  if (plan.hbm_bytes > 0) {
    hbm_end = hbm.reserve(start, plan.hbm_bytes);
    data_end = max(data_end, hbm_end);
    end = data_end + hbm.latency();
  }
  // Each engine is free once its own descriptors are done; while HBM holds the transfer back,
  // its engines wait for the data.
  for (uint32_t i = 0; i < plan.engines; ++i) {
    const uint32_t e = order_[i];
    free_at_[e] = max(max(ready, free_at_[e]) + plan.engine_time, hbm_end);
  }
  return DmaTiming{start, end};
}

}  // namespace trnsim::models
