// The kernel library's registry: one row per kernel of the kernel form of workload.json
// ({"kernel": NAME, "shape": [...], "dtype": ..., options..., "params": {...}}). The workload
// loader checks keys, shape rank and dtype class from the row; the row's lowering checks the
// kernel's own options (Workload::options) and lowering choices (Workload::params).
#pragma once

#include <string>
#include <vector>

#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::workloads {

struct KernelEntry {
  std::string name;
  // Top-level keys of this kernel besides name, kernel, seed, cores, shape, dtype, params:
  // kept in Workload::options for the lowering to check (e.g. "variant", "strategy", "eps").
  std::vector<std::string> options;
  size_t shape_rank = 2;   // 0: the kernel takes no shape (its options say how much)
  std::string shape_help;  // "[rows, hidden]": what the shape's dimensions are
  bool float_only = true;  // integer dtypes are refused
  LoweredKernel (*lower)(const Workload&, const config::ArchConfig&, bool functional) = nullptr;
  double default_eps = 1e-6;  // Workload::eps when the file gives none (kernels taking "eps")
  // The lowering's choices as named, bounded parameters (param_space.hpp), for the workload's
  // shape and options; nullptr: none (a micro-benchmark's keys define what it measures).
  ParamSpace (*space)(const Workload&, const config::ArchConfig&) = nullptr;
};

// Every kernel of the kernel form except the DMA micro-benchmarks ("dma"), which take their
// own keys (workloads/dma.hpp).
const std::vector<KernelEntry>& kernel_table();
const KernelEntry* find_kernel(const std::string& name);

}  // namespace trnsim::workloads
