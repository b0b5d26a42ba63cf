#include "isa/access_pattern.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

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

namespace {
template <typename Int>
char* put_number(char* out, Int v, int base = 10) {
  return std::to_chars(out, out + 24, v, base).ptr;
}
char* put(char* out, std::string_view s) {
  std::memcpy(out, s.data(), s.size());
  return out + s.size();
}
}  // namespace

// Without fmt or allocation: the trace writer calls this for every instruction and transfer.
char* AccessPattern::append_to(char* out) const {
  if (!present()) {
    *out++ = '-';
    return out;
  }
  if (memory == Memory::hbm) {
    out = put(out, "HBM[0x");  // fmt's {:#x}
    out = put_number(out, offset, 16);
    out = put(out, "] ");
    out = put(out, name_of(dtype));
    out = put(out, " [");
    out = put_number(out, partition_stride);
    *out++ = ',';
    out = put_number(out, partitions);
    *out++ = ']';
  } else {
    out = put(out, name_of(memory));
    out = put(out, "[p");
    out = put_number(out, start_partition);
    *out++ = ':';
    out = put_number(out, static_cast<uint32_t>(start_partition + partitions));
    out = put(out, ", +");
    out = put_number(out, offset);
    out = put(out, "] ");
    out = put(out, name_of(dtype));
  }
  for (int i = 0; i < std::min<int>(ndims, kMaxFreeDims); ++i) {
    *out++ = '[';
    out = put_number(out, dims[i].stride);
    *out++ = ',';
    out = put_number(out, dims[i].count);
    *out++ = ']';
  }
  return out;
}

void AccessPattern::append_to(std::string& s) const {
  char buf[kMaxTextBytes];
  s.append(buf, append_to(buf));
}

std::string AccessPattern::to_string() const {
  std::string s;
  append_to(s);
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

Region region_of(const AccessPattern& ap) {
  const int64_t es = size_of(ap.dtype);
  Region r;
  r.memory = ap.memory;
  if (ap.memory == Memory::hbm) {
    const int64_t span = ap.partition_stride * (static_cast<int64_t>(ap.partitions) - 1);
    r.part_lo = 0;
    r.part_hi = 1;
    r.byte_lo = static_cast<int64_t>(ap.offset) +
                (std::min<int64_t>(0, span) + ap.min_element_offset()) * es;
    r.byte_hi = static_cast<int64_t>(ap.offset) +
                (std::max<int64_t>(0, span) + ap.max_element_offset_exclusive()) * es;
  } else {
    r.part_lo = ap.start_partition;
    r.part_hi = ap.start_partition + ap.partitions;
    r.byte_lo = static_cast<int64_t>(ap.offset) + ap.min_element_offset() * es;
    r.byte_hi = static_cast<int64_t>(ap.offset) + ap.max_element_offset_exclusive() * es;
  }
  return r;
}

}  // namespace trnsim::isa
