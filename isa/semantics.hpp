// What each instruction computes: the functional half of the model, in plain C++ with Eigen.
// Values are computed in fp32 and rounded to the destination's dtype when written, as the
// engines do (bf16 round-to-nearest-even).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "base/large_page_allocator.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"

namespace trnsim::isa {

// The contents of one NeuronCore's SBUF and PSUM and of the program's HBM tensors.
struct MemoryImage {
  uint32_t partitions = 0;
  uint64_t sbuf_partition_bytes = 0;
  uint64_t psum_partition_bytes = 0;
  // Zero bytes from the system: a page of SBUF or HBM the program never touches is never
  // faulted in (base::ZeroedAllocator). Sized once: growing one again after shrinking it would
  // show old bytes where std::vector would give zeros.
  using Bytes = std::vector<uint8_t, base::ZeroedAllocator<uint8_t>>;
  Bytes sbuf;
  Bytes psum;
  Bytes hbm;
  // The physical cores of one logical core (LNC=2) share one HBM address space: an image made
  // with share_hbm(owner) reads and writes owner's hbm (its own stays empty).
  Bytes* shared_hbm = nullptr;

  MemoryImage(const config::ArchConfig& arch, uint64_t dram_bytes);
  void share_hbm(MemoryImage& owner);
  // The HBM bytes this image reads and writes: its own, or the owner's when shared.
  Bytes& hbm_bytes() { return shared_hbm != nullptr ? *shared_hbm : hbm; }
  const Bytes& hbm_bytes() const { return shared_hbm != nullptr ? *shared_hbm : hbm; }
  // Address of element 0 of partition row `p` (0-based within the pattern).
  uint8_t* row(const AccessPattern& ap, uint32_t p);
  const uint8_t* row(const AccessPattern& ap, uint32_t p) const;
};

// partitions x free elements, row-major, one row per partition.
using Tile = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Tile read(const MemoryImage& mem, const AccessPattern& ap);
// Writes `t` (rounded to ap.dtype) through the access pattern.
void write(MemoryImage& mem, const AccessPattern& ap, const Tile& t);

// Applies the instruction's effect to `mem`. The instruction must have passed validate().
void execute(const Instruction& in, MemoryImage& mem);

}  // namespace trnsim::isa
