// Contract tests for the cost rules of the opcodes NKI kernels brought (tensor_scalar_reduce,
// tensor_tensor_scan, tensor_scalar_cumulative, max8, find_index8, match_replace8,
// range_select, copy_predicated, local_gather, gather) and the two-statistic-group bn_stats.
// Each expected value is worked out by hand from the documented formula (I1: the nki.isa cost
// notes, /work/notes/nki-api.md section 3) or the named assumption (docs/isa.md), on trn1:
// MIN_II = 64 cycles, GpSimd start = 150 cycles, no VectorE performance modes.
#include <catch2/catch.hpp>

#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/instruction.hpp"
#include "models/neuroncore/cost.hpp"

using trnsim::Engine;
using trnsim::isa::AluOp;
using trnsim::isa::DType;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::isa::psum_ap;
using trnsim::isa::sbuf_ap;
using trnsim::isa::ScalarOperand;

namespace {

uint64_t cycles(const Instruction& in) {
  return trnsim::models::instruction_cycles(in, trnsim::config::trn1()).value;
}

Instruction make(Opcode op, Engine e, uint32_t n, DType t = DType::fp32) {
  Instruction in;
  in.opcode = op;
  in.engine = e;
  in.src[0] = sbuf_ap(t, 0, 128, 0, {{1, n}});
  in.dst = sbuf_ap(t, 0, 128, 65536, {{1, n}});
  return in;
}

}  // namespace

TEST_CASE("tensor_scalar_reduce costs max(MIN_II, N) + MIN_II", "[contract][cost]") {
  Instruction in = make(Opcode::tensor_scalar_reduce, Engine::vector, 512);
  in.op0 = AluOp::multiply;
  in.operand0 = ScalarOperand::immediate(2.0f);
  in.op1 = AluOp::add;
  in.accumulate = sbuf_ap(DType::fp32, 0, 128, 131072, {{1, 1}});
  CHECK(cycles(in) == 512 + 64);
  in = make(Opcode::tensor_scalar_reduce, Engine::vector, 16);
  CHECK(cycles(in) == 64 + 64);  // below MIN_II the initiation interval rules
}

TEST_CASE("tensor_tensor_scan costs max(MIN_II, 2N)", "[contract][cost]") {
  Instruction in = make(Opcode::tensor_tensor_scan, Engine::vector, 512);
  in.src[1] = sbuf_ap(DType::fp32, 0, 128, 16384, {{1, 512}});
  CHECK(cycles(in) == 1024);
  in = make(Opcode::tensor_tensor_scan, Engine::vector, 20);
  CHECK(cycles(in) == 64);  // 2N = 40 < MIN_II
}

TEST_CASE("tensor_scalar_cumulative costs max(MIN_II, N) (assumption: one-input VectorE rate)",
          "[contract][cost]") {
  CHECK(cycles(make(Opcode::tensor_scalar_cumulative, Engine::vector, 700)) == 700);
  CHECK(cycles(make(Opcode::tensor_scalar_cumulative, Engine::vector, 8)) == 64);
}

TEST_CASE("max8 and find_index8 cost N, with no MIN_II floor", "[contract][cost]") {
  CHECK(cycles(make(Opcode::max8, Engine::vector, 1024)) == 1024);
  CHECK(cycles(make(Opcode::max8, Engine::vector, 8)) == 8);
  CHECK(cycles(make(Opcode::find_index8, Engine::vector, 300)) == 300);
}

TEST_CASE("match_replace8 costs max(MIN_II, N) (I1's min read as a typo for max)",
          "[contract][cost]") {
  CHECK(cycles(make(Opcode::match_replace8, Engine::vector, 1000)) == 1000);
  CHECK(cycles(make(Opcode::match_replace8, Engine::vector, 32)) == 64);
}

TEST_CASE("range_select costs max(MIN_II, N)", "[contract][cost]") {
  CHECK(cycles(make(Opcode::range_select, Engine::vector, 2048)) == 2048);
  CHECK(cycles(make(Opcode::range_select, Engine::vector, 10)) == 64);
}

TEST_CASE(
    "copy_predicated costs max(MIN_II, N) with predicate and data split over PSUM and "
    "SBUF, else max(MIN_II, 2N)",
    "[contract][cost]") {
  Instruction in = make(Opcode::copy_predicated, Engine::vector, 512);
  in.src[0] = sbuf_ap(DType::uint8, 0, 128, 0, {{1, 512}});
  in.src[1] = sbuf_ap(DType::fp32, 0, 128, 4096, {{1, 512}});
  CHECK(cycles(in) == 1024);  // both in SBUF
  in.src[1] = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  CHECK(cycles(in) == 512);  // data in PSUM, predicate in SBUF
  in.src[0] = psum_ap(DType::uint8, 0, 128, 4096, {{1, 512}});
  CHECK(cycles(in) == 1024);  // both in PSUM: no split
}

TEST_CASE("local_gather costs 150 + n*E/C, C = ((28 + 4E) / 4E) / min(4 / element bytes, E)",
          "[contract][cost]") {
  Instruction in = make(Opcode::local_gather, Engine::gpsimd, 256);
  in.src[1] = sbuf_ap(DType::uint16, 0, 128, 16384, {{1, 4}});
  // fp32, E = 4: C = (44 / 16) / min(1, 4) = 2.75; 64 * 4 / 2.75 = 93.1, rounded up: 94.
  in.gather_elements = 4;
  in.gather_indices = 64;
  CHECK(cycles(in) == 150 + 94);
  // bf16, E = 1: C = (32 / 4) / min(2, 1) = 8; 64 / 8 = 8.
  in.src[0].edit().dtype = DType::bf16;
  in.gather_elements = 1;
  CHECK(cycles(in) == 150 + 8);
  // bf16, E = 8, 16 indices: C = (60 / 32) / min(2, 8) = 0.9375; 128 / 0.9375 = 136.5 -> 137.
  in.gather_elements = 8;
  in.gather_indices = 16;
  CHECK(cycles(in) == 150 + 137);
}

TEST_CASE("gather costs 150 + N (assumption: GpSimd start as iota, one element a cycle)",
          "[contract][cost]") {
  Instruction in = make(Opcode::gather, Engine::gpsimd, 256);
  in.src[1] = sbuf_ap(DType::uint32, 0, 128, 16384, {{1, 256}});
  CHECK(cycles(in) == 150 + 256);
}

TEST_CASE("bn_stats with NKI's six statistics costs max(MIN_II, N) like three",
          "[contract][cost]") {
  Instruction in = make(Opcode::bn_stats, Engine::vector, 512);
  in.dst = sbuf_ap(DType::fp32, 0, 128, 65536, {{1, 6}});
  CHECK(cycles(in) == 512);
}

TEST_CASE("tensor_reduce with negate costs what it costs without (I1: negation is free)",
          "[contract][cost]") {
  Instruction in = make(Opcode::tensor_reduce, Engine::vector, 512);
  in.op0 = AluOp::max;
  in.dst = sbuf_ap(DType::fp32, 0, 128, 65536, {{1, 1}});
  const uint64_t plain = cycles(in);
  in.negate = true;
  CHECK(cycles(in) == plain);
  CHECK(plain == 512);
}
