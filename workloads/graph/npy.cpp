#include "workloads/graph/npy.hpp"

#include <fmt/format.h>

#include <cstring>

#include "isa/dtype.hpp"

namespace trnsim::workloads {

namespace {

// The value of `key` in the header dict, e.g. 'descr': '<f4' -> <f4.
std::string header_value(const std::string& header, const std::string& key) {
  const auto at = header.find("'" + key + "'");
  if (at == std::string::npos) throw NpyError(fmt::format("the header has no '{}'", key));
  auto colon = header.find(':', at);
  if (colon == std::string::npos) throw NpyError("malformed header");
  ++colon;
  while (colon < header.size() && header[colon] == ' ') ++colon;
  if (colon >= header.size()) throw NpyError("malformed header");
  const char open = header[colon];
  const char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
  const auto end = header.find(close, colon + 1);
  if (end == std::string::npos) throw NpyError("malformed header");
  return header.substr(colon + 1, end - colon - 1);
}

}  // namespace

NpyArray parse_npy(const std::string& bytes) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    throw NpyError("not a .npy file (no \\x93NUMPY magic)");
  }
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw NpyError("truncated header");
    for (int i = 0; i < 4; ++i) header_len |= size_t{static_cast<uint8_t>(bytes[8 + i])} << (8 * i);
    start = 12;
  } else {
    throw NpyError(fmt::format("format version {} is not supported", major));
  }
  if (start + header_len > bytes.size()) throw NpyError("truncated header");
  const std::string header = bytes.substr(start, header_len);
  const std::string descr = header_value(header, "descr");
  if (header_value(header, "fortran_order").find("True") != std::string::npos) {
    throw NpyError("Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  }
  size_t item = 0;
  if (descr == "<f2") {
    item = 2;
  } else if (descr == "<f4") {
    item = 4;
  } else if (descr == "<f8") {
    item = 8;
  } else {
    throw NpyError(
        fmt::format("dtype '{}' is not supported; expected float16, float32 or "
                    "float64, little-endian ('<f2', '<f4', '<f8')",
                    descr));
  }
  NpyArray a;
  const std::string dims = header_value(header, "shape");
  uint64_t count = 1;
  size_t pos = 0;
  while (pos < dims.size()) {
    while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ',')) ++pos;
    if (pos >= dims.size()) break;
    size_t used = 0;
    int64_t d = 0;
    try {
      d = std::stoll(dims.substr(pos), &used);
    } catch (const std::exception&) {
      throw NpyError(fmt::format("malformed shape ({})", dims));
    }
    if (d < 0 || used == 0) throw NpyError(fmt::format("malformed shape ({})", dims));
    a.shape.push_back(d);
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count)) {
      throw NpyError("shape too large");
    }
    pos += used;
  }
  const size_t data = start + header_len;
  if (count > (bytes.size() - data) / item || bytes.size() - data != count * item) {
    throw NpyError(fmt::format("expected {} bytes of data for shape ({}), found {}", count * item,
                               dims, bytes.size() - data));
  }
  a.values.resize(count);
  const char* p = bytes.data() + data;
  for (uint64_t i = 0; i < count; ++i, p += item) {
    if (item == 2) {
      a.values[i] = isa::load_element(isa::DType::fp16, reinterpret_cast<const uint8_t*>(p));
    } else if (item == 4) {
      std::memcpy(&a.values[i], p, 4);
    } else {
      double d;
      std::memcpy(&d, p, 8);
      a.values[i] = static_cast<float>(d);
    }
  }
  return a;
}

std::string npy_bytes(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::string dims;
  for (int64_t d : shape) dims += fmt::format("{},", d);
  if (shape.size() > 1) dims.pop_back();
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // Magic (6) + version (2) + length (2) + header + '\n', a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const size_t at = out.size();
  out.resize(at + values.size() * 4);
  std::memcpy(out.data() + at, values.data(), values.size() * 4);
  return out;
}

}  // namespace trnsim::workloads
