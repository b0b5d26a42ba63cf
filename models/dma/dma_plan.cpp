#include "models/dma/dma_plan.hpp"

#include <numeric>

namespace trnsim::models {

DmaPlan plan_transfer(const isa::Instruction& dma, const config::ArchConfig& arch) {
  const auto& src = dma.src[0].get();
  const auto& dst = dma.dst.get();
  DmaPlan plan;
  plan.bytes = dst.bytes();
  plan.partitions = dst.partitions;
  plan.engines = arch.dma_engines_for(plan.partitions);
  plan.partitions_per_engine = (plan.partitions + plan.engines - 1) / plan.engines;
  plan.first_engine = (dst.memory == isa::Memory::hbm ? src.start_partition : dst.start_partition) /
                      arch.dma_partitions_per_engine % arch.dma_engines;
  // A descriptor moves one run that is contiguous on both sides. The transpose unit (the
  // dma_transpose opcode, or a dma_copy flagged to go through it) reorders the elements itself:
  // its descriptors follow the destination's runs.
  const bool transpose = dma.dma_transpose || dma.opcode == isa::Opcode::dma_transpose;
  plan.transpose = transpose;
  const uint64_t run = transpose
                           ? dst.contiguous_run_elements()
                           : std::gcd(src.contiguous_run_elements(), dst.contiguous_run_elements());
  plan.run_elements = run;
  plan.runs_per_partition = dst.free_elements() / run;
  plan.run_bytes = run * isa::size_of(dst.dtype);
  plan.descriptors = plan.runs_per_partition * plan.partitions;
  plan.reads_hbm = src.memory == isa::Memory::hbm;
  plan.writes_hbm = dst.memory == isa::Memory::hbm;
  plan.engine_bytes_per_ns = arch.dma_engine_bytes_per_ns;
  if (transpose) {
    plan.engine_bytes_per_ns *=
        plan.reads_hbm ? arch.dma_transpose_hbm_fraction : arch.dma_transpose_sbuf_fraction;
  }
  plan.engine_time = engine_time_for(plan, arch, plan.partitions_per_engine);
  plan.hbm_bytes = (plan.reads_hbm ? plan.bytes : 0) + (plan.writes_hbm ? plan.bytes : 0);
  return plan;
}

Picoseconds engine_time_for(const DmaPlan& plan, const config::ArchConfig& arch,
                            uint64_t partitions) {
  const double per_descriptor_ns = arch.dma_descriptor_overhead_ns +
                                   static_cast<double>(plan.run_bytes) / plan.engine_bytes_per_ns;
  return from_ns(per_descriptor_ns * static_cast<double>(plan.runs_per_partition) *
                 static_cast<double>(partitions));
}

uint64_t run_address(const isa::AccessPattern& ap, const DmaPlan& plan, uint64_t descriptor) {
  const uint64_t partition = descriptor / plan.runs_per_partition;
  const uint64_t run = descriptor % plan.runs_per_partition;
  const uint64_t es = isa::size_of(ap.dtype);
  // Element index of the run's first element within the partition row, through the pattern's
  // dimensions (innermost fastest).
  uint64_t e = run * plan.run_elements;
  int64_t offset = 0;
  for (int d = ap.ndims - 1; d >= 0; --d) {
    const uint64_t count = ap.dims[d].count;
    offset += static_cast<int64_t>(e % count) * ap.dims[d].stride;
    e /= count;
  }
  offset += static_cast<int64_t>(partition) * ap.partition_stride;
  return ap.offset + static_cast<uint64_t>(offset) * es;
}

}  // namespace trnsim::models
