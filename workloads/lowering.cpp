#include "workloads/lowering.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "workloads/dma.hpp"
#include "workloads/graph_lowering.hpp"
#include "workloads/kernels.hpp"
#include "workloads/rmsnorm.hpp"

namespace trnsim::workloads {

uint64_t SeededRandom::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SeededRandom::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double SeededRandom::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

void load_inputs(const LoweredKernel& k, isa::MemoryImage& memory) {
  for (const auto& t : k.inputs) {
    uint8_t* p = memory.hbm.data() + k.program.find_dram_tensor(t.name)->address;
    for (float v : t.values) {
      isa::store_element(t.dtype, p, v);
      p += isa::size_of(t.dtype);
    }
  }
}

std::vector<float> read_tensor(const LoweredKernel& k, const isa::MemoryImage& memory,
                               const std::string& name) {
  const isa::DramTensor* d = k.program.find_dram_tensor(name);
  std::vector<float> v(d->elements());
  const uint8_t* p = memory.hbm.data() + d->address;
  for (float& f : v) {
    f = isa::load_element(d->dtype, p);
    p += isa::size_of(d->dtype);
  }
  return v;
}

CheckResult check_outputs(const LoweredKernel& k, const isa::MemoryImage& memory) {
  CheckResult c;
  c.tolerance = k.tolerance;
  for (const auto& expected : k.expected) {
    const isa::DramTensor* d = k.program.find_dram_tensor(expected.name);
    const uint8_t* p = memory.hbm.data() + d->address;
    for (float want : expected.values) {
      const double got = isa::load_element(d->dtype, p);
      p += isa::size_of(d->dtype);
      const double err = std::abs(got - want);
      ++c.elements;
      // A NaN error stays NaN in the maxima, so the report shows it.
      if (!std::isnan(c.max_abs_error) && (std::isnan(err) || err > c.max_abs_error)) {
        c.max_abs_error = err;
      }
      if (std::abs(want) > 1e-6) {
        const double rel = err / std::abs(want);
        if (!std::isnan(c.max_rel_error) && (std::isnan(rel) || rel > c.max_rel_error)) {
          c.max_rel_error = rel;
        }
      }
      if (!(err <= k.tolerance.atol + k.tolerance.rtol * std::abs(want))) ++c.mismatches;
    }
  }
  if (k.expected.empty()) return c;  // nothing to check against (micro-benchmarks): skipped
  c.status = c.mismatches > 0 ? CheckResult::Status::fail : CheckResult::Status::pass;
  return c;
}

double rounding_unit(isa::DType dt) {
  switch (dt) {
    case isa::DType::fp32:
      return 0x1.0p-24;
    case isa::DType::bf16:
      return 0x1.0p-8;
    case isa::DType::fp16:
      return 0x1.0p-11;
    case isa::DType::fp8_e4m3:
      return 0x1.0p-4;
    case isa::DType::fp8_e5m2:
      return 0x1.0p-3;
    default:
      return 0.5;  // integers: half of one
  }
}

std::string functional_size_problem(uint64_t hbm_bytes) {
  if (hbm_bytes <= kMaxFunctionalHbmBytes) return "";
  return fmt::format(
      "functional mode would hold {:.1f} GiB of HBM tensors in host memory (with float copies), "
      "over its {:.1f} GiB limit; use --timing-only, which keeps no tensor data",
      static_cast<double>(hbm_bytes) / (1ULL << 30),
      static_cast<double>(kMaxFunctionalHbmBytes) / (1ULL << 30));
}

LoweredKernel lower(const Workload& w, const isa::ArchConfig& arch, bool functional) {
  // parse_workload admits only known kernels and variants.
  if (w.cores > arch.chip_cores) {
    throw WorkloadError(
        w.file, "/cores",
        fmt::format("{} cores asked for; a {} chip has {}", w.cores, arch.name, arch.chip_cores));
  }
  if (w.graph) return lower_graph(w, arch, functional);
  if (const KernelEntry* k = find_kernel(w.kernel)) return k->lower(w, arch, functional);
  return lower_dma(w, arch, functional);
}

}  // namespace trnsim::workloads
