#include "workloads/lowering.hpp"

#include <cmath>

#include "workloads/rmsnorm.hpp"

namespace trnsim::workloads {

uint64_t SeededRandom::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SeededRandom::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SeededRandom::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

LoweredKernel lower(const Workload& w, const isa::ArchConfig& arch, bool functional) {
  // parse_workload admits only known kernels and variants.
  return lower_rmsnorm_fused(w, arch, functional);
}

}  // namespace trnsim::workloads
