#include "workloads/graph/npy.hpp"

#include <fmt/format.h>

#include <cstring>
#include <map>

#include "isa/dtype.hpp"

namespace trnsim::workloads {

namespace {

// The header is a Python dict literal that numpy writes (numpy/lib/format.py):
//   {'descr': '<f4', 'fortran_order': False, 'shape': (256, 512), }
// It is parsed whole and strictly: every key once, each of the right type, nothing else.
// A reader that only searched for the keys read 'fortran_order': True as False once (a
// silent transpose of every Fortran-ordered input); a grammar cannot miss a key like that.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : s_(text) {}

  struct Value {
    enum class Kind { string, boolean, tuple } kind = Kind::string;
    std::string text;
    bool flag = false;
    std::vector<int64_t> numbers;
  };

  std::map<std::string, Value> dict() {
    std::map<std::string, Value> out;
    skip_space();
    expect('{', "the header to start with '{'");
    for (;;) {
      skip_space();
      if (accept('}')) break;
      const std::string key = string_literal("a quoted key");
      skip_space();
      expect(':', fmt::format("':' after '{}'", key));
      skip_space();
      Value v = value(key);
      if (!out.emplace(key, std::move(v)).second) {
        throw NpyError(fmt::format("the header names '{}' twice", key));
      }
      skip_space();
      if (accept(',')) continue;
      skip_space();
      expect('}', "',' or '}' after a value");
      break;
    }
    skip_space();
    if (pos_ != s_.size()) throw NpyError("the header has text after its closing '}'");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw NpyError(fmt::format("malformed header: expected {} at character {}", what, pos_ + 1));
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
  }
  bool accept(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!accept(c)) fail(what);
  }
  std::string string_literal(const std::string& what) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail(what);
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) fail("a closing quote");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  Value value(const std::string& key) {
    Value v;
    if (pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"')) {
      v.kind = Value::Kind::string;
      v.text = string_literal("a string");
      return v;
    }
    if (s_.compare(pos_, 4, "True") == 0 || s_.compare(pos_, 5, "False") == 0) {
      v.kind = Value::Kind::boolean;
      v.flag = s_[pos_] == 'T';
      pos_ += v.flag ? 4 : 5;
      return v;
    }
    if (accept('(')) {
      v.kind = Value::Kind::tuple;
      for (;;) {
        skip_space();
        if (accept(')')) break;
        v.numbers.push_back(integer());
        skip_space();
        if (accept(',')) continue;
        expect(')', "',' or ')' in the shape");
        break;
      }
      return v;
    }
    if (pos_ < s_.size() && s_[pos_] == '[') {
      throw NpyError(
          fmt::format("'{}' is a list (a structured array); expected a plain float "
                      "array",
                      key));
    }
    fail(fmt::format("a string, True, False or a tuple as the value of '{}'", key));
  }
  int64_t integer() {
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
          __builtin_add_overflow(v, int64_t{s_[pos_] - '0'}, &v)) {
        throw NpyError("a dimension of the shape is too large");
      }
      ++pos_;
    }
    if (pos_ == start) fail("a non-negative integer in the shape");
    // numpy writes Python ints; a long suffix is from Python 2's numpy.
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
    return v;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// Element `i` of the data as float: `item` bytes, little- or big-endian.
float element(const char* data, uint64_t i, size_t item, bool big_endian) {
  uint8_t b[8];
  std::memcpy(b, data + i * item, item);
  if (big_endian) {
    for (size_t k = 0; k < item / 2; ++k) std::swap(b[k], b[item - 1 - k]);
  }
  if (item == 2) return isa::load_element(isa::DType::fp16, b);
  if (item == 4) {
    float f;
    std::memcpy(&f, b, 4);
    return f;
  }
  double d;
  std::memcpy(&d, b, 8);
  return static_cast<float>(d);
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
  if (header_len > bytes.size() - start) throw NpyError("truncated header");
  const std::string header = bytes.substr(start, header_len);
  const auto dict = HeaderParser(header).dict();
  using Kind = HeaderParser::Value::Kind;
  auto field = [&](const char* key, Kind kind, const char* what) -> const HeaderParser::Value& {
    const auto it = dict.find(key);
    if (it == dict.end()) throw NpyError(fmt::format("the header has no '{}'", key));
    if (it->second.kind != kind) {
      throw NpyError(fmt::format("the header's '{}' is not {}", key, what));
    }
    return it->second;
  };
  const std::string descr = field("descr", Kind::string, "a string").text;
  const bool fortran = field("fortran_order", Kind::boolean, "True or False").flag;
  const std::vector<int64_t>& shape = field("shape", Kind::tuple, "a tuple").numbers;
  for (const auto& [key, value] : dict) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      throw NpyError(
          fmt::format("the header has an unknown key '{}' (expected descr, fortran_order and "
                      "shape)",
                      key));
    }
  }
  // Byte order: '<' little, '>' big, '=' this machine's (little-endian: x86-64 and AArch64 as
  // Debian builds them), '|' not applicable (1-byte types, none of which is a float here).
  size_t item = 0;
  bool big_endian = false;
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '=') &&
      descr[1] == 'f' && (descr[2] == '2' || descr[2] == '4' || descr[2] == '8')) {
    item = static_cast<size_t>(descr[2] - '0');
    big_endian = descr[0] == '>';
  } else {
    throw NpyError(
        fmt::format("dtype '{}' is not supported; expected float16, float32 or float64 "
                    "('<f2', '<f4', '<f8', or big-endian '>f2', '>f4', '>f8')",
                    descr));
  }
  NpyArray a;
  a.shape = shape;
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count)) {
      throw NpyError("shape too large");
    }
  }
  const size_t data = start + header_len;
  const auto shape_text = [&] { return fmt::format("({})", fmt::join(shape, ", ")); };
  uint64_t expected = 0;
  if (__builtin_mul_overflow(count, uint64_t{item}, &expected)) {
    throw NpyError(fmt::format("shape {} has more elements than a file can hold", shape_text()));
  }
  if (expected != bytes.size() - data) {
    throw NpyError(
        fmt::format("expected {} bytes of data ({} elements of {} bytes) for shape {}, "
                    "found {}",
                    expected, count, item, shape_text(), bytes.size() - data));
  }
  a.values.resize(count);
  const char* p = bytes.data() + data;
  if (!fortran || shape.size() < 2) {
    for (uint64_t i = 0; i < count; ++i) a.values[i] = element(p, i, item, big_endian);
    return a;
  }
  // Fortran order: the first index varies fastest in the file. Walk the file in its order,
  // keeping the element's C-order position: each step adds the C stride of the dimension that
  // advances and takes back the strides of those that wrap to 0.
  const size_t n = shape.size();
  std::vector<uint64_t> c_stride(n, 1);
  for (size_t k = n - 1; k > 0; --k) {
    c_stride[k - 1] = c_stride[k] * static_cast<uint64_t>(shape[k]);
  }
  std::vector<int64_t> index(n, 0);
  uint64_t c = 0;
  for (uint64_t f = 0; f < count; ++f) {
    a.values[c] = element(p, f, item, big_endian);
    for (size_t k = 0; k < n; ++k) {
      if (++index[k] < shape[k]) {
        c += c_stride[k];
        break;
      }
      c -= c_stride[k] * static_cast<uint64_t>(shape[k] - 1);
      index[k] = 0;
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
  // An empty array's data() may be null, which memcpy may not be given even for 0 bytes
  // (fuzz_npy_header: UBSan on a (0, 4) array read and written back).
  if (!values.empty()) std::memcpy(out.data() + at, values.data(), values.size() * 4);
  return out;
}

}  // namespace trnsim::workloads
