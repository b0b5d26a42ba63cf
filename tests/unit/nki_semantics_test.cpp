// Semantics of the opcodes and options NKI kernels brought, each against a reference computed
// here in plain loops (the NumPy semantics of the nki.isa reference): inputs are written into
// a trn2 MemoryImage, the instruction is validated and executed, and what it wrote is compared.
// Then one validation reject per rule of the new opcodes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/instruction.hpp"
#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "isa/validate.hpp"

using Catch::Matchers::Contains;
using trnsim::Engine;
using trnsim::isa::ActivationFunction;
using trnsim::isa::AluOp;
using trnsim::isa::DType;
using trnsim::isa::Instruction;
using trnsim::isa::MemoryImage;
using trnsim::isa::Opcode;
using trnsim::isa::Program;
using trnsim::isa::psum_ap;
using trnsim::isa::read;
using trnsim::isa::sbuf_ap;
using trnsim::isa::ScalarOperand;
using trnsim::isa::Tile;
using trnsim::isa::write;

namespace {

const trnsim::config::ArchConfig& arch() {
  static const trnsim::config::ArchConfig a = trnsim::config::trn2();
  return a;
}

std::string reason(const Instruction& in) {
  Program p;
  p.add_dram_tensor("x", DType::fp32, {128, 64});
  return trnsim::isa::check_instruction(p, arch(), in);
}

void run(const Instruction& in, MemoryImage& mem) {
  const std::string why = reason(in);
  INFO(why);
  REQUIRE(why.empty());
  trnsim::isa::execute(in, mem);
}

Instruction make(Opcode op, Engine e = Engine::vector) {
  Instruction in;
  in.opcode = op;
  in.engine = e;
  return in;
}

Tile generate(Eigen::Index rows, Eigen::Index cols,
              const std::function<float(Eigen::Index, Eigen::Index)>& f) {
  Tile t(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r)
    for (Eigen::Index c = 0; c < cols; ++c) t(r, c) = f(r, c);
  return t;
}

MemoryImage memory() {
  return MemoryImage(arch(), 128 * 64 * 4);
}

}  // namespace

TEST_CASE("tensor_scalar with reverse puts the operand on the left of its op",
          "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  const auto src = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  write(mem, src, generate(4, 8, [](auto p, auto i) { return float(p * 8 + i + 1); }));
  Instruction in = make(Opcode::tensor_scalar);
  in.src[0] = src;
  in.dst = sbuf_ap(DType::fp32, 0, 4, 1024, {{1, 8}});
  in.op0 = AluOp::subtract;
  in.operand0 = ScalarOperand::immediate(100.0f);
  in.op1 = AluOp::divide;
  in.operand1 = ScalarOperand::immediate(2.0f);
  in.reverse = 3;  // (100 - x), then 2 / that
  run(in, mem);
  const Tile out = read(mem, in.dst);
  for (Eigen::Index p = 0; p < 4; ++p)
    for (Eigen::Index i = 0; i < 8; ++i) CHECK(out(p, i) == 2.0f / (100.0f - float(p * 8 + i + 1)));
}

TEST_CASE("tensor_reduce with negate writes the negated reduction", "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::tensor_reduce);
  in.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 4}});
  write(mem, in.src[0], generate(2, 4, [](auto p, auto i) { return float(p * 10 + i); }));
  in.dst = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 1}});
  in.op0 = AluOp::max;
  in.negate = true;
  run(in, mem);
  const Tile out = read(mem, in.dst);
  CHECK(out(0, 0) == -3.0f);
  CHECK(out(1, 0) == -13.0f);
}

TEST_CASE("tensor_scalar_reduce writes src op0 operand0 and its row reduction",
          "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::tensor_scalar_reduce);
  in.src[0] = sbuf_ap(DType::fp32, 0, 3, 0, {{1, 5}});
  const Tile x = generate(3, 5, [](auto p, auto i) { return float(i) - float(p); });
  write(mem, in.src[0], x);
  in.dst = sbuf_ap(DType::fp32, 0, 3, 512, {{1, 5}});
  in.accumulate = sbuf_ap(DType::fp32, 0, 3, 1024, {{1, 1}});
  in.op0 = AluOp::multiply;
  in.operand0 = ScalarOperand::immediate(3.0f);
  for (AluOp r : {AluOp::add, AluOp::max, AluOp::min}) {
    in.op1 = r;
    run(in, mem);
    const Tile out = read(mem, in.dst);
    const Tile acc = read(mem, in.accumulate);
    for (Eigen::Index p = 0; p < 3; ++p) {
      const Eigen::ArrayXf row = (x.row(p) * 3.0f).transpose();
      CHECK(out.row(p).isApprox(x.row(p) * 3.0f));
      const float want = r == AluOp::add   ? row.sum()
                         : r == AluOp::max ? row.maxCoeff()
                                           : row.minCoeff();
      CHECK(acc(p, 0) == want);
    }
  }
}

TEST_CASE("tensor_tensor_scan carries r = (src0[i] op0 r) op1 src1[i] along the free axis",
          "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::tensor_tensor_scan);
  in.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 6}});
  in.src[1] = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 6}});
  in.dst = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 6}});
  const Tile a = generate(2, 6, [](auto p, auto i) { return 0.5f + 0.1f * float(i + p); });
  const Tile b = generate(2, 6, [](auto p, auto i) { return float(i) - float(p); });
  write(mem, in.src[0], a);
  write(mem, in.src[1], b);
  in.op0 = AluOp::multiply;  // a decaying recurrence: r = a[i] * r + b[i] (Mamba's scan)
  in.op1 = AluOp::add;
  in.operand0 = ScalarOperand::immediate(1.0f);
  run(in, mem);
  const Tile out = read(mem, in.dst);
  for (Eigen::Index p = 0; p < 2; ++p) {
    float r = 1.0f;
    for (Eigen::Index i = 0; i < 6; ++i) {
      r = a(p, i) * r + b(p, i);
      CHECK(out(p, i) == r);
    }
  }
  in.op0 = AluOp::subtract;  // reverse bit 0: r - src0[i]
  in.reverse = 1;
  run(in, mem);
  const Tile rev = read(mem, in.dst);
  float r = 1.0f;
  for (Eigen::Index i = 0; i < 6; ++i) {
    r = (r - a(0, i)) + b(0, i);
    CHECK(rev(0, i) == r);
  }
}

TEST_CASE("tensor_scalar_cumulative keeps a running op1 from its identity",
          "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::tensor_scalar_cumulative);
  in.src[0] = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 5}});
  write(mem, in.src[0], generate(1, 5, [](auto, auto i) { return float(i) - 2.0f; }));
  in.dst = sbuf_ap(DType::fp32, 0, 1, 256, {{1, 5}});
  in.op0 = AluOp::add;
  in.operand0 = ScalarOperand::immediate(1.0f);
  in.op1 = AluOp::add;  // a prefix sum of src + 1: -1, -1, 0, 2, 5
  run(in, mem);
  Tile out = read(mem, in.dst);
  CHECK(std::vector<float>(out.data(), out.data() + 5) == std::vector<float>{-1, -1, 0, 2, 5});
  in.op1 = AluOp::max;  // running max of src + 1: -1, 0, 1, 2, 3
  run(in, mem);
  out = read(mem, in.dst);
  CHECK(std::vector<float>(out.data(), out.data() + 5) == std::vector<float>{-1, 0, 1, 2, 3});
}

TEST_CASE(
    "max8 writes the 8 largest of each partition, descending, find_index8 finds them, "
    "match_replace8 replaces them",
    "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  const auto data = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 20}});
  // Partition 0: a permutation; partition 1: with a repeated value.
  const std::vector<float> row0 = {3, 17, 5,  9, 1,  12, 19, 0,  7, 14,
                                   2, 11, 18, 4, 16, 6,  10, 13, 8, 15};
  const std::vector<float> row1 = {5, 5, 5, 1, 2, 3, 4, 6, 7, 8, 9, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  Tile t(2, 20);
  for (int i = 0; i < 20; ++i) {
    t(0, i) = row0[i];
    t(1, i) = row1[i];
  }
  write(mem, data, t);
  Instruction m8 = make(Opcode::max8);
  m8.src[0] = data;
  m8.dst = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 8}});
  run(m8, mem);
  const Tile top = read(mem, m8.dst);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> sorted = r == 0 ? row0 : row1;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (int k = 0; k < 8; ++k) CHECK(top(r, k) == sorted[k]);
  }
  Instruction fi = make(Opcode::find_index8);
  fi.src[0] = data;
  fi.src[1] = m8.dst;
  fi.dst = sbuf_ap(DType::uint32, 0, 2, 512, {{1, 8}});
  run(fi, mem);
  const Tile idx = read(mem, fi.dst);
  CHECK(idx(0, 0) == 6);   // 19
  CHECK(idx(0, 1) == 12);  // 18
  // Partition 1's top 8: 9 8 7 6 5 5 5 4: the three 5s take successive occurrences 0, 1, 2.
  CHECK(idx(1, 4) == 0);
  CHECK(idx(1, 5) == 1);
  CHECK(idx(1, 6) == 2);
  CHECK(idx(1, 7) == 6);  // 4
  Instruction mr = make(Opcode::match_replace8);
  mr.src[0] = data;
  mr.src[1] = m8.dst;
  mr.dst = sbuf_ap(DType::fp32, 0, 2, 768, {{1, 20}});
  mr.operand0 = ScalarOperand::immediate(-1.0f);
  run(mr, mem);
  const Tile rep = read(mem, mr.dst);
  for (int r = 0; r < 2; ++r) {
    int replaced = 0;
    for (int i = 0; i < 20; ++i) replaced += rep(r, i) == -1.0f;
    CHECK(replaced == 8);
  }
  CHECK(rep(0, 6) == -1.0f);
  CHECK(rep(0, 0) == 3.0f);  // not among the 8 largest
  // An absent value: find_index8 writes all ones.
  write(mem, m8.dst, Tile::Constant(2, 8, 99.0f));
  run(fi, mem);
  uint32_t none;
  std::memcpy(&none, mem.sbuf.data() + 512, 4);
  CHECK(none == 0xFFFFFFFFu);
}

TEST_CASE("range_select keeps src where both bounds hold and takes the row max",
          "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::range_select);
  in.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 10}});
  write(mem, in.src[0], generate(2, 10, [](auto p, auto i) { return float(10 * p + i); }));
  const auto b0 = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 1}});
  const auto b1 = sbuf_ap(DType::fp32, 0, 2, 260, {{1, 1}});
  Tile lo(2, 1), hi(2, 1);
  lo << 2, 5;
  hi << 6, 8;
  write(mem, b0, lo);
  write(mem, b1, hi);
  in.operand0 = ScalarOperand::from(b0);
  in.operand1 = ScalarOperand::from(b1);
  in.op0 = AluOp::is_ge;           // index >= bound0
  in.op1 = AluOp::is_lt;           // index < bound1
  in.extra.edit().index_base = 1;  // indices 1..10
  in.extra.edit().fill = -std::numeric_limits<float>::max();
  in.dst = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 10}});
  in.accumulate = sbuf_ap(DType::fp32, 0, 2, 1024, {{1, 1}});
  run(in, mem);
  const Tile out = read(mem, in.dst);
  const Tile best = read(mem, in.accumulate);
  for (Eigen::Index p = 0; p < 2; ++p) {
    for (Eigen::Index i = 0; i < 10; ++i) {
      const float index = float(1 + i);
      const bool keep = index >= lo(p, 0) && index < hi(p, 0);
      CHECK(out(p, i) == (keep ? float(10 * p + i) : in.extra->fill));
    }
  }
  CHECK(best(0, 0) == 4.0f);   // indices 2..5 keep i = 1..4
  CHECK(best(1, 0) == 16.0f);  // indices 5..7 keep i = 4..6
}

TEST_CASE("copy_predicated writes src where the predicate holds and keeps dst elsewhere",
          "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::copy_predicated);
  in.src[0] = sbuf_ap(DType::uint8, 0, 2, 0, {{1, 6}});
  in.src[1] = sbuf_ap(DType::fp32, 0, 2, 64, {{1, 6}});
  in.dst = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 6}});
  write(mem, in.src[0], generate(2, 6, [](auto p, auto i) { return float((i + p) % 2); }));
  write(mem, in.src[1], Tile::Constant(2, 6, 7.0f));
  write(mem, in.dst, Tile::Constant(2, 6, -1.0f));
  run(in, mem);
  Tile out = read(mem, in.dst);
  for (Eigen::Index p = 0; p < 2; ++p)
    for (Eigen::Index i = 0; i < 6; ++i) CHECK(out(p, i) == ((i + p) % 2 ? 7.0f : -1.0f));
  in.reverse = 1;  // copy where the predicate is zero: now everything is 7
  run(in, mem);
  out = read(mem, in.dst);
  CHECK((out == 7.0f).all());
}

TEST_CASE("local_gather takes each 16-partition slice's indices partition first",
          "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::local_gather, Engine::gpsimd);
  in.src[0] = sbuf_ap(DType::fp32, 0, 32, 0, {{1, 64}});
  in.src[1] = sbuf_ap(DType::uint16, 0, 32, 1024, {{1, 2}});
  const Tile src = generate(32, 64, [](auto p, auto i) { return float(1000 * p + i); });
  write(mem, in.src[0], src);
  // Index (p, f) = 2 * (p % 16) + 3 * f: flattened partition first, slice-wide.
  const Tile index = generate(32, 2, [](auto p, auto f) { return float(2 * (p % 16) + 3 * f); });
  write(mem, in.src[1], index);
  in.gather_elements = 2;
  in.gather_indices = 20;
  in.dst = sbuf_ap(DType::fp32, 0, 32, 2048, {{1, 40}});
  run(in, mem);
  const Tile out = read(mem, in.dst);
  for (Eigen::Index p = 0; p < 32; ++p) {
    for (int k = 0; k < 20; ++k) {
      const int f = k / 16, q = k % 16;  // k-th index of the slice: partition q, column f
      const int at = 2 * q + 3 * f;
      CHECK(out(p, 2 * k) == src(p, at));
      CHECK(out(p, 2 * k + 1) == src(p, at + 1));
    }
  }
}

TEST_CASE("gather reads each partition's own elements at its indices", "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction in = make(Opcode::gather, Engine::gpsimd);
  in.src[0] = sbuf_ap(DType::bf16, 0, 4, 0, {{8, 4}, {1, 8}});  // 32 elements per partition
  in.src[1] = sbuf_ap(DType::uint32, 0, 4, 256, {{1, 5}});
  in.dst = sbuf_ap(DType::bf16, 0, 4, 512, {{1, 5}});
  const Tile src = generate(4, 32, [](auto p, auto i) { return float(100 * p + i); });
  write(mem, in.src[0], src);
  write(mem, in.src[1], generate(4, 5, [](auto p, auto i) { return float((7 * i + p) % 32); }));
  run(in, mem);
  const Tile out = read(mem, in.dst);
  const Tile stored = read(mem, in.src[0]);  // as bf16 holds it (303 becomes 304)
  for (Eigen::Index p = 0; p < 4; ++p)
    for (Eigen::Index i = 0; i < 5; ++i) CHECK(out(p, i) == stored(p, (7 * i + p) % 32));
}

TEST_CASE(
    "bn_stats with six outputs gives (count, mean, M2) of even then odd elements, and "
    "bn_aggr combines them to the row's mean and variance",
    "[unit][semantics][nki]") {
  MemoryImage mem = memory();
  Instruction st = make(Opcode::bn_stats);
  st.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 9}});
  const Tile x = generate(2, 9, [](auto p, auto i) { return float(i * i) - 3.0f * float(p); });
  write(mem, st.src[0], x);
  st.dst = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 6}});
  run(st, mem);
  const Tile s = read(mem, st.dst);
  for (Eigen::Index p = 0; p < 2; ++p) {
    for (int half = 0; half < 2; ++half) {
      double n = 0, sum = 0;
      for (int i = half; i < 9; i += 2, ++n) sum += x(p, i);
      double m2 = 0;
      for (int i = half; i < 9; i += 2) m2 += (x(p, i) - sum / n) * (x(p, i) - sum / n);
      CHECK(s(p, 3 * half) == float(n));
      CHECK(s(p, 3 * half + 1) == Approx(sum / n));
      CHECK(s(p, 3 * half + 2) == Approx(m2));
    }
  }
  Instruction ag = make(Opcode::bn_aggr);
  ag.src[0] = st.dst;
  ag.dst = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 2}});
  run(ag, mem);
  const Tile mv = read(mem, ag.dst);
  for (Eigen::Index p = 0; p < 2; ++p) {
    const double mean = x.row(p).cast<double>().mean();
    const double var = (x.row(p).cast<double>() - mean).square().mean();
    CHECK(mv(p, 0) == Approx(mean));
    CHECK(mv(p, 1) == Approx(var));
  }
}

TEST_CASE("the activation functions NKI adds compute their formulas", "[unit][semantics][nki]") {
  using F = ActivationFunction;
  const float x = 0.7f;
  const float s = 1.0f / (1.0f + std::exp(-x));
  CHECK(apply(F::softplus, x) == Approx(std::log(1.0f + std::exp(x))));
  CHECK(apply(F::mish, x) == Approx(x * std::tanh(std::log(1.0f + std::exp(x)))));
  CHECK(apply(F::erf, x) == Approx(std::erf(x)));
  CHECK(apply(F::erf_dx, x) == Approx(2.0f / std::sqrt(3.14159265f) * std::exp(-x * x)));
  CHECK(apply(F::silu_dx, x) == Approx(s + x * s * (1.0f - s)));
  CHECK(apply(F::gelu_apprx_sigmoid, x) == Approx(x / (1.0f + std::exp(-1.702f * x))));
  CHECK(apply(F::arctan, x) == Approx(std::atan(x)));
  CHECK(apply(F::sign, -x) == -1.0f);
  CHECK(apply(F::sign, 0.0f) == 0.0f);
  // gelu_dx against a central difference of gelu.
  const float h = 1e-3f;
  CHECK(apply(F::gelu_dx, x) ==
        Approx((apply(F::gelu, x + h) - apply(F::gelu, x - h)) / (2 * h)).epsilon(1e-3));
  CHECK(trnsim::isa::apply(AluOp::logical_and, 2.0f, 0.0f) == 0.0f);
  CHECK(trnsim::isa::apply(AluOp::logical_or, 2.0f, 0.0f) == 1.0f);
  CHECK(trnsim::isa::apply(AluOp::logical_xor, 2.0f, 3.0f) == 0.0f);
}

TEST_CASE("int16, uint16 and uint32 store with saturation and round trip exactly",
          "[unit][semantics][nki]") {
  uint8_t b[4];
  trnsim::isa::store_element(DType::uint32, b, 4294967295.0f);
  CHECK(trnsim::isa::load_element(DType::uint32, b) == 4294967295.0f);
  trnsim::isa::store_element(DType::uint16, b, 70000.0f);
  CHECK(trnsim::isa::load_element(DType::uint16, b) == 65535.0f);
  trnsim::isa::store_element(DType::int16, b, -40000.0f);
  CHECK(trnsim::isa::load_element(DType::int16, b) == -32768.0f);
  trnsim::isa::store_element(DType::uint16, b, -3.0f);
  CHECK(trnsim::isa::load_element(DType::uint16, b) == 0.0f);
}

TEST_CASE("the new opcodes' rules reject what NKI rejects", "[unit][validate][nki]") {
  Instruction m8 = make(Opcode::max8);
  m8.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 4}});
  m8.dst = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 8}});
  CHECK_THAT(reason(m8), Contains("takes 8 to 16384"));

  Instruction fi = make(Opcode::find_index8);
  fi.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 16}});
  fi.src[1] = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 8}});
  fi.dst = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 8}});
  CHECK_THAT(reason(fi), Contains("uint32 or uint16"));

  Instruction tsr = make(Opcode::tensor_scalar_reduce);
  tsr.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 16}});
  tsr.dst = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 16}});
  tsr.op1 = AluOp::subtract;
  tsr.accumulate = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 1}});
  CHECK_THAT(reason(tsr), Contains("expected add, max or min"));
  tsr.op1 = AluOp::add;
  tsr.accumulate = sbuf_ap(DType::bf16, 0, 2, 512, {{1, 1}});
  CHECK_THAT(reason(tsr), Contains("must be fp32"));

  Instruction scan = make(Opcode::tensor_tensor_scan);
  scan.src[0] = psum_ap(DType::fp32, 0, 2, 0, {{1, 16}});
  scan.src[1] = psum_ap(DType::fp32, 0, 2, 2048, {{1, 16}});
  scan.dst = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 16}});
  CHECK_THAT(reason(scan), Contains("both in PSUM"));

  Instruction rs = make(Opcode::range_select);
  rs.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 16}});
  rs.dst = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 16}});
  rs.op0 = AluOp::add;
  rs.op1 = AluOp::is_lt;
  CHECK_THAT(reason(rs), Contains("range_select compares"));

  Instruction cp = make(Opcode::copy_predicated);
  cp.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 16}});
  cp.src[1] = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 16}});
  cp.dst = sbuf_ap(DType::fp32, 0, 2, 512, {{1, 16}});
  CHECK_THAT(reason(cp), Contains("must hold integers"));

  Instruction lg = make(Opcode::local_gather, Engine::gpsimd);
  lg.src[0] = sbuf_ap(DType::fp32, 0, 24, 0, {{1, 16}});
  lg.src[1] = sbuf_ap(DType::uint16, 0, 24, 256, {{1, 1}});
  lg.dst = sbuf_ap(DType::fp32, 0, 24, 512, {{1, 1}});
  lg.gather_indices = 1;
  CHECK_THAT(reason(lg), Contains("multiple of 16"));
  lg.src[0].edit().partitions = lg.src[1].edit().partitions = lg.dst.edit().partitions = 16;
  lg.gather_elements = 3;
  CHECK_THAT(reason(lg), Contains("expected 1, 2, 4, 8, 16 or 32"));
  lg.gather_elements = 1;
  lg.gather_indices = 17;  // a slice of [16 x 1] indices holds 16
  CHECK_THAT(reason(lg), Contains("gather_indices is 17"));
  lg.gather_indices = 1;
  lg.src[0] = psum_ap(DType::fp32, 0, 16, 0, {{1, 16}});
  CHECK_THAT(reason(lg), Contains("GpSimdE cannot reach"));

  Instruction bn = make(Opcode::bn_stats);
  bn.src[0] = sbuf_ap(DType::fp32, 0, 2, 0, {{1, 16}});
  bn.dst = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 4}});
  CHECK_THAT(reason(bn), Contains("or 6 wide"));
}
