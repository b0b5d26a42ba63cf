// The chip summary of a multi-core run (issue 22, item 5): per-core work and end, and the load
// balance across cores, from the records alone; and the DMA busy time's union, kept bounded.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "sim/report/stats.hpp"

using namespace trnsim;

namespace {

isa::Program two_engine_program() {
  isa::Program p;
  p.name = "chip_stats";
  const uint16_t q = p.add_queue("qLoad");
  isa::Instruction copy;
  copy.opcode = isa::Opcode::tensor_copy;
  copy.engine = Engine::vector;
  copy.src[0] = isa::sbuf_ap(isa::DType::bf16, 0, 128, 0, {{1, 64}});
  copy.dst = isa::sbuf_ap(isa::DType::bf16, 0, 128, 128, {{1, 64}});
  p.stream(Engine::vector).push_back(copy);
  isa::Instruction dma;
  dma.opcode = isa::Opcode::dma_copy;
  dma.engine = Engine::sync;
  dma.src[0] = isa::hbm_ap(isa::DType::bf16, 0, 128, 64, {{1, 64}});
  dma.dst = isa::sbuf_ap(isa::DType::bf16, 0, 128, 0, {{1, 64}});
  dma.dma_queue = q;
  p.stream(Engine::sync).push_back(dma);
  return p;
}

models::InstructionRecord instruction(int core, int64_t start_ns, int64_t end_ns) {
  models::InstructionRecord r;
  r.core = core;
  r.engine = Engine::vector;
  r.ready = r.start = Picoseconds(start_ns * 1000);
  r.end = r.results = Picoseconds(end_ns * 1000);
  return r;
}

models::TransferRecord transfer(int core, int64_t start_ns, int64_t end_ns) {
  models::TransferRecord t;
  t.core = core;
  t.issuer = Engine::sync;
  t.issued = t.start = Picoseconds(start_ns * 1000);
  t.end = Picoseconds(end_ns * 1000);
  t.bytes = 1024;
  return t;
}

}  // namespace

TEST_CASE("per-core stats: each core's busiest work is its most active engine or its DMA") {
  const isa::Program p = two_engine_program();
  const config::ArchConfig arch = config::trn2();
  sim::StatsCollector s(p, arch, 2);
  // Core 0: VectorE busy 10 ns, DMA busy [0, 4) and [2, 6) overlapping: 6 ns of union.
  s.on_instruction(instruction(0, 0, 10));
  s.on_transfer(transfer(0, 2, 6));
  s.on_transfer(transfer(0, 0, 4));  // arrives after a later-starting one: still a union of 6
  // Core 1: VectorE busy 2 ns, DMA busy 20 ns, ending at 25 ns.
  s.on_instruction(instruction(1, 0, 2));
  s.on_transfer(transfer(1, 5, 25));
  CHECK(s.core_dma_active(0) == Picoseconds(6000));
  CHECK(s.core_work(0) == Picoseconds(10000));
  CHECK(s.core_work(1) == Picoseconds(20000));
  CHECK(s.core(0).end == Picoseconds(10000));
  CHECK(s.core(1).end == Picoseconds(25000));
  CHECK(s.core(0).dma_bytes == 2048);
  CHECK(s.core(1).instructions == 1);
  // The chip-wide DMA time is the union over every core: [0, 6) and [5, 25).
  CHECK(s.dma_active() == Picoseconds(25000));
}

TEST_CASE("collective overlap: time in a collective with the core's compute busy, and exposed") {
  isa::Program p = two_engine_program();
  // A program with a collective (the collector keeps compute intervals only then).
  isa::Instruction cc_in;
  cc_in.opcode = isa::Opcode::collective;
  cc_in.engine = Engine::sync;
  p.stream(Engine::sync).push_back(cc_in);
  const config::ArchConfig arch = config::trn2();
  sim::StatsCollector s(p, arch, 2);
  // Core 0 computes over [0, 10) and [30, 35); core 1 over [0, 25). A DMA's trigger on SyncE is
  // not compute.
  s.on_instruction(instruction(0, 0, 10));
  s.on_instruction(instruction(0, 30, 35));
  s.on_instruction(instruction(1, 0, 25));
  models::CollectiveRecord cc;
  cc.first_core = 0;
  cc.ranks = 2;
  cc.first_trigger = Picoseconds(5000);
  cc.triggered = Picoseconds(8000);
  cc.start = Picoseconds(10000);
  cc.end = Picoseconds(40000);
  s.on_collective(cc);
  // The collective spans [5, 40): 35 ns.
  const auto o0 = s.collective_overlap(0);
  CHECK(o0.in_collectives == Picoseconds(35000));
  CHECK(o0.overlapped == Picoseconds(5000 + 5000));  // [5, 10) and [30, 35)
  CHECK(o0.exposed == Picoseconds(25000));
  const auto o1 = s.collective_overlap(1);
  CHECK(o1.overlapped == Picoseconds(20000));  // [5, 25)
  CHECK(o1.exposed == Picoseconds(15000));
  // Every core takes part: it ends with the collective.
  CHECK(s.core(0).end == Picoseconds(40000));
  CHECK(s.core(1).end == Picoseconds(40000));
  // A collective of a group of one core (core 1) counts for that core only.
  models::CollectiveRecord solo = cc;
  solo.first_core = 1;
  solo.ranks = 1;
  solo.first_trigger = Picoseconds(50000);
  solo.end = Picoseconds(60000);
  s.on_collective(solo);
  CHECK(s.collective_overlap(0).in_collectives == Picoseconds(35000));
  CHECK(s.collective_overlap(1).in_collectives == Picoseconds(45000));
  CHECK(s.core(0).end == Picoseconds(40000));
  CHECK(s.core(1).end == Picoseconds(60000));
}

namespace {
// A horizon that a test sets by hand: no record to come starts before `from`.
struct FixedHorizon : models::TransferHorizon {
  Picoseconds from;
  Picoseconds later_starts_from() const override { return from; }
};
}  // namespace

TEST_CASE("DMA busy time: pieces that end before the horizon are summed and dropped, same union") {
  const isa::Program p = two_engine_program();
  const config::ArchConfig arch = config::trn2();
  // Transfers of core 1 whose gaps leave a union piece per transfer (as on a compute-bound run),
  // delivered in end order, some overlapping the next: 20,000 of them, far past the fold
  // threshold. Two cores, so that the core's own union is folded too.
  std::vector<models::TransferRecord> records;
  uint64_t seed = 12345;
  auto next = [&seed](uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  int64_t t = 0;
  for (int i = 0; i < 20000; ++i) {
    t += 10 + static_cast<int64_t>(next(40));
    const int64_t length = 5 + static_cast<int64_t>(next(30));  // sometimes past the next start
    records.push_back(transfer(1, t, t + length));
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const auto& a, const auto& b) { return a.end < b.end; });
  // The exact horizon of each record: the earliest start of the ones after it.
  std::vector<Picoseconds> later(records.size() + 1, Picoseconds(INT64_MAX));
  for (size_t i = records.size(); i-- > 0;) {
    later[i] = records[i].start < later[i + 1] ? records[i].start : later[i + 1];
  }
  sim::StatsCollector whole(p, arch, 2), folded(p, arch, 2), lagging(p, arch, 2);
  FixedHorizon h, zero;
  size_t most_held = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    whole.on_transfer(records[i]);
    models::TransferRecord r = records[i];
    h.from = later[i + 1];
    r.horizon = &h;
    folded.on_transfer(r);
    most_held = std::max(most_held, folded.dma_pieces_held());
    r.horizon = &zero;  // a horizon at 0 folds nothing
    lagging.on_transfer(r);
  }
  CHECK(whole.dma_pieces_held() > 10000);
  CHECK(folded.dma_active() == whole.dma_active());
  CHECK(folded.core_dma_active(1) == whole.core_dma_active(1));
  CHECK(folded.core_dma_active(1) == whole.dma_active());
  CHECK(lagging.dma_active() == whole.dma_active());
  CHECK(lagging.dma_pieces_held() == whole.dma_pieces_held());
  CHECK(most_held < 4096);  // folded whenever it reached the threshold
}
