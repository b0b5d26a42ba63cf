// How one DMA transfer is spread over the core's DMA engines (D1), plain C++:
// a transfer of P partitions goes to ceil(P / partitions_per_engine) engines from the engine of
// its first partition; each engine's part is a list of descriptors, one per element run that is
// contiguous on both sides; an engine pays dma_descriptor_overhead_ns per descriptor and moves
// the bytes at dma_engine_bytes_per_ns (times the transpose fraction through the DMA transpose
// unit). Both memory models (models/dma/memory_model.hpp) move transfers planned here.
#pragma once

#include <cstdint>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"

namespace trnsim::models {

struct DmaPlan {
  uint64_t bytes = 0;
  uint32_t engines = 0;       // DMA engines that take part: the semaphore rises by this
  uint32_t first_engine = 0;  // the engine of the first partition
  uint32_t partitions = 0;
  uint32_t partitions_per_engine = 0;
  uint64_t run_elements = 0;  // elements of one descriptor
  uint64_t run_bytes = 0;     // bytes of one element run (one descriptor)
  uint64_t runs_per_partition = 0;
  uint64_t descriptors = 0;        // over all engines
  double engine_bytes_per_ns = 0;  // the engines' rate for this transfer
  Picoseconds engine_time;         // busy time of the most loaded engine, with no contention
  uint64_t hbm_bytes = 0;          // bytes read from plus written to HBM
  bool reads_hbm = false;
  bool writes_hbm = false;
  bool transpose = false;  // through the DMA transpose unit (dma_transpose, or a flagged copy)
};

DmaPlan plan_transfer(const isa::Instruction& dma, const config::ArchConfig& arch);

// Busy time of a DMA engine that moves `partitions` partitions of the transfer alone: a
// descriptor overhead plus its bytes at the transfer's engine rate, per descriptor.
Picoseconds engine_time_for(const DmaPlan& plan, const config::ArchConfig& arch,
                            uint64_t partitions);

// Byte address in HBM of byte `offset_in_run` of descriptor `descriptor` (partition-major) of
// the HBM-side access pattern `ap`.
uint64_t run_address(const isa::AccessPattern& ap, const DmaPlan& plan, uint64_t descriptor);

}  // namespace trnsim::models
