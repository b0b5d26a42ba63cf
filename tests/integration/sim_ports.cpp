// Shared ports in the SystemC NeuronCore (models::ports_of): two independent instructions on
// different engines overlap unless they need a common port. v2 (trn1): VectorE and GpSimdE
// share SBUF access, VectorE and ScalarE share PSUM access. v3 (trn2): those are gone, except
// two engines on one PSUM bank, and VectorE's performance modes share GpSimdE's bus.
// One simulation per test case: catch_discover_tests runs each in a process of its own.
//
// Costs by hand (fp32, so no VectorE performance mode unless stated): tensor_tensor fp32 over
// N = 512 is 2N = 1024 cycles; tensor_copy and activation over 512 are 512 cycles.
#include <catch2/catch.hpp>
#include <vector>

#include "../contract/print_units.hpp"
#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "models/neuroncore/cost.hpp"
#include "sim_support.hpp"

using namespace trnsim;
using namespace trnsim;
using namespace trnsim::isa;
using namespace trnsim::config;
using trnsim_test::Recorder;

namespace {

// tensor_tensor add of two fp32 [128 x 512] SBUF tiles at `offset`, `offset + 4096`, into
// `offset + 8192` (bytes per partition).
Instruction sbuf_tensor_tensor(Engine e, uint64_t offset) {
  Instruction in;
  in.engine = e;
  in.opcode = Opcode::tensor_tensor;
  in.op0 = AluOp::add;
  in.src[0] = sbuf_ap(DType::fp32, 0, 128, offset, {{1, 512}});
  in.src[1] = sbuf_ap(DType::fp32, 0, 128, offset + 4096, {{1, 512}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, offset + 8192, {{1, 512}});
  return in;
}

// Reads fp32 [128 x 512] from PSUM at byte `psum_offset` (one 2 KiB bank when it is a
// multiple of 2048) into SBUF: tensor_copy on VectorE, activation on ScalarE.
Instruction from_psum(Engine e, uint64_t psum_offset, uint64_t sbuf_offset) {
  Instruction in;
  in.engine = e;
  in.opcode = e == Engine::scalar ? Opcode::activation : Opcode::tensor_copy;
  in.src[0] = psum_ap(DType::fp32, 0, 128, psum_offset, {{1, 512}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, sbuf_offset, {{1, 512}});
  return in;
}

models::SimulationResult run(const Program& p, const ArchConfig& arch, Recorder& rec) {
  validate(p, arch);
  const auto result = models::simulate(p, arch, nullptr, rec);
  REQUIRE(result.completed);
  REQUIRE(rec.instructions.size() == 2);
  return result;
}

// Both ready at 0; one runs first, the other waits for the port and starts when it ends.
void check_serialized(const models::InstructionRecord& a, const models::InstructionRecord& b) {
  const bool a_first = a.start <= b.start;
  const auto& first = a_first ? a : b;
  const auto& second = a_first ? b : a;
  CHECK(first.ready == Picoseconds(0));
  CHECK(second.ready == Picoseconds(0));
  CHECK(first.start == Picoseconds(0));
  CHECK(first.port_wait == Picoseconds(0));
  CHECK(second.start == first.end);
  CHECK(second.port_wait > Picoseconds(0));
  CHECK(second.port_wait == first.end);
}

void check_overlapped(const models::InstructionRecord& a, const models::InstructionRecord& b) {
  CHECK(a.start == Picoseconds(0));
  CHECK(b.start == Picoseconds(0));
  CHECK(a.port_wait == Picoseconds(0));
  CHECK(b.port_wait == Picoseconds(0));
}

}  // namespace

TEST_CASE("ports: on trn1 VectorE and GpSimdE on SBUF do not overlap") {
  const ArchConfig arch = trn1();
  Program p;
  p.stream(Engine::vector).push_back(sbuf_tensor_tensor(Engine::vector, 0));
  p.stream(Engine::gpsimd).push_back(sbuf_tensor_tensor(Engine::gpsimd, 16384));
  Recorder rec;
  const auto result = run(p, arch, rec);
  const auto& v = rec.of(Engine::vector);
  const auto& g = rec.of(Engine::gpsimd);
  check_serialized(v, g);
  // 1024 cycles each: VectorE at 1120 MHz = 914285.7 -> 914286 ps; GpSimdE at 1400 MHz =
  // 731428.6 -> 731429 ps. Serialized, the run takes the sum.
  CHECK(v.end - v.start == Picoseconds(914286));
  CHECK(g.end - g.start == Picoseconds(731429));
  CHECK(result.end_time == Picoseconds(914286 + 731429));
}

TEST_CASE("ports: on trn2 VectorE and GpSimdE on SBUF overlap") {
  const ArchConfig arch = trn2();
  Program p;
  p.stream(Engine::vector).push_back(sbuf_tensor_tensor(Engine::vector, 0));
  p.stream(Engine::gpsimd).push_back(sbuf_tensor_tensor(Engine::gpsimd, 16384));
  Recorder rec;
  const auto result = run(p, arch, rec);
  const auto& v = rec.of(Engine::vector);
  const auto& g = rec.of(Engine::gpsimd);
  check_overlapped(v, g);
  // 1024 cycles: VectorE at 960 MHz = 1066666.7 -> 1066667 ps; GpSimdE at 1200 MHz =
  // 853333.3 -> 853334 ps. The run takes the longer.
  CHECK(v.end == Picoseconds(1066667));
  CHECK(g.end == Picoseconds(853334));
  CHECK(result.end_time == Picoseconds(1066667));
}

TEST_CASE("ports: on trn2 a VectorE performance-mode copy and GpSimdE on SBUF do not overlap") {
  const ArchConfig arch = trn2();
  Program p;
  // bf16, all SBUF, contiguous: 4x mode, 2048 / 4 = 512 cycles at 960 MHz = 533334 ps.
  Instruction fast;
  fast.engine = Engine::vector;
  fast.opcode = Opcode::tensor_copy;
  fast.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 2048}});
  fast.dst = sbuf_ap(DType::bf16, 0, 128, 4096, {{1, 2048}});
  p.stream(Engine::vector).push_back(fast);
  p.stream(Engine::gpsimd).push_back(sbuf_tensor_tensor(Engine::gpsimd, 16384));
  Recorder rec;
  run(p, arch, rec);
  const auto& v = rec.of(Engine::vector);
  const auto& g = rec.of(Engine::gpsimd);
  CHECK(v.cycles == Cycles(512));
  check_serialized(v, g);
  CHECK(v.end - v.start == Picoseconds(533334));
  CHECK(g.end - g.start == Picoseconds(853334));
}

TEST_CASE("ports: on trn2 two engines on one PSUM bank do not overlap") {
  const ArchConfig arch = trn2();
  Program p;
  p.stream(Engine::vector).push_back(from_psum(Engine::vector, 0, 0));
  p.stream(Engine::scalar).push_back(from_psum(Engine::scalar, 0, 4096));  // bank 0 too
  Recorder rec;
  const auto result = run(p, arch, rec);
  const auto& v = rec.of(Engine::vector);
  const auto& s = rec.of(Engine::scalar);
  check_serialized(v, s);
  // 512 cycles: VectorE at 960 MHz = 533334 ps; ScalarE at 1200 MHz = 426667 ps.
  CHECK(v.end - v.start == Picoseconds(533334));
  CHECK(s.end - s.start == Picoseconds(426667));
  CHECK(result.end_time == Picoseconds(533334 + 426667));
}

TEST_CASE("ports: on trn2 two engines on different PSUM banks overlap") {
  const ArchConfig arch = trn2();
  Program p;
  p.stream(Engine::vector).push_back(from_psum(Engine::vector, 0, 0));        // bank 0
  p.stream(Engine::scalar).push_back(from_psum(Engine::scalar, 2048, 4096));  // bank 1
  Recorder rec;
  const auto result = run(p, arch, rec);
  const auto& v = rec.of(Engine::vector);
  const auto& s = rec.of(Engine::scalar);
  check_overlapped(v, s);
  CHECK(v.end == Picoseconds(533334));
  CHECK(s.end == Picoseconds(426667));
  CHECK(result.end_time == Picoseconds(533334));
}

TEST_CASE("ports: on trn1 VectorE and ScalarE on PSUM do not overlap, even on different banks") {
  const ArchConfig arch = trn1();
  Program p;
  p.stream(Engine::vector).push_back(from_psum(Engine::vector, 0, 0));        // bank 0
  p.stream(Engine::scalar).push_back(from_psum(Engine::scalar, 2048, 4096));  // bank 1
  Recorder rec;
  run(p, arch, rec);
  const auto& v = rec.of(Engine::vector);
  const auto& s = rec.of(Engine::scalar);
  check_serialized(v, s);
  // 512 cycles: VectorE at 1120 MHz = 457142.9 -> 457143 ps; ScalarE at 1400 MHz = 365714.3
  // -> 365715 ps.
  CHECK(v.end - v.start == Picoseconds(457143));
  CHECK(s.end - s.start == Picoseconds(365715));
}
