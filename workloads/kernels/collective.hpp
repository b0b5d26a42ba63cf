// A collective between the run's cores as a library kernel, for sweeps over sizes and cores
// (docs/chip.md, "Collectives in a program"):
//
//   {"kernel": "collective", "op": "all_reduce", "bytes": 4194304, "cores": 4, "dtype": "fp32",
//    "reduce": "add"}
//
// `bytes` is nccom-test's size (all_gather's output, the input of the other ops). Each core
// holds x (its input, drawn with seed + core) and y (its output); SyncE triggers one collective
// of x into y and waits for its update. The check compares every core's y with a host
// reference computed from every core's x.
#pragma once

#include <string>
#include <vector>

#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

LoweredKernel lower_collective(const Workload& w, const config::ArchConfig& arch, bool functional);

// What core `core` holds after the collective `function` (an .expect reference: all_reduce_add,
// all_gather, reduce_scatter_max, all_to_all, permute, ...) over `each` core's flattened input,
// reduced in fp32 in core order, as the simulated collective does.
std::vector<float> collective_reference(const std::string& function,
                                        const std::vector<std::vector<float>>& each, uint32_t core);

}  // namespace trnsim::workloads
