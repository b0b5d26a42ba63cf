// Collectives between NeuronCores of a chip and between chips (docs/chip.md): plain C++,
// tested without SystemC. The fabric knows the instance's topology (arch.instance, arch.link)
// and the collective engines' costs (arch.cc); the SystemC shell asks it, when the last rank
// of a collective has triggered it, when the collective ends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/collective.hpp"

namespace trnsim::models {

// A rank: one physical NeuronCore, named by its chip and its core on the chip.
struct CollectiveRank {
  uint32_t chip = 0;
  uint32_t core = 0;
};

struct CollectiveRequest {
  isa::CollectiveOp op = isa::CollectiveOp::all_reduce;
  uint64_t bytes = 0;                 // nccom-test's size: the whole buffer (isa/collective.hpp)
  uint32_t element_bytes = 4;         // a reduction's element size
  std::vector<CollectiveRank> ranks;  // in rank order
};

struct CollectiveTiming {
  Picoseconds start;      // the first step starts (after the launch)
  Picoseconds end;        // every rank's output is in place
  std::string algorithm;  // as the profiler's CcOp.algorithm names it: "ring", ...
  uint32_t steps = 0;
  uint64_t link_bytes = 0;  // bytes that crossed NeuronLinks between chips
};

class CollectiveFabric {
 public:
  explicit CollectiveFabric(const config::ArchConfig& arch);
  // Schedules a collective whose last rank triggered it at `triggered`.
  CollectiveTiming schedule(const CollectiveRequest& request, Picoseconds triggered);

 private:
  config::ArchConfig arch_;
};

}  // namespace trnsim::models
