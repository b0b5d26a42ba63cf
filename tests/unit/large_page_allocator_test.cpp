// The instruction streams' allocator: large allocations are mappings of their own (not under
// ASan), small ones come from std::allocator; either way a stream keeps its contents as it grows
// past the threshold and back.
#include "base/large_page_allocator.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "isa/program.hpp"

using trnsim::base::kLargePageMinBytes;
using trnsim::base::LargePageAllocator;

TEST_CASE("a vector on the large-page allocator keeps its elements across the threshold") {
  std::vector<uint64_t, LargePageAllocator<uint64_t>> v;
  const size_t n = 3 * kLargePageMinBytes / sizeof(uint64_t);  // three growths past it
  for (size_t i = 0; i < n; ++i) v.push_back(i * 2654435761u);
  REQUIRE(v.size() == n);
  REQUIRE(v.capacity() * sizeof(uint64_t) >= kLargePageMinBytes);
  bool same = true;
  for (size_t i = 0; i < n; ++i) same = same && v[i] == i * 2654435761u;
  CHECK(same);
  v.resize(10);
  v.shrink_to_fit();  // back under the threshold: std::allocator again
  CHECK(v.capacity() * sizeof(uint64_t) < kLargePageMinBytes);
  CHECK(v[9] == uint64_t{9} * 2654435761u);
}

TEST_CASE("a program's instruction streams copy and move with the large-page allocator") {
  trnsim::isa::Program p;
  trnsim::isa::Instruction in;
  in.label = "x";
  // Past the fixed blocks' size, whose blocks are large-page mappings of their own.
  const size_t n = trnsim::isa::InstructionStream::kBlock + 1;
  for (size_t i = 0; i < n; ++i) p.stream(trnsim::Engine::vector).push_back(in);
  trnsim::isa::Program copy = p;
  CHECK(copy.stream(trnsim::Engine::vector).size() == n);
  CHECK(copy.stream(trnsim::Engine::vector).back().label == "x");
  trnsim::isa::Program moved = std::move(copy);
  CHECK(moved.instruction_count() == n);
}
