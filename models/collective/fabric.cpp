#include "models/collective/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace trnsim::models {

namespace {

// A chip's NeuronLink ports: 4 on every Trainium (trainium_inferentia2_arch.rst,
// trainium2_arch.rst, trainium3_arch.rst: "4 x NeuronLink"). On the torus they are the links to
// the four neighbours (+x, -x, +y, -y); through a switch (trn3) each is one port into it.
constexpr uint32_t kPorts = 4;

bool power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

uint32_t log2_of(uint64_t v) {
  uint32_t d = 0;
  while ((uint64_t{1} << d) < v) ++d;
  return d;
}

// Reflected Gray code: consecutive values differ in one bit, so hypercube neighbours along an
// axis of 2^b ring positions are ring neighbours when b <= 2 (the 4-ring of trn1/trn2's torus).
uint32_t gray(uint32_t v) {
  return v ^ (v >> 1);
}

// Chips of the ranks, in rank order of first appearance.
std::vector<uint32_t> chips_of(const CollectiveRequest& request) {
  std::vector<uint32_t> chips;
  std::set<uint32_t> seen;
  for (const auto& r : request.ranks)
    if (seen.insert(r.chip).second) chips.push_back(r.chip);
  return chips;
}

// Ranks (indices into the request) on each chip of `chips`, in rank order.
std::vector<std::vector<uint32_t>> ranks_by_chip(const CollectiveRequest& request,
                                                 const std::vector<uint32_t>& chips) {
  std::vector<std::vector<uint32_t>> out(chips.size());
  for (uint32_t i = 0; i < request.ranks.size(); ++i) {
    const auto at = std::find(chips.begin(), chips.end(), request.ranks[i].chip) - chips.begin();
    out[static_cast<size_t>(at)].push_back(i);
  }
  return out;
}

bool uniform(const std::vector<std::vector<uint32_t>>& by_chip) {
  for (const auto& g : by_chip)
    if (g.size() != by_chip.front().size()) return false;
  return true;
}

// The two edge-disjoint Hamiltonian cycles of an n x n torus (n >= 3; docs/chip.md, "Ring").
// H1 walks each row n - 1 steps to the right and steps down, row r starting at column -r;
// it uses every horizontal link but one per row and one vertical link per row. H2 is what H1
// leaves: each column walked n - 1 steps down from row -c, then one step right.
std::vector<uint32_t> torus_cycle(uint32_t n, bool second) {
  std::vector<uint32_t> chips;
  for (uint32_t a = 0; a < n; ++a) {
    const uint32_t first = (n - a % n) % n;
    for (uint32_t b = 0; b < n; ++b) {
      const uint32_t along = (first + b) % n;
      chips.push_back(second ? along * n + a : a * n + along);
    }
  }
  return chips;
}

}  // namespace

// --- resources --------------------------------------------------------------------------

int64_t CollectiveFabric::Resource::earliest_fit(int64_t from, int64_t duration) const {
  if (duration == 0) return from;
  int64_t s = from;
  auto it = busy.upper_bound(s);
  if (it != busy.begin()) {
    const auto prev = std::prev(it);
    if (prev->second > s) s = prev->second;
  }
  for (; it != busy.end() && it->first < s + duration; ++it) s = std::max(s, it->second);
  return s;
}

void CollectiveFabric::Resource::reserve(int64_t start, int64_t duration) {
  if (duration == 0) return;
  int64_t end = start + duration;
  auto next = busy.lower_bound(start);
  if (next != busy.end() && next->first == end) {
    end = next->second;
    next = busy.erase(next);
  }
  if (next != busy.begin()) {
    const auto prev = std::prev(next);
    if (prev->second == start) {
      prev->second = end;
      return;
    }
  }
  busy.emplace_hint(next, start, end);
}

void CollectiveFabric::Resource::forget_before(int64_t t) {
  while (!busy.empty() && busy.begin()->second <= t) busy.erase(busy.begin());
}

// --- topology ---------------------------------------------------------------------------

CollectiveFabric::CollectiveFabric(const config::ArchConfig& arch) : arch_(arch) {
  const uint32_t chips = arch_.instance.chips();
  // Torus: one link per chip and direction. Switch: each port up into the switch and down.
  links_ = chips * kPorts * (arch_.instance.switched ? 2 : 1);
  dmas_ = chips * arch_.chip_cores;
  const uint32_t per_stack = std::max(1u, arch_.hbm.cores_per_stack);
  const uint32_t stacks = chips * ((arch_.chip_cores + per_stack - 1) / per_stack);
  resources_.resize(links_ + dmas_ + stacks);
  for (uint32_t i = 0; i < links_; ++i) resources_[i].bytes_per_ps = arch_.link.bytes_per_ns / 1e3;
  // A rank's transfers are driven by its core's DMA engines (the CC cores "control when and how
  // data movement engines transfer data", collectives.rst): their peak together.
  for (uint32_t i = 0; i < dmas_; ++i)
    resources_[links_ + i].bytes_per_ps = arch_.dma_peak_bytes_per_ns() / 1e3;
  // Each transfer reads its source's HBM stack and writes its destination's: the stack's peak
  // is shared by every access to it (KangaRing's gain is counted in HBM accesses per chunk,
  // intranode-collective-comm.rst). The on-chip fabric between them is assumed not to limit
  // (assumption noc_nonblocking, docs/chip.md).
  for (uint32_t i = links_ + dmas_; i < resources_.size(); ++i)
    resources_[i].bytes_per_ps = arch_.hbm.stack_bytes_per_ns / 1e3;
}

uint32_t CollectiveFabric::link_index(uint32_t chip, uint32_t direction) const {
  return chip * kPorts + direction;
}
uint32_t CollectiveFabric::dma_index(uint32_t chip, uint32_t core) const {
  return links_ + chip * arch_.chip_cores + core;
}
uint32_t CollectiveFabric::stack_index(uint32_t chip, uint32_t core) const {
  const uint32_t per_stack = std::max(1u, arch_.hbm.cores_per_stack);
  const uint32_t stacks = (arch_.chip_cores + per_stack - 1) / per_stack;
  return links_ + dmas_ + chip * stacks + core / per_stack;
}

// Dimension-ordered routing: along x to the target column the shorter way round (a tie goes
// +x on even ports and -x on odd ones, so the two directions of a ring split), then along y.
void CollectiveFabric::route(uint32_t from_chip, uint32_t to_chip, uint32_t port,
                             std::vector<uint32_t>& out) const {
  if (from_chip == to_chip) return;
  if (arch_.instance.switched) {
    out.push_back(link_index(from_chip, port % kPorts));
    out.push_back(arch_.instance.chips() * kPorts + link_index(to_chip, port % kPorts));
    return;
  }
  const uint32_t nx = arch_.instance.torus_x, ny = arch_.instance.torus_y;
  uint32_t x = from_chip % nx, y = from_chip / nx;
  const uint32_t tx = to_chip % nx, ty = to_chip / nx;
  auto walk = [&](uint32_t& at, uint32_t target, uint32_t n, uint32_t plus, uint32_t minus) {
    const uint32_t ahead = (target + n - at) % n;
    if (ahead == 0) return;
    const bool forward = 2 * ahead < n || (2 * ahead == n && port % 2 == 0);
    const uint32_t count = forward ? ahead : n - ahead;
    for (uint32_t i = 0; i < count; ++i) {
      out.push_back(link_index(y * nx + x, forward ? plus : minus));
      at = forward ? (at + 1) % n : (at + n - 1) % n;
    }
  };
  walk(x, tx, nx, 0, 1);
  walk(y, ty, ny, 2, 3);
}

uint32_t CollectiveFabric::hops(uint32_t from_chip, uint32_t to_chip) const {
  if (from_chip == to_chip) return 0;
  if (arch_.instance.switched) return 1;
  std::vector<uint32_t> links;
  route(from_chip, to_chip, 0, links);
  return static_cast<uint32_t>(links.size());
}

// --- algorithms -------------------------------------------------------------------------

namespace {

// The chip cycles a ring follows, before directions: on a whole square torus (n >= 3) the two
// edge-disjoint Hamiltonian cycles (intranode-collective-comm.rst: "there are 2
// non-overlapping Hamiltonian cycles on 2D Torus"); otherwise one cycle, the request's chips
// in the order H1 visits them (a row of the torus is then its ring; other subsets route
// between consecutive chips and contend where routes share links).
std::vector<std::vector<uint32_t>> chip_cycles(const config::ArchConfig& arch,
                                               const std::vector<uint32_t>& chips) {
  const uint32_t nx = arch.instance.torus_x, ny = arch.instance.torus_y;
  if (chips.size() < 2 || arch.instance.switched) return {chips};
  const bool square = nx == ny && nx >= 3;
  if (!square) {
    std::vector<uint32_t> sorted = chips;
    std::sort(sorted.begin(), sorted.end());
    return {sorted};
  }
  const std::set<uint32_t> wanted(chips.begin(), chips.end());
  std::vector<std::vector<uint32_t>> cycles;
  for (const bool second : {false, true}) {
    if (second && wanted.size() != arch.instance.chips()) break;
    std::vector<uint32_t> cycle;
    for (const uint32_t c : torus_cycle(nx, second))
      if (wanted.count(c)) cycle.push_back(c);
    cycles.push_back(cycle);
  }
  return cycles;
}

// One ring pass: `steps` steps; in each, every rank of every order sends `chunk` to its
// successor in that order (each order a channel, carrying chunk / channels).
void ring_pass(std::vector<std::vector<CollectiveFabric::Transfer>>& steps,
               const std::vector<std::vector<uint32_t>>& orders, uint32_t passes, double chunk,
               bool reduce, size_t first_step) {
  for (uint32_t s = 0; s < passes; ++s) {
    if (steps.size() <= first_step + s) steps.resize(first_step + s + 1);
    auto& step = steps[first_step + s];
    for (uint32_t ch = 0; ch < orders.size(); ++ch) {
      const auto& order = orders[ch];
      const auto p = static_cast<uint32_t>(order.size());
      if (p < 2) continue;
      for (uint32_t i = 0; i < p; ++i)
        step.push_back(
            {order[i], order[(i + 1) % p], chunk / static_cast<double>(orders.size()), reduce, ch});
    }
  }
}

}  // namespace

uint32_t CollectiveFabric::ring_channels(const std::vector<uint32_t>& chips) const {
  if (chips.size() < 2) return 1;
  if (arch_.instance.switched) return kPorts;
  return 2 * static_cast<uint32_t>(chip_cycles(arch_, chips).size());
}

std::string collective_request_error(const config::ArchConfig& arch,
                                     const CollectiveRequest& request) {
  if (request.ranks.empty()) return "a collective needs at least one rank";
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (size_t i = 0; i < request.ranks.size(); ++i) {
    const auto& r = request.ranks[i];
    if (r.chip >= arch.instance.chips())
      return "rank " + std::to_string(i) + " is on chip " + std::to_string(r.chip) +
             ", but the instance has " + std::to_string(arch.instance.chips()) + " chips";
    if (r.core >= arch.chip_cores)
      return "rank " + std::to_string(i) + " is core " + std::to_string(r.core) +
             ", but a chip has " + std::to_string(arch.chip_cores) + " cores";
    if (!seen.insert({r.chip, r.core}).second)
      return "rank " + std::to_string(i) + " repeats chip " + std::to_string(r.chip) + " core " +
             std::to_string(r.core);
  }
  const std::string& a = request.algorithm;
  if (isa::is_point_to_point(request.op)) {
    if (request.ranks.size() != 2)
      return "send/recv moves data between two ranks (the sender first), got " +
             std::to_string(request.ranks.size());
    if (!a.empty() && a != "p2p") return "send/recv is one transfer (p2p), not " + a;
    return "";
  }
  if (a == "p2p") return "p2p is send/recv's, not " + std::string(isa::name_of(request.op));
  if (a.empty()) return "";
  const auto& names = collective_algorithms();
  if (std::find(names.begin(), names.end(), a) == names.end())
    return "unknown algorithm '" + a + "': expected ring, rdh, mesh or hierarchical";
  const std::string op(isa::name_of(request.op));
  if (request.op == isa::CollectiveOp::permute && a != "ring")
    return "permute is one step to the next rank (ring), not " + a;
  if (a == "rdh" && !power_of_two(request.ranks.size()))
    return "rdh (recursive doubling and halving) needs a power-of-two number of ranks, got " +
           std::to_string(request.ranks.size());
  if (a == "hierarchical") {
    if (request.op == isa::CollectiveOp::all_to_all)
      return "hierarchical is defined for all_reduce, all_gather and reduce_scatter, not " + op;
    if (!uniform(ranks_by_chip(request, chips_of(request))))
      return "hierarchical needs the same number of ranks on every chip";
  }
  return "";
}

std::string collective_algorithm_for(const config::ArchConfig& arch,
                                     const CollectiveRequest& request) {
  if (!request.algorithm.empty()) return request.algorithm;
  if (isa::is_point_to_point(request.op)) return "p2p";
  if (request.op == isa::CollectiveOp::permute) return "ring";
  if (request.bytes < arch.cc.mesh_max_bytes) return "mesh";
  if (request.bytes < arch.cc.rdh_max_bytes && power_of_two(request.ranks.size())) return "rdh";
  return "ring";
}

CollectiveFabric::Plan CollectiveFabric::plan(const CollectiveRequest& request,
                                              const std::string& algorithm) const {
  using Op = isa::CollectiveOp;
  Plan out;
  out.algorithm = algorithm;
  const auto p = static_cast<uint32_t>(request.ranks.size());
  const double n = static_cast<double>(request.bytes);
  const double chunk = n / p;
  auto& steps = out.steps;
  const std::vector<uint32_t> chips = chips_of(request);
  const auto by_chip = ranks_by_chip(request, chips);

  // Rank orders of the ring's channels: each chip cycle in both directions; a chip's ranks
  // consecutive (its on-chip hops), in rank order.
  auto ring_orders = [&](const std::vector<std::vector<uint32_t>>& groups,
                         const std::vector<uint32_t>& group_chips) {
    std::vector<std::vector<uint32_t>> orders;
    if (arch_.instance.switched && group_chips.size() > 1) {
      // Through the switch every chip order is one hop; channel c uses port c.
      std::vector<uint32_t> forward;
      for (const auto& g : groups) forward.insert(forward.end(), g.begin(), g.end());
      for (uint32_t c = 0; c < kPorts; ++c) {
        orders.push_back(forward);
        if (c % 2) std::reverse(orders.back().begin(), orders.back().end());
      }
      return orders;
    }
    for (const auto& cycle : chip_cycles(arch_, group_chips)) {
      std::vector<uint32_t> forward;
      for (const uint32_t c : cycle) {
        const auto at = std::find(group_chips.begin(), group_chips.end(), c) - group_chips.begin();
        const auto& g = groups[static_cast<size_t>(at)];
        forward.insert(forward.end(), g.begin(), g.end());
      }
      orders.push_back(forward);
      if (group_chips.size() > 1) {
        orders.emplace_back(forward.rbegin(), forward.rend());
      }
    }
    return orders;
  };

  if (p < 2) return out;

  if (isa::is_point_to_point(request.op)) {
    // One transfer from the sender (rank 0) to the receiver (rank 1).
    steps.push_back({{0, 1, n, false, 0}});
    return out;
  }

  if (request.op == Op::permute) {
    steps.emplace_back();
    for (uint32_t i = 0; i < p; ++i) steps[0].push_back({i, (i + 1) % p, n, false, 0});
    return out;
  }

  if (algorithm == "ring") {
    const auto orders = ring_orders(by_chip, chips);
    out.channels = static_cast<uint32_t>(orders.size());
    switch (request.op) {
      case Op::all_gather:
        ring_pass(steps, orders, p - 1, chunk, false, 0);
        break;
      case Op::reduce_scatter:
        ring_pass(steps, orders, p - 1, chunk, true, 0);
        break;
      case Op::all_reduce:
        ring_pass(steps, orders, p - 1, chunk, true, 0);
        ring_pass(steps, orders, p - 1, chunk, false, p - 1);
        break;
      case Op::all_to_all: {
        // Pairwise exchange in ring order: in step s every rank sends its block for the rank
        // s places ahead, routed; p - 1 steps.
        out.channels = 1;
        const auto& order = orders.front();
        for (uint32_t s = 1; s < p; ++s) {
          steps.emplace_back();
          for (uint32_t i = 0; i < p; ++i)
            steps.back().push_back({order[i], order[(i + s) % p], chunk, false, s});
        }
        break;
      }
      case Op::permute:
      case Op::send:
      case Op::recv:
        break;
    }
    return out;
  }

  if (algorithm == "rdh") {
    // Virtual hypercube index: chips in slot order, a chip's ranks consecutive. On a whole torus
    // whose sides are powers of two, slots are Gray-coded coordinates (intranode-collective-
    // comm.rst sees the 4x4 torus as a 4-D hypercube), so partners along an axis of four chips
    // are neighbours.
    std::vector<uint32_t> slot_chips = chips;
    const uint32_t nx = arch_.instance.torus_x, ny = arch_.instance.torus_y;
    if (!arch_.instance.switched && chips.size() == arch_.instance.chips() && power_of_two(nx) &&
        power_of_two(ny) && uniform(by_chip)) {
      for (uint32_t s = 0; s < chips.size(); ++s) slot_chips[s] = gray(s / nx) * nx + gray(s % nx);
    }
    std::vector<uint32_t> v;  // rank at each virtual index
    for (const uint32_t c : slot_chips) {
      const auto at = std::find(chips.begin(), chips.end(), c) - chips.begin();
      const auto& g = by_chip[static_cast<size_t>(at)];
      v.insert(v.end(), g.begin(), g.end());
    }
    const uint32_t d = log2_of(p);
    auto exchange = [&](uint32_t bit, double bytes, bool reduce) {
      steps.emplace_back();
      for (uint32_t i = 0; i < p; ++i) steps.back().push_back({v[i], v[i ^ bit], bytes, reduce, i});
    };
    // Recursive halving from the lowest bit (a chip's ranks first, the big messages on chip),
    // recursive doubling back from the highest (inter-chip first, the small messages).
    auto halving = [&] {
      for (uint32_t j = 0; j < d; ++j) exchange(1u << j, n / static_cast<double>(2u << j), true);
    };
    auto doubling = [&] {
      for (uint32_t t = 0; t < d; ++t) exchange(1u << (d - 1 - t), chunk * (1u << t), false);
    };
    switch (request.op) {
      case Op::all_gather:
        doubling();
        break;
      case Op::reduce_scatter:
        halving();
        break;
      case Op::all_reduce:
        halving();
        doubling();
        break;
      case Op::all_to_all:
        for (uint32_t j = 0; j < d; ++j) exchange(1u << j, n / 2, false);
        break;
      case Op::permute:
      case Op::send:
      case Op::recv:
        break;
    }
    return out;
  }

  if (algorithm == "mesh") {
    // Direct: every rank writes to every other in one step, routed; the links and stacks it
    // over-subscribes serve the transfers one after another.
    auto direct = [&](bool reduce) {
      steps.emplace_back();
      for (uint32_t i = 0; i < p; ++i)
        for (uint32_t s = 1; s < p; ++s) steps.back().push_back({i, (i + s) % p, chunk, reduce, s});
    };
    switch (request.op) {
      case Op::all_gather:
      case Op::all_to_all:
        direct(false);
        break;
      case Op::reduce_scatter:
        direct(true);
        break;
      case Op::all_reduce:
        direct(true);
        direct(false);
        break;
      case Op::permute:
      case Op::send:
      case Op::recv:
        break;
    }
    return out;
  }

  // hierarchical (internode-collective-comm.rst): a ring on each chip, and a ring over the chips
  // among the ranks with the same index on their chips; every such group spreads its data over
  // the chip ring's channels.
  const auto q = static_cast<uint32_t>(by_chip.front().size());
  const auto nchips = static_cast<uint32_t>(chips.size());
  std::vector<std::vector<uint32_t>> intra;  // one order per chip (one channel each)
  for (const auto& g : by_chip) intra.push_back(g);
  std::vector<std::vector<uint32_t>> inter;
  for (uint32_t j = 0; j < q; ++j) {
    std::vector<std::vector<uint32_t>> column;
    for (const auto& g : by_chip) column.push_back({g[j]});
    for (auto& o : ring_orders(column, chips)) inter.push_back(std::move(o));
  }
  const uint32_t inter_channels = nchips > 1 ? ring_channels(chips) : 1;
  out.channels = inter_channels;
  // ring_pass divides a chunk by the orders it is given: the inter rings carry chunk x q
  // orders' worth so that each group's chunk is split over its own channels only.
  const double inter_scale = static_cast<double>(inter.size()) / inter_channels;
  size_t at = 0;
  auto intra_pass = [&](double c, bool reduce) {
    if (q < 2) return;
    ring_pass(steps, intra, q - 1, c * intra.size(), reduce, at);
    at += q - 1;
  };
  auto inter_pass = [&](double c, bool reduce) {
    if (nchips < 2) return;
    ring_pass(steps, inter, nchips - 1, c * inter_scale, reduce, at);
    at += nchips - 1;
  };
  switch (request.op) {
    case Op::all_gather:
      inter_pass(n / q / nchips, false);
      intra_pass(n / q, false);
      break;
    case Op::reduce_scatter:
      intra_pass(n / q, true);
      inter_pass(n / q / nchips, true);
      break;
    case Op::all_reduce:
      intra_pass(n / q, true);
      inter_pass(n / q / nchips, true);
      inter_pass(n / q / nchips, false);
      intra_pass(n / q, false);
      break;
    case Op::all_to_all:
    case Op::permute:
    case Op::send:
    case Op::recv:
      break;
  }
  return out;
}

// --- the schedule -----------------------------------------------------------------------

CollectiveTiming CollectiveFabric::schedule(const CollectiveRequest& request,
                                            Picoseconds triggered) {
  if (const std::string error = collective_request_error(arch_, request); !error.empty())
    throw std::invalid_argument(error);
  // SystemC asks in time order: what ended before this trigger can delay nothing any more.
  if (triggered.value > watermark_) {
    watermark_ = triggered.value;
    for (auto& r : resources_) r.forget_before(watermark_);
  }
  CollectiveTiming t;
  const Plan plan_ = plan(request, collective_algorithm_for(arch_, request));
  t.algorithm = plan_.algorithm;
  t.channels = plan_.channels;
  t.steps = static_cast<uint32_t>(plan_.steps.size());
  t.start = triggered + from_ns(arch_.cc.launch_ns);
  const int64_t alpha = from_ns(arch_.cc.step_ns).value;
  const int64_t hop = from_ns(arch_.link.latency_ns).value;
  const double reduce = arch_.cc.reduce_fraction;
  const double stack_rate = arch_.hbm.stack_bytes_per_ns / 1e3;
  int64_t now = t.start.value;
  double link_bytes = 0;
  std::vector<uint32_t> links;
  // A step's load on each resource, in ps of its time: the step's transfers share a resource
  // (as DMA rings and links interleave packets), so what it must serve is the sum of their
  // bytes over its rate, and the step's data is moved when its busiest resource has served all.
  std::vector<double> load(resources_.size(), 0.0);
  std::vector<uint32_t> touched;
  std::vector<double> sent(request.ranks.size(), 0.0);
  auto add = [&](uint32_t r, double bytes, double rate) {
    if (bytes <= 0) return;
    if (load[r] == 0) touched.push_back(r);
    load[r] += bytes / rate;
  };
  for (const auto& step : plan_.steps) {
    touched.clear();
    uint32_t most_hops = 0;
    for (const auto& x : step) {
      const CollectiveRank& a = request.ranks[x.from];
      const CollectiveRank& b = request.ranks[x.to];
      links.clear();
      route(a.chip, b.chip, x.route, links);
      const uint32_t dma = dma_index(a.chip, a.core);
      // The sender's engines move the data; a reduction (read-add-write in the "DMA collective
      // compute engines") runs at cc.reduce_fraction of a copy and also reads the destination.
      add(dma, x.bytes, resources_[dma].bytes_per_ps * (x.reduce ? reduce : 1.0));
      sent[x.from] += x.bytes;
      add(stack_index(a.chip, a.core), x.bytes, stack_rate);
      add(stack_index(b.chip, b.core), x.bytes * (x.reduce ? 2 : 1), stack_rate);
      for (const uint32_t l : links) add(l, x.bytes, resources_[l].bytes_per_ps);
      const auto crossings =
          arch_.instance.switched && !links.empty() ? 1u : static_cast<uint32_t>(links.size());
      most_hops = std::max(most_hops, crossings);
      link_bytes += x.bytes * crossings;
    }
    // The step starts when every resource it loads is free for as long as it needs it (another
    // collective may hold some), after the step's fixed cost.
    int64_t start = now + alpha;
    for (bool moved = true; moved;) {
      moved = false;
      for (const uint32_t r : touched) {
        const int64_t s =
            resources_[r].earliest_fit(start, static_cast<int64_t>(std::ceil(load[r])));
        if (s > start) {
          start = s;
          moved = true;
        }
      }
    }
    int64_t longest = 0;
    for (const uint32_t r : touched) {
      const auto d = static_cast<int64_t>(std::ceil(load[r]));
      resources_[r].reserve(start, d);
      longest = std::max(longest, d);
      load[r] = 0;
    }
    now = start + longest + static_cast<int64_t>(most_hops) * hop;
    for (uint32_t r = 0; r < sent.size(); ++r) {
      const auto bytes = static_cast<uint64_t>(std::llround(sent[r]));
      if (bytes > 0) t.traffic.push_back({Picoseconds(start), r, bytes});
      sent[r] = 0;
    }
  }
  t.end = Picoseconds(now);
  t.link_bytes = static_cast<uint64_t>(std::llround(link_bytes));
  return t;
}

}  // namespace trnsim::models
