// Contract tests for the per-instruction cost formulas (fact sheet section 5, source I1, and
// the v3 VectorE performance modes, A2). Every expected value is worked out by hand from the
// documented formula and the preset's parameters (MIN_II = 64 cycles, DMA trigger = 8 ns,
// engine clocks of trn2: TensorE 2400, VectorE 960, ScalarE
// 1200, GpSimdE 1200, SyncE 1200 MHz; trn1: 2800, 1120, 1400, 1400, 1400 MHz).
//
// The I1 notes describe NeuronCore-v2, so the base formulas are checked on trn1, which has no
// VectorE performance modes; the modes have tests of their own on trn2.
#include <catch2/catch.hpp>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/instruction.hpp"
#include "models/neuroncore/cost.hpp"
#include "print_units.hpp"

using trnsim::Cycles;
using trnsim::Engine;
using trnsim::Picoseconds;
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
using trnsim::models::tensor_tensor_fast_path;

namespace {

// Cycles on trn1: the I1 formulas without the v3 performance modes.
uint64_t cycles(const Instruction& in) {
  return instruction_cycles(in, trnsim::config::trn1()).value;
}

// Cycles on trn2, where VectorE has the 2x/4x performance modes.
uint64_t trn2_cycles(const Instruction& in) {
  return instruction_cycles(in, trnsim::config::trn2()).value;
}

Instruction matmul(DType stationary_t, uint32_t n_stationary, DType moving_t, uint32_t n_moving) {
  Instruction in;
  in.opcode = Opcode::matmul;
  in.engine = Engine::tensor;
  in.src[0] = sbuf_ap(stationary_t, 0, 128, 0, {{1, n_stationary}});
  in.src[1] = sbuf_ap(moving_t, 0, 128, 4096, {{1, n_moving}});
  in.dst = psum_ap(DType::fp32, 0, n_stationary, 0, {{1, n_moving}});
  return in;
}

Instruction activation(uint32_t n) {
  Instruction in;
  in.opcode = Opcode::activation;
  in.engine = Engine::scalar;
  in.function = ActivationFunction::exp;
  in.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, n}});
  in.dst = sbuf_ap(DType::bf16, 0, 128, 65536, {{1, n}});
  return in;
}

// The documented fast case: bf16 everywhere, both inputs in SBUF, add, innermost stride 1.
Instruction fast_tensor_tensor(uint32_t n) {
  Instruction in;
  in.opcode = Opcode::tensor_tensor;
  in.engine = Engine::vector;
  in.op0 = AluOp::add;
  in.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, n}});
  in.src[1] = sbuf_ap(DType::bf16, 0, 128, 32768, {{1, n}});
  in.dst = sbuf_ap(DType::bf16, 0, 128, 65536, {{1, n}});
  return in;
}

Instruction tensor_reduce(DType src_t, DType dst_t, AluOp op, uint32_t n) {
  Instruction in;
  in.opcode = Opcode::tensor_reduce;
  in.engine = Engine::vector;
  in.op0 = op;
  in.src[0] = sbuf_ap(src_t, 0, 128, 0, {{1, n}});
  in.dst = sbuf_ap(dst_t, 0, 128, 65536, {{1, 1}});
  return in;
}

Instruction memset(DType t, float value, uint32_t n) {
  Instruction in;
  in.opcode = Opcode::memset;
  in.engine = Engine::vector;
  in.operand0 = ScalarOperand::immediate(value);
  in.dst = sbuf_ap(t, 0, 128, 0, {{1, n}});
  return in;
}

Instruction unary(Opcode op, Engine e, uint32_t n, DType t = DType::bf16) {
  Instruction in;
  in.opcode = op;
  in.engine = e;
  in.src[0] = sbuf_ap(t, 0, 128, 0, {{1, n}});
  in.dst = sbuf_ap(t, 0, 128, 65536, {{1, n}});
  return in;
}

Instruction dma(uint32_t partitions, uint32_t elements) {
  Instruction in;
  in.opcode = Opcode::dma_copy;
  in.engine = Engine::sync;
  in.src[0] = hbm_ap(DType::bf16, 0, partitions, elements, {{1, elements}});
  in.dst = sbuf_ap(DType::bf16, 0, partitions, 0, {{1, elements}});
  return in;
}

}  // namespace

TEST_CASE("matmul costs max(min(64, N_stationary), N_moving) cycles", "[contract][cost]") {
  // N_moving dominates.
  CHECK(cycles(matmul(DType::bf16, 128, DType::bf16, 512)) == 512);
  CHECK(cycles(matmul(DType::bf16, 128, DType::bf16, 100)) == 100);
  // min(64, 128) = 64 dominates a short moving tensor.
  CHECK(cycles(matmul(DType::bf16, 128, DType::bf16, 32)) == 64);
  CHECK(cycles(matmul(DType::bf16, 128, DType::bf16, 1)) == 64);
  // A narrow stationary: min(64, 16) = 16.
  CHECK(cycles(matmul(DType::bf16, 16, DType::bf16, 8)) == 16);
  CHECK(cycles(matmul(DType::bf16, 16, DType::bf16, 40)) == 40);
  CHECK(cycles(matmul(DType::bf16, 48, DType::bf16, 20)) == 48);
}

TEST_CASE("fp32 matmul costs 4x", "[contract][cost]") {
  CHECK(cycles(matmul(DType::fp32, 128, DType::fp32, 512)) == 4 * 512);
  CHECK(cycles(matmul(DType::fp32, 128, DType::fp32, 32)) == 4 * 64);
  CHECK(cycles(matmul(DType::fp32, 16, DType::fp32, 8)) == 4 * 16);
  // The same shape in bf16 stays at 1x.
  CHECK(cycles(matmul(DType::bf16, 16, DType::bf16, 8)) == 16);
}

TEST_CASE("matmul time is its cycles at the TensorE clock, rounded up", "[contract][cost]") {
  // trn2 TensorE 2400 MHz: 512 cycles = 213333.3 ps -> 213334 ps.
  CHECK(instruction_time(matmul(DType::bf16, 128, DType::bf16, 512), trnsim::config::trn2()) ==
        Picoseconds(213334));
  // trn1 TensorE 2800 MHz: 512 cycles = 182857.1 ps -> 182858 ps.
  CHECK(instruction_time(matmul(DType::bf16, 128, DType::bf16, 512), trnsim::config::trn1()) ==
        Picoseconds(182858));
}

TEST_CASE("activation costs max(MIN_II, N)", "[contract][cost]") {
  CHECK(cycles(activation(1000)) == 1000);
  CHECK(cycles(activation(65)) == 65);
  CHECK(cycles(activation(64)) == 64);
  CHECK(cycles(activation(10)) == 64);
  CHECK(cycles(activation(1)) == 64);
}

TEST_CASE("activation scale and bias are free", "[contract][cost]") {
  Instruction in = activation(1000);
  in.scale = ScalarOperand::from(sbuf_ap(DType::fp32, 0, 128, 131072, {{1, 1}}));
  in.bias = ScalarOperand::immediate(3.0f);
  CHECK(cycles(in) == 1000);
}

TEST_CASE("activation with accumulate adds MIN_II", "[contract][cost]") {
  Instruction big = activation(1000);
  big.accumulate = sbuf_ap(DType::fp32, 0, 128, 131072, {{1, 1}});
  CHECK(cycles(big) == 1000 + 64);
  Instruction small = activation(10);
  small.accumulate = sbuf_ap(DType::fp32, 0, 128, 131072, {{1, 1}});
  CHECK(cycles(small) == 64 + 64);
}

TEST_CASE("tensor_tensor fast path (bf16, SBUF, add/sub/mul, stride 1) costs max(MIN_II, N)",
          "[contract][cost]") {
  CHECK(cycles(fast_tensor_tensor(512)) == 512);
  CHECK(cycles(fast_tensor_tensor(40)) == 64);  // 2N = 80 would be the slow path
  for (AluOp op : {AluOp::add, AluOp::subtract, AluOp::multiply}) {
    Instruction in = fast_tensor_tensor(512);
    in.op0 = op;
    CHECK(tensor_tensor_fast_path(in));
    CHECK(cycles(in) == 512);
  }
  // One input in PSUM and one in SBUF is still the fast path, either way round.
  Instruction psum_first = fast_tensor_tensor(512);
  psum_first.src[0] = psum_ap(DType::bf16, 0, 128, 0, {{1, 512}});
  CHECK(cycles(psum_first) == 512);
  Instruction psum_second = fast_tensor_tensor(512);
  psum_second.src[1] = psum_ap(DType::bf16, 0, 128, 0, {{1, 512}});
  CHECK(cycles(psum_second) == 512);
}

TEST_CASE("tensor_tensor with an fp32 operand costs max(MIN_II, 2N)", "[contract][cost]") {
  Instruction src = fast_tensor_tensor(512);
  src.src[1].edit().dtype = DType::fp32;
  CHECK_FALSE(tensor_tensor_fast_path(src));
  CHECK(cycles(src) == 1024);
  Instruction dst = fast_tensor_tensor(512);
  dst.dst.edit().dtype = DType::fp32;
  CHECK(cycles(dst) == 1024);
  Instruction small = fast_tensor_tensor(40);
  small.src[0].edit().dtype = DType::fp32;
  CHECK(cycles(small) == 80);
  Instruction tiny = fast_tensor_tensor(16);
  tiny.src[0].edit().dtype = DType::fp32;
  CHECK(cycles(tiny) == 64);
}

TEST_CASE("tensor_tensor divide costs max(MIN_II, 2N)", "[contract][cost]") {
  Instruction in = fast_tensor_tensor(512);
  in.op0 = AluOp::divide;
  CHECK_FALSE(tensor_tensor_fast_path(in));
  CHECK(cycles(in) == 1024);
  in.op0 = AluOp::max;
  CHECK(cycles(in) == 1024);
}

TEST_CASE("tensor_tensor with innermost stride 2 costs max(MIN_II, 2N)", "[contract][cost]") {
  Instruction src = fast_tensor_tensor(512);
  src.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{2, 512}});
  CHECK_FALSE(tensor_tensor_fast_path(src));
  CHECK(cycles(src) == 1024);
  Instruction dst = fast_tensor_tensor(512);
  dst.dst = sbuf_ap(DType::bf16, 0, 128, 65536, {{2, 512}});
  CHECK(cycles(dst) == 1024);
  // Stride 2 on an outer dimension keeps stride 1 innermost: still fast.
  Instruction outer = fast_tensor_tensor(512);
  outer.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{64, 16}, {1, 32}});
  CHECK(cycles(outer) == 512);
}

TEST_CASE("tensor_tensor with both inputs in PSUM costs max(MIN_II, 2N)", "[contract][cost]") {
  Instruction in = fast_tensor_tensor(512);
  in.src[0] = psum_ap(DType::bf16, 0, 128, 0, {{1, 512}});
  in.src[1] = psum_ap(DType::bf16, 0, 128, 2048, {{1, 512}});
  CHECK_FALSE(tensor_tensor_fast_path(in));
  CHECK(cycles(in) == 1024);
}

TEST_CASE("tensor_reduce costs N/2 for bf16 add or max, else N", "[contract][cost]") {
  CHECK(cycles(tensor_reduce(DType::bf16, DType::bf16, AluOp::add, 512)) == 256);
  CHECK(cycles(tensor_reduce(DType::bf16, DType::bf16, AluOp::max, 512)) == 256);
  CHECK(cycles(tensor_reduce(DType::bf16, DType::bf16, AluOp::min, 512)) == 512);
  CHECK(cycles(tensor_reduce(DType::fp32, DType::fp32, AluOp::add, 512)) == 512);
  CHECK(cycles(tensor_reduce(DType::bf16, DType::fp32, AluOp::add, 512)) == 512);
  CHECK(cycles(tensor_reduce(DType::fp32, DType::bf16, AluOp::max, 512)) == 512);
  // The I1 note has no MIN_II floor for tensor_reduce.
  CHECK(cycles(tensor_reduce(DType::bf16, DType::bf16, AluOp::add, 32)) == 16);
  CHECK(cycles(tensor_reduce(DType::fp32, DType::fp32, AluOp::add, 32)) == 32);
}

TEST_CASE("memset of zero in bf16 costs max(MIN_II, N/2)", "[contract][cost]") {
  CHECK(cycles(memset(DType::bf16, 0.0f, 512)) == 256);
  CHECK(cycles(memset(DType::bf16, 0.0f, 130)) == 65);
  CHECK(cycles(memset(DType::bf16, 0.0f, 100)) == 64);
}

TEST_CASE("memset of a non-zero value or in fp32 costs max(MIN_II, N)", "[contract][cost]") {
  CHECK(cycles(memset(DType::bf16, 1.0f, 512)) == 512);
  CHECK(cycles(memset(DType::fp32, 0.0f, 512)) == 512);
  CHECK(cycles(memset(DType::fp32, 0.0f, 10)) == 64);
}

TEST_CASE("tensor_scalar and tensor_copy cost max(MIN_II, N)", "[contract][cost]") {
  for (Engine e : {Engine::vector, Engine::scalar, Engine::gpsimd}) {
    CHECK(cycles(unary(Opcode::tensor_copy, e, 300)) == 300);
    CHECK(cycles(unary(Opcode::tensor_copy, e, 10)) == 64);
    Instruction one = unary(Opcode::tensor_scalar, e, 300);
    one.op0 = AluOp::multiply;
    one.operand0 = ScalarOperand::immediate(2.0f);
    CHECK(cycles(one) == 300);
    // Two chained ops cost the same as one.
    Instruction two = one;
    two.op1 = AluOp::add;
    two.operand1 = ScalarOperand::immediate(1.0f);
    CHECK(cycles(two) == 300);
    two.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 20}});
    two.dst = sbuf_ap(DType::bf16, 0, 128, 65536, {{1, 20}});
    CHECK(cycles(two) == 64);
  }
}

TEST_CASE("fewer than 128 active partitions cost the same as 128", "[contract][cost]") {
  Instruction in = unary(Opcode::tensor_copy, Engine::vector, 300);
  in.src[0] = sbuf_ap(DType::bf16, 0, 1, 0, {{1, 300}});
  in.dst = sbuf_ap(DType::bf16, 0, 1, 65536, {{1, 300}});
  CHECK(cycles(in) == 300);
}

TEST_CASE("a semaphore wait adds nothing to an instruction's initiation interval",
          "[contract][cost]") {
  // What a dependent instruction waits for is its producer's results and the semaphore's wake
  // latency (models/neuroncore/pipeline.hpp, tests/contract/engine_pipeline_rules.cpp); its
  // own initiation interval is the formula's.
  Instruction copy = unary(Opcode::tensor_copy, Engine::vector, 300);
  copy.waits.push_back(SemaphoreWait{0, 1});
  copy.waits.push_back(SemaphoreWait{1, 2});
  CHECK(cycles(copy) == 300);
  Instruction act = activation(10);
  act.waits.push_back(SemaphoreWait{0, 1});
  CHECK(cycles(act) == 64);
  Instruction mm = matmul(DType::bf16, 128, DType::bf16, 512);
  mm.waits.push_back(SemaphoreWait{0, 1});
  CHECK(cycles(mm) == 512);
}

TEST_CASE("a DMA trigger costs dma_trigger_ns on the issuing engine, in its cycles rounded up",
          "[contract][cost]") {
  const auto trn2 = trnsim::config::trn2();
  // 8 ns (D1) on SyncE at 1200 MHz = 9.6 cycles -> 10 cycles; the bytes moved do not matter.
  CHECK(instruction_cycles(dma(128, 2048), trn2) == Cycles(10));
  CHECK(instruction_cycles(dma(1, 1), trn2) == Cycles(10));
  // 10 cycles at 1200 MHz = 8333.3 ps -> 8334 ps.
  CHECK(instruction_time(dma(128, 2048), trn2) == Picoseconds(8334));
  // Triggered from TensorE (2400 MHz): 19.2 -> 20 cycles, the same 8334 ps.
  Instruction from_pe = dma(128, 2048);
  from_pe.engine = Engine::tensor;
  CHECK(instruction_cycles(from_pe, trn2) == Cycles(20));
  CHECK(instruction_time(from_pe, trn2) == Picoseconds(8334));
  // The parameter, not a constant: 100 ns is 120 SyncE cycles.
  auto slow = trn2;
  slow.dma_trigger_ns = 100;
  CHECK(instruction_cycles(dma(128, 2048), slow) == Cycles(120));
  CHECK(instruction_time(dma(128, 2048), slow) == Picoseconds(100000));
}

TEST_CASE("cycles convert to picoseconds rounding up per engine clock", "[contract][cost]") {
  using trnsim::to_picoseconds;
  CHECK(to_picoseconds(Cycles(64), 2400) == Picoseconds(26667));  // 26666.7
  CHECK(to_picoseconds(Cycles(1), 960) == Picoseconds(1042));     // 1041.7
  CHECK(to_picoseconds(Cycles(960), 960) == Picoseconds(1000000));
  CHECK(to_picoseconds(Cycles(3), 1200) == Picoseconds(2500));
  CHECK(to_picoseconds(Cycles(0), 1200) == Picoseconds(0));
  CHECK(to_picoseconds(Cycles(1), 2800) == Picoseconds(358));  // 357.1
  // The same 960-cycle tensor_copy on each engine of trn2 and trn1 (fp32, so that no VectorE
  // performance mode applies).
  const auto trn2 = trnsim::config::trn2();
  const auto trn1 = trnsim::config::trn1();
  CHECK(instruction_time(unary(Opcode::tensor_copy, Engine::vector, 960, DType::fp32), trn2) ==
        Picoseconds(1000000));
  CHECK(instruction_time(unary(Opcode::tensor_copy, Engine::scalar, 960), trn2) ==
        Picoseconds(800000));
  CHECK(instruction_time(unary(Opcode::tensor_copy, Engine::gpsimd, 960), trn2) ==
        Picoseconds(800000));
  CHECK(instruction_time(unary(Opcode::tensor_copy, Engine::vector, 960), trn1) ==
        Picoseconds(857143));  // 857142.9
  CHECK(instruction_time(unary(Opcode::tensor_copy, Engine::scalar, 960), trn1) ==
        Picoseconds(685715));  // 685714.3
}

TEST_CASE(
    "trn2 VectorE tensor_copy and tensor_scalar with all operands bf16 in SBUF and "
    "stride 1 run in 4x mode: max(MIN_II, N/4)",
    "[contract][cost]") {
  CHECK(trn2_cycles(unary(Opcode::tensor_copy, Engine::vector, 1024)) == 256);
  CHECK(trn2_cycles(unary(Opcode::tensor_copy, Engine::vector, 200)) == 64);  // 50 < MIN_II
  Instruction ts = unary(Opcode::tensor_scalar, Engine::vector, 1024);
  ts.op0 = AluOp::multiply;
  ts.operand0 = ScalarOperand::immediate(2.0f);
  ts.op1 = AluOp::add;
  ts.operand1 = ScalarOperand::immediate(1.0f);
  CHECK(trn2_cycles(ts) == 256);
}

TEST_CASE(
    "trn2 VectorE tensor_copy and tensor_scalar strided or with PSUM run in 2x mode: "
    "max(MIN_II, N/2)",
    "[contract][cost]") {
  Instruction strided = unary(Opcode::tensor_copy, Engine::vector, 1024);
  strided.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{2, 1024}});
  CHECK(trn2_cycles(strided) == 512);
  Instruction from_psum = unary(Opcode::tensor_scalar, Engine::vector, 1024);
  from_psum.op0 = AluOp::multiply;
  from_psum.operand0 = ScalarOperand::immediate(2.0f);
  from_psum.src[0] = psum_ap(DType::bf16, 0, 128, 0, {{1, 1024}});
  CHECK(trn2_cycles(from_psum) == 512);
}

TEST_CASE("trn2 VectorE tensor_tensor with both inputs bf16 in SBUF runs in 2x mode",
          "[contract][cost]") {
  CHECK(trn2_cycles(fast_tensor_tensor(1024)) == 512);  // fast path N, halved
  Instruction div = fast_tensor_tensor(1024);
  div.op0 = AluOp::divide;
  CHECK(trn2_cycles(div) == 1024);  // slow path 2N, halved
  // One input in PSUM: no mode, the fast path alone.
  Instruction psum = fast_tensor_tensor(1024);
  psum.src[1] = psum_ap(DType::bf16, 0, 128, 0, {{1, 1024}});
  CHECK(trn2_cycles(psum) == 1024);
}

TEST_CASE("the VectorE performance modes do not apply to fp32, to other engines or to trn1",
          "[contract][cost]") {
  CHECK(trn2_cycles(unary(Opcode::tensor_copy, Engine::vector, 1024, DType::fp32)) == 1024);
  CHECK(trn2_cycles(unary(Opcode::tensor_copy, Engine::scalar, 1024)) == 1024);
  CHECK(trn2_cycles(unary(Opcode::tensor_copy, Engine::gpsimd, 1024)) == 1024);
  CHECK(cycles(unary(Opcode::tensor_copy, Engine::vector, 1024)) == 1024);
  // A mixed-dtype copy (bf16 to fp32) is not all half precision.
  Instruction widen = unary(Opcode::tensor_copy, Engine::vector, 1024);
  widen.dst.edit().dtype = DType::fp32;
  CHECK(trn2_cycles(widen) == 1024);
}
