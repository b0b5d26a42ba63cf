#include "models/collective/fabric.hpp"

#include <algorithm>
#include <set>

namespace trnsim::models {

CollectiveFabric::CollectiveFabric(const config::ArchConfig& arch) : arch_(arch) {}

// First model: a ring over the ranks in rank order, each step moving one chunk (bytes / ranks)
// one hop at the slowest hop's bandwidth: a NeuronLink when the ring leaves a chip, otherwise
// the core's DMA share of its HBM stack. Steps: all_gather and reduce_scatter p - 1,
// all_reduce 2 (p - 1); reductions move their chunk at cc.reduce_fraction of the copy rate.
CollectiveTiming CollectiveFabric::schedule(const CollectiveRequest& request,
                                            Picoseconds triggered) {
  CollectiveTiming t;
  t.algorithm = "ring";
  const auto p = static_cast<uint32_t>(request.ranks.size());
  t.start = triggered + from_ns(arch_.cc.launch_ns);
  if (p < 2) {
    t.end = t.start;
    return t;
  }
  std::set<uint32_t> chips;
  for (const auto& r : request.ranks) chips.insert(r.chip);
  const double on_chip = std::min(arch_.dma_peak_bytes_per_ns(), arch_.hbm_bytes_per_ns());
  const double hop_bytes_per_ns =
      chips.size() > 1 ? std::min(on_chip, arch_.link.bytes_per_ns) : on_chip;
  const double chunk = static_cast<double>(request.bytes) / p;
  double ns = 0;
  auto pass = [&](uint32_t steps, double rate) {
    t.steps += steps;
    ns += steps * (arch_.cc.step_ns + chunk / rate);
  };
  const double reduce_rate = hop_bytes_per_ns * arch_.cc.reduce_fraction;
  switch (request.op) {
    case isa::CollectiveOp::all_gather:
      pass(p - 1, hop_bytes_per_ns);
      break;
    case isa::CollectiveOp::reduce_scatter:
      pass(p - 1, reduce_rate);
      break;
    case isa::CollectiveOp::all_reduce:
      pass(p - 1, reduce_rate);
      pass(p - 1, hop_bytes_per_ns);
      break;
    case isa::CollectiveOp::all_to_all:
      pass(p - 1, hop_bytes_per_ns);
      break;
    case isa::CollectiveOp::permute:
      t.steps = 1;
      ns = arch_.cc.step_ns + static_cast<double>(request.bytes) / hop_bytes_per_ns;
      break;
  }
  if (chips.size() > 1) t.link_bytes = static_cast<uint64_t>(chunk) * t.steps * chips.size();
  t.end = t.start + from_ns(ns);
  return t;
}

}  // namespace trnsim::models
