#include "isa/dtype.hpp"

#include <cstring>

namespace trnsim::isa {

std::string_view name_of(DType t) {
  switch (t) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32") return DType::fp32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  return std::nullopt;
}

std::string dtype_names() { return "fp32, bf16"; }

uint16_t bf16_from_float(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate.
  const uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

float float_from_bf16(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float round_to(DType t, float f) {
  return t == DType::bf16 ? float_from_bf16(bf16_from_float(f)) : f;
}

float load_element(DType t, const uint8_t* p) {
  if (t == DType::bf16) {
    uint16_t b;
    std::memcpy(&b, p, sizeof b);
    return float_from_bf16(b);
  }
  float f;
  std::memcpy(&f, p, sizeof f);
  return f;
}

void store_element(DType t, uint8_t* p, float f) {
  if (t == DType::bf16) {
    const uint16_t b = bf16_from_float(f);
    std::memcpy(p, &b, sizeof b);
    return;
  }
  std::memcpy(p, &f, sizeof f);
}

}  // namespace trnsim::isa
