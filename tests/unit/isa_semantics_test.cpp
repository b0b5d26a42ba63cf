// Semantics of the opcodes that tests/unit/semantics_test.cpp does not cover, and dtype edge
// cases of the ones it does: inputs are written into a MemoryImage of trn2, the instruction is
// validated and executed, and what it wrote is compared with a hand-computed or loop-computed
// reference. Then one validation reject per rule of the new opcodes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
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
using trnsim::config::ArchConfig;
using trnsim::isa::AccessPattern;
using trnsim::isa::AluOp;
using trnsim::isa::DType;
using trnsim::isa::execute;
using trnsim::isa::hbm_ap;
using trnsim::isa::Instruction;
using trnsim::isa::MemoryImage;
using trnsim::isa::Opcode;
using trnsim::isa::Program;
using trnsim::isa::psum_ap;
using trnsim::isa::sbuf_ap;
using trnsim::isa::ScalarOperand;
using trnsim::isa::Tile;

namespace {

constexpr uint64_t kDramBytes = 128 * 1024 * 4;  // one fp32 [128 x 1024] HBM tensor
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

const ArchConfig& arch() {
  static const ArchConfig a = trnsim::config::trn2();
  return a;
}

// The rule check_instruction applies, against a program with one queue, two semaphores and
// the HBM tensor: "" when the instruction is valid.
std::string reason(const Instruction& in) {
  Program p;
  p.add_queue("q0");
  p.add_semaphore("s1");
  p.add_dram_tensor("x", DType::fp32, {128, 1024});
  return trnsim::isa::check_instruction(p, arch(), in);
}

// Validates, then executes.
void run(const Instruction& in, MemoryImage& mem) {
  const std::string why = reason(in);
  INFO(why);
  REQUIRE(why.empty());
  execute(in, mem);
}

Instruction make(Opcode op, Engine e) {
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

Tile row_of(std::vector<float> v) {
  Tile t(1, static_cast<Eigen::Index>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) t(0, static_cast<Eigen::Index>(i)) = v[i];
  return t;
}

std::vector<float> values(const Tile& t) {
  std::vector<float> v;
  for (Eigen::Index r = 0; r < t.rows(); ++r)
    for (Eigen::Index c = 0; c < t.cols(); ++c) v.push_back(t(r, c));
  return v;
}

// Equal as stored values: NaN matches NaN, and the sign of a zero counts.
bool same(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// The int32 stored at byte `offset` of SBUF partition `p` (exact, unlike a float read).
int32_t sbuf_int32(const MemoryImage& mem, uint32_t p, uint64_t offset) {
  int32_t v;
  std::memcpy(&v, mem.sbuf.data() + p * mem.sbuf_partition_bytes + offset, sizeof v);
  return v;
}

void set_sbuf_int32(MemoryImage& mem, uint32_t p, uint64_t offset, int32_t v) {
  std::memcpy(mem.sbuf.data() + p * mem.sbuf_partition_bytes + offset, &v, sizeof v);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Transposes

TEST_CASE("dma_transpose writes dst[j, i] = src[i, j] from HBM and SBUF to SBUF",
          "[unit][semantics]") {
  MemoryImage mem(arch(), kDramBytes);
  // HBM [3 x 5] fp32 (rows 5 elements apart) -> SBUF [5 x 3].
  const AccessPattern src = hbm_ap(DType::fp32, 0, 3, 5, {{1, 5}});
  const Tile in = generate(3, 5, [](auto i, auto j) { return static_cast<float>(10 * i + j); });
  trnsim::isa::write(mem, src, in);
  Instruction t = make(Opcode::dma_transpose, Engine::sync);
  t.src[0] = src;
  t.dst = sbuf_ap(DType::fp32, 0, 5, 0, {{1, 3}});
  run(t, mem);
  const Tile out = trnsim::isa::read(mem, t.dst);
  for (int j = 0; j < 5; ++j)
    for (int i = 0; i < 3; ++i) CHECK(out(j, i) == in(i, j));

  // SBUF [32 x 48] bf16 from partition 64 -> SBUF [48 x 32] bf16 (48 partitions start at 0).
  const AccessPattern s2 = sbuf_ap(DType::bf16, 64, 32, 1024, {{1, 48}});
  const Tile in2 =
      generate(32, 48, [](auto i, auto j) { return static_cast<float>(i * 48 + j) - 700.0f; });
  trnsim::isa::write(mem, s2, in2);  // rounded to bf16; compare with what was stored
  Instruction t2 = make(Opcode::dma_transpose, Engine::gpsimd);
  t2.src[0] = s2;
  t2.dst = sbuf_ap(DType::bf16, 0, 48, 4096, {{1, 32}});
  run(t2, mem);
  const Tile src_back = trnsim::isa::read(mem, s2);
  const Tile out2 = trnsim::isa::read(mem, t2.dst);
  for (int j = 0; j < 48; ++j)
    for (int i = 0; i < 32; ++i) CHECK(out2(j, i) == src_back(i, j));
}

TEST_CASE("transpose through TensorE into PSUM and a 32x32 VectorE transpose",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  // TensorE: bf16 [4 x 6] -> fp32 PSUM [6 x 4]. bf16 inputs of 1/8 steps are exact.
  const AccessPattern src = sbuf_ap(DType::bf16, 0, 4, 0, {{1, 6}});
  const Tile in = generate(4, 6, [](auto i, auto j) { return 0.125f * (i * 6 + j) - 1.0f; });
  trnsim::isa::write(mem, src, in);
  Instruction pe = make(Opcode::transpose, Engine::tensor);
  pe.src[0] = src;
  pe.dst = psum_ap(DType::fp32, 0, 6, 0, {{1, 4}});
  run(pe, mem);
  const Tile out = trnsim::isa::read(mem, pe.dst);
  for (int j = 0; j < 6; ++j)
    for (int i = 0; i < 4; ++i) CHECK(out(j, i) == in(i, j));

  // VectorE: fp32 [32 x 32], read with a strided source pattern (every other element).
  const AccessPattern wide = sbuf_ap(DType::fp32, 0, 32, 0, {{1, 64}});
  trnsim::isa::write(
      mem, wide, generate(32, 64, [](auto i, auto j) { return static_cast<float>(i * 1000 + j); }));
  Instruction dve = make(Opcode::transpose, Engine::vector);
  dve.src[0] = sbuf_ap(DType::fp32, 0, 32, 0, {{2, 32}});
  dve.dst = sbuf_ap(DType::fp32, 0, 32, 1024, {{1, 32}});
  run(dve, mem);
  const Tile out2 = trnsim::isa::read(mem, dve.dst);
  for (int j = 0; j < 32; ++j)
    for (int i = 0; i < 32; ++i) CHECK(out2(j, i) == static_cast<float>(i * 1000 + 2 * j));
}

// ---------------------------------------------------------------------------------------------
// scalar_tensor_tensor

TEST_CASE("scalar_tensor_tensor computes (src0 op0 operand0) op1 src1", "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const uint32_t P = 4, F = 6;
  const AccessPattern a = sbuf_ap(DType::fp32, 0, P, 0, {{1, F}});
  const AccessPattern b = sbuf_ap(DType::fp32, 0, P, 64, {{1, F}});
  const AccessPattern s = sbuf_ap(DType::fp32, 0, P, 128, {{1, 1}});
  const Tile ta = generate(P, F, [](auto p, auto f) { return 0.37f * (p * F + f) - 3.0f; });
  const Tile tb = generate(P, F, [](auto p, auto f) { return 1.0f + 0.11f * (f - p); });
  const Tile ts = generate(P, 1, [](auto p, auto) { return 0.5f * p - 0.25f; });
  trnsim::isa::write(mem, a, ta);
  trnsim::isa::write(mem, b, tb);
  trnsim::isa::write(mem, s, ts);
  Instruction in = make(Opcode::scalar_tensor_tensor, Engine::vector);
  in.src[0] = a;
  in.src[1] = b;
  in.dst = sbuf_ap(DType::fp32, 0, P, 192, {{1, F}});
  in.op0 = AluOp::subtract;
  in.operand0 = ScalarOperand::from(s);
  in.op1 = AluOp::multiply;
  run(in, mem);
  Tile out = trnsim::isa::read(mem, in.dst);
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t f = 0; f < F; ++f) {
      CHECK(out(p, f) == Approx((ta(p, f) - ts(p, 0)) * tb(p, f)).epsilon(1e-6));
    }

  // Immediate operand, divide then max, on GpSimdE.
  in.engine = Engine::gpsimd;
  in.op0 = AluOp::divide;
  in.operand0 = ScalarOperand::immediate(4.0f);
  in.op1 = AluOp::max;
  run(in, mem);
  out = trnsim::isa::read(mem, in.dst);
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t f = 0; f < F; ++f) CHECK(out(p, f) == std::max(ta(p, f) / 4.0f, tb(p, f)));

  // bf16 everywhere: the result is rounded to bf16 (RNE). (1 + 1) * 3 = 6;
  // (1.5 + 1) * 1.0078125 = 2.51953125, which bf16 (spacing 2^-6 at 2) rounds to 2.515625.
  const AccessPattern a16 = sbuf_ap(DType::bf16, 0, 1, 1024, {{1, 2}});
  const AccessPattern b16 = sbuf_ap(DType::bf16, 0, 1, 1040, {{1, 2}});
  trnsim::isa::write(mem, a16, row_of({1.0f, 1.5f}));
  trnsim::isa::write(mem, b16, row_of({3.0f, 1.0078125f}));
  Instruction h = make(Opcode::scalar_tensor_tensor, Engine::vector);
  h.src[0] = a16;
  h.src[1] = b16;
  h.dst = sbuf_ap(DType::bf16, 0, 1, 1056, {{1, 2}});
  h.op0 = AluOp::add;
  h.operand0 = ScalarOperand::immediate(1.0f);
  h.op1 = AluOp::multiply;
  run(h, mem);
  CHECK(values(trnsim::isa::read(mem, h.dst)) == std::vector<float>{6.0f, 2.515625f});
}

// ---------------------------------------------------------------------------------------------
// iota

TEST_CASE("iota writes index_base + partition_step * p + sum index_steps * i over 2 free dims",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  Instruction in = make(Opcode::iota, Engine::gpsimd);
  in.dst = sbuf_ap(DType::int32, 0, 4, 0, {{5, 3}, {1, 5}});
  in.extra.edit().index_base = 7;
  in.extra.edit().partition_step = 100;
  in.extra.edit().index_steps = {10, -1, 0, 0};
  run(in, mem);
  for (uint32_t p = 0; p < 4; ++p)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 5; ++b) {
        CHECK(sbuf_int32(mem, p, 4 * (5 * a + b)) == 7 + 100 * static_cast<int>(p) + 10 * a - b);
      }

  // The steps follow the pattern's dims, not memory order: dims[0] has stride 1 here, so the
  // element at a + 3 * b gets 10 * a - b. On VectorE, into fp32, negative base.
  Instruction col = make(Opcode::iota, Engine::vector);
  col.dst = sbuf_ap(DType::fp32, 0, 2, 256, {{1, 3}, {3, 5}});
  col.extra.edit().index_base = -20;
  col.extra.edit().partition_step = -3;
  col.extra.edit().index_steps = {10, -1, 0, 0};
  run(col, mem);
  const Tile flat = trnsim::isa::read(mem, sbuf_ap(DType::fp32, 0, 2, 256, {{1, 15}}));
  for (int p = 0; p < 2; ++p)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 5; ++b) CHECK(flat(p, a + 3 * b) == -20.0f - 3.0f * p + 10 * a - b);
}

TEST_CASE("iota rounds and saturates to the destination dtype", "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  // bf16: 255..259 -> 255, 256, 256 (tie to even), 258, 260 (tie to even).
  Instruction in = make(Opcode::iota, Engine::vector);
  in.dst = sbuf_ap(DType::bf16, 0, 1, 0, {{1, 5}});
  in.extra.edit().index_base = 255;
  in.extra.edit().index_steps = {1, 0, 0, 0};
  run(in, mem);
  CHECK(values(trnsim::isa::read(mem, in.dst)) == std::vector<float>{255, 256, 256, 258, 260});
  // int8: p * 100 - 200 over 5 partitions: -200 -> -128, -100, 0, 100, 200 -> 127.
  in.dst = sbuf_ap(DType::int8, 0, 5, 64, {{1, 1}});
  in.extra.edit().index_base = -200;
  in.extra.edit().partition_step = 100;
  run(in, mem);
  CHECK(values(trnsim::isa::read(mem, in.dst)) == std::vector<float>{-128, -100, 0, 100, 127});
  // uint8: negatives become 0, above 255 become 255.
  in.dst.edit().dtype = DType::uint8;
  run(in, mem);
  CHECK(values(trnsim::isa::read(mem, in.dst)) == std::vector<float>{0, 0, 0, 100, 200});
  in.extra.edit().index_base = 155;
  run(in, mem);
  CHECK(values(trnsim::isa::read(mem, in.dst)) == std::vector<float>{155, 255, 255, 255, 255});
}

// ---------------------------------------------------------------------------------------------
// select

TEST_CASE("select takes on_true where the predicate is non-zero (NaN included)",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const std::vector<float> pred = {0.0f, 1.0f, -0.0f, kNaN, 2.0f, -3.0f, 1e-30f, 0.0f};
  const AccessPattern p_ap = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 8}});
  const AccessPattern t_ap = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 8}});
  const AccessPattern f_ap = sbuf_ap(DType::bf16, 0, 1, 128, {{1, 8}});
  trnsim::isa::write(mem, p_ap, row_of(pred));
  trnsim::isa::write(mem, t_ap, row_of({10, 11, 12, 13, 14, 15, 16, 17}));
  trnsim::isa::write(mem, f_ap, row_of({-10, -11, -12, -13, -14, -15, -16, -17}));
  Instruction in = make(Opcode::select, Engine::vector);
  in.src[0] = p_ap;
  in.src[1] = t_ap;
  in.src[2] = f_ap;
  in.dst = sbuf_ap(DType::fp32, 0, 1, 192, {{1, 8}});
  run(in, mem);
  CHECK(values(trnsim::isa::read(mem, in.dst)) ==
        std::vector<float>{-10, 11, -12, 13, 14, 15, 16, -17});

  // A uint8 predicate on GpSimdE over 2 partitions, into bf16 (10.3 rounds to 10.3125).
  const AccessPattern p8 = sbuf_ap(DType::uint8, 0, 2, 256, {{1, 2}});
  trnsim::isa::write(mem, p8, generate(2, 2, [](auto p, auto f) { return p == f ? 255.0f : 0; }));
  const AccessPattern on_true = sbuf_ap(DType::fp32, 0, 2, 320, {{1, 2}});
  const AccessPattern on_false = sbuf_ap(DType::fp32, 0, 2, 352, {{1, 2}});
  trnsim::isa::write(mem, on_true, generate(2, 2, [](auto, auto) { return 10.3f; }));
  trnsim::isa::write(mem, on_false, generate(2, 2, [](auto, auto) { return -kInf; }));
  Instruction g = make(Opcode::select, Engine::gpsimd);
  g.src[0] = p8;
  g.src[1] = on_true;
  g.src[2] = on_false;
  g.dst = sbuf_ap(DType::bf16, 0, 2, 384, {{1, 2}});
  run(g, mem);
  CHECK(values(trnsim::isa::read(mem, g.dst)) ==
        std::vector<float>{10.3125f, -kInf, -kInf, 10.3125f});
}

// ---------------------------------------------------------------------------------------------
// bn_stats and bn_aggr

TEST_CASE("bn_stats then bn_aggr give the mean and population variance of two groups",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const uint32_t P = 4;
  const int n1 = 10, n2 = 7;
  auto value = [](Eigen::Index p, Eigen::Index i) {
    return 3.0f + 2.0f * std::sin(0.9f * static_cast<float>(i) + 1.7f * static_cast<float>(p));
  };
  const Tile g1 = generate(P, n1, value);
  const Tile g2 = generate(P, n2, [&](auto p, auto i) { return value(p, i + n1) * 1.5f - 1; });
  const AccessPattern s1 = sbuf_ap(DType::fp32, 0, P, 0, {{1, n1}});
  const AccessPattern s2 = sbuf_ap(DType::fp32, 0, P, 64, {{1, n2}});
  trnsim::isa::write(mem, s1, g1);
  trnsim::isa::write(mem, s2, g2);

  Instruction st = make(Opcode::bn_stats, Engine::vector);
  st.src[0] = s1;
  st.dst = sbuf_ap(DType::fp32, 0, P, 1024, {{1, 3}});
  run(st, mem);
  st.src[0] = s2;
  st.dst = sbuf_ap(DType::fp32, 0, P, 1036, {{1, 3}});  // the next 3 fp32 values
  run(st, mem);
  Instruction ag = make(Opcode::bn_aggr, Engine::vector);
  ag.src[0] = sbuf_ap(DType::fp32, 0, P, 1024, {{1, 6}});
  ag.dst = sbuf_ap(DType::fp32, 0, P, 2048, {{1, 2}});
  run(ag, mem);

  const Tile stats = trnsim::isa::read(mem, ag.src[0]);
  const Tile out = trnsim::isa::read(mem, ag.dst);
  for (uint32_t p = 0; p < P; ++p) {
    // Two-pass double reference: per group and over both.
    auto two_pass = [](const std::vector<double>& v, double& mean, double& m2) {
      mean = 0;
      for (double x : v) mean += x;
      mean /= static_cast<double>(v.size());
      m2 = 0;
      for (double x : v) m2 += (x - mean) * (x - mean);
    };
    std::vector<double> a, b, all;
    for (int i = 0; i < n1; ++i) a.push_back(g1(p, i));
    for (int i = 0; i < n2; ++i) b.push_back(g2(p, i));
    all = a;
    all.insert(all.end(), b.begin(), b.end());
    double mean_a, m2_a, mean_b, m2_b, mean, m2;
    two_pass(a, mean_a, m2_a);
    two_pass(b, mean_b, m2_b);
    two_pass(all, mean, m2);
    INFO("partition " << p);
    CHECK(stats(p, 0) == n1);
    CHECK(stats(p, 1) == Approx(mean_a).epsilon(1e-6));
    CHECK(stats(p, 2) == Approx(m2_a).epsilon(1e-5));
    CHECK(stats(p, 3) == n2);
    CHECK(stats(p, 4) == Approx(mean_b).epsilon(1e-6));
    CHECK(stats(p, 5) == Approx(m2_b).epsilon(1e-5));
    CHECK(out(p, 0) == Approx(mean).epsilon(1e-6));
    CHECK(out(p, 1) == Approx(m2 / (n1 + n2)).epsilon(1e-5));
    // Not the mean of the two group means, nor the sample variance.
    CHECK(out(p, 0) != Approx((mean_a + mean_b) / 2).epsilon(1e-4));
    CHECK(out(p, 1) != Approx(m2 / (n1 + n2 - 1)).epsilon(1e-4));
  }
}

TEST_CASE("bn_stats of a constant row has zero M2 and bn_aggr of one group is that group",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const AccessPattern src = sbuf_ap(DType::bf16, 0, 2, 0, {{1, 512}});
  trnsim::isa::write(mem, src, generate(2, 512, [](auto p, auto) { return p ? -2.5f : 7.0f; }));
  Instruction st = make(Opcode::bn_stats, Engine::vector);
  st.src[0] = src;
  st.dst = sbuf_ap(DType::fp32, 0, 2, 2048, {{1, 3}});
  run(st, mem);
  CHECK(values(trnsim::isa::read(mem, st.dst)) == std::vector<float>{512, 7, 0, 512, -2.5f, 0});
  Instruction ag = make(Opcode::bn_aggr, Engine::vector);
  ag.src[0] = st.dst;
  ag.dst = sbuf_ap(DType::fp32, 0, 2, 4096, {{1, 2}});
  run(ag, mem);
  CHECK(values(trnsim::isa::read(mem, ag.dst)) == std::vector<float>{7, 0, -2.5f, 0});
}

// ---------------------------------------------------------------------------------------------
// reciprocal

TEST_CASE("reciprocal writes 1 / src, with IEEE zeros and infinities", "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 8}});
  trnsim::isa::write(mem, src, row_of({2.0f, -4.0f, 0.5f, 3.0f, 0.0f, -0.0f, kInf, -kInf}));
  Instruction in = make(Opcode::reciprocal, Engine::vector);
  in.src[0] = src;
  in.dst = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 8}});
  run(in, mem);
  const std::vector<float> want = {0.5f, -0.25f, 2.0f, 1.0f / 3.0f, kInf, -kInf, 0.0f, -0.0f};
  const std::vector<float> got = values(trnsim::isa::read(mem, in.dst));
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(i << ": " << got[i] << " vs " << want[i]);
    CHECK(same(got[i], want[i]));
  }
  // Into bf16: 1/3 = 0x3EAB = 0.333984375 (RNE), 1/10 = 0x3DCD = 0.10009765625.
  trnsim::isa::write(mem, src, row_of({3.0f, 10.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}));
  in.dst = sbuf_ap(DType::bf16, 0, 1, 128, {{1, 8}});
  run(in, mem);
  const Tile b = trnsim::isa::read(mem, in.dst);
  CHECK(b(0, 0) == 0.333984375f);
  CHECK(b(0, 1) == 0.10009765625f);
  CHECK(b(0, 2) == kInf);
}

// ---------------------------------------------------------------------------------------------
// shuffle

TEST_CASE("shuffle permutes partitions within each group of 32 by shuffle_mask",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 64, 0, {{1, 3}});
  const Tile in = generate(64, 3, [](auto p, auto f) { return static_cast<float>(100 * p + f); });
  trnsim::isa::write(mem, src, in);
  Instruction sh = make(Opcode::shuffle, Engine::vector);
  sh.src[0] = src;
  sh.dst = sbuf_ap(DType::fp32, 0, 64, 64, {{1, 3}});
  for (int i = 0; i < 32; ++i)
    sh.extra.edit().shuffle_mask[i] = static_cast<uint8_t>((i * 5 + 3) % 32);
  run(sh, mem);
  const Tile out = trnsim::isa::read(mem, sh.dst);
  std::vector<int> seen(64, 0);
  for (int p = 0; p < 64; ++p) {
    const int from = (p / 32) * 32 + (p % 32 * 5 + 3) % 32;
    ++seen[from];
    for (int f = 0; f < 3; ++f) CHECK(out(p, f) == in(from, f));
  }
  // The mask is a permutation: every source partition lands exactly once.
  for (int p = 0; p < 64; ++p) CHECK(seen[p] == 1);

  // Reverse within 32 partitions starting at partition 32, int8 in and out.
  const AccessPattern s8 = sbuf_ap(DType::int8, 32, 32, 512, {{1, 2}});
  trnsim::isa::write(mem, s8, generate(32, 2, [](auto p, auto f) { return p * 3 - 50 + f; }));
  Instruction rev = make(Opcode::shuffle, Engine::vector);
  rev.src[0] = s8;
  rev.dst = sbuf_ap(DType::int8, 32, 32, 520, {{1, 2}});
  for (int i = 0; i < 32; ++i) rev.extra.edit().shuffle_mask[i] = static_cast<uint8_t>(31 - i);
  run(rev, mem);
  const Tile r = trnsim::isa::read(mem, rev.dst);
  for (int p = 0; p < 32; ++p)
    for (int f = 0; f < 2; ++f) CHECK(r(p, f) == static_cast<float>((31 - p) * 3 - 50 + f));
}

// ---------------------------------------------------------------------------------------------
// affine_select

TEST_CASE("affine_select keeps src where the affine expression passes: a causal mask",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const uint32_t N = 8;
  const AccessPattern src = sbuf_ap(DType::bf16, 0, N, 0, {{1, N}});
  const Tile in = generate(N, N, [](auto p, auto i) { return static_cast<float>(1 + p * N + i); });
  trnsim::isa::write(mem, src, in);
  Instruction m = make(Opcode::affine_select, Engine::gpsimd);
  m.src[0] = src;
  m.dst = sbuf_ap(DType::bf16, 0, N, 64, {{1, N}});
  m.extra.edit().index_base = 0;
  m.extra.edit().partition_step = 1;
  m.extra.edit().index_steps = {-1, 0, 0, 0};  // p - i
  m.op0 = AluOp::is_ge;                        // keep where p - i >= 0
  m.extra.edit().fill = -kInf;
  run(m, mem);
  const Tile out = trnsim::isa::read(mem, m.dst);
  for (uint32_t p = 0; p < N; ++p)
    for (uint32_t i = 0; i < N; ++i) {
      INFO(p << ", " << i);
      CHECK(out(p, i) == (i <= p ? in(p, i) : -kInf));
    }

  // Over 2 free dims with a base: keep where 2 + p - 3a - b > 0 (is_gt), fill 0, fp32.
  const AccessPattern s2 = sbuf_ap(DType::fp32, 0, 4, 256, {{3, 2}, {1, 3}});
  trnsim::isa::write(mem, s2, generate(4, 6, [](auto, auto) { return 5.0f; }));
  Instruction m2 = make(Opcode::affine_select, Engine::gpsimd);
  m2.src[0] = s2;
  m2.dst = sbuf_ap(DType::fp32, 0, 4, 512, {{3, 2}, {1, 3}});
  m2.extra.edit().index_base = 2;
  m2.extra.edit().partition_step = 1;
  m2.extra.edit().index_steps = {-3, -1, 0, 0};
  m2.op0 = AluOp::is_gt;
  m2.extra.edit().fill = 0.0f;
  run(m2, mem);
  const Tile out2 = trnsim::isa::read(mem, m2.dst);
  for (int p = 0; p < 4; ++p)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b) {
        CHECK(out2(p, a * 3 + b) == (2 + p - 3 * a - b > 0 ? 5.0f : 0.0f));
      }
  // is_equal: only the diagonal p == i survives.
  m.op0 = AluOp::is_equal;
  m.extra.edit().fill = 0.0f;
  run(m, mem);
  const Tile diag = trnsim::isa::read(mem, m.dst);
  for (uint32_t p = 0; p < N; ++p)
    for (uint32_t i = 0; i < N; ++i) CHECK(diag(p, i) == (i == p ? in(p, i) : 0.0f));
}

// ---------------------------------------------------------------------------------------------
// Partition reductions

TEST_CASE("partition_reduce and partition_all_reduce with add, max, min and mean",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const uint32_t P = 5, F = 4;
  const AccessPattern src = sbuf_ap(DType::fp32, 0, P, 0, {{1, F}});
  const Tile in = generate(P, F, [](auto p, auto f) { return (p - 2.0f) * (f + 1) + 0.5f * f; });
  trnsim::isa::write(mem, src, in);
  for (AluOp op : {AluOp::add, AluOp::max, AluOp::min, AluOp::mean}) {
    INFO(trnsim::isa::name_of(op));
    std::vector<double> want(F);
    for (uint32_t f = 0; f < F; ++f) {
      double acc = op == AluOp::max ? -1e30 : op == AluOp::min ? 1e30 : 0;
      for (uint32_t p = 0; p < P; ++p) {
        const double v = in(p, f);
        acc = op == AluOp::max ? std::max(acc, v) : op == AluOp::min ? std::min(acc, v) : acc + v;
      }
      want[f] = op == AluOp::mean ? acc / P : acc;
    }
    Instruction r = make(Opcode::partition_reduce, Engine::gpsimd);
    r.op0 = op;
    r.src[0] = src;
    r.dst = sbuf_ap(DType::fp32, 0, 1, 256, {{1, F}});
    run(r, mem);
    const Tile one = trnsim::isa::read(mem, r.dst);
    for (uint32_t f = 0; f < F; ++f) CHECK(one(0, f) == Approx(want[f]).epsilon(1e-6));
    // Partition 1 of the dst column is untouched by partition_reduce.
    CHECK(trnsim::isa::read(mem, sbuf_ap(DType::fp32, 1, 1, 256, {{1, F}}))(0, 0) == 0.0f);

    Instruction all = make(Opcode::partition_all_reduce, Engine::gpsimd);
    all.op0 = op;
    all.src[0] = src;
    all.dst = sbuf_ap(DType::fp32, 64, P, 512, {{1, F}});  // another partition range
    run(all, mem);
    const Tile every = trnsim::isa::read(mem, all.dst);
    for (uint32_t p = 0; p < P; ++p)
      for (uint32_t f = 0; f < F; ++f) CHECK(every(p, f) == Approx(want[f]).epsilon(1e-6));
  }
}

// ---------------------------------------------------------------------------------------------
// tensor_reduce

TEST_CASE("tensor_reduce with mean over the 2 innermost dims, and dims reordered to pick axes",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const uint32_t P = 3;
  // Logical per partition [a=2][b=3][c=4] stored row-major: element e = 12a + 4b + c.
  const AccessPattern flat = sbuf_ap(DType::fp32, 0, P, 0, {{1, 24}});
  const Tile in =
      generate(P, 24, [](auto p, auto e) { return 100.0f * p + static_cast<float>(e * e % 17); });
  trnsim::isa::write(mem, flat, in);
  auto at = [&](int p, int a, int b, int c) {
    return static_cast<double>(in(p, 12 * a + 4 * b + c));
  };

  for (AluOp op : {AluOp::mean, AluOp::add, AluOp::max, AluOp::min}) {
    INFO(trnsim::isa::name_of(op));
    // Reduce b and c, keep a.
    Instruction r = make(Opcode::tensor_reduce, Engine::vector);
    r.op0 = op;
    r.reduce_dims = 2;
    r.src[0] = sbuf_ap(DType::fp32, 0, P, 0, {{12, 2}, {4, 3}, {1, 4}});
    r.dst = sbuf_ap(DType::fp32, 0, P, 256, {{1, 2}});
    run(r, mem);
    // Reduce a and c, keep b: the kept axis goes first.
    Instruction r2 = r;
    r2.engine = Engine::gpsimd;
    r2.src[0] = sbuf_ap(DType::fp32, 0, P, 0, {{4, 3}, {12, 2}, {1, 4}});
    r2.dst = sbuf_ap(DType::fp32, 0, P, 320, {{1, 3}});
    run(r2, mem);
    const Tile keep_a = trnsim::isa::read(mem, r.dst);
    const Tile keep_b = trnsim::isa::read(mem, r2.dst);
    auto fold = [op](const std::vector<double>& v) {
      double acc = v[0];
      for (size_t i = 1; i < v.size(); ++i) {
        acc = op == AluOp::max   ? std::max(acc, v[i])
              : op == AluOp::min ? std::min(acc, v[i])
                                 : acc + v[i];
      }
      return op == AluOp::mean ? acc / static_cast<double>(v.size()) : acc;
    };
    for (int p = 0; p < static_cast<int>(P); ++p) {
      for (int a = 0; a < 2; ++a) {
        std::vector<double> v;
        for (int b = 0; b < 3; ++b)
          for (int c = 0; c < 4; ++c) v.push_back(at(p, a, b, c));
        CHECK(keep_a(p, a) == Approx(fold(v)).epsilon(1e-6));
      }
      for (int b = 0; b < 3; ++b) {
        std::vector<double> v;
        for (int a = 0; a < 2; ++a)
          for (int c = 0; c < 4; ++c) v.push_back(at(p, a, b, c));
        CHECK(keep_b(p, b) == Approx(fold(v)).epsilon(1e-6));
      }
    }
  }
  // mean into int32 rounds half to even: mean(1, 2) = 1.5 -> 2; mean(2, 3) = 2.5 -> 2.
  const AccessPattern two = sbuf_ap(DType::fp32, 0, 2, 1024, {{1, 2}});
  trnsim::isa::write(mem, two, generate(2, 2, [](auto p, auto f) { return 1.0f + p + f; }));
  Instruction m = make(Opcode::tensor_reduce, Engine::vector);
  m.op0 = AluOp::mean;
  m.src[0] = two;
  m.dst = sbuf_ap(DType::int32, 0, 2, 1100, {{1, 1}});
  run(m, mem);
  CHECK(sbuf_int32(mem, 0, 1100) == 2);
  CHECK(sbuf_int32(mem, 1, 1100) == 2);
}

// ---------------------------------------------------------------------------------------------
// tensor_tensor comparisons and bitwise ops

TEST_CASE("tensor_tensor comparisons and bitwise ops on int32", "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const std::vector<int32_t> a = {-16, 5, 7, 0x00F0F0F0, 1, 3, -1, 100, 0, -7};
  const std::vector<int32_t> b = {2, 5, 3, 0x000FFFF0, 30, 29, 4, -100, 0, 1};
  const uint32_t F = static_cast<uint32_t>(a.size());
  for (uint32_t i = 0; i < F; ++i) {
    set_sbuf_int32(mem, 0, 4 * i, a[i]);
    set_sbuf_int32(mem, 0, 64 + 4 * i, b[i]);
  }
  struct Case {
    AluOp op;
    std::function<int32_t(int32_t, int32_t)> ref;
  };
  const std::vector<Case> cases = {
      {AluOp::is_equal, [](int32_t x, int32_t y) { return int32_t(x == y); }},
      {AluOp::not_equal, [](int32_t x, int32_t y) { return int32_t(x != y); }},
      {AluOp::is_ge, [](int32_t x, int32_t y) { return int32_t(x >= y); }},
      {AluOp::is_gt, [](int32_t x, int32_t y) { return int32_t(x > y); }},
      {AluOp::is_le, [](int32_t x, int32_t y) { return int32_t(x <= y); }},
      {AluOp::is_lt, [](int32_t x, int32_t y) { return int32_t(x < y); }},
      {AluOp::bitwise_and, [](int32_t x, int32_t y) { return x & y; }},
      {AluOp::bitwise_or, [](int32_t x, int32_t y) { return x | y; }},
      {AluOp::bitwise_xor, [](int32_t x, int32_t y) { return x ^ y; }},
      {AluOp::shift_left,
       [](int32_t x, int32_t y) {
         return static_cast<int32_t>(static_cast<uint32_t>(x) << (y & 31));
       }},
      {AluOp::shift_right, [](int32_t x, int32_t y) { return x >> (y & 31); }},  // arithmetic
  };
  for (const Case& c : cases) {
    for (Engine e : {Engine::vector, Engine::gpsimd}) {
      Instruction tt = make(Opcode::tensor_tensor, e);
      tt.op0 = c.op;
      tt.src[0] = sbuf_ap(DType::int32, 0, 1, 0, {{1, F}});
      tt.src[1] = sbuf_ap(DType::int32, 0, 1, 64, {{1, F}});
      tt.dst = sbuf_ap(DType::int32, 0, 1, 128, {{1, F}});
      run(tt, mem);
      for (uint32_t i = 0; i < F; ++i) {
        INFO(trnsim::isa::name_of(c.op) << " " << a[i] << ", " << b[i]);
        CHECK(sbuf_int32(mem, 0, 128 + 4 * i) == c.ref(a[i], b[i]));
      }
    }
  }
  // The last case run (shift_right), by hand: -16 >> 2 = -4 (arithmetic, not 0x3FFFFFFC),
  // 0x00F0F0F0 >> (0x000FFFF0 & 31 = 16) = 0xF0, 100 >> (-100 & 31 = 28) = 0.
  CHECK(sbuf_int32(mem, 0, 128) == -4);
  CHECK(sbuf_int32(mem, 0, 128 + 12) == 0xF0);
  CHECK(sbuf_int32(mem, 0, 128 + 28) == 0);
}

TEST_CASE("tensor_tensor comparisons on floats give 1 or 0, and NaN compares unequal",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const AccessPattern x = sbuf_ap(DType::fp32, 0, 1, 0, {{1, 5}});
  const AccessPattern y = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 5}});
  trnsim::isa::write(mem, x, row_of({1.0f, kNaN, -0.0f, kInf, 2.0f}));
  trnsim::isa::write(mem, y, row_of({1.0f, kNaN, 0.0f, kInf, 3.0f}));
  Instruction tt = make(Opcode::tensor_tensor, Engine::vector);
  tt.src[0] = x;
  tt.src[1] = y;
  tt.dst = sbuf_ap(DType::bf16, 0, 1, 128, {{1, 5}});
  tt.op0 = AluOp::is_equal;
  run(tt, mem);
  CHECK(values(trnsim::isa::read(mem, tt.dst)) == std::vector<float>{1, 0, 1, 1, 0});
  tt.op0 = AluOp::not_equal;
  run(tt, mem);
  CHECK(values(trnsim::isa::read(mem, tt.dst)) == std::vector<float>{0, 1, 0, 0, 1});
  tt.op0 = AluOp::is_lt;
  run(tt, mem);
  CHECK(values(trnsim::isa::read(mem, tt.dst)) == std::vector<float>{0, 0, 0, 0, 1});
  tt.op0 = AluOp::is_ge;
  run(tt, mem);
  CHECK(values(trnsim::isa::read(mem, tt.dst)) == std::vector<float>{1, 0, 1, 1, 0});
}

TEST_CASE("tensor_tensor bitwise ops on int32 keep every bit of values beyond 2^24",
          "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const std::vector<int32_t> a = {0x12345678, 16777217, 0x7FFFFFFF, -0x7FFFFFFF};
  const std::vector<int32_t> b = {0x0F0F0F0F, 1, 0x0000FFFF, 0x00000001};
  for (uint32_t i = 0; i < a.size(); ++i) {
    set_sbuf_int32(mem, 0, 4 * i, a[i]);
    set_sbuf_int32(mem, 0, 64 + 4 * i, b[i]);
  }
  Instruction tt = make(Opcode::tensor_tensor, Engine::vector);
  tt.src[0] = sbuf_ap(DType::int32, 0, 1, 0, {{1, 4}});
  tt.src[1] = sbuf_ap(DType::int32, 0, 1, 64, {{1, 4}});
  tt.dst = sbuf_ap(DType::int32, 0, 1, 128, {{1, 4}});
  tt.op0 = AluOp::bitwise_and;
  run(tt, mem);
  CHECK(sbuf_int32(mem, 0, 128) == 0x02040608);
  CHECK(sbuf_int32(mem, 0, 132) == 1);
  CHECK(sbuf_int32(mem, 0, 136) == 0x0000FFFF);
  CHECK(sbuf_int32(mem, 0, 140) == 1);
  tt.op0 = AluOp::bitwise_xor;
  run(tt, mem);
  CHECK(sbuf_int32(mem, 0, 128) == (0x12345678 ^ 0x0F0F0F0F));
  CHECK(sbuf_int32(mem, 0, 132) == 16777216);
  CHECK(sbuf_int32(mem, 0, 136) == 0x7FFF0000);
}

// ---------------------------------------------------------------------------------------------
// tensor_copy conversions

TEST_CASE("tensor_copy from fp32 converts to every dtype", "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  const std::vector<float> in = {1.5f,    2.5f,     -2.5f, 0.1f,  300.0f, -300.0f,
                                 1000.0f, 70000.0f, kInf,  -kInf, kNaN,   3e9f};
  const uint32_t F = static_cast<uint32_t>(in.size());
  const AccessPattern src = sbuf_ap(DType::fp32, 0, 1, 0, {{1, F}});
  trnsim::isa::write(mem, src, row_of(in));
  // Hand-worked results, by dtype.
  const std::vector<std::pair<DType, std::vector<float>>> floats = {
      {DType::fp32, in},
      // bf16: 0.1 -> 0x3DCD; 70000 = 1.0681 x 2^16 -> 137/128 x 2^16 = 70144;
      // 3e9 = 1.3970 x 2^31 -> 179/128 x 2^31 = 3003121664.
      {DType::bf16,
       {1.5f, 2.5f, -2.5f, 0.10009765625f, 300, -300, 1000, 70144, kInf, -kInf, kNaN,
        3003121664.0f}},
      // fp16: 0.1 -> 0x2E66 = 0.0999755859375; 70000 and 3e9 overflow to infinity.
      {DType::fp16,
       {1.5f, 2.5f, -2.5f, 0.0999755859375f, 300, -300, 1000, kInf, kInf, -kInf, kNaN, kInf}},
      // e4m3: 0.1 = 1.6 x 2^-4 -> 1.625 x 2^-4; 300 = 1.171875 x 2^8 -> 1.125 x 2^8 = 288;
      // 1000 and beyond saturate to 448.
      {DType::fp8_e4m3, {1.5f, 2.5f, -2.5f, 0.1015625f, 288, -288, 448, 448, 448, -448, kNaN, 448}},
      // e5m2: 0.1 -> 1.5 x 2^-4; 300 -> 1.25 x 2^8 = 320; 1000 -> 2 x 2^9 = 1024; saturate
      // at 57344.
      {DType::fp8_e5m2,
       {1.5f, 2.5f, -2.5f, 0.09375f, 320, -320, 1024, 57344, 57344, -57344, kNaN, 57344}},
      // Integers: half to even, saturate, NaN -> 0.
      {DType::int8, {2, 2, -2, 0, 127, -128, 127, 127, 127, -128, 0, 127}},
      {DType::uint8, {2, 2, 0, 0, 255, 0, 255, 255, 255, 0, 0, 255}},
  };
  uint64_t offset = 256;
  for (const auto& [dtype, want] : floats) {
    INFO(trnsim::isa::name_of(dtype));
    Instruction cp = make(Opcode::tensor_copy, Engine::vector);
    cp.src[0] = src;
    cp.dst = sbuf_ap(dtype, 0, 1, offset, {{1, F}});
    run(cp, mem);
    const std::vector<float> got = values(trnsim::isa::read(mem, cp.dst));
    for (uint32_t i = 0; i < F; ++i) {
      INFO(in[i] << " -> " << got[i] << ", want " << want[i]);
      CHECK(same(got[i], want[i]));
    }
    offset += 256;
  }
  // int32, read as int32 (2147483647 is not a float): saturation both ways, NaN -> 0.
  Instruction cp = make(Opcode::tensor_copy, Engine::scalar);
  cp.src[0] = src;
  cp.dst = sbuf_ap(DType::int32, 0, 1, 4096, {{1, F}});
  run(cp, mem);
  const std::vector<int32_t> want_i32 = {
      2, 2, -2, 0, 300, -300, 1000, 70000, 2147483647, -2147483647 - 1, 0, 2147483647};
  for (uint32_t i = 0; i < F; ++i) {
    INFO(in[i]);
    CHECK(sbuf_int32(mem, 0, 4096 + 4 * i) == want_i32[i]);
  }
}

TEST_CASE("tensor_copy between narrow dtypes is exact where the value fits", "[unit][semantics]") {
  MemoryImage mem(arch(), 0);
  // Every finite e4m3 value converts exactly to fp16, bf16 and fp32 and back.
  std::vector<float> all;
  for (int c = 0; c < 256; ++c) {
    const float v = trnsim::isa::float_from_fp8_e4m3(static_cast<uint8_t>(c));
    if (!std::isnan(v)) all.push_back(v);
  }
  const uint32_t F = static_cast<uint32_t>(all.size());
  const AccessPattern e4 = sbuf_ap(DType::fp8_e4m3, 0, 1, 0, {{1, F}});
  trnsim::isa::write(mem, e4, row_of(all));
  uint64_t offset = 1024;
  for (DType t : {DType::fp16, DType::bf16, DType::fp32}) {
    INFO(trnsim::isa::name_of(t));
    Instruction there = make(Opcode::tensor_copy, Engine::gpsimd);
    there.src[0] = e4;
    there.dst = sbuf_ap(t, 0, 1, offset, {{1, F}});
    run(there, mem);
    Instruction back = make(Opcode::tensor_copy, Engine::vector);
    back.src[0] = there.dst;
    back.dst = sbuf_ap(DType::fp8_e4m3, 0, 1, offset + 2048, {{1, F}});
    run(back, mem);
    const std::vector<float> mid = values(trnsim::isa::read(mem, there.dst));
    const std::vector<float> end = values(trnsim::isa::read(mem, back.dst));
    for (uint32_t i = 0; i < F; ++i) {
      CHECK(same(mid[i], all[i]));
      CHECK(same(end[i], all[i]));
    }
    offset += 4096;
  }
  // int8 -> uint8 saturates negatives to 0; uint8 -> int8 saturates above 127.
  const AccessPattern i8 = sbuf_ap(DType::int8, 0, 1, 16384, {{1, 4}});
  trnsim::isa::write(mem, i8, row_of({-128, -1, 0, 127}));
  Instruction cp = make(Opcode::tensor_copy, Engine::vector);
  cp.src[0] = i8;
  cp.dst = sbuf_ap(DType::uint8, 0, 1, 16400, {{1, 4}});
  run(cp, mem);
  CHECK(values(trnsim::isa::read(mem, cp.dst)) == std::vector<float>{0, 0, 0, 127});
  const AccessPattern u8 = sbuf_ap(DType::uint8, 0, 1, 16416, {{1, 3}});
  trnsim::isa::write(mem, u8, row_of({128, 255, 7}));
  cp.src[0] = u8;
  cp.dst = sbuf_ap(DType::int8, 0, 1, 16432, {{1, 3}});
  run(cp, mem);
  CHECK(values(trnsim::isa::read(mem, cp.dst)) == std::vector<float>{127, 127, 7});
}

// ---------------------------------------------------------------------------------------------
// Validation rejects, one per rule of the new opcodes

TEST_CASE("validation rejects operands of the new opcodes whose shapes do not match",
          "[unit][validate]") {
  Instruction sel = make(Opcode::select, Engine::vector);
  sel.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  sel.src[1] = sbuf_ap(DType::fp32, 0, 4, 64, {{1, 8}});
  sel.src[2] = sbuf_ap(DType::fp32, 0, 4, 128, {{1, 8}});
  sel.dst = sbuf_ap(DType::fp32, 0, 4, 192, {{1, 8}});
  CHECK(reason(sel) == "");
  sel.src[2] = sbuf_ap(DType::fp32, 0, 4, 128, {{1, 7}});
  CHECK_THAT(reason(sel), Contains("on_false is [4 x 7]"));
  sel.src[2] = sbuf_ap(DType::fp32, 0, 2, 128, {{1, 8}});
  CHECK_THAT(reason(sel), Contains("on_false"));

  Instruction stt = make(Opcode::scalar_tensor_tensor, Engine::vector);
  stt.op0 = AluOp::subtract;
  stt.op1 = AluOp::multiply;
  stt.src[0] = sbuf_ap(DType::bf16, 0, 4, 0, {{1, 8}});
  stt.src[1] = sbuf_ap(DType::bf16, 0, 4, 64, {{1, 8}});
  stt.dst = sbuf_ap(DType::bf16, 0, 4, 128, {{1, 8}});
  CHECK(reason(stt) == "");
  stt.src[1] = sbuf_ap(DType::bf16, 0, 4, 64, {{1, 9}});
  CHECK_THAT(reason(stt), Contains("src1 is [4 x 9]"));

  Instruction sh = make(Opcode::shuffle, Engine::vector);
  sh.src[0] = sbuf_ap(DType::fp32, 0, 32, 0, {{1, 4}});
  sh.dst = sbuf_ap(DType::fp32, 0, 32, 64, {{1, 4}});
  CHECK(reason(sh) == "");
  sh.dst = sbuf_ap(DType::fp32, 0, 32, 64, {{1, 5}});
  CHECK_THAT(reason(sh), Contains("dst is [32 x 5] but src is [32 x 4]"));

  Instruction aff = make(Opcode::affine_select, Engine::gpsimd);
  aff.op0 = AluOp::is_ge;
  aff.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  aff.dst = sbuf_ap(DType::fp32, 0, 8, 64, {{1, 4}});
  CHECK_THAT(reason(aff), Contains("dst is [8 x 4] but src is [4 x 8]"));

  Instruction tr = make(Opcode::transpose, Engine::vector);
  tr.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  tr.dst = sbuf_ap(DType::fp32, 0, 8, 64, {{1, 4}});
  CHECK(reason(tr) == "");
  tr.dst = sbuf_ap(DType::fp32, 0, 4, 64, {{1, 8}});
  CHECK_THAT(reason(tr), Contains("dst must be [8 x 4], the transpose of src [4 x 8]"));
  tr.dst = sbuf_ap(DType::fp32, 0, 8, 64, {{1, 4}});
  tr.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{4, 2}, {1, 4}});
  CHECK_THAT(reason(tr), Contains("src must be 2-D"));

  Instruction dt = make(Opcode::dma_transpose, Engine::sync);
  dt.src[0] = hbm_ap(DType::fp32, 0, 4, 8, {{1, 8}});
  dt.dst = sbuf_ap(DType::fp32, 0, 8, 0, {{1, 4}});
  CHECK(reason(dt) == "");
  dt.dst = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  CHECK_THAT(reason(dt), Contains("the transpose of src"));
  dt.dst = sbuf_ap(DType::bf16, 0, 8, 0, {{1, 4}});
  CHECK_THAT(reason(dt), Contains("does not convert dtypes"));
}

TEST_CASE("validation rejects a transpose too large for its engine", "[unit][validate]") {
  Instruction tr = make(Opcode::transpose, Engine::vector);
  tr.src[0] = sbuf_ap(DType::bf16, 0, 32, 0, {{1, 32}});
  tr.dst = sbuf_ap(DType::bf16, 0, 32, 64, {{1, 32}});
  CHECK(reason(tr) == "");
  // VectorE: 32x32 blocks.
  tr.src[0] = sbuf_ap(DType::bf16, 0, 32, 0, {{1, 33}});
  tr.dst = sbuf_ap(DType::bf16, 0, 33, 128, {{1, 32}});
  CHECK_THAT(reason(tr), Contains("VectorE transposes at most 32 x 32; src is [32 x 33]"));
  tr.src[0] = sbuf_ap(DType::bf16, 0, 64, 0, {{1, 16}});
  tr.dst = sbuf_ap(DType::bf16, 0, 16, 128, {{1, 64}});
  CHECK_THAT(reason(tr), Contains("at most 32 x 32"));
  // TensorE takes 128 x 128 into PSUM, not more, and not into SBUF.
  Instruction pe = make(Opcode::transpose, Engine::tensor);
  pe.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 128}});
  pe.dst = psum_ap(DType::fp32, 0, 128, 0, {{1, 128}});
  CHECK(reason(pe) == "");
  pe.dst = sbuf_ap(DType::fp32, 0, 128, 4096, {{1, 128}});
  CHECK_THAT(reason(pe), Contains("a TensorE transpose writes PSUM"));
  pe.src[0] = sbuf_ap(DType::bf16, 0, 64, 0, {{1, 129}});
  pe.dst = psum_ap(DType::fp32, 0, 129, 0, {{1, 64}});
  CHECK_FALSE(reason(pe).empty());
  // Not on ScalarE.
  Instruction act = tr;
  act.engine = Engine::scalar;
  act.src[0] = sbuf_ap(DType::bf16, 0, 8, 0, {{1, 8}});
  act.dst = sbuf_ap(DType::bf16, 0, 8, 64, {{1, 8}});
  CHECK_THAT(reason(act), Contains("does not run on ScalarE"));
}

TEST_CASE("validation rejects bn_stats over 512 elements and bn_aggr not in groups of 3",
          "[unit][validate]") {
  Instruction st = make(Opcode::bn_stats, Engine::vector);
  st.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 512}});
  st.dst = sbuf_ap(DType::fp32, 0, 128, 2048, {{1, 3}});
  CHECK(reason(st) == "");
  st.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 513}});
  CHECK_THAT(reason(st), Contains("bn_stats takes at most 512"));
  st.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 512}});
  st.dst = sbuf_ap(DType::fp32, 0, 128, 2048, {{1, 2}});
  CHECK_THAT(reason(st), Contains("dst must be [128 x 3]"));
  // bn_stats is VectorE only.
  st.dst = sbuf_ap(DType::fp32, 0, 128, 2048, {{1, 3}});
  st.engine = Engine::gpsimd;
  CHECK_THAT(reason(st), Contains("does not run on GpSimdE"));

  Instruction ag = make(Opcode::bn_aggr, Engine::vector);
  ag.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 6}});
  ag.dst = sbuf_ap(DType::fp32, 0, 128, 64, {{1, 2}});
  CHECK(reason(ag) == "");
  ag.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 7}});
  CHECK_THAT(reason(ag), Contains("a multiple of 3 elements"));
  ag.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 6}});
  ag.dst = sbuf_ap(DType::fp32, 0, 128, 64, {{1, 3}});
  CHECK_THAT(reason(ag), Contains("dst must be [128 x 2]"));
}

TEST_CASE("validation rejects a shuffle lane out of range", "[unit][validate]") {
  Instruction sh = make(Opcode::shuffle, Engine::vector);
  sh.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 4}});
  sh.dst = sbuf_ap(DType::fp32, 0, 128, 64, {{1, 4}});
  for (int i = 0; i < 32; ++i) sh.extra.edit().shuffle_mask[i] = static_cast<uint8_t>(31 - i);
  CHECK(reason(sh) == "");
  sh.extra.edit().shuffle_mask[5] = 32;
  CHECK_THAT(reason(sh), Contains("shuffle_mask[5] = 32"));
  // Within 32 but beyond a 16-partition source.
  Instruction small = make(Opcode::shuffle, Engine::vector);
  small.src[0] = sbuf_ap(DType::fp32, 0, 16, 0, {{1, 4}});
  small.dst = sbuf_ap(DType::fp32, 0, 16, 64, {{1, 4}});
  small.extra.edit().shuffle_mask[3] = 15;
  CHECK(reason(small) == "");
  small.extra.edit().shuffle_mask[3] = 20;
  CHECK_THAT(reason(small), Contains("shuffle_mask[3] = 20 reads partition 20 of 16"));
}

TEST_CASE("validation rejects ALU ops where the opcode does not take them", "[unit][validate]") {
  Instruction tt = make(Opcode::tensor_tensor, Engine::vector);
  tt.src[0] = sbuf_ap(DType::int32, 0, 4, 0, {{1, 8}});
  tt.src[1] = sbuf_ap(DType::int32, 0, 4, 64, {{1, 8}});
  tt.dst = sbuf_ap(DType::int32, 0, 4, 128, {{1, 8}});
  tt.op0 = AluOp::bitwise_and;
  CHECK(reason(tt) == "");
  // A bitwise op on a float operand, in any position.
  tt.src[1].edit().dtype = DType::fp32;
  CHECK_THAT(reason(tt), Contains("takes integer operands"));
  tt.src[1].edit().dtype = DType::int32;
  tt.dst.edit().dtype = DType::bf16;
  CHECK_THAT(reason(tt), Contains("takes integer operands"));
  tt.dst.edit().dtype = DType::int32;
  tt.op0 = AluOp::shift_right;
  tt.src[0].edit().dtype = DType::fp8_e4m3;
  CHECK_THAT(reason(tt), Contains("takes integer operands"));
  // mean is a reduction only.
  tt.src[0].edit().dtype = DType::int32;
  tt.op0 = AluOp::mean;
  CHECK_THAT(reason(tt), Contains("mean, which only reductions take"));
  Instruction ts = make(Opcode::tensor_scalar, Engine::vector);
  ts.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  ts.dst = sbuf_ap(DType::fp32, 0, 4, 64, {{1, 8}});
  ts.op0 = AluOp::add;
  ts.op1 = AluOp::mean;
  CHECK_THAT(reason(ts), Contains("op1 is mean"));
  // affine_select compares.
  Instruction aff = make(Opcode::affine_select, Engine::gpsimd);
  aff.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  aff.dst = sbuf_ap(DType::fp32, 0, 4, 64, {{1, 8}});
  for (AluOp ok : {AluOp::is_equal, AluOp::not_equal, AluOp::is_ge, AluOp::is_gt, AluOp::is_le,
                   AluOp::is_lt}) {
    aff.op0 = ok;
    CHECK(reason(aff) == "");
  }
  for (AluOp bad : {AluOp::bypass, AluOp::add, AluOp::max, AluOp::bitwise_and, AluOp::mean}) {
    aff.op0 = bad;
    CHECK_THAT(reason(aff), Contains("affine_select compares"));
  }
  // Partition reductions take add, max, min, mean only.
  Instruction pr = make(Opcode::partition_reduce, Engine::gpsimd);
  pr.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  pr.dst = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 8}});
  pr.op0 = AluOp::multiply;
  CHECK_THAT(reason(pr), Contains("reduces with multiply"));
}

TEST_CASE("validation rejects a partition reduction whose dst has the wrong shape",
          "[unit][validate]") {
  Instruction pr = make(Opcode::partition_reduce, Engine::gpsimd);
  pr.op0 = AluOp::add;
  pr.src[0] = sbuf_ap(DType::fp32, 0, 64, 0, {{1, 8}});
  pr.dst = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 8}});
  CHECK(reason(pr) == "");
  pr.dst = sbuf_ap(DType::fp32, 0, 64, 64, {{1, 8}});
  CHECK_THAT(reason(pr), Contains("dst must be [1 x 8], is [64 x 8]"));
  pr.dst = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 4}});
  CHECK_THAT(reason(pr), Contains("dst must be [1 x 8], is [1 x 4]"));
  Instruction all = pr;
  all.opcode = Opcode::partition_all_reduce;
  all.dst = sbuf_ap(DType::fp32, 0, 64, 64, {{1, 8}});
  CHECK(reason(all) == "");
  all.dst = sbuf_ap(DType::fp32, 0, 1, 64, {{1, 8}});
  CHECK_THAT(reason(all), Contains("dst must be [64 x 8], is [1 x 8]"));
  // GpSimdE cannot reach PSUM.
  all.dst = psum_ap(DType::fp32, 0, 64, 0, {{1, 8}});
  CHECK_THAT(reason(all), Contains("GpSimdE cannot reach"));
}

TEST_CASE("validation rejects DMA between HBM and PSUM and a matmul input in PSUM",
          "[unit][validate]") {
  Instruction dma = make(Opcode::dma_copy, Engine::sync);
  dma.src[0] = hbm_ap(DType::fp32, 0, 128, 1024, {{1, 64}});
  dma.dst = sbuf_ap(DType::fp32, 0, 128, 0, {{1, 64}});
  CHECK(reason(dma) == "");
  dma.dst = psum_ap(DType::fp32, 0, 128, 0, {{1, 64}});
  CHECK_THAT(reason(dma), Contains("DMA between HBM and PSUM is not a path"));
  std::swap(dma.src[0], dma.dst);
  CHECK_THAT(reason(dma), Contains("DMA between HBM and PSUM is not a path"));
  // The same rule for dma_transpose.
  Instruction dt = make(Opcode::dma_transpose, Engine::sync);
  dt.src[0] = hbm_ap(DType::fp32, 0, 4, 8, {{1, 8}});
  dt.dst = psum_ap(DType::fp32, 0, 8, 0, {{1, 4}});
  CHECK_THAT(reason(dt), Contains("DMA between HBM and PSUM is not a path"));

  Instruction mm = make(Opcode::matmul, Engine::tensor);
  mm.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 128}});
  mm.src[1] = sbuf_ap(DType::bf16, 0, 128, 256, {{1, 512}});
  mm.dst = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  CHECK(reason(mm) == "");
  mm.src[1] = psum_ap(DType::bf16, 0, 128, 4096, {{1, 512}});
  CHECK_THAT(reason(mm), Contains("TensorE reads its inputs from SBUF"));
  mm.src[1] = sbuf_ap(DType::bf16, 0, 128, 256, {{1, 512}});
  mm.src[0] = psum_ap(DType::bf16, 0, 128, 4096, {{1, 128}});
  CHECK_THAT(reason(mm), Contains("TensorE reads its inputs from SBUF"));
}

TEST_CASE("validation rejects iota and affine_select operands out of reach", "[unit][validate]") {
  Instruction io = make(Opcode::iota, Engine::gpsimd);
  io.dst = sbuf_ap(DType::int32, 0, 128, 0, {{1, 64}});
  CHECK(reason(io) == "");
  io.dst = psum_ap(DType::int32, 0, 128, 0, {{1, 64}});
  CHECK_THAT(reason(io), Contains("GpSimdE cannot reach"));
  io.dst = hbm_ap(DType::int32, 0, 128, 64, {{1, 64}});
  CHECK_THAT(reason(io), Contains("is in HBM"));
  // affine_select is GpSimdE only.
  Instruction aff = make(Opcode::affine_select, Engine::vector);
  aff.op0 = AluOp::is_ge;
  aff.src[0] = sbuf_ap(DType::fp32, 0, 4, 0, {{1, 8}});
  aff.dst = sbuf_ap(DType::fp32, 0, 4, 64, {{1, 8}});
  CHECK_THAT(reason(aff), Contains("does not run on VectorE"));
}
