#include "isa/dtype.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace trnsim::isa {

namespace {
constexpr std::array<std::string_view, kDTypeCount> kNames = {
    "fp32", "bf16",  "fp16",  "fp8_e4m3", "fp8_e5m2", "int32",
    "int8", "uint8", "int16", "uint16",   "uint32"};

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Rounds |f| (finite, non-negative) to a float format with `man` mantissa bits, minimum normal
// exponent `emin`, round-to-nearest-even, and returns the rounded magnitude as a float.
// Subnormals keep the fixed spacing 2^(emin - man).
float round_magnitude(float a, int man, int emin) {
  if (a == 0.0f) return 0.0f;
  int e;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1)
  const int exponent = std::max(e - 1, emin);
  const float quantum = std::ldexp(1.0f, exponent - man);
  // nearbyint rounds half to even in the default rounding mode.
  return std::nearbyint(a / quantum) * quantum;
}

// Encodes a rounded magnitude of a small float format as its bits (without sign).
uint32_t encode_magnitude(float r, int man, int bias) {
  if (r == 0.0f) return 0;
  int e;
  const float m = std::frexp(r, &e);  // r = m * 2^e
  int biased = e - 1 + bias;
  if (biased <= 0) {  // subnormal: r = frac * 2^(1 - bias - man)
    return static_cast<uint32_t>(std::ldexp(r, bias - 1 + man));
  }
  const auto frac = static_cast<uint32_t>(std::ldexp(m * 2.0f - 1.0f, man));
  return (static_cast<uint32_t>(biased) << man) | frac;
}

float decode(uint32_t bits, int exp_bits, int man, int bias) {
  const uint32_t sign = bits >> (exp_bits + man);
  const uint32_t e = (bits >> man) & ((1u << exp_bits) - 1);
  const uint32_t f = bits & ((1u << man) - 1);
  float v = e == 0
                ? std::ldexp(static_cast<float>(f), 1 - bias - man)
                : std::ldexp(static_cast<float>(f | (1u << man)), static_cast<int>(e) - bias - man);
  return sign ? -v : v;
}

// Round half to even and saturate to Int's range, in 64 bits (a float of INT32_MAX is 2^31,
// which does not fit an int32); NaN becomes 0.
template <typename Int>
int64_t saturated_int(float f) {
  if (std::isnan(f)) return 0;
  const double r = std::nearbyint(static_cast<double>(f));
  const auto lo = static_cast<double>(std::numeric_limits<Int>::min());
  const auto hi = static_cast<double>(std::numeric_limits<Int>::max());
  return r < lo   ? std::numeric_limits<Int>::min()
         : r > hi ? std::numeric_limits<Int>::max()
                  : static_cast<int64_t>(r);
}

template <typename Int>
float to_int(float f) {
  return static_cast<float>(saturated_int<Int>(f));
}
}  // namespace

std::string_view name_of(DType t) {
  return kNames[static_cast<size_t>(t)];
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<DType>(i);
  }
  if (name == "float32") return DType::fp32;
  if (name == "bfloat16") return DType::bf16;
  if (name == "float16") return DType::fp16;
  if (name == "float8_e4m3" || name == "fp8e4m3") return DType::fp8_e4m3;
  if (name == "float8_e5m2" || name == "fp8e5m2") return DType::fp8_e5m2;
  return std::nullopt;
}

std::string dtype_names() {
  std::string s;
  for (std::string_view n : kNames) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

uint16_t bf16_from_float(float f) {
  uint32_t bits = bits_of(f);
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

uint16_t fp16_from_float(float f) {
  const uint16_t sign = (bits_of(f) >> 31) ? 0x8000 : 0;
  if (std::isnan(f)) return sign | 0x7e00;
  const float r = round_magnitude(std::fabs(f), 10, -14);
  if (r > 65504.0f) return sign | 0x7c00;  // overflow to infinity (IEEE)
  return sign | static_cast<uint16_t>(encode_magnitude(r, 10, 15));
}

float float_from_fp16(uint16_t h) {
  if ((h & 0x7c00) == 0x7c00) {
    if (h & 0x03ff) return std::numeric_limits<float>::quiet_NaN();
    return (h & 0x8000) ? -INFINITY : INFINITY;
  }
  return decode(h, 5, 10, 15);
}

uint8_t fp8_e4m3_from_float(float f) {
  const uint8_t sign = (bits_of(f) >> 31) ? 0x80 : 0;
  if (std::isnan(f)) return sign | 0x7f;
  const float r = std::min(round_magnitude(std::fabs(f), 3, -6), 448.0f);
  return sign | static_cast<uint8_t>(encode_magnitude(r, 3, 7));
}

float float_from_fp8_e4m3(uint8_t b) {
  if ((b & 0x7f) == 0x7f) return std::numeric_limits<float>::quiet_NaN();
  return decode(b, 4, 3, 7);
}

uint8_t fp8_e5m2_from_float(float f) {
  const uint8_t sign = (bits_of(f) >> 31) ? 0x80 : 0;
  if (std::isnan(f)) return sign | 0x7e;
  const float r = std::min(round_magnitude(std::fabs(f), 2, -14), 57344.0f);
  return sign | static_cast<uint8_t>(encode_magnitude(r, 2, 15));
}

float float_from_fp8_e5m2(uint8_t b) {
  if ((b & 0x7c) == 0x7c) {
    if (b & 0x03) return std::numeric_limits<float>::quiet_NaN();
    return (b & 0x80) ? -INFINITY : INFINITY;
  }
  return decode(b, 5, 2, 15);
}

float round_to(DType t, float f) {
  switch (t) {
    case DType::fp32:
      return f;
    case DType::bf16:
      return float_from_bf16(bf16_from_float(f));
    case DType::fp16:
      return float_from_fp16(fp16_from_float(f));
    case DType::fp8_e4m3:
      return float_from_fp8_e4m3(fp8_e4m3_from_float(f));
    case DType::fp8_e5m2:
      return float_from_fp8_e5m2(fp8_e5m2_from_float(f));
    case DType::int32:
      return to_int<int32_t>(f);
    case DType::int8:
      return to_int<int8_t>(f);
    case DType::uint8:
      return to_int<uint8_t>(f);
    case DType::int16:
      return to_int<int16_t>(f);
    case DType::uint16:
      return to_int<uint16_t>(f);
    case DType::uint32:
      return to_int<uint32_t>(f);
  }
  return f;
}

float load_element(DType t, const uint8_t* p) {
  switch (t) {
    case DType::fp32: {
      float f;
      std::memcpy(&f, p, sizeof f);
      return f;
    }
    case DType::bf16:
    case DType::fp16: {
      uint16_t b;
      std::memcpy(&b, p, sizeof b);
      return t == DType::bf16 ? float_from_bf16(b) : float_from_fp16(b);
    }
    case DType::fp8_e4m3:
      return float_from_fp8_e4m3(*p);
    case DType::fp8_e5m2:
      return float_from_fp8_e5m2(*p);
    case DType::int32: {
      int32_t i;
      std::memcpy(&i, p, sizeof i);
      return static_cast<float>(i);
    }
    case DType::int8:
      return static_cast<float>(static_cast<int8_t>(*p));
    case DType::uint8:
      return static_cast<float>(*p);
    case DType::int16: {
      int16_t i;
      std::memcpy(&i, p, sizeof i);
      return static_cast<float>(i);
    }
    case DType::uint16: {
      uint16_t i;
      std::memcpy(&i, p, sizeof i);
      return static_cast<float>(i);
    }
    case DType::uint32: {
      uint32_t i;
      std::memcpy(&i, p, sizeof i);
      return static_cast<float>(i);
    }
  }
  return 0.0f;
}

void store_element(DType t, uint8_t* p, float f) {
  switch (t) {
    case DType::fp32:
      std::memcpy(p, &f, sizeof f);
      return;
    case DType::bf16:
    case DType::fp16: {
      const uint16_t b = t == DType::bf16 ? bf16_from_float(f) : fp16_from_float(f);
      std::memcpy(p, &b, sizeof b);
      return;
    }
    case DType::fp8_e4m3:
      *p = fp8_e4m3_from_float(f);
      return;
    case DType::fp8_e5m2:
      *p = fp8_e5m2_from_float(f);
      return;
    case DType::int32: {
      const auto i = static_cast<int32_t>(saturated_int<int32_t>(f));
      std::memcpy(p, &i, sizeof i);
      return;
    }
    case DType::int8:
      *p = static_cast<uint8_t>(static_cast<int8_t>(saturated_int<int8_t>(f)));
      return;
    case DType::uint8:
      *p = static_cast<uint8_t>(saturated_int<uint8_t>(f));
      return;
    case DType::int16: {
      const auto i = static_cast<int16_t>(saturated_int<int16_t>(f));
      std::memcpy(p, &i, sizeof i);
      return;
    }
    case DType::uint16: {
      const auto i = static_cast<uint16_t>(saturated_int<uint16_t>(f));
      std::memcpy(p, &i, sizeof i);
      return;
    }
    case DType::uint32: {
      const auto i = static_cast<uint32_t>(saturated_int<uint32_t>(f));
      std::memcpy(p, &i, sizeof i);
      return;
    }
  }
}

namespace {
// bf16_from_float without branches, so that runs of it vectorize: the same result for every
// input (NaN quieted with its sign kept, else round to nearest even).
inline uint16_t bf16_from_float_branchless(float f) {
  const uint32_t bits = bits_of(f);
  const uint32_t nan_mask = 0u - static_cast<uint32_t>((bits & 0x7fffffffu) > 0x7f800000u);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet = (bits >> 16) | 0x0040u;
  return static_cast<uint16_t>((quiet & nan_mask) | (rounded & ~nan_mask));
}
}  // namespace

// Element access through the byte images without breaking aliasing rules, at any alignment:
// with these the contiguous loops below vectorize.
using bf16_bits = uint16_t __attribute__((may_alias, aligned(1)));
using fp32_bits = uint32_t __attribute__((may_alias, aligned(1)));

void load_elements(DType t, const uint8_t* __restrict p, int64_t stride, uint32_t n,
                   float* __restrict out) {
  if (t == DType::bf16) {
    if (stride == 1) {
      const auto* in = reinterpret_cast<const bf16_bits*>(p);
      auto* bits = reinterpret_cast<fp32_bits*>(out);
      for (uint32_t i = 0; i < n; ++i) bits[i] = static_cast<uint32_t>(in[i]) << 16;
      return;
    }
    for (uint32_t i = 0; i < n; ++i, p += 2 * stride) {
      uint16_t b;
      std::memcpy(&b, p, sizeof b);
      out[i] = float_from_bf16(b);
    }
    return;
  }
  if (t == DType::fp32) {
    if (stride == 1) {
      std::memcpy(out, p, sizeof(float) * n);
      return;
    }
    for (uint32_t i = 0; i < n; ++i, p += 4 * stride) std::memcpy(&out[i], p, sizeof(float));
    return;
  }
  const int64_t step = size_of(t) * stride;
  for (uint32_t i = 0; i < n; ++i, p += step) out[i] = load_element(t, p);
}

// Rounding a row to bf16 is most of a functional elementwise instruction's time, and its
// narrowing (32 to 16 bits) does not vectorize well with the baseline x86-64 (SSE2) that
// Debian builds for: on x86-64 an AVX2 version is compiled beside it and chosen at load time
// where the CPU has AVX2 (GCC/Clang function multiversioning). Integer work: the results are
// bit-identical. Functional engine_stream 100k: simulation CPU 0.66 -> 0.50 s.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TRNSIM_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define TRNSIM_AVX2_CLONE
#endif

TRNSIM_AVX2_CLONE
void store_elements(DType t, uint8_t* __restrict p, int64_t stride, uint32_t n,
                    const float* __restrict in) {
  if (t == DType::bf16) {
    if (stride == 1) {
      auto* out = reinterpret_cast<bf16_bits*>(p);
      const auto* from = reinterpret_cast<const fp32_bits*>(in);
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t bits = from[i];
        const uint32_t nan_mask = 0u - static_cast<uint32_t>((bits & 0x7fffffffu) > 0x7f800000u);
        const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
        const uint32_t quiet = (bits >> 16) | 0x0040u;
        out[i] = static_cast<uint16_t>((quiet & nan_mask) | (rounded & ~nan_mask));
      }
      return;
    }
    for (uint32_t i = 0; i < n; ++i, p += 2 * stride) {
      const uint16_t b = bf16_from_float_branchless(in[i]);
      std::memcpy(p, &b, sizeof b);
    }
    return;
  }
  if (t == DType::fp32) {
    if (stride == 1) {
      std::memcpy(p, in, sizeof(float) * n);
      return;
    }
    for (uint32_t i = 0; i < n; ++i, p += 4 * stride) std::memcpy(p, &in[i], sizeof(float));
    return;
  }
  const int64_t step = size_of(t) * stride;
  for (uint32_t i = 0; i < n; ++i, p += step) store_element(t, p, in[i]);
}

}  // namespace trnsim::isa
