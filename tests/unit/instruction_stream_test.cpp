// isa::InstructionStream: blocks that never move, indices of the whole stream, and the blocks a
// streamed program frees behind its readers.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "isa/instruction_stream.hpp"

using trnsim::isa::Instruction;
using trnsim::isa::InstructionStream;

namespace {

Instruction numbered(size_t i) {
  Instruction in;
  in.label = "instruction number " + std::to_string(i);  // longer than the string's own room
  return in;
}

void fill(InstructionStream& s, size_t n) {
  for (size_t i = s.size(); i < n; ++i) s.push_back(numbered(i));
}

}  // namespace

TEST_CASE("an instruction stream holds every instruction at its index across its blocks") {
  InstructionStream s;
  CHECK(s.empty());
  // Across the first block (64), the doubling ones, and into the fixed blocks (65,536 each).
  const size_t n = 3 * InstructionStream::kBlock + 17;
  fill(s, n);
  REQUIRE(s.size() == n);
  for (size_t i :
       {size_t{0}, size_t{63}, size_t{64}, size_t{127}, size_t{128}, size_t{32767}, size_t{32768},
        size_t{65535}, size_t{65536}, size_t{131071}, size_t{131072}, n - 1}) {
    CHECK(s[i].label == "instruction number " + std::to_string(i));
  }
  size_t i = 0;
  for (const Instruction& in : s) CHECK(in.label == "instruction number " + std::to_string(i++));
  CHECK(i == n);
  CHECK(s.back().label == "instruction number " + std::to_string(n - 1));
  CHECK(s.end() - s.begin() == static_cast<std::ptrdiff_t>(n));
}

TEST_CASE("an instruction stream never moves an instruction it holds") {
  InstructionStream s;
  fill(s, 10);
  const Instruction* tenth = &s[9];
  fill(s, 2 * InstructionStream::kBlock);
  CHECK(&s[9] == tenth);  // a reader's reference stays good while a lowering appends
  CHECK(tenth->label == "instruction number 9");
}

TEST_CASE("an instruction stream frees the whole blocks below the point readers have passed") {
  InstructionStream s;
  const size_t n = 3 * InstructionStream::kBlock;
  fill(s, n);
  s.release_below(100);  // blocks 0 and 1 (0-63, 64-127): only the first is wholly below 100
  CHECK(s.released() == 64);
  s.release_below(InstructionStream::kBlock + 5);
  CHECK(s.released() == InstructionStream::kBlock);
  CHECK(s.size() == n);  // indices stay those of the whole stream
  CHECK(s[InstructionStream::kBlock].label ==
        "instruction number " + std::to_string(InstructionStream::kBlock));
  s.release_below(10);  // behind what is already freed: nothing
  CHECK(s.released() == InstructionStream::kBlock);
  // A freed fixed block is reused for the next one: the stream grows on, into it.
  s.release_below(2 * InstructionStream::kBlock);
  fill(s, n + InstructionStream::kBlock + 1);
  bool all = true;
  for (size_t i = n; i <= n + InstructionStream::kBlock; ++i) {
    all = all && s[i].label == "instruction number " + std::to_string(i);
  }
  CHECK(all);
  // Iteration, copies and checked reads start where the stream is not freed.
  CHECK(s.begin().index() == 2 * InstructionStream::kBlock);
  const InstructionStream copy = s;
  CHECK(copy.size() == s.size());
  CHECK(copy.released() == s.released());
  CHECK(copy[n].label == s[n].label);
  CHECK_THROWS_AS(s.at(0), std::out_of_range);
  CHECK_THROWS_AS(s.at(s.size()), std::out_of_range);
  CHECK(s.at(n).label == "instruction number " + std::to_string(n));
  s.clear();
  CHECK(s.empty());
  CHECK(s.released() == 0);
}

TEST_CASE("an instruction stream copies and moves as a value") {
  InstructionStream a;
  fill(a, 300);
  InstructionStream b = a;
  CHECK(b.size() == 300);
  CHECK(b[299].label == a[299].label);
  CHECK(&b[0] != &a[0]);
  InstructionStream c = std::move(a);
  CHECK(c.size() == 300);
  CHECK(a.empty());  // NOLINT: moved from, checked on purpose
  InstructionStream d;
  d.assign(c.begin() + 100, c.begin() + 200);
  CHECK(d.size() == 100);
  CHECK(d[0].label == "instruction number 100");
}
