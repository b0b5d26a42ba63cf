// isa::PatternRef, the shared form in which an Instruction holds its operands: it reads as the
// pattern it was given, equal patterns share one copy, and a change through edit() stays with
// the reference that made it.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "isa/instruction.hpp"
#include "isa/pattern_ref.hpp"

using trnsim::isa::AccessPattern;
using trnsim::isa::DType;
using trnsim::isa::Instruction;
using trnsim::isa::PatternRef;
using trnsim::isa::sbuf_ap;

TEST_CASE("PatternRef: reads as the pattern it was given, and equal patterns share one copy") {
  const AccessPattern tile = sbuf_ap(DType::bf16, 0, 128, 1024, {{1, 64}});
  const PatternRef a = tile;
  const PatternRef b = tile;
  CHECK(a.get() == tile);
  CHECK(a->offset == 1024);
  CHECK(a.present());
  const AccessPattern& read = a;
  CHECK(read.partitions == 128);
  CHECK(&a.get() == &b.get());  // one copy for both
  const PatternRef other = sbuf_ap(DType::bf16, 0, 128, 2048, {{1, 64}});
  CHECK(&other.get() != &a.get());
  CHECK(other != a);
}

TEST_CASE("PatternRef: the default and the absent pattern read as an absent operand") {
  const PatternRef none;
  CHECK_FALSE(none.present());
  CHECK(none.get() == AccessPattern{});
  const PatternRef absent = AccessPattern{};
  CHECK_FALSE(absent.present());
  CHECK(absent == none);
  // An absent pattern that still says something (a dtype) is kept as given.
  AccessPattern typed;
  typed.dtype = DType::bf16;
  const PatternRef t = typed;
  CHECK_FALSE(t.present());
  CHECK(t->dtype == DType::bf16);
}

TEST_CASE("PatternRef: edit() changes this reference's own copy, not the others sharing it") {
  Instruction x, y;
  x.dst = sbuf_ap(DType::fp32, 0, 64, 0, {{1, 32}});
  y.dst = x.dst;
  Instruction copy = x;
  x.dst.edit().offset = 4096;
  CHECK(x.dst->offset == 4096);
  CHECK(y.dst->offset == 0);
  CHECK(copy.dst->offset == 0);
  // A new pattern equal to the old one still finds the unchanged copy.
  const PatternRef again = sbuf_ap(DType::fp32, 0, 64, 0, {{1, 32}});
  CHECK(again->offset == 0);
  // Editing a reference that is not shared changes it in place; editing an empty one starts
  // from the absent pattern.
  PatternRef own;
  own.edit().partitions = 3;
  CHECK(own.present());
  CHECK(own->partitions == 3);
}

TEST_CASE("PatternRef: copies on several threads keep the shared pattern alive") {
  const AccessPattern tile = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 512}});
  PatternRef shared = tile;
  int mismatches = 0;  // Catch2's assertions are for the test's own thread only
  std::thread other([&shared, &tile, &mismatches] {
    for (int i = 0; i < 10000; ++i) {
      PatternRef c = shared;
      PatternRef d = tile;  // this thread's own table
      mismatches += c != d;
    }
  });
  for (int i = 0; i < 10000; ++i) {
    PatternRef c = shared;
    CHECK(c->partitions == 128);
  }
  other.join();
  CHECK(mismatches == 0);
  CHECK(shared.get() == tile);
}

TEST_CASE("Instruction::extra: copies share the rare fields, and edit() changes one copy") {
  Instruction iota;
  CHECK(iota.extra->fill == 0.0f);  // none given: the defaults
  iota.extra.edit().index_base = 7;
  iota.extra.edit().shuffle_mask[3] = 5;
  Instruction copy = iota;
  CHECK(copy.extra.shares_with(iota.extra));
  copy.extra.edit().index_base = 9;
  CHECK(iota.extra->index_base == 7);
  CHECK(copy.extra->index_base == 9);
  CHECK(copy.extra->shuffle_mask[3] == 5);
  CHECK_FALSE(copy.extra.shares_with(iota.extra));
}

TEST_CASE("ScalarOperand: an immediate or a shared per-partition pattern, in one word") {
  using trnsim::isa::ScalarOperand;
  static_assert(sizeof(ScalarOperand) == 8, "one word");
  // Immediates keep every bit of the float: signs, zeros, tiny and huge values.
  for (const float v : {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 1e-38f, -3.4e38f, 0.1f}) {
    const ScalarOperand s = ScalarOperand::immediate(v);
    CHECK_FALSE(s.per_partition().present());
    CHECK(std::signbit(s.imm()) == std::signbit(v));
    CHECK(s.imm() == v);
  }
  CHECK(ScalarOperand().imm() == 0.0f);
  CHECK_FALSE(ScalarOperand().per_partition().present());

  const AccessPattern column = sbuf_ap(DType::fp32, 0, 128, 4096, {{1, 1}});
  const ScalarOperand p = ScalarOperand::from(column);
  CHECK(p.per_partition().present());
  CHECK(p.per_partition().get() == column);
  CHECK(p.imm() == 0.0f);

  // Copies share the pattern; assignments and moves between the two kinds keep each right.
  ScalarOperand q = p;
  CHECK(&q.per_partition().get() == &p.per_partition().get());
  q = ScalarOperand::immediate(-2.5f);
  CHECK(q.imm() == -2.5f);
  CHECK_FALSE(q.per_partition().present());
  CHECK(p.per_partition().get() == column);  // the original is untouched
  q = p;
  CHECK(q.per_partition().get() == column);
  ScalarOperand moved = std::move(q);
  CHECK(moved.per_partition().get() == column);
  ScalarOperand r = ScalarOperand::immediate(7.0f);
  r = std::move(moved);
  CHECK(r.per_partition().get() == column);
  r = r;  // self-assignment keeps it
  CHECK(r.per_partition().get() == column);

  // In an instruction: the defaults, and copies of an instruction that holds a pattern.
  Instruction in;
  CHECK(in.scale.imm() == 1.0f);
  CHECK(in.bias.imm() == 0.0f);
  in.operand0 = ScalarOperand::from(column);
  const Instruction copy = in;
  CHECK(copy.operand0.per_partition().get() == column);
  CHECK(copy.scale.imm() == 1.0f);
}
