// The chip summary of a multi-core run (issue 22, item 5): per-core work and end, and the load
// balance across cores, from the records alone.
#include <catch2/catch.hpp>

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
