// Contract tests of the collective timing model (models/collective/fabric.*; docs/chip.md,
// "Algorithms"): one test per rule, named after it. Alpha-beta forms from Thakur, Rabenseifner
// and Gropp, "Optimization of Collective Communication Operations in MPICH" (IJHPCA 2005), on
// the topology the model builds: p ranks, n bytes (nccom-test's size), alpha = cc.step_ns, beta
// = 1 / the bandwidth of the resource that limits.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/collective.hpp"
#include "models/collective/fabric.hpp"

using trnsim::Picoseconds;
using trnsim::config::ArchConfig;
using trnsim::isa::CollectiveOp;
using trnsim::models::collective_algorithm_for;
using trnsim::models::collective_request_error;
using trnsim::models::CollectiveFabric;
using trnsim::models::CollectiveRank;
using trnsim::models::CollectiveRequest;
using trnsim::models::CollectiveTiming;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
const CollectiveOp kOps[] = {CollectiveOp::all_reduce, CollectiveOp::all_gather,
                             CollectiveOp::reduce_scatter, CollectiveOp::all_to_all,
                             CollectiveOp::permute};

ArchConfig trn2() {
  return *trnsim::config::preset("trn2");
}

// trn2 where only the NeuronLinks limit: DMA engines and HBM stacks far faster, no hop latency,
// so a step's time is alpha plus its busiest link's bytes over link.bytes_per_ns.
ArchConfig links_only() {
  ArchConfig a = trn2();
  a.dma_engine_bytes_per_ns = 1e6;
  a.hbm.stack_bytes_per_ns = 1e7;
  a.link.latency_ns = 0;
  return a;
}

// trn2 where only a core's DMA engines limit (on-chip collectives).
ArchConfig dma_only() {
  ArchConfig a = trn2();
  a.hbm.stack_bytes_per_ns = 1e7;
  a.link.latency_ns = 0;
  return a;
}

// `per_chip` ranks (cores 0..per_chip-1) on each of chips 0..chips-1, in rank order.
std::vector<CollectiveRank> ranks(uint32_t chips, uint32_t per_chip, uint32_t core_step = 1) {
  std::vector<CollectiveRank> r;
  for (uint32_t c = 0; c < chips; ++c)
    for (uint32_t k = 0; k < per_chip; ++k) r.push_back({c, k * core_step});
  return r;
}

CollectiveRequest request(CollectiveOp op, double bytes, std::vector<CollectiveRank> r,
                          const std::string& algorithm = "") {
  CollectiveRequest q;
  q.op = op;
  q.bytes = static_cast<uint64_t>(bytes);
  q.ranks = std::move(r);
  q.algorithm = algorithm;
  return q;
}

// The collective's time in ns on a fresh fabric, from its trigger.
double ns_of(const ArchConfig& arch, const CollectiveRequest& q, CollectiveTiming* out = nullptr) {
  CollectiveFabric f(arch);
  const CollectiveTiming t = f.schedule(q, Picoseconds(0));
  if (out) *out = t;
  return static_cast<double>(t.end.value) / 1e3;
}

double alpha(const ArchConfig& a) {
  return a.cc.step_ns;
}
double launch(const ArchConfig& a) {
  return a.cc.launch_ns;
}

}  // namespace

TEST_CASE("ring all_gather takes (p-1) steps of alpha plus (p-1)/p n beta over its 4 channels") {
  const ArchConfig a = links_only();
  const double n = 1 * kGiB, p = 16, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::all_gather, n, ranks(16, 1), "ring"), &t);
  CHECK(t.algorithm == "ring");
  CHECK(t.steps == 15);
  // Two edge-disjoint Hamiltonian cycles of the 4x4 torus, each both ways: every chip's four
  // out-links carry a quarter of each chunk, and no link carries two channels.
  CHECK(t.channels == 4);
  const double formula = launch(a) + (p - 1) * alpha(a) + (p - 1) / p * n * beta / 4;
  CHECK(ns == Approx(formula).epsilon(1e-6));
}

TEST_CASE("ring reduce_scatter takes (p-1) steps, its reduction moving at cc.reduce_fraction") {
  // Links limit: the reduction (in the DMA engines) does not.
  const ArchConfig a = links_only();
  const double n = 1 * kGiB, p = 16, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::reduce_scatter, n, ranks(16, 1), "ring"), &t);
  CHECK(t.steps == 15);
  CHECK(ns == Approx(launch(a) + (p - 1) * alpha(a) + (p - 1) / p * n * beta / 4).epsilon(1e-6));
  // The DMA engines limit (two cores on different stacks of one chip): a reducing step moves
  // its chunk at reduce_fraction of the copy rate, gamma = beta / reduce_fraction.
  const ArchConfig d = dma_only();
  const double rate = d.dma_peak_bytes_per_ns();
  const auto two = std::vector<CollectiveRank>{{0, 0}, {0, 2}};
  const double rs = ns_of(d, request(CollectiveOp::reduce_scatter, n, two, "ring"));
  const double ag = ns_of(d, request(CollectiveOp::all_gather, n, two, "ring"));
  CHECK(ag == Approx(launch(d) + alpha(d) + n / 2 / rate).epsilon(1e-6));
  CHECK(rs == Approx(launch(d) + alpha(d) + n / 2 / (rate * d.cc.reduce_fraction)).epsilon(1e-6));
}

TEST_CASE("ring all_reduce takes 2(p-1) steps: reduce_scatter then all_gather") {
  const ArchConfig a = links_only();
  const double n = 1 * kGiB, p = 16, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::all_reduce, n, ranks(16, 1), "ring"), &t);
  CHECK(t.steps == 30);
  CHECK(ns ==
        Approx(launch(a) + 2 * (p - 1) * alpha(a) + 2 * (p - 1) / p * n * beta / 4).epsilon(1e-6));
}

TEST_CASE("ring on one row of the torus has two channels, one per direction") {
  const ArchConfig a = links_only();
  const double n = 256 * 1024 * 1024.0, p = 4, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::all_gather, n, ranks(4, 1), "ring"), &t);
  CHECK(t.channels == 2);
  CHECK(ns == Approx(launch(a) + (p - 1) * alpha(a) + (p - 1) / p * n * beta / 2).epsilon(1e-6));
}

TEST_CASE("rdh takes log2 p steps per pass, each to a neighbour (Gray-coded 4x4 hypercube)") {
  const ArchConfig a = links_only();
  const double n = 1 * kGiB, p = 16, d = 4, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ag = ns_of(a, request(CollectiveOp::all_gather, n, ranks(16, 1), "rdh"), &t);
  CHECK(t.steps == 4);
  // Every partner is one hop away and each directed link serves one transfer per step.
  CHECK(t.link_bytes == static_cast<uint64_t>((p - 1) / p * n * p));
  CHECK(ag == Approx(launch(a) + d * alpha(a) + (p - 1) / p * n * beta).epsilon(1e-6));
  const double rs = ns_of(a, request(CollectiveOp::reduce_scatter, n, ranks(16, 1), "rdh"), &t);
  CHECK(t.steps == 4);
  CHECK(rs == Approx(launch(a) + d * alpha(a) + (p - 1) / p * n * beta).epsilon(1e-6));
  const double ar = ns_of(a, request(CollectiveOp::all_reduce, n, ranks(16, 1), "rdh"), &t);
  CHECK(t.steps == 8);
  CHECK(ar == Approx(launch(a) + 2 * d * alpha(a) + 2 * (p - 1) / p * n * beta).epsilon(1e-6));
  const double aa = ns_of(a, request(CollectiveOp::all_to_all, n, ranks(16, 1), "rdh"), &t);
  CHECK(t.steps == 4);
  CHECK(aa == Approx(launch(a) + d * alpha(a) + d * n / 2 * beta).epsilon(1e-6));
}

TEST_CASE("mesh is one step per pass, limited by each rank's engines writing to p-1 peers") {
  const ArchConfig a = dma_only();
  const double n = 1 * kGiB, p = 8, rate = a.dma_peak_bytes_per_ns();
  const double rf = a.cc.reduce_fraction;
  CollectiveTiming t;
  const double ag = ns_of(a, request(CollectiveOp::all_gather, n, ranks(1, 8), "mesh"), &t);
  CHECK(t.steps == 1);
  CHECK(ag == Approx(launch(a) + alpha(a) + (p - 1) / p * n / rate).epsilon(1e-6));
  const double aa = ns_of(a, request(CollectiveOp::all_to_all, n, ranks(1, 8), "mesh"), &t);
  CHECK(t.steps == 1);
  CHECK(aa == Approx(ag).epsilon(1e-9));
  const double rs = ns_of(a, request(CollectiveOp::reduce_scatter, n, ranks(1, 8), "mesh"), &t);
  CHECK(rs == Approx(launch(a) + alpha(a) + (p - 1) / p * n / (rate * rf)).epsilon(1e-6));
  const double ar = ns_of(a, request(CollectiveOp::all_reduce, n, ranks(1, 8), "mesh"), &t);
  CHECK(t.steps == 2);
  CHECK(ar ==
        Approx(launch(a) + 2 * alpha(a) + (p - 1) / p * n / rate * (1 + 1 / rf)).epsilon(1e-6));
}

TEST_CASE("mesh on a torus row is limited by its busiest link (routes share links)") {
  // Four chips on a 4-ring, one rank each: a rank sends a chunk 1 hop each way and one 2 hops
  // (+x, the tie's even port), so each +x link carries 3 chunks and each -x link 1.
  const ArchConfig a = links_only();
  const double n = 1 * kGiB, c = n / 4, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::all_gather, n, ranks(4, 1), "mesh"), &t);
  CHECK(ns == Approx(launch(a) + alpha(a) + 3 * c * beta).epsilon(1e-6));
}

TEST_CASE("ring all_to_all is p-1 pairwise steps in ring order") {
  const ArchConfig a = dma_only();
  const double n = 1 * kGiB, p = 8, rate = a.dma_peak_bytes_per_ns();
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::all_to_all, n, ranks(1, 8), "ring"), &t);
  CHECK(t.steps == 7);
  CHECK(ns == Approx(launch(a) + (p - 1) * (alpha(a) + n / p / rate)).epsilon(1e-6));
}

TEST_CASE("permute is one step: each rank sends n to the next, alpha + latency + n beta") {
  ArchConfig a = links_only();
  a.link.latency_ns = 500;
  const double n = 64 * 1024 * 1024.0, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::permute, n, ranks(4, 1)), &t);
  CHECK(t.algorithm == "ring");
  CHECK(t.steps == 1);
  // 3 -> 0 is the wrap-around link: every rank is one hop from the next.
  CHECK(ns == Approx(launch(a) + alpha(a) + a.link.latency_ns + n * beta).epsilon(1e-6));
}

TEST_CASE("zero-size limit: launch plus steps x alpha, exactly, for every op and algorithm") {
  ArchConfig a = trn2();
  a.link.latency_ns = 0;
  for (const CollectiveOp op : kOps) {
    for (const std::string alg : {"ring", "rdh", "mesh", "hierarchical"}) {
      const auto q = request(op, 0, ranks(16, 2), alg);
      if (!collective_request_error(a, q).empty()) continue;
      INFO(std::string(trnsim::isa::name_of(op)) << " " << alg);
      CollectiveTiming t;
      ns_of(a, q, &t);
      CHECK(t.steps > 0);
      CHECK(t.end.value ==
            trnsim::from_ns(launch(a)).value + t.steps * trnsim::from_ns(alpha(a)).value);
    }
  }
  // Step counts: ring AR 2(p-1), rdh AR 2 log2 p, mesh AR 2, hierarchical AR 2(q-1) + 2(X-1).
  CollectiveTiming t;
  ns_of(a, request(CollectiveOp::all_reduce, 0, ranks(16, 2), "ring"), &t);
  CHECK(t.steps == 62);
  ns_of(a, request(CollectiveOp::all_reduce, 0, ranks(16, 2), "rdh"), &t);
  CHECK(t.steps == 10);
  ns_of(a, request(CollectiveOp::all_reduce, 0, ranks(16, 2), "mesh"), &t);
  CHECK(t.steps == 2);
  ns_of(a, request(CollectiveOp::all_reduce, 0, ranks(16, 2), "hierarchical"), &t);
  CHECK(t.steps == 32);
}

TEST_CASE("zero-size limit with hop latency: each ring step adds one link hop") {
  const ArchConfig a = trn2();
  const double ns = ns_of(a, request(CollectiveOp::all_gather, 0, ranks(4, 1), "ring"));
  CHECK(ns == Approx(launch(a) + 3 * (alpha(a) + a.link.latency_ns)).epsilon(1e-12));
}

TEST_CASE("busbw tends to the limiting bandwidth for large n") {
  // Links limit: ring all_reduce's busbw -> 4 links' worth, rdh's -> one link's.
  const ArchConfig a = links_only();
  const double n = 16 * kGiB;
  for (const auto& [alg, links] : {std::pair<std::string, double>{"ring", 4}, {"rdh", 1}}) {
    INFO(alg);
    const double ns = ns_of(a, request(CollectiveOp::all_reduce, n, ranks(16, 1), alg));
    const double busbw = n / ns * trnsim::isa::bus_bandwidth_factor(CollectiveOp::all_reduce, 16);
    CHECK(busbw == Approx(links * a.link.bytes_per_ns).epsilon(0.01));
  }
  // trn2 as it is, one rank per chip: each step a rank's stack is read for what it sends and
  // written with what it receives, so the stack's peak over 2 limits all_gather before the
  // four links (4 x 256 B/ns) or the core's engines (16 x 23.2 B/ns) do.
  const ArchConfig t = trn2();
  const double ns = ns_of(t, request(CollectiveOp::all_gather, n, ranks(16, 1), "ring"));
  const double busbw = n / ns * trnsim::isa::bus_bandwidth_factor(CollectiveOp::all_gather, 16);
  CHECK(busbw == Approx(t.hbm.stack_bytes_per_ns / 2).epsilon(0.01));
}

TEST_CASE("time is linear in n once bandwidth dominates") {
  const ArchConfig a = trn2();
  for (const std::string alg : {"ring", "rdh", "mesh", "hierarchical"}) {
    INFO(alg);
    auto at = [&](double n) {
      return ns_of(a, request(CollectiveOp::all_reduce, n, ranks(16, 2), alg));
    };
    const double n = 256 * 1024 * 1024.0;
    const double d1 = at(2 * n) - at(n), d2 = at(4 * n) - at(2 * n);
    CHECK(d2 == Approx(2 * d1).epsilon(1e-4));
  }
}

TEST_CASE("hierarchical on one chip is the flat ring") {
  const ArchConfig a = trn2();
  for (const CollectiveOp op :
       {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
    INFO(trnsim::isa::name_of(op));
    CollectiveTiming h, r;
    const double nh = ns_of(a, request(op, 64 * 1024 * 1024.0, ranks(1, 8), "hierarchical"), &h);
    const double nr = ns_of(a, request(op, 64 * 1024 * 1024.0, ranks(1, 8), "ring"), &r);
    CHECK(h.steps == r.steps);
    CHECK(nh == nr);
  }
}

TEST_CASE("hierarchical: intra-chip steps plus an inter-chip ring over the chips' 4 channels") {
  // Links limit: on-chip steps cost alpha; the q = 2 groups of a chip share its four links.
  const ArchConfig a = links_only();
  const double n = 1 * kGiB, x = 16, q = 2, beta = 1 / a.link.bytes_per_ns;
  CollectiveTiming t;
  const double ns =
      ns_of(a, request(CollectiveOp::all_reduce, n, ranks(16, 2), "hierarchical"), &t);
  CHECK(t.steps == 2 * (q - 1) + 2 * (x - 1));
  const double formula = launch(a) + t.steps * alpha(a) + 2 * (x - 1) / x * n * beta / 4;
  CHECK(ns == Approx(formula).epsilon(0.05));
  CHECK(ns >= formula * (1 - 1e-9));
  // all_gather: chips first, then on chip; reduce_scatter: on chip first, then chips. One pass.
  for (const CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
    INFO(trnsim::isa::name_of(op));
    const double one = ns_of(a, request(op, n, ranks(16, 2), "hierarchical"), &t);
    CHECK(t.steps == (q - 1) + (x - 1));
    CHECK(one == Approx(launch(a) + t.steps * alpha(a) + (x - 1) / x * n * beta / 4).epsilon(0.05));
  }
}

TEST_CASE("two concurrent collectives on the same links take longer than one alone") {
  const ArchConfig a = trn2();
  const auto q = request(CollectiveOp::all_reduce, 64 * 1024 * 1024.0, ranks(4, 1), "ring");
  CollectiveFabric f(a);
  const CollectiveTiming first = f.schedule(q, Picoseconds(0));
  const CollectiveTiming second = f.schedule(q, Picoseconds(0));
  CHECK(first.end.value == static_cast<int64_t>(std::llround(ns_of(a, q) * 1e3)));
  CHECK(second.end.value > first.end.value);
  // Sharing every resource, the pair takes about twice as long as one alone.
  CHECK(static_cast<double>(second.end.value) > 1.8 * static_cast<double>(first.end.value));
  // Disjoint resources (another row of chips) do not delay each other.
  const auto other = request(CollectiveOp::all_reduce, 64 * 1024 * 1024.0,
                             {{4, 0}, {5, 0}, {6, 0}, {7, 0}}, "ring");
  const CollectiveTiming third = f.schedule(other, Picoseconds(0));
  CHECK(third.end.value == first.end.value);
  // A collective triggered after the others ended sees an idle fabric.
  const CollectiveTiming later = f.schedule(q, second.end);
  CHECK((later.end - second.end).value == first.end.value);
}

TEST_CASE("the algorithm is chosen by size as the runtime does: mesh, rdh, then ring") {
  const ArchConfig a = trn2();
  auto chosen = [&](double n, uint32_t chips) {
    return collective_algorithm_for(a, request(CollectiveOp::all_reduce, n, ranks(chips, 1)));
  };
  CHECK(chosen(512 * 1024, 16) == "mesh");
  CHECK(chosen(1024 * 1024, 16) == "rdh");
  CHECK(chosen(32 * 1024 * 1024, 16) == "rdh");
  CHECK(chosen(32 * 1024 * 1024, 12) == "ring");  // rdh needs a power of two
  CHECK(chosen(56 * 1024 * 1024, 16) == "ring");
  CHECK(collective_algorithm_for(a, request(CollectiveOp::permute, 1024, ranks(4, 1))) == "ring");
  CHECK(collective_algorithm_for(a, request(CollectiveOp::all_gather, 1024, ranks(4, 1), "ring")) ==
        "ring");
  CollectiveTiming t;
  ns_of(a, request(CollectiveOp::all_gather, 4 * 1024 * 1024.0, ranks(16, 1)), &t);
  CHECK(t.algorithm == "rdh");
}

TEST_CASE("requests the model cannot run are refused with the reason") {
  const ArchConfig a = trn2();
  auto error = [&](const CollectiveRequest& q) { return collective_request_error(a, q); };
  CHECK(error(request(CollectiveOp::all_reduce, 1, {})) == "a collective needs at least one rank");
  CHECK(error(request(CollectiveOp::all_reduce, 1, {{16, 0}})) ==
        "rank 0 is on chip 16, but the instance has 16 chips");
  CHECK(error(request(CollectiveOp::all_reduce, 1, {{0, 8}})) ==
        "rank 0 is core 8, but a chip has 8 cores");
  CHECK(error(request(CollectiveOp::all_reduce, 1, {{0, 1}, {0, 1}})) ==
        "rank 1 repeats chip 0 core 1");
  CHECK(error(request(CollectiveOp::all_reduce, 1, ranks(2, 1), "tree")) ==
        "unknown algorithm 'tree': expected ring, rdh, mesh or hierarchical");
  CHECK(error(request(CollectiveOp::all_reduce, 1, ranks(3, 1), "rdh")) ==
        "rdh (recursive doubling and halving) needs a power-of-two number of ranks, got 3");
  CHECK(error(request(CollectiveOp::all_reduce, 1, {{0, 0}, {0, 1}, {1, 0}}, "hierarchical")) ==
        "hierarchical needs the same number of ranks on every chip");
  CHECK(error(request(CollectiveOp::all_to_all, 1, ranks(2, 2), "hierarchical")) ==
        "hierarchical is defined for all_reduce, all_gather and reduce_scatter, not all_to_all");
  CHECK(error(request(CollectiveOp::permute, 1, ranks(2, 1), "mesh")) ==
        "permute is one step to the next rank (ring), not mesh");
  CollectiveFabric f(a);
  CHECK_THROWS_AS(f.schedule(request(CollectiveOp::all_reduce, 1, {{0, 9}}), Picoseconds(0)),
                  std::invalid_argument);
}

TEST_CASE("one rank: no steps, the collective ends at its launch") {
  const ArchConfig a = trn2();
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::all_reduce, 1 << 20, ranks(1, 1)), &t);
  CHECK(t.steps == 0);
  CHECK(ns == Approx(launch(a)));
}

TEST_CASE("through a switch (trn3) every chip is one hop, over four ports") {
  ArchConfig a = *trnsim::config::preset("trn3");
  a.dma_engine_bytes_per_ns = 1e6;
  a.hbm.stack_bytes_per_ns = 1e7;
  a.link.latency_ns = 0;
  const double n = 1 * kGiB, p = 16, beta = 1 / a.link.bytes_per_ns;
  CollectiveFabric f(a);
  CHECK(f.hops(0, 15) == 1);
  CollectiveTiming t;
  const double ns = ns_of(a, request(CollectiveOp::all_gather, n, ranks(16, 1), "ring"), &t);
  CHECK(t.channels == 4);
  CHECK(ns == Approx(launch(a) + (p - 1) * alpha(a) + (p - 1) / p * n * beta / 4).epsilon(1e-6));
}

TEST_CASE("torus routes are dimension-ordered, the shorter way round") {
  CollectiveFabric f(trn2());
  CHECK(f.hops(0, 1) == 1);
  CHECK(f.hops(0, 3) == 1);   // wrap-around
  CHECK(f.hops(0, 12) == 1);  // wrap-around in y
  CHECK(f.hops(0, 5) == 2);
  CHECK(f.hops(0, 10) == 4);
  CHECK(f.ring_channels({0, 1, 2, 3}) == 2);
  CHECK(f.ring_channels({0}) == 1);
}

// --- send/recv (p2p): one transfer from rank 0 (the sender) to rank 1 (the receiver) ----------

namespace {
// The route's resources (docs/chip.md, "Algorithms", p2p): the sender's DMA engines, the
// sender's HBM stack (read) and the receiver's (write; the same stack serves both when the cores
// share one), and each link of the route with its hop latency.
double p2p_ns(const ArchConfig& a, double n, bool same_stack, uint32_t hops) {
  const double dma = n / a.dma_peak_bytes_per_ns();
  const double stacks = (same_stack ? 2 * n : n) / a.hbm.stack_bytes_per_ns;
  const double link = hops > 0 ? n / a.link.bytes_per_ns : 0.0;
  return launch(a) + alpha(a) + std::max({dma, stacks, link}) + hops * a.link.latency_ns;
}
}  // namespace

TEST_CASE("send/recv costs launch + one step + bytes over the limiting resource of its route") {
  const ArchConfig a = trn2();
  const double n = 256 * 1024 * 1024.0;
  const uint32_t per_stack = a.hbm.cores_per_stack;
  REQUIRE(per_stack >= 1);
  SECTION("on chip, the cores on different HBM stacks") {
    REQUIRE(a.chip_cores > per_stack);
    CollectiveTiming t;
    const double ns = ns_of(a, request(CollectiveOp::send, n, {{0, 0}, {0, per_stack}}), &t);
    CHECK(t.algorithm == "p2p");
    CHECK(t.steps == 1);
    CHECK(t.link_bytes == 0);
    CHECK(ns == Approx(p2p_ns(a, n, false, 0)).epsilon(0.05));
    CHECK(ns == Approx(p2p_ns(a, n, false, 0)).epsilon(1e-6));
  }
  SECTION("on chip, the cores sharing a stack: it serves the read and the write") {
    if (per_stack < 2) return;
    const double ns = ns_of(a, request(CollectiveOp::send, n, {{0, 0}, {0, 1}}));
    CHECK(ns == Approx(p2p_ns(a, n, true, 0)).epsilon(1e-6));
  }
  SECTION("across chips: the links and their hop latency join the route") {
    ArchConfig slow = a;
    slow.link.latency_ns = 700;
    CollectiveTiming t;
    // Chips 0 and 1 are neighbours on the torus row; chips 0 and 2 are two hops apart.
    const double one = ns_of(slow, request(CollectiveOp::send, n, {{0, 0}, {1, 0}}), &t);
    CHECK(t.link_bytes == static_cast<uint64_t>(n));
    CHECK(one == Approx(p2p_ns(slow, n, false, 1)).epsilon(1e-6));
    const double two = ns_of(slow, request(CollectiveOp::send, n, {{0, 0}, {2, 0}}), &t);
    CHECK(t.link_bytes == static_cast<uint64_t>(2 * n));
    CHECK(two == Approx(p2p_ns(slow, n, false, 2)).epsilon(1e-6));
  }
  SECTION("the links limit when they are the slowest resource") {
    ArchConfig slow = a;
    slow.link.bytes_per_ns = 10;
    const double ns = ns_of(slow, request(CollectiveOp::send, n, {{0, 0}, {1, 0}}));
    CHECK(ns == Approx(launch(slow) + alpha(slow) + n / 10 + slow.link.latency_ns).epsilon(1e-6));
  }
}

TEST_CASE("send/recv of zero bytes is launch + one step (+ the hops' latency), exactly") {
  const ArchConfig a = trn2();
  CollectiveTiming t;
  ns_of(a, request(CollectiveOp::send, 0, {{0, 0}, {0, 1}}), &t);
  CHECK(t.end.value == trnsim::from_ns(launch(a)).value + trnsim::from_ns(alpha(a)).value);
  ns_of(a, request(CollectiveOp::send, 0, {{0, 0}, {1, 0}}), &t);
  CHECK(t.end.value == trnsim::from_ns(launch(a)).value + trnsim::from_ns(alpha(a)).value +
                           trnsim::from_ns(a.link.latency_ns).value);
}

TEST_CASE("send/recv reserves its route: it contends with a concurrent collective") {
  const ArchConfig a = trn2();
  const double n = 64 * 1024 * 1024.0;
  const auto p2p = request(CollectiveOp::send, n, {{0, 0}, {1, 0}});
  const double alone = ns_of(a, p2p);
  CollectiveFabric f(a);
  f.schedule(request(CollectiveOp::all_reduce, n, ranks(4, 1), "ring"), Picoseconds(0));
  const CollectiveTiming after = f.schedule(p2p, Picoseconds(0));
  CHECK(static_cast<double>(after.end.value) / 1e3 > alone);
  // A pair on other chips' resources is not delayed.
  const CollectiveTiming apart =
      f.schedule(request(CollectiveOp::send, n, {{8, 0}, {9, 0}}), Picoseconds(0));
  CHECK(static_cast<double>(apart.end.value) / 1e3 == Approx(alone).epsilon(1e-9));
}

TEST_CASE("send/recv is p2p between exactly two ranks, and p2p is only theirs") {
  const ArchConfig a = trn2();
  CHECK(collective_algorithm_for(a, request(CollectiveOp::send, 1024, {{0, 0}, {0, 1}})) == "p2p");
  CHECK(collective_request_error(a, request(CollectiveOp::send, 1024, {{0, 0}, {0, 1}}, "p2p"))
            .empty());
  CHECK_THAT(collective_request_error(a, request(CollectiveOp::send, 1024, ranks(1, 3))),
             Catch::Contains("two ranks"));
  CHECK_THAT(
      collective_request_error(a, request(CollectiveOp::send, 1024, {{0, 0}, {0, 1}}, "ring")),
      Catch::Contains("p2p"));
  CHECK_THAT(
      collective_request_error(a, request(CollectiveOp::all_reduce, 1024, ranks(1, 2), "p2p")),
      Catch::Contains("send/recv"));
}

TEST_CASE("a collective's traffic is what each rank sends in each step, at the step's data start") {
  // The memory system carries it next to the kernels' transfers (docs/chip.md, "Collective
  // traffic and the kernel's DMA"): a ring all_gather of n over p ranks sends c = n / p per
  // rank and step, p - 1 steps; an all_reduce twice as many.
  const ArchConfig a = trn2();
  const double n = 64.0 * 1024 * 1024;
  for (const auto& [op, steps] :
       {std::pair{CollectiveOp::all_gather, 3u}, std::pair{CollectiveOp::all_reduce, 6u}}) {
    CollectiveTiming t;
    ns_of(a, request(op, n, ranks(1, 4), "ring"), &t);
    REQUIRE(t.steps == steps);
    REQUIRE(t.traffic.size() == 4u * steps);
    std::vector<double> sent(4, 0.0);
    Picoseconds previous = t.start;
    for (const auto& x : t.traffic) {
      sent[x.rank] += static_cast<double>(x.bytes);
      // In step order, each after the launch and the step's fixed cost, before the end.
      CHECK(x.at >= previous);
      CHECK(x.at.value >= t.start.value + static_cast<int64_t>(a.cc.step_ns * 1000));
      CHECK(x.at < t.end);
      previous = x.at;
    }
    for (const double s : sent) CHECK(s == Approx(steps * n / 4).epsilon(1e-9));
  }
  // One rank sends nothing.
  CollectiveTiming one;
  ns_of(a, request(CollectiveOp::all_reduce, n, ranks(1, 1)), &one);
  CHECK(one.traffic.empty());
}
