// Access patterns: how an instruction walks a tensor in HBM, SBUF or PSUM.
//
// On-chip memories (SBUF, PSUM) are 2-D: a partition index and a byte offset inside the
// partition. An access pattern covers `partitions` consecutive partitions from
// `start_partition` and, in each, up to 4 free dimensions of [stride, count] in elements,
// outermost first, from `offset` bytes. HBM is flat: partition row p of the pattern starts at
// byte `offset + p * partition_stride * size_of(dtype)`.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "isa/dtype.hpp"

namespace trnsim::isa {

enum class Memory : uint8_t { hbm, sbuf, psum };
std::string_view name_of(Memory m);

struct Dim {
  int64_t stride = 1;  // elements
  uint32_t count = 1;
};

constexpr int kMaxFreeDims = 4;

// Field order keeps the struct at 96 bytes. An Instruction holds nine, each as a shared
// isa::PatternRef (isa/pattern_ref.hpp): 8 bytes, equal patterns stored once.
struct AccessPattern {
  Memory memory = Memory::sbuf;
  DType dtype = DType::fp32;
  uint8_t ndims = 0;
  uint32_t start_partition = 0;
  uint32_t partitions = 0;               // 0 means "no operand"
  int64_t partition_stride = 0;          // HBM only, in elements
  uint64_t offset = 0;                   // bytes
  std::array<Dim, kMaxFreeDims> dims{};  // outermost first; dims[0..ndims)

  bool present() const { return partitions > 0; }
  uint64_t free_elements() const;
  uint64_t elements() const { return free_elements() * partitions; }
  uint64_t bytes() const { return elements() * size_of(dtype); }
  uint64_t free_bytes() const { return free_elements() * size_of(dtype); }
  // Elements that are contiguous in memory from the innermost dimension outwards: the length
  // of one element run, which is what a DMA descriptor moves.
  uint64_t contiguous_run_elements() const;
  bool innermost_stride_one() const { return ndims == 0 || dims[ndims - 1].stride == 1; }
  // Lowest and one-past-highest element offset touched within a partition row, relative to
  // `offset` (strides may be negative).
  int64_t min_element_offset() const;
  int64_t max_element_offset_exclusive() const;
  // "SBUF[p0:128, +512] bf16[1,64]", "HBM[0x1000] bf16 [4096,128][1,4096]", "-" when absent.
  std::string to_string() const;
  void append_to(std::string& out) const;  // the same text, appended
  // The same text written at `out` (at most kMaxTextBytes); returns the end.
  static constexpr size_t kMaxTextBytes = 256;
  char* append_to(char* out) const;
};

// Every field equal (the unused dims beyond ndims included).
inline bool operator==(const Dim& a, const Dim& b) {
  return a.stride == b.stride && a.count == b.count;
}
inline bool operator==(const AccessPattern& a, const AccessPattern& b) {
  return a.memory == b.memory && a.dtype == b.dtype && a.ndims == b.ndims &&
         a.start_partition == b.start_partition && a.partitions == b.partitions &&
         a.partition_stride == b.partition_stride && a.offset == b.offset && a.dims == b.dims;
}
inline bool operator!=(const AccessPattern& a, const AccessPattern& b) {
  return !(a == b);
}

// Builders for the common cases. `dims` are [stride, count] pairs, outermost first.
AccessPattern sbuf_ap(DType t, uint32_t start_partition, uint32_t partitions, uint64_t offset,
                      std::initializer_list<Dim> dims);
AccessPattern psum_ap(DType t, uint32_t start_partition, uint32_t partitions, uint64_t offset,
                      std::initializer_list<Dim> dims);
AccessPattern hbm_ap(DType t, uint64_t offset, uint32_t partitions, int64_t partition_stride,
                     std::initializer_list<Dim> dims);

// Calls fn(element_offset) for every element of one partition row, in free-axis order
// (innermost fastest). Offsets are in elements, relative to `offset`.
template <typename Fn>
void for_each_free_element(const AccessPattern& ap, Fn&& fn) {
  std::array<Dim, kMaxFreeDims> d{};
  const int pad = kMaxFreeDims - ap.ndims;
  for (int i = 0; i < kMaxFreeDims; ++i) d[i] = i < pad ? Dim{0, 1} : ap.dims[i - pad];
  for (uint32_t a = 0; a < d[0].count; ++a)
    for (uint32_t b = 0; b < d[1].count; ++b)
      for (uint32_t c = 0; c < d[2].count; ++c) {
        const int64_t base = a * d[0].stride + b * d[1].stride + c * d[2].stride;
        for (uint32_t e = 0; e < d[3].count; ++e) fn(base + e * d[3].stride);
      }
}

// Calls fn(element_offset, stride, count) for every run of the innermost dimension of one
// partition row, in free-axis order: the elements of a run are `stride` elements apart.
template <typename Fn>
void for_each_free_run(const AccessPattern& ap, Fn&& fn) {
  std::array<Dim, kMaxFreeDims> d{};
  const int pad = kMaxFreeDims - ap.ndims;
  for (int i = 0; i < kMaxFreeDims; ++i) d[i] = i < pad ? Dim{0, 1} : ap.dims[i - pad];
  for (uint32_t a = 0; a < d[0].count; ++a)
    for (uint32_t b = 0; b < d[1].count; ++b)
      for (uint32_t c = 0; c < d[2].count; ++c) {
        fn(a * d[0].stride + b * d[1].stride + c * d[2].stride, d[3].stride, d[3].count);
      }
}

// The bytes an access pattern can touch: a partition range and a byte range in each (HBM: one
// range over all partitions). Two accesses conflict when their regions overlap.
struct Region {
  Memory memory = Memory::sbuf;
  int64_t part_lo = 0, part_hi = 0;
  int64_t byte_lo = 0, byte_hi = 0;
  bool overlaps(const Region& o) const {
    return memory == o.memory && part_lo < o.part_hi && o.part_lo < part_hi &&
           byte_lo < o.byte_hi && o.byte_lo < byte_hi;
  }
};

Region region_of(const AccessPattern& ap);

}  // namespace trnsim::isa
