// Collectives between NeuronCores of a chip and between chips (docs/chip.md): plain C++,
// tested without SystemC. The fabric knows the instance's topology (arch.instance, arch.link)
// and the collective engines' costs (arch.cc); the SystemC shell asks it, when the last rank
// of a collective has triggered it, when the collective ends.
//
// The model is a schedule of steps over resources (docs/chip.md, "Topology" and "Algorithms"):
// each directed NeuronLink, each rank's DMA engines and each HBM stack; an algorithm is a
// sequence of steps, each costing cc.step_ns and then as long as its busiest resource needs to
// serve the step's transfers. Resources remember when they are busy, so a collective scheduled
// after another waits for the links, engines and stacks the first still holds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
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
  // "" chooses as the Neuron runtime does (collective_algorithm_for); otherwise one of
  // kCollectiveAlgorithms, which must suit the op and the ranks (collective_request_error).
  std::string algorithm;
};

struct CollectiveTiming {
  Picoseconds start;      // the first step starts (after the launch)
  Picoseconds end;        // every rank's output is in place
  std::string algorithm;  // as the profiler's CcOp.algorithm names it: "ring", ...
  uint32_t steps = 0;
  uint64_t link_bytes = 0;  // bytes that crossed NeuronLinks between chips, once per link crossed
  uint32_t channels = 1;    // concurrent edge-disjoint rings (ring and hierarchical), else 1
  // What each rank's DMA engines move in each step, for the memory system to carry alongside
  // the kernels' own transfers (docs/chip.md, "Collective traffic and the kernel's DMA"): the
  // step's data start (after its fixed cost), the rank (index into the request's ranks) and
  // the bytes it sends in that step. In step order; ranks that send nothing are left out.
  struct RankTraffic {
    Picoseconds at;
    uint32_t rank = 0;
    uint64_t bytes = 0;
  };
  std::vector<RankTraffic> traffic;
};

// The algorithms, named as the profiler's CcOp.algorithm names them.
inline const std::vector<std::string>& collective_algorithms() {
  // p2p: a send/recv pair's single transfer (appended: the others keep their indices).
  static const std::vector<std::string> names = {"ring", "rdh", "mesh", "hierarchical", "p2p"};
  return names;
}

// A collective record's op (CollectiveRecord::op, point_to_point) as outputs name it: a
// send/recv pair is "send_recv".
inline std::string_view collective_op_name(uint8_t op, bool point_to_point) {
  return point_to_point ? std::string_view("send_recv")
                        : isa::name_of(static_cast<isa::CollectiveOp>(op));
}

// Why the request cannot be scheduled on this arch ("" when it can): ranks outside the
// instance or repeated, an unknown algorithm, or one that does not suit the op or the ranks
// (rdh needs a power-of-two number of ranks; hierarchical the same number of ranks on each
// chip; permute has only its one step; send/recv is p2p between exactly two ranks, sender first,
// and p2p is only theirs).
std::string collective_request_error(const config::ArchConfig& arch,
                                     const CollectiveRequest& request);

// The algorithm the runtime picks (intranode-collective-comm.rst, "Algorithm Summary"): mesh
// below cc.mesh_max_bytes, rdh below cc.rdh_max_bytes when the ranks are a power of two, ring
// otherwise; permute is its single ring step; send/recv is p2p: one step, rank 0 to rank 1, over
// the route between them (launch + step + bytes over the route's limiting resource).
std::string collective_algorithm_for(const config::ArchConfig& arch,
                                     const CollectiveRequest& request);

class CollectiveFabric {
 public:
  explicit CollectiveFabric(const config::ArchConfig& arch);
  // Schedules a collective whose last rank triggered it at `triggered`. Throws
  // std::invalid_argument with collective_request_error's text for a request it cannot run.
  CollectiveTiming schedule(const CollectiveRequest& request, Picoseconds triggered);

  // Edge-disjoint directed rings the ring algorithm uses over these chips (docs/chip.md).
  uint32_t ring_channels(const std::vector<uint32_t>& chips) const;
  // Directed NeuronLinks a transfer from chip a to chip b crosses (dimension-ordered routing
  // on the torus, X first; one hop through the switch).
  uint32_t hops(uint32_t from_chip, uint32_t to_chip) const;

  // One data movement of a step: `bytes` from rank `from` to rank `to` (indices into the
  // request's ranks); `reduce` when the receiver adds it to what it holds.
  struct Transfer {
    uint32_t from = 0;
    uint32_t to = 0;
    double bytes = 0;
    bool reduce = false;
    uint32_t route = 0;  // the channel: picks the switch port, and the way round on a tie
  };

 private:
  // A resource serves a step's transfers together, for their bytes over its rate; `busy` holds
  // the intervals it is reserved, [start, end) in ps, keyed by start, never overlapping.
  struct Resource {
    double bytes_per_ps = 0;
    std::map<int64_t, int64_t> busy;
    int64_t earliest_fit(int64_t from, int64_t duration) const;
    void reserve(int64_t start, int64_t duration);
    void forget_before(int64_t t);
  };

  using Step = std::vector<Transfer>;
  struct Plan {
    std::string algorithm;
    std::vector<Step> steps;
    uint32_t channels = 1;
  };
  Plan plan(const CollectiveRequest& request, const std::string& algorithm) const;
  // Links (resource indices) of the route from chip a to chip b.
  void route(uint32_t from_chip, uint32_t to_chip, uint32_t port, std::vector<uint32_t>& out) const;
  uint32_t link_index(uint32_t chip, uint32_t direction) const;
  uint32_t dma_index(uint32_t chip, uint32_t core) const;
  uint32_t stack_index(uint32_t chip, uint32_t core) const;

  config::ArchConfig arch_;
  std::vector<Resource> resources_;  // links, then DMA engines of each core, then HBM stacks
  uint32_t links_ = 0;
  uint32_t dmas_ = 0;
  int64_t watermark_ = 0;  // latest trigger seen: intervals ending before it are forgotten
};

}  // namespace trnsim::models
