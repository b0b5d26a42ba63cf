// Access patterns: sizes, contiguous runs, negative strides, iteration order, builders.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "isa/access_pattern.hpp"

using trnsim::isa::AccessPattern;
using trnsim::isa::DType;
using trnsim::isa::for_each_free_element;
using trnsim::isa::hbm_ap;
using trnsim::isa::Memory;
using trnsim::isa::psum_ap;
using trnsim::isa::sbuf_ap;

namespace {

std::vector<int64_t> offsets(const AccessPattern& ap) {
  std::vector<int64_t> out;
  for_each_free_element(ap, [&](int64_t off) { out.push_back(off); });
  return out;
}

}  // namespace

TEST_CASE("free_elements is the product of the free dimension counts", "[unit][ap]") {
  const AccessPattern two = sbuf_ap(DType::bf16, 0, 16, 0, {{4, 3}, {1, 5}});
  CHECK(two.free_elements() == 15);
  CHECK(two.elements() == 15 * 16);
  CHECK(two.bytes() == 15 * 16 * 2);
  CHECK(two.free_bytes() == 30);
  const AccessPattern four = sbuf_ap(DType::fp32, 0, 2, 0, {{100, 2}, {30, 3}, {7, 4}, {1, 5}});
  CHECK(four.free_elements() == 120);
  CHECK(four.bytes() == 120 * 2 * 4);
  // No free dimension: one element per partition.
  const AccessPattern none = sbuf_ap(DType::fp32, 0, 8, 0, {});
  CHECK(none.free_elements() == 1);
  CHECK(none.elements() == 8);
  // No partitions: no operand.
  CHECK_FALSE(AccessPattern{}.present());
  CHECK(sbuf_ap(DType::fp32, 0, 1, 0, {{1, 1}}).present());
}

TEST_CASE("contiguous_run_elements follows stride-1 dimensions outwards", "[unit][ap]") {
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{1, 64}}).contiguous_run_elements() == 64);
  // The outer dimension continues the inner run: one run of 128.
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{64, 2}, {1, 64}}).contiguous_run_elements() == 128);
  // A gap between rows: runs of 64.
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{128, 2}, {1, 64}}).contiguous_run_elements() == 64);
  // Three levels that all continue: 4 x 4 x 8 = 128.
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{32, 4}, {8, 4}, {1, 8}}).contiguous_run_elements() == 128);
  // The middle level breaks the run: 8 x 4 = 32.
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{64, 4}, {8, 4}, {1, 8}}).contiguous_run_elements() == 32);
  // A strided innermost dimension: runs of one element.
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{2, 64}}).contiguous_run_elements() == 1);
  // Count-1 dimensions do not break a run, whatever their stride.
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{1, 8}, {5, 1}}).contiguous_run_elements() == 8);
  CHECK(sbuf_ap(DType::bf16, 0, 1, 0, {{999, 1}, {1, 8}}).contiguous_run_elements() == 8);
}

TEST_CASE("contiguous_run_elements of a negative stride is one element", "[unit][ap]") {
  CHECK(sbuf_ap(DType::fp32, 0, 1, 64, {{-1, 8}}).contiguous_run_elements() == 1);
  CHECK(sbuf_ap(DType::fp32, 0, 1, 256, {{-16, 4}, {1, 16}}).contiguous_run_elements() == 16);
}

TEST_CASE("element offset bounds account for negative strides", "[unit][ap]") {
  const AccessPattern fwd = sbuf_ap(DType::fp32, 0, 1, 0, {{10, 2}, {1, 3}});
  CHECK(fwd.min_element_offset() == 0);
  CHECK(fwd.max_element_offset_exclusive() == 13);
  const AccessPattern rev = sbuf_ap(DType::fp32, 0, 1, 28, {{-1, 8}});
  CHECK(rev.min_element_offset() == -7);
  CHECK(rev.max_element_offset_exclusive() == 1);
  const AccessPattern mixed = sbuf_ap(DType::fp32, 0, 1, 256, {{-16, 4}, {1, 16}});
  CHECK(mixed.min_element_offset() == -48);
  CHECK(mixed.max_element_offset_exclusive() == 16);
}

TEST_CASE("for_each_free_element visits innermost fastest", "[unit][ap]") {
  CHECK(offsets(sbuf_ap(DType::fp32, 0, 1, 0, {{1, 4}})) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(offsets(sbuf_ap(DType::fp32, 0, 1, 0, {{10, 2}, {1, 3}})) ==
        std::vector<int64_t>{0, 1, 2, 10, 11, 12});
  // A transposing pattern: inner stride larger than outer.
  CHECK(offsets(sbuf_ap(DType::fp32, 0, 1, 0, {{1, 2}, {4, 3}})) ==
        std::vector<int64_t>{0, 4, 8, 1, 5, 9});
  CHECK(offsets(sbuf_ap(DType::fp32, 0, 1, 0, {{1000, 2}, {100, 2}, {10, 2}, {1, 2}})) ==
        std::vector<int64_t>{0, 1, 10, 11, 100, 101, 110, 111, 1000, 1001, 1010, 1011, 1100, 1101,
                             1110, 1111});
  CHECK(offsets(sbuf_ap(DType::fp32, 0, 1, 0, {})) == std::vector<int64_t>{0});
}

TEST_CASE("for_each_free_element walks negative strides backwards", "[unit][ap]") {
  CHECK(offsets(sbuf_ap(DType::fp32, 0, 1, 12, {{-1, 4}})) == std::vector<int64_t>{0, -1, -2, -3});
  CHECK(offsets(sbuf_ap(DType::fp32, 0, 1, 64, {{-8, 2}, {2, 3}})) ==
        std::vector<int64_t>{0, 2, 4, -8, -6, -4});
}

TEST_CASE("access pattern builders set memory, partitions and offsets", "[unit][ap]") {
  const AccessPattern s = sbuf_ap(DType::bf16, 32, 16, 128, {{1, 8}});
  CHECK(s.memory == Memory::sbuf);
  CHECK(s.dtype == DType::bf16);
  CHECK(s.start_partition == 32);
  CHECK(s.partitions == 16);
  CHECK(s.offset == 128);
  CHECK(s.ndims == 1);
  CHECK(s.innermost_stride_one());
  const AccessPattern p = psum_ap(DType::fp32, 64, 64, 2048, {{2, 8}});
  CHECK(p.memory == Memory::psum);
  CHECK(p.start_partition == 64);
  CHECK_FALSE(p.innermost_stride_one());
  const AccessPattern h = hbm_ap(DType::fp32, 4096, 128, 512, {{1, 512}});
  CHECK(h.memory == Memory::hbm);
  CHECK(h.offset == 4096);
  CHECK(h.partitions == 128);
  CHECK(h.partition_stride == 512);
  CHECK(h.start_partition == 0);
  // More than 4 dimensions are cut at 4.
  const AccessPattern five =
      sbuf_ap(DType::fp32, 0, 1, 0, {{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}});
  CHECK(five.ndims == 4);
}

TEST_CASE("access pattern to_string shows memory, partitions and dims", "[unit][ap]") {
  CHECK(sbuf_ap(DType::bf16, 32, 16, 128, {{1, 8}}).to_string() == "SBUF[p32:48, +128] bf16[1,8]");
  CHECK(AccessPattern{}.to_string() == "-");
}

TEST_CASE("access patterns are equal when every field is") {
  using namespace trnsim;
  using namespace trnsim::isa;
  const AccessPattern a = sbuf_ap(DType::bf16, 0, 128, 1024, {{1, 64}});
  AccessPattern b = a;
  CHECK(a == b);
  b.offset += 2;
  CHECK(a != b);
  b = a;
  b.dims[0].count = 32;
  CHECK(a != b);
  b = a;
  b.memory = Memory::psum;
  CHECK(a != b);
  b = a;
  b.start_partition = 32;
  CHECK(a != b);
  CHECK(hbm_ap(DType::bf16, 0, 128, 4096, {{1, 64}}) !=
        hbm_ap(DType::bf16, 0, 128, 8192, {{1, 64}}));
}
