#include "workloads/kernels/kernel.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trnsim::workloads {

WorkloadError::WorkloadError(const std::string& file, const std::string& where,
                             const std::string& what)
    : std::runtime_error(fmt::format("{}: {}: {}", file, where, what)) {}

uint64_t SeededRandom::next() {
  uint64_t z = (state_ += kIncrement);
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

}  // namespace trnsim::workloads
