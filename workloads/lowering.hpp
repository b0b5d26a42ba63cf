// Lowering: a Workload becomes the isa::Program of one kernel launch, with its inputs, the
// reference outputs to check against, and the choices the lowering made (a plain struct of
// named, bounded parameters per kernel, so that an autotuner can search them later).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "isa/arch.hpp"
#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "workloads/workload.hpp"

namespace trnsim::workloads {

// A tensor on the host: values already representable in `dtype`.
struct HostTensor {
  std::string name;
  isa::DType dtype = isa::DType::fp32;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// The relative error of one rounding to `dt`, round-to-nearest-even: half the spacing of its
// values at 1 (2^-24 for fp32, 2^-8 for bf16, 2^-11 for fp16, 2^-4 for fp8_e4m3, 2^-3 for
// fp8_e5m2). Kernels size their tolerances from it. Floating-point dtypes only.
double rounding_unit(isa::DType dt);

struct LoweredKernel {
  isa::Program program;
  std::vector<HostTensor> inputs;    // empty when lowered for timing only
  std::vector<HostTensor> expected;  // reference outputs (same names as the outputs)
  Tolerance tolerance;
  nlohmann::json choices;    // the lowering parameters used
  uint64_t model_flops = 0;  // FLOPs the operation needs, independent of lowering
  bool write_npy = false;    // graph workloads: outputs are written as <out>/<name>.npy
};

// Writes the kernel's inputs into HBM at their tensors' addresses.
void load_inputs(const LoweredKernel& k, isa::MemoryImage& memory);

// The functional check: every output element against the reference, within
// atol + rtol * |reference|. A NaN or infinity where the reference is finite is a mismatch.
struct CheckResult {
  enum class Status { pass, fail, skipped } status = Status::skipped;
  double max_abs_error = 0;
  double max_rel_error = 0;
  uint64_t elements = 0;
  uint64_t mismatches = 0;
  Tolerance tolerance;
};
CheckResult check_outputs(const LoweredKernel& k, const isa::MemoryImage& memory);
// The values of HBM tensor `name` of the kernel's program.
std::vector<float> read_tensor(const LoweredKernel& k, const isa::MemoryImage& memory,
                               const std::string& name);

// Functional mode holds the simulated HBM image of every core and float copies of the inputs
// and reference outputs on the host. Lowering refuses a functional kernel whose HBM tensors
// (over all its cores) exceed this, before allocating anything, and suggests --timing-only.
// Assumption: keeps a functional run within a few GiB of host memory; not a hardware figure.
constexpr uint64_t kMaxFunctionalHbmBytes = 1ULL << 30;
// "" when `hbm_bytes` of tensors may run functionally, else why not (for the caller's error).
std::string functional_size_problem(uint64_t hbm_bytes);

// Throws WorkloadError (naming the workload's field) when the workload cannot be lowered for
// `arch`, e.g. a row that does not fit SBUF, or a functional run too large for host memory.
LoweredKernel lower(const Workload& w, const isa::ArchConfig& arch, bool functional);

// Deterministic inputs from a seed: the same on every platform and compiler (the standard
// library's distributions are not).
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t next();   // splitmix64
  double uniform();  // [0, 1)
  double normal();   // Box-Muller
 private:
  uint64_t state_;
};

}  // namespace trnsim::workloads
