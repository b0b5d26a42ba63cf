// Contract tests for the cost rules of the opcodes that tests/contract/compute_cost_rules.cpp
// does not cover (the opcode table in isa/instruction.cpp, docs/isa.md), and for the shared
// ports an instruction holds (models::ports_of). Every expected value is worked out by hand
// from the documented formula and the preset's parameters: MIN_II = 64 cycles, GpSimd fixed
// cost = 150 cycles, DMA trigger = 8 ns; trn1 clocks
// TensorE 2800, VectorE 1120, ScalarE/GpSimdE/SyncE 1400 MHz; trn2 2400, 960, 1200 MHz.
//
// The plain I1 formulas are checked on trn1 (no VectorE performance modes); rules that only
// exist on v3 (fp8 matmul rate, DGE, PSUM bank ports) on trn2.
#include <catch2/catch.hpp>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/instruction.hpp"
#include "models/dma/dma_plan.hpp"
#include "models/neuroncore/cost.hpp"
#include "print_units.hpp"

using trnsim::Cycles;
using trnsim::Engine;
using trnsim::Picoseconds;
using trnsim::config::ArchConfig;
using trnsim::isa::AccessPattern;
using trnsim::isa::ActivationFunction;
using trnsim::isa::AluOp;
using trnsim::isa::DType;
using trnsim::isa::hbm_ap;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::isa::psum_ap;
using trnsim::isa::sbuf_ap;
using trnsim::isa::ScalarOperand;
using trnsim::isa::SemaphoreWait;
using trnsim::models::instruction_cycles;
using trnsim::models::instruction_time;
using trnsim::models::kPortPsumBank0;
using trnsim::models::kPortPsumVectorScalar;
using trnsim::models::kPortSbufVectorGpSimd;
using trnsim::models::plan_transfer;
using trnsim::models::ports_of;

namespace {

uint64_t cycles(const Instruction& in) {
  return instruction_cycles(in, trnsim::config::trn1()).value;
}

uint64_t trn2_cycles(const Instruction& in) {
  return instruction_cycles(in, trnsim::config::trn2()).value;
}

// trn1 with MIN_II lowered to 16: lets a formula's N term show where valid shapes cannot
// exceed the real MIN_II (the 32x32 VectorE transpose).
uint64_t low_min_ii_cycles(const Instruction& in) {
  ArchConfig a = trnsim::config::trn1();
  a.min_ii_cycles = 16;
  return instruction_cycles(in, a).value;
}

Instruction base(Opcode op, Engine e) {
  Instruction in;
  in.opcode = op;
  in.engine = e;
  return in;
}

// One-input instruction: src [P x n] in SBUF, dst of the same shape further along.
Instruction unary(Opcode op, Engine e, uint32_t n, DType t = DType::bf16, uint32_t p = 128) {
  Instruction in = base(op, e);
  in.src[0] = sbuf_ap(t, 0, p, 0, {{1, n}});
  in.dst = sbuf_ap(t, 0, p, 65536, {{1, n}});
  return in;
}

Instruction stt(DType t, AluOp op0, AluOp op1, uint32_t n, Engine e = Engine::vector) {
  Instruction in = base(Opcode::scalar_tensor_tensor, e);
  in.op0 = op0;
  in.operand0 = ScalarOperand::immediate(1.5f);
  in.op1 = op1;
  in.src[0] = sbuf_ap(t, 0, 128, 0, {{1, n}});
  in.src[1] = sbuf_ap(t, 0, 128, 32768, {{1, n}});
  in.dst = sbuf_ap(t, 0, 128, 65536, {{1, n}});
  return in;
}

Instruction pe_transpose(uint32_t p, uint32_t f) {
  Instruction in = base(Opcode::transpose, Engine::tensor);
  in.src[0] = sbuf_ap(DType::bf16, 0, p, 0, {{1, f}});
  in.dst = psum_ap(DType::fp32, 0, f, 0, {{1, p}});
  return in;
}

Instruction dve_transpose(uint32_t p, uint32_t f) {
  Instruction in = base(Opcode::transpose, Engine::vector);
  in.src[0] = sbuf_ap(DType::bf16, 0, p, 0, {{1, f}});
  in.dst = sbuf_ap(DType::bf16, 0, f, 4096, {{1, p}});
  return in;
}

Instruction iota(Engine e, std::initializer_list<trnsim::isa::Dim> dims) {
  Instruction in = base(Opcode::iota, e);
  in.dst = sbuf_ap(DType::int32, 0, 128, 0, dims);
  in.extra.edit().index_base = 3;
  in.extra.edit().partition_step = 1;
  return in;
}

Instruction select(uint32_t n) {
  Instruction in = base(Opcode::select, Engine::vector);
  in.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, n}});
  in.src[1] = sbuf_ap(DType::fp32, 0, 128, 16384, {{1, n}});
  in.src[2] = sbuf_ap(DType::fp32, 0, 128, 32768, {{1, n}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, 49152, {{1, n}});
  return in;
}

Instruction bn_stats(uint32_t n) {
  Instruction in = base(Opcode::bn_stats, Engine::vector);
  in.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, n}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, 4096, {{1, 3}});
  return in;
}

Instruction bn_aggr(uint32_t groups) {
  Instruction in = base(Opcode::bn_aggr, Engine::vector);
  in.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 3 * groups}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, 8192, {{1, 2}});
  return in;
}

Instruction partition_reduce(Opcode op, uint32_t n) {
  Instruction in = base(op, Engine::gpsimd);
  in.op0 = AluOp::add;
  in.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, n}});
  in.dst = sbuf_ap(DType::fp32, 0, op == Opcode::partition_reduce ? 1 : 128, 16384, {{1, n}});
  return in;
}

Instruction matmul(DType stationary_t, uint32_t n_stationary, DType moving_t, uint32_t n_moving) {
  Instruction in = base(Opcode::matmul, Engine::tensor);
  in.src[0] = sbuf_ap(stationary_t, 0, 128, 0, {{1, n_stationary}});
  in.src[1] = sbuf_ap(moving_t, 0, 128, 4096, {{1, n_moving}});
  in.dst = psum_ap(DType::fp32, 0, n_stationary, 0, {{1, n_moving}});
  return in;
}

// dma_transpose of an HBM [p x f] bf16 tile into SBUF [f x p].
Instruction dma_transpose_from_hbm(uint32_t p, uint32_t f) {
  Instruction in = base(Opcode::dma_transpose, Engine::sync);
  in.src[0] = hbm_ap(DType::bf16, 0, p, f, {{1, f}});
  in.dst = sbuf_ap(DType::bf16, 0, f, 0, {{1, p}});
  return in;
}

Instruction dma_transpose_sbuf(uint32_t p, uint32_t f) {
  Instruction in = base(Opcode::dma_transpose, Engine::sync);
  in.src[0] = sbuf_ap(DType::bf16, 0, p, 0, {{1, f}});
  in.dst = sbuf_ap(DType::bf16, 0, f, 65536, {{1, p}});
  return in;
}

Instruction dma_copy(const AccessPattern& src, const AccessPattern& dst, Engine e = Engine::sync) {
  Instruction in = base(Opcode::dma_copy, e);
  in.src[0] = src;
  in.dst = dst;
  return in;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// scalar_tensor_tensor

TEST_CASE(
    "scalar_tensor_tensor costs N for bf16 subtract then multiply with N even, else 2N "
    "(at least 1 cycle)",
    "[contract][cost]") {
  // The fast case, on both engines that run it.
  CHECK(cycles(stt(DType::bf16, AluOp::subtract, AluOp::multiply, 512)) == 512);
  CHECK(cycles(stt(DType::bf16, AluOp::subtract, AluOp::multiply, 512, Engine::gpsimd)) == 512);
  // No MIN_II floor in the I1 note: a short fast instruction costs N.
  CHECK(cycles(stt(DType::bf16, AluOp::subtract, AluOp::multiply, 2)) == 2);
  CHECK(cycles(stt(DType::bf16, AluOp::subtract, AluOp::multiply, 40)) == 40);
  // N odd: 2N.
  CHECK(cycles(stt(DType::bf16, AluOp::subtract, AluOp::multiply, 511)) == 1022);
  CHECK(cycles(stt(DType::bf16, AluOp::subtract, AluOp::multiply, 1)) == 2);
  // Other op pairs, including the fast pair in the other order: 2N.
  CHECK(cycles(stt(DType::bf16, AluOp::multiply, AluOp::subtract, 512)) == 1024);
  CHECK(cycles(stt(DType::bf16, AluOp::add, AluOp::multiply, 512)) == 1024);
  CHECK(cycles(stt(DType::bf16, AluOp::subtract, AluOp::add, 512)) == 1024);
  // Not all bf16: 2N.
  CHECK(cycles(stt(DType::fp32, AluOp::subtract, AluOp::multiply, 512)) == 1024);
  CHECK(cycles(stt(DType::fp16, AluOp::subtract, AluOp::multiply, 512)) == 1024);
  Instruction fp32_dst = stt(DType::bf16, AluOp::subtract, AluOp::multiply, 512);
  fp32_dst.dst.edit().dtype = DType::fp32;
  CHECK(cycles(fp32_dst) == 1024);
  Instruction fp32_src1 = stt(DType::bf16, AluOp::subtract, AluOp::multiply, 512);
  fp32_src1.src[1].edit().dtype = DType::fp32;
  CHECK(cycles(fp32_src1) == 1024);
  // The same on trn2: scalar_tensor_tensor has no performance mode.
  CHECK(trn2_cycles(stt(DType::bf16, AluOp::subtract, AluOp::multiply, 512)) == 512);
  CHECK(trn2_cycles(stt(DType::bf16, AluOp::add, AluOp::multiply, 512)) == 1024);
}

// ---------------------------------------------------------------------------------------------
// transpose

TEST_CASE("transpose on TensorE costs max(P, min(64, F))", "[contract][cost]") {
  CHECK(cycles(pe_transpose(128, 128)) == 128);  // P dominates
  CHECK(cycles(pe_transpose(100, 16)) == 100);
  CHECK(cycles(pe_transpose(32, 128)) == 64);  // min(64, 128) = 64 > P
  CHECK(cycles(pe_transpose(16, 40)) == 40);   // min(64, 40) = 40 > P
  CHECK(cycles(pe_transpose(8, 4)) == 8);
  CHECK(cycles(pe_transpose(1, 1)) == 1);
  // Not floored at MIN_II, and no VectorE mode on TensorE.
  CHECK(trn2_cycles(pe_transpose(16, 40)) == 40);
  // Time at the TensorE clock: 128 cycles at 2800 MHz = 45714.3 ps -> 45715 ps.
  CHECK(instruction_time(pe_transpose(128, 128), trnsim::config::trn1()) == Picoseconds(45715));
}

TEST_CASE("transpose on VectorE costs max(MIN_II, N)", "[contract][cost]") {
  // A 32x32 block at most: N = F <= 32 < MIN_II.
  CHECK(cycles(dve_transpose(32, 32)) == 64);
  CHECK(cycles(dve_transpose(4, 8)) == 64);
  CHECK(trn2_cycles(dve_transpose(32, 32)) == 64);
  // With MIN_II lowered the N term shows: N = F, not P and not P x F.
  CHECK(low_min_ii_cycles(dve_transpose(32, 32)) == 32);
  CHECK(low_min_ii_cycles(dve_transpose(4, 24)) == 24);
  CHECK(low_min_ii_cycles(dve_transpose(32, 8)) == 16);
}

// ---------------------------------------------------------------------------------------------
// iota

TEST_CASE("iota on GpSimdE costs 150 + N", "[contract][cost]") {
  CHECK(cycles(iota(Engine::gpsimd, {{1, 512}})) == 662);
  CHECK(cycles(iota(Engine::gpsimd, {{1, 1}})) == 151);
  // N counts every free element of dst: 4 x 8 = 32.
  CHECK(cycles(iota(Engine::gpsimd, {{8, 4}, {1, 8}})) == 182);
  // The fixed part is the preset's parameter.
  ArchConfig a = trnsim::config::trn1();
  a.gpsimd_fixed_cycles = 10;
  CHECK(instruction_cycles(iota(Engine::gpsimd, {{1, 512}}), a) == Cycles(522));
  // 662 cycles at 1400 MHz = 472857.1 ps -> 472858 ps.
  CHECK(instruction_time(iota(Engine::gpsimd, {{1, 512}}), trnsim::config::trn1()) ==
        Picoseconds(472858));
}

TEST_CASE("iota on VectorE costs max(MIN_II, N)", "[contract][cost]") {
  CHECK(cycles(iota(Engine::vector, {{1, 512}})) == 512);
  CHECK(cycles(iota(Engine::vector, {{1, 10}})) == 64);
  CHECK(cycles(iota(Engine::vector, {{100, 10}, {1, 10}})) == 100);
  CHECK(trn2_cycles(iota(Engine::vector, {{1, 512}})) == 512);
}

// ---------------------------------------------------------------------------------------------
// GpSimdE fixed-cost instructions

TEST_CASE("affine_select costs 150 + N", "[contract][cost]") {
  Instruction in = unary(Opcode::affine_select, Engine::gpsimd, 512, DType::fp32);
  in.op0 = AluOp::is_ge;
  CHECK(cycles(in) == 662);
  CHECK(cycles(unary(Opcode::affine_select, Engine::gpsimd, 1)) == 151);
  CHECK(cycles(unary(Opcode::affine_select, Engine::gpsimd, 64)) == 214);
  CHECK(trn2_cycles(unary(Opcode::affine_select, Engine::gpsimd, 512)) == 662);
}

TEST_CASE("partition_reduce costs 150 + N", "[contract][cost]") {
  CHECK(cycles(partition_reduce(Opcode::partition_reduce, 300)) == 450);
  CHECK(cycles(partition_reduce(Opcode::partition_reduce, 1)) == 151);
  // Independent of the number of partitions reduced.
  Instruction few = partition_reduce(Opcode::partition_reduce, 300);
  few.src[0].edit().partitions = 4;
  CHECK(cycles(few) == 450);
}

TEST_CASE("partition_all_reduce costs 150 + 2N", "[contract][cost]") {
  CHECK(cycles(partition_reduce(Opcode::partition_all_reduce, 300)) == 750);
  CHECK(cycles(partition_reduce(Opcode::partition_all_reduce, 1)) == 152);
  CHECK(trn2_cycles(partition_reduce(Opcode::partition_all_reduce, 512)) == 1174);
}

// ---------------------------------------------------------------------------------------------
// VectorE statistics and one-input instructions

TEST_CASE("select costs max(MIN_II, 2N)", "[contract][cost]") {
  CHECK(cycles(select(300)) == 600);
  CHECK(cycles(select(33)) == 66);
  CHECK(cycles(select(32)) == 64);
  CHECK(cycles(select(20)) == 64);
  Instruction pool = select(300);
  pool.engine = Engine::gpsimd;
  CHECK(cycles(pool) == 600);
}

TEST_CASE("bn_stats costs max(MIN_II, N)", "[contract][cost]") {
  CHECK(cycles(bn_stats(512)) == 512);
  CHECK(cycles(bn_stats(65)) == 65);
  CHECK(cycles(bn_stats(10)) == 64);
  // N is the input's free size, not the 3 outputs.
  CHECK(trn2_cycles(bn_stats(300)) == 300);
}

TEST_CASE("bn_aggr costs max(MIN_II, 13N/3)", "[contract][cost]") {
  CHECK(cycles(bn_aggr(100)) == 1300);  // N = 300
  CHECK(cycles(bn_aggr(10)) == 130);    // N = 30
  CHECK(cycles(bn_aggr(5)) == 65);      // N = 15: just above MIN_II
  CHECK(cycles(bn_aggr(4)) == 64);      // N = 12: 52 < MIN_II
  CHECK(cycles(bn_aggr(1)) == 64);      // N = 3: 13
}

TEST_CASE("reciprocal on VectorE costs max(MIN_II, 8N)", "[contract][cost]") {
  CHECK(cycles(unary(Opcode::reciprocal, Engine::vector, 512, DType::fp32)) == 4096);
  CHECK(cycles(unary(Opcode::reciprocal, Engine::vector, 9)) == 72);
  CHECK(cycles(unary(Opcode::reciprocal, Engine::vector, 8)) == 64);
  CHECK(cycles(unary(Opcode::reciprocal, Engine::vector, 1)) == 64);
  // No performance mode on trn2 even in bf16.
  CHECK(trn2_cycles(unary(Opcode::reciprocal, Engine::vector, 512)) == 4096);
}

TEST_CASE("shuffle costs max(MIN_II, N)", "[contract][cost]") {
  CHECK(cycles(unary(Opcode::shuffle, Engine::vector, 512)) == 512);
  CHECK(cycles(unary(Opcode::shuffle, Engine::vector, 100, DType::fp32, 32)) == 100);
  CHECK(cycles(unary(Opcode::shuffle, Engine::vector, 10)) == 64);
  CHECK(trn2_cycles(unary(Opcode::shuffle, Engine::vector, 512)) == 512);
}

TEST_CASE("nop costs MIN_II", "[contract][cost]") {
  for (Engine e : trnsim::kAllEngines) {
    CHECK(cycles(base(Opcode::nop, e)) == 64);
    CHECK(trn2_cycles(base(Opcode::nop, e)) == 64);
  }
  // A wait adds nothing to the interval (the pipeline's wake latency is separate).
  Instruction fence = base(Opcode::nop, Engine::sync);
  fence.waits.push_back(SemaphoreWait{0, 1});
  CHECK(cycles(fence) == 64);
  // 64 cycles at 1120 MHz (trn1 VectorE) = 57142.9 ps -> 57143 ps.
  CHECK(instruction_time(base(Opcode::nop, Engine::vector), trnsim::config::trn1()) ==
        Picoseconds(57143));
}

// ---------------------------------------------------------------------------------------------
// DMA

TEST_CASE("dma_transpose costs dma_trigger_ns on the issuing engine", "[contract][cost]") {
  // 8 ns: trn1 SyncE at 1400 MHz = 11.2 -> 12 cycles; trn2 at 1200 MHz = 9.6 -> 10 cycles.
  CHECK(cycles(dma_transpose_from_hbm(32, 64)) == 12);
  CHECK(trn2_cycles(dma_transpose_from_hbm(128, 128)) == 10);
  CHECK(trn2_cycles(dma_transpose_sbuf(128, 128)) == 10);
  Instruction from_act = dma_transpose_from_hbm(32, 64);
  from_act.engine = Engine::scalar;
  // trn2 ScalarE: 10 cycles at 1200 MHz = 8333.3 ps -> 8334 ps.
  CHECK(instruction_time(from_act, trnsim::config::trn2()) == Picoseconds(8334));
  ArchConfig slow = trnsim::config::trn2();
  slow.dma_trigger_ns = 100;
  CHECK(instruction_cycles(dma_transpose_from_hbm(32, 64), slow) == Cycles(120));
}

TEST_CASE(
    "dma_transpose moves at 90% of copy bandwidth from HBM and 50% SBUF to SBUF "
    "(plan_transfer engine_bytes_per_ns)",
    "[contract][cost][dma]") {
  for (const ArchConfig& arch : {trnsim::config::trn1(), trnsim::config::trn2()}) {
    INFO(arch.name);
    const double rate = arch.dma_engine_bytes_per_ns;  // trn1 27, trn2 23.2 B/ns
    // A plain copy runs at the engine's rate.
    const auto copy = plan_transfer(dma_copy(hbm_ap(DType::bf16, 0, 128, 1024, {{1, 1024}}),
                                             sbuf_ap(DType::bf16, 0, 128, 0, {{1, 1024}})),
                                    arch);
    CHECK(copy.engine_bytes_per_ns == Approx(rate));
    // From HBM: 90% of it.
    const auto from_hbm = plan_transfer(dma_transpose_from_hbm(128, 1024), arch);
    CHECK(from_hbm.engine_bytes_per_ns == Approx(0.9 * rate));
    // SBUF to SBUF: 50%.
    const auto sbuf = plan_transfer(dma_transpose_sbuf(128, 128), arch);
    CHECK(sbuf.engine_bytes_per_ns == Approx(0.5 * rate));
    // A dma_copy flagged to go through the transpose unit is charged alike.
    Instruction flagged = dma_copy(hbm_ap(DType::bf16, 0, 128, 1024, {{1, 1024}}),
                                   sbuf_ap(DType::bf16, 0, 128, 0, {{1, 1024}}));
    flagged.dma_transpose = true;
    CHECK(plan_transfer(flagged, arch).engine_bytes_per_ns == Approx(0.9 * rate));
  }
  // The engine time follows the rate. At 27 B/ns and 26 ns per descriptor, HBM [64 x 128] bf16
  // -> SBUF [128 x 64]: 128 partitions over 16 engines, 8 each; one descriptor per partition
  // (the destination's run, 64 elements = 128 B).
  // Per descriptor 26 + 128 / 24.3 = 31.26749 ns; x 8 = 250.1399 ns -> 250140 ps.
  ArchConfig worked = trnsim::config::trn2();
  worked.dma_engine_bytes_per_ns = 27.0;
  worked.dma_descriptor_overhead_ns = 26.0;
  const auto plan = plan_transfer(dma_transpose_from_hbm(64, 128), worked);
  CHECK(plan.run_bytes == 128);
  CHECK(plan.descriptors == 128);
  CHECK(plan.partitions_per_engine == 8);
  CHECK(plan.engine_time == Picoseconds(250140));
  // The fractions are the preset's parameters.
  ArchConfig a = worked;
  a.dma_transpose_hbm_fraction = 0.25;
  a.dma_transpose_sbuf_fraction = 0.125;
  CHECK(plan_transfer(dma_transpose_from_hbm(128, 1024), a).engine_bytes_per_ns == Approx(6.75));
  CHECK(plan_transfer(dma_transpose_sbuf(128, 128), a).engine_bytes_per_ns == Approx(3.375));
}

TEST_CASE("a DGE dma_copy costs 600 ns on the issuing engine on trn2", "[contract][cost]") {
  const ArchConfig trn2 = trnsim::config::trn2();
  Instruction dge = dma_copy(hbm_ap(DType::bf16, 0, 128, 1024, {{1, 1024}}),
                             sbuf_ap(DType::bf16, 0, 128, 0, {{1, 1024}}));
  dge.dma_dge = true;
  // SyncE at 1200 MHz: 600 ns = 720 cycles.
  CHECK(instruction_cycles(dge, trn2) == Cycles(720));
  CHECK(instruction_time(dge, trn2) == Picoseconds(600000));
  // VectorE at 960 MHz: 576 cycles; TensorE at 2400 MHz: 1440 cycles. Always 600 ns.
  dge.engine = Engine::vector;
  CHECK(instruction_cycles(dge, trn2) == Cycles(576));
  CHECK(instruction_time(dge, trn2) == Picoseconds(600000));
  dge.engine = Engine::tensor;
  CHECK(instruction_cycles(dge, trn2) == Cycles(1440));
  CHECK(instruction_time(dge, trn2) == Picoseconds(600000));
  // Without DGE the plain trigger: 8 ns on TensorE at 2400 MHz, 19.2 -> 20 cycles.
  dge.dma_dge = false;
  CHECK(instruction_cycles(dge, trn2) == Cycles(20));
  // A DGE cost below the trigger cost leaves the trigger: max of the two. 5 ns at 1200 MHz
  // = 6 cycles < the trigger's 10.
  ArchConfig quick = trn2;
  quick.dma_dge_instruction_ns = 5;
  dge.dma_dge = true;
  dge.engine = Engine::sync;
  CHECK(instruction_cycles(dge, quick) == Cycles(10));
  // A fractional cycle rounds up: 601 ns at 1200 MHz = 721.2 -> 722 cycles.
  quick.dma_dge_instruction_ns = 601;
  CHECK(instruction_cycles(dge, quick) == Cycles(722));
}

// ---------------------------------------------------------------------------------------------
// fp8 matmul

TEST_CASE("fp8 matmul runs at the preset's fp8 rate: 2x on trn2, 1x on trn1", "[contract][cost]") {
  for (DType f8 : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    // trn2: N_moving / 2 (rounded up), then max(min(64, N_stationary), .).
    CHECK(trn2_cycles(matmul(f8, 128, f8, 512)) == 256);
    CHECK(trn2_cycles(matmul(f8, 128, f8, 200)) == 100);
    CHECK(trn2_cycles(matmul(f8, 128, f8, 100)) == 64);  // 50 < min(64, 128)
    CHECK(trn2_cycles(matmul(f8, 16, f8, 101)) == 51);   // ceil(101 / 2)
    // trn1: the bf16 rate.
    CHECK(cycles(matmul(f8, 128, f8, 512)) == 512);
    CHECK(cycles(matmul(f8, 16, f8, 101)) == 101);
  }
  // Mixed fp8 and e4m3/e5m2 are both fp8.
  CHECK(trn2_cycles(matmul(DType::fp8_e4m3, 128, DType::fp8_e5m2, 512)) == 256);
  // One fp8 input with a bf16 one runs at the bf16 rate.
  CHECK(trn2_cycles(matmul(DType::fp8_e4m3, 128, DType::bf16, 512)) == 512);
  CHECK(trn2_cycles(matmul(DType::bf16, 128, DType::fp8_e4m3, 512)) == 512);
  // bf16 on trn2 is not sped up.
  CHECK(trn2_cycles(matmul(DType::bf16, 128, DType::bf16, 512)) == 512);
  // 256 cycles at the trn2 TensorE clock (2400 MHz) = 106666.7 ps -> 106667 ps.
  CHECK(instruction_time(matmul(DType::fp8_e4m3, 128, DType::fp8_e4m3, 512),
                         trnsim::config::trn2()) == Picoseconds(106667));
}

// ---------------------------------------------------------------------------------------------
// Shared ports (models::ports_of)

TEST_CASE(
    "ports on v2 (trn1): VectorE and GpSimdE touching SBUF share a port, and VectorE and ScalarE "
    "touching PSUM share a port",
    "[contract][ports]") {
  const ArchConfig trn1 = trnsim::config::trn1();
  // SBUF only.
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::vector, 512, DType::fp32), trn1) ==
        kPortSbufVectorGpSimd);
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::gpsimd, 512, DType::fp32), trn1) ==
        kPortSbufVectorGpSimd);
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::scalar, 512, DType::fp32), trn1) == 0u);
  // bf16 makes no difference on v2 (no performance modes).
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::vector, 512), trn1) == kPortSbufVectorGpSimd);
  // PSUM.
  Instruction act_psum = unary(Opcode::activation, Engine::scalar, 512, DType::fp32);
  act_psum.src[0] = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  CHECK(ports_of(act_psum, trn1) == kPortPsumVectorScalar);
  Instruction dve_psum_to_psum = unary(Opcode::tensor_copy, Engine::vector, 256, DType::fp32);
  dve_psum_to_psum.src[0] = psum_ap(DType::fp32, 0, 128, 0, {{1, 256}});
  dve_psum_to_psum.dst = psum_ap(DType::fp32, 0, 128, 2048, {{1, 256}});
  CHECK(ports_of(dve_psum_to_psum, trn1) == kPortPsumVectorScalar);
  // VectorE reading PSUM and writing SBUF takes both.
  Instruction dve_mixed = unary(Opcode::tensor_copy, Engine::vector, 512, DType::fp32);
  dve_mixed.src[0] = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  CHECK(ports_of(dve_mixed, trn1) == (kPortSbufVectorGpSimd | kPortPsumVectorScalar));
  // ScalarE with src in PSUM and accumulate and dst in SBUF: the PSUM port only.
  act_psum.accumulate = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 1}});
  CHECK(ports_of(act_psum, trn1) == kPortPsumVectorScalar);
  // TensorE holds neither v2 port; no PSUM bank ports on v2.
  CHECK(ports_of(matmul(DType::bf16, 128, DType::bf16, 512), trn1) == 0u);
  CHECK(ports_of(pe_transpose(128, 128), trn1) == 0u);
  // DMA and nop take none, whichever engine issues them and whatever they touch.
  CHECK(ports_of(dma_copy(hbm_ap(DType::bf16, 0, 128, 64, {{1, 64}}),
                          sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}}), Engine::vector),
                 trn1) == 0u);
  CHECK(ports_of(dma_copy(sbuf_ap(DType::fp32, 0, 128, 0, {{1, 64}}),
                          psum_ap(DType::fp32, 0, 128, 0, {{1, 64}}), Engine::scalar),
                 trn1) == 0u);
  CHECK(ports_of(dma_transpose_sbuf(64, 64), trn1) == 0u);
  CHECK(ports_of(base(Opcode::nop, Engine::vector), trn1) == 0u);
  CHECK(ports_of(base(Opcode::nop, Engine::gpsimd), trn1) == 0u);
}

TEST_CASE(
    "ports on v3 (trn2): one port per PSUM bank touched, and a VectorE performance-mode "
    "instruction shares GpSimdE's SBUF port",
    "[contract][ports]") {
  const ArchConfig trn2 = trnsim::config::trn2();
  // 2 KiB banks: fp32 [128 x 512] at offset 0 is bank 0, at offset 2048 bank 1.
  Instruction act = unary(Opcode::activation, Engine::scalar, 512, DType::fp32);
  act.src[0] = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  CHECK(ports_of(act, trn2) == kPortPsumBank0);
  act.src[0].edit().offset = 2048;
  CHECK(ports_of(act, trn2) == (kPortPsumBank0 << 1));
  // Bytes [1024, 5120): banks 0, 1 and 2.
  act.src[0] = psum_ap(DType::fp32, 0, 128, 1024, {{1, 1024}});
  act.dst = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 1024}});
  CHECK(ports_of(act, trn2) == (kPortPsumBank0 | kPortPsumBank0 << 1 | kPortPsumBank0 << 2));
  // The last bank: bytes [14336, 16384) are bank 7.
  act.src[0] = psum_ap(DType::fp32, 0, 128, 14336, {{1, 512}});
  act.dst = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  CHECK(ports_of(act, trn2) == (kPortPsumBank0 << 7));
  // An accumulate in PSUM counts: src bank 0, accumulate bank 5.
  act.src[0] = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  act.accumulate = psum_ap(DType::fp32, 0, 128, 5 * 2048, {{1, 1}});
  CHECK(ports_of(act, trn2) == (kPortPsumBank0 | kPortPsumBank0 << 5));
  // A matmul writing bank 3.
  Instruction mm = matmul(DType::bf16, 128, DType::bf16, 512);
  mm.dst.edit().offset = 3 * 2048;
  CHECK(ports_of(mm, trn2) == (kPortPsumBank0 << 3));
  // VectorE touching SBUF holds no port outside a performance mode (fp32: none).
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::vector, 512, DType::fp32), trn2) == 0u);
  Instruction tt = base(Opcode::tensor_tensor, Engine::vector);
  tt.op0 = AluOp::add;
  tt.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  tt.src[1] = sbuf_ap(DType::fp32, 0, 128, 4096, {{1, 512}});
  tt.dst = sbuf_ap(DType::fp32, 0, 128, 8192, {{1, 512}});
  CHECK(ports_of(tt, trn2) == 0u);
  // In a performance mode it takes the bus GpSimdE shares: tensor_copy 4x, tensor_tensor 2x.
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::vector, 512), trn2) == kPortSbufVectorGpSimd);
  for (DType t : {DType::bf16, DType::fp16}) {
    tt.src[0].edit().dtype = tt.src[1].edit().dtype = tt.dst.edit().dtype = t;
    CHECK(ports_of(tt, trn2) == kPortSbufVectorGpSimd);
  }
  // 2x mode from PSUM: the shared bus and the PSUM bank.
  Instruction from_psum = unary(Opcode::tensor_copy, Engine::vector, 512);
  from_psum.src[0] = psum_ap(DType::bf16, 0, 128, 2048, {{1, 512}});
  CHECK(ports_of(from_psum, trn2) == (kPortSbufVectorGpSimd | kPortPsumBank0 << 1));
  // GpSimdE touching SBUF takes that port in any dtype; ScalarE on SBUF takes none.
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::gpsimd, 512, DType::fp32), trn2) ==
        kPortSbufVectorGpSimd);
  CHECK(ports_of(unary(Opcode::affine_select, Engine::gpsimd, 512, DType::fp32), trn2) ==
        kPortSbufVectorGpSimd);
  CHECK(ports_of(unary(Opcode::tensor_copy, Engine::scalar, 512), trn2) == 0u);
  // The v2 ports are gone: VectorE and ScalarE on PSUM hold bank ports only.
  Instruction dve_psum = unary(Opcode::tensor_copy, Engine::vector, 512, DType::fp32);
  dve_psum.src[0] = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  CHECK(ports_of(dve_psum, trn2) == kPortPsumBank0);
  // DMA and nop take none.
  CHECK(ports_of(dma_copy(sbuf_ap(DType::fp32, 0, 128, 0, {{1, 512}}),
                          psum_ap(DType::fp32, 0, 128, 0, {{1, 512}}), Engine::gpsimd),
                 trn2) == 0u);
  CHECK(ports_of(dma_transpose_from_hbm(64, 128), trn2) == 0u);
  CHECK(ports_of(base(Opcode::nop, Engine::tensor), trn2) == 0u);
}

TEST_CASE("a collective costs its issuing engine a DMA trigger and holds no port",
          "[contract][cost]") {
  const auto trn2 = trnsim::config::trn2();
  Instruction in;
  in.opcode = Opcode::collective;
  in.engine = Engine::sync;
  in.src[0] = hbm_ap(DType::fp32, 0, 128, 2048, {{1, 2048}});
  in.dst = hbm_ap(DType::fp32, 128 * 2048 * 4, 128, 2048, {{1, 2048}});
  in.op0 = AluOp::add;
  // 8 ns (D1) at 1200 MHz: 10 cycles, 8334 ps, whatever the size; the fabric times the data.
  CHECK(instruction_cycles(in, trn2) == Cycles(10));
  CHECK(instruction_time(in, trn2) == Picoseconds(8334));
  in.src[0] = hbm_ap(DType::fp32, 0, 1, 1, {{1, 1}});
  CHECK(instruction_cycles(in, trn2) == Cycles(10));
  in.engine = Engine::tensor;
  CHECK(instruction_cycles(in, trn2) == Cycles(20));
  CHECK(trnsim::models::ports_of(in, trn2) == 0);
  CHECK(trnsim::models::instruction_flops(in) == 0);
}

TEST_CASE("every opcode of the table has a cost rule tested in tests/contract",
          "[contract][cost]") {
  // compute_cost_rules.cpp: dma_copy, matmul, activation, tensor_tensor, tensor_scalar,
  // tensor_reduce, tensor_copy, memset; this file: the next 13; nki_cost_rules.cpp: the 10
  // opcodes NKI kernels brought; this file: collective's trigger (its fabric time:
  // tests/integration/cli_collective_program.cpp). A new opcode fails here until its rule has a
  // contract test.
  CHECK(trnsim::isa::kOpcodeCount == 32);
  CHECK(trnsim::isa::opcode_table().size() == 32);
  for (const auto& row : trnsim::isa::opcode_table()) {
    INFO(row.name);
    CHECK(trnsim::isa::info(row.opcode).name == row.name);
    CHECK_FALSE(row.cost.empty());
    CHECK(row.engines != 0);
  }
}
