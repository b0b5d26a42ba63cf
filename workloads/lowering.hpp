// Lowering: a Workload becomes the isa::Program of one kernel launch, with its inputs, the
// reference outputs to check against, and the choices the lowering made (a plain struct of
// named, bounded parameters per kernel, so that an autotuner can search them later).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/semantics.hpp"
#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"
#include "workloads/workload.hpp"

namespace trnsim::workloads {

// Why `cores` cannot spread over `chips` of this arch ("" when they can): at most the
// instance's chips, the same number of cores on each, at most chip_cores per chip.
std::string chips_error(uint32_t cores, uint32_t chips, const config::ArchConfig& arch);

// Writes the kernel's inputs into HBM at their tensors' addresses.
// With per-core inputs (LoweredKernel::core_inputs), core `core`'s.
void load_inputs(const LoweredKernel& k, isa::MemoryImage& memory, uint32_t core = 0);

// The functional check: every output element against the reference, within
// atol + rtol * |reference|. A NaN or infinity where the reference is finite is a mismatch.
// The relative error is taken only where the tolerance is mostly relative, |reference| >=
// atol / rtol (rel_error_floor): near zero an element passes on atol, and its relative error
// (up to millions where the reference is 1e-6) said nothing but read as a contradiction of PASS.
struct CheckResult {
  enum class Status { pass, fail, skipped } status = Status::skipped;
  double max_abs_error = 0;
  double max_rel_error = 0;         // over the elements with |reference| >= rel_error_floor
  double rel_error_floor = 0;       // atol / rtol; with rtol 0, the smallest positive |reference|
  uint64_t rel_error_elements = 0;  // elements the relative error is taken over
  uint64_t elements = 0;
  uint64_t mismatches = 0;
  Tolerance tolerance;
};
// With per-core references (LoweredKernel::core_expected), against core `core`'s.
CheckResult check_outputs(const LoweredKernel& k, const isa::MemoryImage& memory,
                          uint32_t core = 0);
// The values of HBM tensor `name` of the kernel's program.
std::vector<float> read_tensor(const LoweredKernel& k, const isa::MemoryImage& memory,
                               const std::string& name);

// Throws WorkloadError (naming the workload's field) when the workload cannot be lowered for
// `arch`, e.g. a row that does not fit SBUF, or a functional run too large for host memory.
LoweredKernel lower(const Workload& w, const config::ArchConfig& arch, bool functional);

// The lowering's choices for `w` on `arch` as named, bounded parameters (param_space.hpp): a
// kernel's, a graph's, or none (an empty space: the DMA and engine_stream micro-benchmarks,
// whose keys define what they measure). Throws WorkloadError for an option out of range.
ParamSpace space_of(const Workload& w, const config::ArchConfig& arch);

}  // namespace trnsim::workloads
