// What a kernel lowering takes and gives: the kernel form of a workload (Workload, parsed by
// workloads/workload.hpp) becomes the isa::Program of one kernel launch (LoweredKernel), with
// its inputs, the reference outputs to check against, and the choices the lowering made (a
// plain struct of named, bounded parameters per kernel, so that an autotuner can search them).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/host_threads.hpp"
#include "base/names.hpp"
#include "isa/dtype.hpp"
#include "isa/program.hpp"

namespace trnsim::workloads {

struct Graph;

// Bad input: names the file, the place in it (JSON pointer or line:column) and what was
// expected. The CLI prints what() and exits with code 2.
class WorkloadError : public std::runtime_error {
 public:
  WorkloadError(const std::string& file, const std::string& where, const std::string& what);
};

// Workload::stream_from: never, and trnsim's default (--stream-from): a program of a million
// instructions or more is streamed. Held whole, a million take about 300 MB; streamed, a
// matmul runs about 1.3x slower (its lowering runs twice; docs/performance.md), so smaller
// programs are held whole.
inline constexpr uint64_t kNeverStreamed = UINT64_MAX;
inline constexpr uint64_t kStreamFromDefault = 1000000;

struct Workload {
  std::string file;               // as given, for messages
  std::string name;               // "name" in the file, or the file's stem
  std::string kernel;             // "rmsnorm", ...
  std::string variant = "fused";  // rmsnorm: "fused"
  std::vector<int64_t> shape;
  isa::DType dtype = isa::DType::bf16;
  double eps = 1e-6;  // the kernel's default (KernelEntry::default_eps) unless the file gives one
  uint64_t seed = 0;
  // NeuronCores that each run the kernel on their own tensors, sharing the memory system
  // (HBM stacks are shared as the preset says). 1 by default.
  uint32_t cores = 1;
  // Chips the cores spread over, cores / chips on each (docs/chip.md): core g is core
  // g % (cores / chips) of chip g / (cores / chips), for the collectives' fabric. 1 by default.
  uint32_t chips = 1;
  // The kernel's own top-level keys (KernelEntry::options, e.g. "strategy"), checked by its
  // lowering; "variant" and "eps" are parsed into the fields above.
  nlohmann::json options = nlohmann::json::object();
  nlohmann::json params = nlohmann::json::object();  // the lowering's choices, checked there
  // The graph form (kernel "graph", variant = its mode); null for the kernel form.
  std::shared_ptr<const Graph> graph;
  // A lowering that can stream its program (isa::StreamFeed: lowered while the run reads it,
  // and freed behind it) does so when the program comes to at least this many instructions.
  // Set by a run that reads the program as it comes (trnsim's run on one core, --stream-from);
  // kNeverStreamed otherwise. Lowerings that cannot stream ignore it.
  uint64_t stream_from = kNeverStreamed;
};

using base::closest_name;

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
  // Per core, when the cores' inputs differ (a program with collectives, `.cores N`): core c
  // loads core_inputs[c] and is checked against core_expected[c]; empty: every core takes
  // inputs and expected.
  std::vector<std::vector<HostTensor>> core_inputs;
  std::vector<std::vector<HostTensor>> core_expected;
  Tolerance tolerance;
  nlohmann::json choices;    // the lowering parameters used
  uint64_t model_flops = 0;  // FLOPs the operation needs, independent of lowering
  bool write_npy = false;    // graph workloads: outputs are written as <out>/<name>.npy
};

// Functional mode holds the simulated HBM image of every core and float copies of the inputs
// and reference outputs on the host. Lowering refuses a functional kernel whose HBM tensors
// (over all its cores) exceed this, before allocating anything, and suggests --timing-only.
// Assumption: keeps a functional run within a few GiB of host memory; not a hardware figure.
constexpr uint64_t kMaxFunctionalHbmBytes = 1ULL << 30;
// "" when `hbm_bytes` of tensors may run functionally, else why not (for the caller's error).
std::string functional_size_problem(uint64_t hbm_bytes);

// Deterministic inputs from a seed: the same on every platform and compiler (the standard
// library's distributions are not).
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t next();   // splitmix64
  double uniform();  // [0, 1)
  double normal();   // Box-Muller

  // out[i] = value(normal()) for i in [0, count): the same values, and the same state after,
  // as `count` calls of normal() in turn, computed on base::host_threads() threads. splitmix64
  // is a counter (each next() adds a constant to the state), so the i-th normal starts from a
  // state known in advance; the log and cos of Box-Muller are most of an input's cost.
  template <typename Value>
  void fill_normal(float* out, size_t count, const Value& value) {
    const uint64_t start = state_;
    base::parallel_chunks(count, kFillChunk, [&](size_t begin, size_t end) {
      SeededRandom r(start + 2 * kIncrement * begin);  // normal() takes two next()
      for (size_t i = begin; i < end; ++i) out[i] = value(r.normal());
    });
    state_ = start + 2 * kIncrement * count;
  }

 private:
  static constexpr uint64_t kIncrement = 0x9e3779b97f4a7c15ULL;  // splitmix64's step
  static constexpr size_t kFillChunk = 1 << 16;
  uint64_t state_;
};

}  // namespace trnsim::workloads
