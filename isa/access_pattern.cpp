#include "isa/access_pattern.hpp"

#include <fmt/format.h>

namespace trnsim::isa {

std::string_view name_of(Memory m) {
  switch (m) {
    case Memory::hbm:
      return "HBM";
    case Memory::sbuf:
      return "SBUF";
    case Memory::psum:
      return "PSUM";
  }
  return "?";
}

uint64_t AccessPattern::free_elements() const {
  uint64_t n = 1;
  for (int i = 0; i < ndims; ++i) n *= dims[i].count;
  return n;
}

uint64_t AccessPattern::contiguous_run_elements() const {
  uint64_t run = 1;
  int64_t expected_stride = 1;
  for (int i = ndims - 1; i >= 0; --i) {
    if (dims[i].count == 1) continue;
    if (dims[i].stride != expected_stride) break;
    run *= dims[i].count;
    expected_stride = static_cast<int64_t>(run);
  }
  return run;
}

int64_t AccessPattern::min_element_offset() const {
  int64_t lo = 0;
  for (int i = 0; i < ndims; ++i) {
    if (dims[i].stride < 0) lo += dims[i].stride * (static_cast<int64_t>(dims[i].count) - 1);
  }
  return lo;
}

int64_t AccessPattern::max_element_offset_exclusive() const {
  int64_t hi = 0;
  for (int i = 0; i < ndims; ++i) {
    if (dims[i].stride > 0) hi += dims[i].stride * (static_cast<int64_t>(dims[i].count) - 1);
  }
  return hi + 1;
}

std::string AccessPattern::to_string() const {
  if (!present()) return "-";
  std::string s;
  if (memory == Memory::hbm) {
    s = fmt::format("HBM[{:#x}] {} [{},{}]", offset, name_of(dtype), partition_stride, partitions);
  } else {
    s = fmt::format("{}[p{}:{}, +{}] {}", name_of(memory), start_partition,
                    start_partition + partitions, offset, name_of(dtype));
  }
  for (int i = 0; i < ndims; ++i) s += fmt::format("[{},{}]", dims[i].stride, dims[i].count);
  return s;
}

namespace {
AccessPattern make(Memory m, DType t, uint32_t start, uint32_t parts, int64_t pstride,
                   uint64_t offset, std::initializer_list<Dim> dims) {
  AccessPattern ap;
  ap.memory = m;
  ap.dtype = t;
  ap.start_partition = start;
  ap.partitions = parts;
  ap.partition_stride = pstride;
  ap.offset = offset;
  for (const Dim& d : dims) {
    if (ap.ndims == kMaxFreeDims) break;  // validation reports over-long patterns elsewhere
    ap.dims[ap.ndims++] = d;
  }
  return ap;
}
}  // namespace

AccessPattern sbuf_ap(DType t, uint32_t start_partition, uint32_t partitions, uint64_t offset,
                      std::initializer_list<Dim> dims) {
  return make(Memory::sbuf, t, start_partition, partitions, 0, offset, dims);
}

AccessPattern psum_ap(DType t, uint32_t start_partition, uint32_t partitions, uint64_t offset,
                      std::initializer_list<Dim> dims) {
  return make(Memory::psum, t, start_partition, partitions, 0, offset, dims);
}

AccessPattern hbm_ap(DType t, uint64_t offset, uint32_t partitions, int64_t partition_stride,
                     std::initializer_list<Dim> dims) {
  return make(Memory::hbm, t, 0, partitions, partition_stride, offset, dims);
}

}  // namespace trnsim::isa
