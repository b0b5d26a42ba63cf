// Semantics: execute() of each opcode on a small MemoryImage against hand-computed values.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/instruction.hpp"
#include "isa/semantics.hpp"

using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::AccessPattern;
using trnsim::isa::ActivationFunction;
using trnsim::isa::AluOp;
using trnsim::isa::DType;
using trnsim::isa::execute;
using trnsim::isa::hbm_ap;
using trnsim::isa::Instruction;
using trnsim::isa::MemoryImage;
using trnsim::isa::Opcode;
using trnsim::isa::psum_ap;
using trnsim::isa::sbuf_ap;
using trnsim::isa::ScalarOperand;
using trnsim::isa::Tile;

namespace {

ArchConfig small_arch() {
  ArchConfig a = trnsim::config::trn2();
  a.sbuf_partition_bytes = 4096;  // keeps the image small; the semantics do not care
  return a;
}

Tile tile(int rows, int cols, std::vector<float> values) {
  Tile t(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t(r, c) = values[r * cols + c];
  return t;
}

// Row-major values of a tile, for comparison with a braced list.
std::vector<float> values(const Tile& t) {
  std::vector<float> v;
  for (Eigen::Index r = 0; r < t.rows(); ++r)
    for (Eigen::Index c = 0; c < t.cols(); ++c) v.push_back(t(r, c));
  return v;
}

Instruction make(Opcode op, Engine e) {
  Instruction in;
  in.opcode = op;
  in.engine = e;
  return in;
}

}  // namespace

TEST_CASE("read and write walk partitions and the access pattern", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  // Write 2 partitions x 3 elements starting at partition 32, then read the bytes back through
  // other patterns.
  const AccessPattern ap = sbuf_ap(DType::fp32, 32, 2, 16, {{1, 3}});
  trnsim::isa::write(mem, ap, tile(2, 3, {1, 2, 3, 4, 5, 6}));
  CHECK(values(trnsim::isa::read(mem, ap)) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // Partition 33's row starts one partition further in the SBUF image.
  const AccessPattern second_row = sbuf_ap(DType::fp32, 33, 1, 16, {{1, 3}});
  CHECK(values(trnsim::isa::read(mem, second_row)) == std::vector<float>{4, 5, 6});
  // Reversed.
  const AccessPattern reversed = sbuf_ap(DType::fp32, 32, 1, 24, {{-1, 3}});
  CHECK(values(trnsim::isa::read(mem, reversed)) == std::vector<float>{3, 2, 1});
  // Untouched partitions stay zero.
  CHECK(values(trnsim::isa::read(mem, sbuf_ap(DType::fp32, 31, 1, 16, {{1, 3}}))) ==
        std::vector<float>{0, 0, 0});
}

TEST_CASE("matmul computes stationary^T x moving into PSUM", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  // stationary [K=2 x M=2], moving [K=2 x N=3].
  const AccessPattern st = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 2}});
  const AccessPattern mv = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 3}});
  const AccessPattern out = psum_ap(DType::fp32, 0, 2, 0, {{1, 3}});
  trnsim::isa::write(mem, st, tile(2, 2, {1, 2, 3, 4}));
  trnsim::isa::write(mem, mv, tile(2, 3, {1, 0, 2, 0, 1, 3}));
  trnsim::isa::write(mem, out, tile(2, 3, {10, 10, 10, 10, 10, 10}));
  Instruction mm = make(Opcode::matmul, Engine::tensor);
  mm.src[0] = st;
  mm.src[1] = mv;
  mm.dst = out;
  // out[m][n] = sum_k st[k][m] * mv[k][n]:
  // m=0: [1*1+3*0, 1*0+3*1, 1*2+3*3] = [1, 3, 11]; m=1: [2, 4, 2*2+4*3] = [2, 4, 16].
  execute(mm, mem);
  CHECK(values(trnsim::isa::read(mem, out)) == std::vector<float>{1, 3, 11, 2, 4, 16});
}

TEST_CASE("matmul accumulates into PSUM unless it starts the group", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern st = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 2}});
  const AccessPattern mv = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 3}});
  const AccessPattern out = psum_ap(DType::fp32, 0, 2, 2048, {{1, 3}});
  trnsim::isa::write(mem, st, tile(2, 2, {1, 2, 3, 4}));
  trnsim::isa::write(mem, mv, tile(2, 3, {1, 0, 2, 0, 1, 3}));
  trnsim::isa::write(mem, out, tile(2, 3, {100, 100, 100, 100, 100, 100}));
  Instruction first = make(Opcode::matmul, Engine::tensor);
  first.src[0] = st;
  first.src[1] = mv;
  first.dst = out;
  first.accumulate_start = true;
  first.accumulate_stop = false;
  execute(first, mem);  // the stale 100s are discarded
  CHECK(values(trnsim::isa::read(mem, out)) == std::vector<float>{1, 3, 11, 2, 4, 16});
  Instruction middle = first;
  middle.accumulate_start = false;
  execute(middle, mem);
  CHECK(values(trnsim::isa::read(mem, out)) == std::vector<float>{2, 6, 22, 4, 8, 32});
  Instruction last = middle;
  last.accumulate_stop = true;
  execute(last, mem);
  CHECK(values(trnsim::isa::read(mem, out)) == std::vector<float>{3, 9, 33, 6, 12, 48});
}

TEST_CASE("matmul reads bf16 inputs and accumulates in fp32", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern st = sbuf_ap(DType::bf16, 0, 2, 0, {{1, 1}});
  const AccessPattern mv = sbuf_ap(DType::bf16, 0, 2, 64, {{1, 1}});
  const AccessPattern out = psum_ap(DType::fp32, 0, 1, 0, {{1, 1}});
  trnsim::isa::write(mem, st, tile(2, 1, {1.0f, 1.0f}));
  // 256 and 1 are exact in bf16, their sum 257 is not: fp32 PSUM keeps it.
  trnsim::isa::write(mem, mv, tile(2, 1, {256.0f, 1.0f}));
  Instruction mm = make(Opcode::matmul, Engine::tensor);
  mm.src[0] = st;
  mm.src[1] = mv;
  mm.dst = out;
  execute(mm, mem);
  CHECK(trnsim::isa::read(mem, out)(0, 0) == 257.0f);
}

TEST_CASE(
    "activation applies func(in * scale + bias) with a per-partition scale and "
    "accumulates the sum",
    "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 3}});
  const AccessPattern scale = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 1}});
  const AccessPattern dst = sbuf_ap(DType::fp32, 0, 2, 128, {{1, 3}});
  const AccessPattern acc = sbuf_ap(DType::fp32, 0, 2, 192, {{1, 1}});
  trnsim::isa::write(mem, src, tile(2, 3, {1, 2, 3, 4, 5, 6}));
  trnsim::isa::write(mem, scale, tile(2, 1, {2.0f, 0.5f}));
  trnsim::isa::write(mem, acc, tile(2, 1, {1000.0f, 1000.0f}));
  Instruction act = make(Opcode::activation, Engine::scalar);
  act.function = ActivationFunction::square;
  act.src[0] = src;
  act.dst = dst;
  act.scale = ScalarOperand::from(scale);
  act.bias = ScalarOperand::immediate(1.0f);
  act.accumulate = acc;
  execute(act, mem);
  // Row 0: (2x + 1)^2 of 1, 2, 3 = 9, 25, 49, sum 83.
  // Row 1: (0.5x + 1)^2 of 4, 5, 6 = 9, 12.25, 16, sum 37.25.
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{9, 25, 49, 9, 12.25f, 16});
  CHECK(values(trnsim::isa::read(mem, acc)) == std::vector<float>{83.0f, 37.25f});
}

TEST_CASE("activation rsqrt with an immediate bias", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern col = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 1}});
  const AccessPattern out = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 1}});
  trnsim::isa::write(mem, col, tile(2, 1, {3.0f, 15.0f}));
  Instruction act = make(Opcode::activation, Engine::scalar);
  act.function = ActivationFunction::rsqrt;
  act.src[0] = col;
  act.dst = out;
  act.bias = ScalarOperand::immediate(1.0f);
  execute(act, mem);
  // 1 / sqrt(3 + 1) = 0.5, 1 / sqrt(15 + 1) = 0.25.
  const Tile r = trnsim::isa::read(mem, out);
  CHECK(r(0, 0) == Approx(0.5f).epsilon(1e-6));
  CHECK(r(1, 0) == Approx(0.25f).epsilon(1e-6));
}

TEST_CASE("tensor_scalar applies op0 then op1", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 2}});
  const AccessPattern per_part = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 1}});
  const AccessPattern dst = sbuf_ap(DType::fp32, 0, 2, 128, {{1, 2}});
  trnsim::isa::write(mem, src, tile(2, 2, {1, 2, 3, 4}));
  trnsim::isa::write(mem, per_part, tile(2, 1, {1.0f, 2.0f}));
  Instruction ts = make(Opcode::tensor_scalar, Engine::vector);
  ts.src[0] = src;
  ts.dst = dst;
  ts.op0 = AluOp::subtract;
  ts.operand0 = ScalarOperand::from(per_part);
  ts.op1 = AluOp::multiply;
  ts.operand1 = ScalarOperand::immediate(3.0f);
  execute(ts, mem);
  // (x - s[p]) * 3: row 0 (1-1, 2-1) * 3 = 0, 3; row 1 (3-2, 4-2) * 3 = 3, 6.
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{0, 3, 3, 6});

  // divide then max, through the generic path; op1 bypass leaves op0's result.
  ts.op0 = AluOp::divide;
  ts.operand0 = ScalarOperand::immediate(2.0f);
  ts.op1 = AluOp::max;
  ts.operand1 = ScalarOperand::immediate(1.0f);
  execute(ts, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{1, 1, 1.5f, 2});
  ts.op1 = AluOp::bypass;
  execute(ts, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{0.5f, 1, 1.5f, 2});
}

TEST_CASE("tensor_tensor combines src0 op src1 element by element", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern a = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 2}});
  const AccessPattern b = psum_ap(DType::fp32, 0, 2, 0, {{1, 2}});
  const AccessPattern dst = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 2}});
  trnsim::isa::write(mem, a, tile(2, 2, {10, 20, 30, 40}));
  trnsim::isa::write(mem, b, tile(2, 2, {1, 2, 3, 50}));
  Instruction tt = make(Opcode::tensor_tensor, Engine::vector);
  tt.src[0] = a;
  tt.src[1] = b;
  tt.dst = dst;
  tt.op0 = AluOp::subtract;
  execute(tt, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{9, 18, 27, -10});
  tt.op0 = AluOp::divide;
  execute(tt, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{10, 10, 10, 0.8f});
  tt.op0 = AluOp::min;
  execute(tt, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{1, 2, 3, 40});
}

TEST_CASE("tensor_reduce over the innermost free dimension", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  // Per partition 2 x 4 values; reduce the 4.
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 2, 0, {{4, 2}, {1, 4}});
  const AccessPattern dst = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 2}});
  trnsim::isa::write(mem, src,
                     tile(2, 8,
                          {1, 2, 3, 4, 5, 6, 7, 8,  //
                           -1, 9, -3, 0, 2, 2, 2, -7}));
  Instruction r = make(Opcode::tensor_reduce, Engine::vector);
  r.src[0] = src;
  r.dst = dst;
  r.reduce_dims = 1;
  r.op0 = AluOp::add;
  execute(r, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{10, 26, 5, -1});
  r.op0 = AluOp::max;
  execute(r, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{4, 8, 9, 2});
  r.op0 = AluOp::min;
  execute(r, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{1, 5, -3, -7});
}

TEST_CASE("tensor_reduce over two free dimensions", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  // Per partition 2 x 2 x 3; reduce the inner 2 x 3, keep the outer 2.
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 1, 0, {{6, 2}, {3, 2}, {1, 3}});
  const AccessPattern dst = sbuf_ap(DType::fp32, 0, 1, 128, {{1, 2}});
  trnsim::isa::write(mem, src, tile(1, 12, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}));
  Instruction r = make(Opcode::tensor_reduce, Engine::vector);
  r.src[0] = src;
  r.dst = dst;
  r.reduce_dims = 2;
  r.op0 = AluOp::add;
  execute(r, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{21, 210});
  // All three dimensions into one value.
  const AccessPattern one = sbuf_ap(DType::fp32, 0, 1, 192, {{1, 1}});
  r.dst = one;
  r.reduce_dims = 3;
  r.op0 = AluOp::max;
  execute(r, mem);
  CHECK(trnsim::isa::read(mem, one)(0, 0) == 60.0f);
}

TEST_CASE("tensor_reduce over a non-contiguous pattern follows the pattern", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  // Sum columns of a row-major 3 x 2 block: the reduced dim is the strided one.
  const AccessPattern block = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 6}});
  trnsim::isa::write(mem, block, tile(1, 6, {1, 2, 3, 4, 5, 6}));
  Instruction r = make(Opcode::tensor_reduce, Engine::vector);
  r.src[0] = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 2}, {2, 3}});
  r.dst = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 2}});
  r.op0 = AluOp::add;
  execute(r, mem);
  CHECK(values(trnsim::isa::read(mem, r.dst)) == std::vector<float>{9, 12});
}

TEST_CASE("writes to bf16 round to nearest even", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 4}});
  const AccessPattern dst = sbuf_ap(DType::bf16, 0, 1, 64, {{1, 4}});
  // 1 + 2^-8 (tie, to 1), 1 + 3 x 2^-8 (tie, to 1 + 2^-6), 1 + 2^-8 + 2^-20 (up), 257 (tie,
  // to 256).
  trnsim::isa::write(mem, src, tile(1, 4, {1.00390625f, 1.01171875f, 1.00390720f, 257.0f}));
  Instruction cp = make(Opcode::tensor_copy, Engine::vector);
  cp.src[0] = src;
  cp.dst = dst;
  execute(cp, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) ==
        std::vector<float>{1.0f, 1.015625f, 1.0078125f, 256.0f});
  // Two bytes per element: the fifth bf16 slot is untouched.
  CHECK(trnsim::isa::read(mem, sbuf_ap(DType::bf16, 0, 1, 72, {{1, 1}}))(0, 0) == 0.0f);
  // The arithmetic result is rounded too: 1 + 2^-8 computed in fp32, stored in bf16.
  Instruction ts = make(Opcode::tensor_scalar, Engine::vector);
  ts.src[0] = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 1}});
  ts.op0 = AluOp::add;
  ts.operand0 = ScalarOperand::immediate(0.0078125f);  // 1.00390625 + 2^-7 = 1.01171875
  ts.dst = sbuf_ap(DType::bf16, 0, 1, 64, {{1, 1}});
  execute(ts, mem);
  CHECK(trnsim::isa::read(mem, ts.dst)(0, 0) == 1.015625f);
}

TEST_CASE("memset fills the destination with the immediate", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 0);
  const AccessPattern dst = sbuf_ap(DType::bf16, 32, 2, 0, {{2, 3}});
  Instruction ms = make(Opcode::memset, Engine::vector);
  ms.dst = dst;
  ms.operand0 = ScalarOperand::immediate(1.00390625f);  // rounds to 1 in bf16
  execute(ms, mem);
  CHECK(values(trnsim::isa::read(mem, dst)) == std::vector<float>{1, 1, 1, 1, 1, 1});
  // The stride-2 gaps are untouched.
  CHECK(values(trnsim::isa::read(mem, sbuf_ap(DType::bf16, 32, 1, 2, {{2, 3}}))) ==
        std::vector<float>{0, 0, 0});
}

TEST_CASE("dma_copy moves HBM rows into partitions", "[unit][semantics]") {
  MemoryImage mem(small_arch(), 64);
  // HBM holds a 2 x 4 fp32 matrix at byte 0 (32 bytes).
  const AccessPattern hbm = hbm_ap(DType::fp32, 0, 2, 4, {{1, 4}});
  trnsim::isa::write(mem, hbm, tile(2, 4, {1, 2, 3, 4, 5, 6, 7, 8}));
  CHECK(trnsim::isa::load_element(DType::fp32, mem.hbm.data() + 16) == 5.0f);
  Instruction dma = make(Opcode::dma_copy, Engine::sync);
  dma.src[0] = hbm;
  dma.dst = sbuf_ap(DType::fp32, 64, 2, 0, {{1, 4}});
  execute(dma, mem);
  CHECK(values(trnsim::isa::read(mem, sbuf_ap(DType::fp32, 65, 1, 0, {{1, 4}}))) ==
        std::vector<float>{5, 6, 7, 8});
  // Partition stride 0 broadcasts one HBM row to every partition.
  dma.src[0] = hbm_ap(DType::fp32, 16, 3, 0, {{1, 4}});
  dma.dst = sbuf_ap(DType::fp32, 0, 3, 256, {{1, 4}});
  execute(dma, mem);
  CHECK(values(trnsim::isa::read(mem, dma.dst)) ==
        std::vector<float>{5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8});
}
