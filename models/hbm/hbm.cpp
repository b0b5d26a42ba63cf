#include "models/hbm/hbm.hpp"

namespace trnsim::models {

HbmModel::HbmModel(const isa::ArchConfig& arch)
    : bytes_per_ns_(arch.hbm_bytes_per_ns), latency_(from_ns(arch.hbm_latency_ns)) {}

Picoseconds HbmModel::transfer_time(uint64_t bytes) const {
  return from_ns(static_cast<double>(bytes) / bytes_per_ns_);
}

Picoseconds HbmModel::reserve(Picoseconds earliest, uint64_t bytes) {
  const Picoseconds start = max(earliest, free_at_);
  free_at_ = start + transfer_time(bytes);
  return free_at_;
}

}  // namespace trnsim::models
