// HBM, first model: one NeuronCore's share of the chip's HBM bandwidth as a single
// first-come-first-served channel, plus a fixed access latency. Plain C++ (no SystemC). The
// detailed model (stacks, channels, banks, row buffers) replaces this behind the same call.
#pragma once

#include <cstdint>

#include "isa/arch.hpp"
#include "isa/units.hpp"

namespace trnsim::models {

class HbmModel {
 public:
  explicit HbmModel(const isa::ArchConfig& arch);

  // Moves `bytes` through HBM, starting no earlier than `earliest` and after every earlier
  // reservation. Returns when the last byte has passed the channel (latency not included).
  Picoseconds reserve(Picoseconds earliest, uint64_t bytes);
  Picoseconds latency() const { return latency_; }
  Picoseconds transfer_time(uint64_t bytes) const;

 private:
  double bytes_per_ns_;
  Picoseconds latency_;
  Picoseconds free_at_{0};
};

}  // namespace trnsim::models
