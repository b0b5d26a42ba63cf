// DMA micro-benchmarks: {"kernel": "dma", ...} workloads that only move data, to measure the
// memory system (docs/workload-format.md, "DMA micro-benchmarks").
#pragma once

#include <string>
#include <vector>

#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

// The benchmark's parameters, all bounded (reported in stats.json under "choices").
struct DmaBenchmark {
  std::string direction = "hbm_to_sbuf";  // hbm_to_sbuf, sbuf_to_hbm, sbuf_to_sbuf,
                                          // sbuf_to_psum, hbm_to_hbm
  std::string pattern = "contiguous";     // contiguous, strided, random
  uint64_t bytes_per_partition = 4096;    // per transfer
  uint32_t partitions = 128;              // per transfer: DMA engines = ceil(partitions / 8)
  uint64_t total_bytes = 8ULL << 20;      // over all transfers (rounded up to whole transfers)
  uint32_t queues = 1;                    // transfers go round-robin over this many DMA queues
  uint64_t run_bytes = 64;                // strided: contiguous bytes per run in HBM
  uint64_t stride_bytes = 256;            // strided: distance between runs in HBM
  bool transpose = false;                 // through the DMA transpose unit
  bool dge = false;                       // hardware-generated descriptors (trn2)
};

// Keys a dma workload may have besides the common ones.
const std::vector<std::string>& dma_workload_keys();
DmaBenchmark parse_dma_benchmark(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_dma(const Workload& w, const config::ArchConfig& arch, bool functional);

}  // namespace trnsim::workloads
