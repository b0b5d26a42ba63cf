// base::ZeroedAllocator, under the functional run's memory image: a vector sized through it
// reads as zeros without being written, small (calloc) and large (a fresh mapping) alike, and
// copies and values written through it behave as a std::vector's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/large_page_allocator.hpp"
#include "config/arch.hpp"
#include "isa/semantics.hpp"

using Bytes = std::vector<uint8_t, trnsim::base::ZeroedAllocator<uint8_t>>;

namespace {
bool all_zero(const Bytes& v) {
  return std::all_of(v.begin(), v.end(), [](uint8_t b) { return b == 0; });
}
}  // namespace

TEST_CASE("ZeroedAllocator: a vector sized through it reads as zeros, small and large") {
  for (size_t n : {size_t{1}, size_t{4096}, trnsim::base::kLargePageMinBytes + 12345}) {
    Bytes v(n);
    REQUIRE(v.size() == n);
    CHECK(all_zero(v));
    v[n - 1] = 7;
    Bytes copy = v;  // a copy holds the values, not zeros
    CHECK(copy[n - 1] == 7);
    CHECK(copy == v);
  }
  // Freed and allocated again (the heap may hand back the same block): zeros again.
  for (int round = 0; round < 3; ++round) {
    Bytes v(1000);
    CHECK(all_zero(v));
    std::fill(v.begin(), v.end(), uint8_t{0xff});
  }
  std::vector<float, trnsim::base::ZeroedAllocator<float>> f(100000);
  CHECK(std::all_of(f.begin(), f.end(), [](float x) { return x == 0.0f; }));
}

TEST_CASE("ZeroedAllocator: a memory image starts with SBUF, PSUM and HBM all zero") {
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  trnsim::isa::MemoryImage m(arch, 3 << 20);
  CHECK(m.sbuf.size() == arch.partitions * arch.sbuf_partition_bytes);
  CHECK(m.hbm.size() == size_t{3} << 20);
  CHECK(all_zero(m.sbuf));
  CHECK(all_zero(m.psum));
  CHECK(all_zero(m.hbm));
}
