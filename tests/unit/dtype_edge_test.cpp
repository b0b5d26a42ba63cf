// Data type edge cases beyond bf16 (tests/unit/dtype_test.cpp): fp16, fp8 E4M3 and E5M2,
// the integer types, and dtype names. Expected codes are worked out by hand from the formats:
//   fp16  IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa; max 65504; inf 0x7C00.
//   e4m3  OCP FN: 1, 4 (bias 7), 3; no infinity; max 448 = 0x7E; NaN 0x7F; min sub 2^-9.
//   e5m2  1, 5 (bias 15), 2; max 57344 = 0x7B; inf 0x7C; NaN 0x7D-0x7F; min sub 2^-16.
// Conversions round to nearest, ties to even. fp16 overflows to infinity; fp8 saturates
// (infinities too); integers round half to even, saturate, and take NaN to 0.
//
// Round trips (decode, then encode) give the same code for every code except:
//   - NaN codes: the decoder returns a positive quiet NaN, so every NaN code re-encodes to the
//     canonical positive NaN (fp16 0x7E00, e4m3 0x7F, e5m2 0x7E); sign and payload are lost;
//   - e5m2 infinities: +-inf saturate to +-57344 (0x7B / 0xFB) when encoded.
// Negative zero keeps its sign in every float format.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "isa/dtype.hpp"

using trnsim::isa::DType;
using trnsim::isa::float_from_fp16;
using trnsim::isa::float_from_fp8_e4m3;
using trnsim::isa::float_from_fp8_e5m2;
using trnsim::isa::fp16_from_float;
using trnsim::isa::fp8_e4m3_from_float;
using trnsim::isa::fp8_e5m2_from_float;
using trnsim::isa::load_element;
using trnsim::isa::parse_dtype;
using trnsim::isa::round_to;
using trnsim::isa::store_element;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// An independent decoder: the value of a code of a float format with `exp_bits` exponent
// bits, `man` mantissa bits and bias `bias`, ignoring the special codes.
double reference_value(uint32_t code, int exp_bits, int man, int bias) {
  const uint32_t sign = code >> (exp_bits + man);
  const int e = static_cast<int>((code >> man) & ((1u << exp_bits) - 1));
  const double m = static_cast<double>(code & ((1u << man) - 1)) / std::ldexp(1.0, man);
  const double v = e == 0 ? std::ldexp(m, 1 - bias) : std::ldexp(1.0 + m, e - bias);
  return sign ? -v : v;
}

int32_t stored_int32(float f) {
  uint8_t buf[4];
  store_element(DType::int32, buf, f);
  int32_t v;
  std::memcpy(&v, buf, sizeof v);
  return v;
}

float p2(int e) {
  return std::ldexp(1.0f, e);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// fp16

TEST_CASE("fp16 rounds to nearest, ties to even", "[unit][dtype]") {
  CHECK(fp16_from_float(1.0f) == 0x3C00);
  CHECK(fp16_from_float(1.0f + p2(-10)) == 0x3C01);            // exact
  CHECK(fp16_from_float(1.0f + p2(-11)) == 0x3C00);            // tie -> even (down)
  CHECK(fp16_from_float(1.0f + 3 * p2(-11)) == 0x3C02);        // tie -> even (up)
  CHECK(fp16_from_float(1.0f + p2(-11) + p2(-20)) == 0x3C01);  // above the tie
  CHECK(fp16_from_float(1.0f + p2(-11) - p2(-20)) == 0x3C00);  // below the tie
  CHECK(fp16_from_float(2049.0f) == 0x6800);                   // spacing 2: tie -> 2048
  CHECK(fp16_from_float(2051.0f) == 0x6802);                   // tie -> 2052
  CHECK(fp16_from_float(-2051.0f) == 0xE802);
  CHECK(fp16_from_float(0.1f) == 0x2E66);
  CHECK(fp16_from_float(0.0f) == 0x0000);
  CHECK(fp16_from_float(-0.0f) == 0x8000);
  CHECK(std::signbit(float_from_fp16(0x8000)));
  // A rounding that carries into the next binade: 2047.9 -> 2048.
  CHECK(fp16_from_float(2047.9f) == 0x6800);
}

TEST_CASE("fp16 overflows to infinity from 65520", "[unit][dtype]") {
  CHECK(fp16_from_float(65504.0f) == 0x7BFF);
  CHECK(float_from_fp16(0x7BFF) == 65504.0f);
  CHECK(fp16_from_float(65519.0f) == 0x7BFF);  // below the midpoint to 65536
  CHECK(fp16_from_float(65520.0f) == 0x7C00);  // the midpoint rounds to even: 2^16, infinite
  CHECK(fp16_from_float(-65520.0f) == 0xFC00);
  CHECK(fp16_from_float(1e10f) == 0x7C00);
  CHECK(fp16_from_float(kInf) == 0x7C00);
  CHECK(fp16_from_float(-kInf) == 0xFC00);
  CHECK(float_from_fp16(0x7C00) == kInf);
  CHECK(float_from_fp16(0xFC00) == -kInf);
  CHECK(round_to(DType::fp16, 70000.0f) == kInf);
}

TEST_CASE("fp16 subnormals keep the spacing 2^-24", "[unit][dtype]") {
  CHECK(fp16_from_float(p2(-24)) == 0x0001);
  CHECK(float_from_fp16(0x0001) == p2(-24));
  CHECK(fp16_from_float(p2(-25)) == 0x0000);            // tie with 0 -> 0
  CHECK(fp16_from_float(p2(-25) + p2(-40)) == 0x0001);  // just above the tie
  CHECK(fp16_from_float(1.5f * p2(-24)) == 0x0002);     // tie 1 / 2 -> 2
  CHECK(fp16_from_float(2.5f * p2(-24)) == 0x0002);     // tie 2 / 3 -> 2
  CHECK(fp16_from_float(1023 * p2(-24)) == 0x03FF);     // largest subnormal
  CHECK(float_from_fp16(0x03FF) == 1023 * p2(-24));
  CHECK(fp16_from_float(1023.5f * p2(-24)) == 0x0400);  // tie -> the smallest normal
  CHECK(fp16_from_float(p2(-14)) == 0x0400);
  CHECK(fp16_from_float(-p2(-24)) == 0x8001);
  CHECK(fp16_from_float(p2(-30)) == 0x0000);   // underflow to zero
  CHECK(fp16_from_float(-p2(-30)) == 0x8000);  // keeps the sign
}

TEST_CASE("fp16 keeps NaN a NaN", "[unit][dtype]") {
  CHECK(fp16_from_float(kNaN) == 0x7E00);
  CHECK(fp16_from_float(-kNaN) == 0xFE00);
  for (uint16_t code : {0x7C01, 0x7E00, 0x7FFF, 0xFC01, 0xFFFF}) {
    INFO(code);
    CHECK(std::isnan(float_from_fp16(code)));
  }
  CHECK(std::isnan(round_to(DType::fp16, kNaN)));
}

// ---------------------------------------------------------------------------------------------
// fp8 E4M3

TEST_CASE("fp8 e4m3 rounds to nearest, ties to even", "[unit][dtype]") {
  CHECK(fp8_e4m3_from_float(1.0f) == 0x38);
  CHECK(fp8_e4m3_from_float(1.125f) == 0x39);
  CHECK(fp8_e4m3_from_float(1.0625f) == 0x38);  // tie 1 / 1.125 -> 1
  CHECK(fp8_e4m3_from_float(1.1875f) == 0x3A);  // tie 1.125 / 1.25 -> 1.25
  CHECK(fp8_e4m3_from_float(1.07f) == 0x39);    // above the tie
  CHECK(fp8_e4m3_from_float(17.0f) == 0x58);    // spacing 2 at 16: tie -> 16
  CHECK(fp8_e4m3_from_float(19.0f) == 0x5A);    // tie -> 20
  CHECK(fp8_e4m3_from_float(-19.0f) == 0xDA);
  CHECK(fp8_e4m3_from_float(240.0f) == 0x77);
  CHECK(fp8_e4m3_from_float(0.1f) == 0x1D);  // 1.625 x 2^-4
  CHECK(float_from_fp8_e4m3(0x1D) == 0.1015625f);
  CHECK(fp8_e4m3_from_float(-0.0f) == 0x80);
  CHECK(std::signbit(float_from_fp8_e4m3(0x80)));
}

TEST_CASE("fp8 e4m3 saturates at 448, infinities included", "[unit][dtype]") {
  CHECK(fp8_e4m3_from_float(448.0f) == 0x7E);
  CHECK(float_from_fp8_e4m3(0x7E) == 448.0f);
  CHECK(fp8_e4m3_from_float(464.0f) == 0x7E);  // tie 448 / 480: even is 448
  CHECK(fp8_e4m3_from_float(480.0f) == 0x7E);  // 480 would be the NaN code
  CHECK(fp8_e4m3_from_float(500.0f) == 0x7E);
  CHECK(fp8_e4m3_from_float(1e6f) == 0x7E);
  CHECK(fp8_e4m3_from_float(3.4e38f) == 0x7E);
  CHECK(fp8_e4m3_from_float(kInf) == 0x7E);
  CHECK(fp8_e4m3_from_float(-kInf) == 0xFE);
  CHECK(fp8_e4m3_from_float(-480.0f) == 0xFE);
  CHECK(round_to(DType::fp8_e4m3, kInf) == 448.0f);
  CHECK(round_to(DType::fp8_e4m3, -1e30f) == -448.0f);
  // Just below the top: 432 is halfway between 416 (1.625 x 2^8, mantissa 5) and 448
  // (mantissa 6): the even one, 448. 431 is nearer 416 (0x7D).
  CHECK(fp8_e4m3_from_float(432.0f) == 0x7E);
  CHECK(fp8_e4m3_from_float(431.0f) == 0x7D);
}

TEST_CASE("fp8 e4m3 NaN stays NaN", "[unit][dtype]") {
  CHECK(fp8_e4m3_from_float(kNaN) == 0x7F);
  CHECK(fp8_e4m3_from_float(-kNaN) == 0xFF);
  CHECK(std::isnan(float_from_fp8_e4m3(0x7F)));
  CHECK(std::isnan(float_from_fp8_e4m3(0xFF)));
  CHECK(std::isnan(round_to(DType::fp8_e4m3, kNaN)));
  // 0x7C-0x7E are finite in the FN variant (no infinity).
  CHECK(float_from_fp8_e4m3(0x78) == 256.0f);
  CHECK(float_from_fp8_e4m3(0x7C) == 384.0f);
}

TEST_CASE("fp8 e4m3 subnormals: 2^-9 is the smallest", "[unit][dtype]") {
  CHECK(fp8_e4m3_from_float(p2(-9)) == 0x01);
  CHECK(float_from_fp8_e4m3(0x01) == p2(-9));
  CHECK(fp8_e4m3_from_float(p2(-10)) == 0x00);  // tie with 0 -> 0
  CHECK(fp8_e4m3_from_float(0.75f * p2(-9)) == 0x01);
  CHECK(fp8_e4m3_from_float(1.5f * p2(-9)) == 0x02);  // tie 1 / 2 -> 2
  CHECK(fp8_e4m3_from_float(7 * p2(-9)) == 0x07);     // largest subnormal
  CHECK(fp8_e4m3_from_float(7.5f * p2(-9)) == 0x08);  // tie -> the smallest normal, 2^-6
  CHECK(float_from_fp8_e4m3(0x08) == p2(-6));
  CHECK(fp8_e4m3_from_float(-p2(-9)) == 0x81);
  CHECK(fp8_e4m3_from_float(p2(-12)) == 0x00);
}

// ---------------------------------------------------------------------------------------------
// fp8 E5M2

TEST_CASE("fp8 e5m2 rounds to nearest even and saturates at 57344", "[unit][dtype]") {
  CHECK(fp8_e5m2_from_float(1.0f) == 0x3C);
  CHECK(fp8_e5m2_from_float(1.125f) == 0x3C);  // tie 1 / 1.25 -> 1
  CHECK(fp8_e5m2_from_float(1.375f) == 0x3E);  // tie 1.25 / 1.5 -> 1.5
  CHECK(fp8_e5m2_from_float(57344.0f) == 0x7B);
  CHECK(float_from_fp8_e5m2(0x7B) == 57344.0f);
  CHECK(fp8_e5m2_from_float(61440.0f) == 0x7B);  // tie 57344 / 65536 saturates
  CHECK(fp8_e5m2_from_float(1e6f) == 0x7B);
  CHECK(fp8_e5m2_from_float(kInf) == 0x7B);
  CHECK(fp8_e5m2_from_float(-kInf) == 0xFB);
  CHECK(round_to(DType::fp8_e5m2, -kInf) == -57344.0f);
  CHECK(fp8_e5m2_from_float(p2(-16)) == 0x01);  // smallest subnormal
  CHECK(float_from_fp8_e5m2(0x01) == p2(-16));
  CHECK(fp8_e5m2_from_float(p2(-17)) == 0x00);  // tie with 0
  CHECK(fp8_e5m2_from_float(-0.0f) == 0x80);
}

TEST_CASE("fp8 e5m2 decodes infinities and NaN, and encodes NaN as NaN", "[unit][dtype]") {
  CHECK(float_from_fp8_e5m2(0x7C) == kInf);
  CHECK(float_from_fp8_e5m2(0xFC) == -kInf);
  for (uint8_t code : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}) {
    INFO(int(code));
    CHECK(std::isnan(float_from_fp8_e5m2(code)));
  }
  CHECK(fp8_e5m2_from_float(kNaN) == 0x7E);
  CHECK(fp8_e5m2_from_float(-kNaN) == 0xFE);
  CHECK(std::isnan(round_to(DType::fp8_e5m2, kNaN)));
}

// ---------------------------------------------------------------------------------------------
// Integers

TEST_CASE("int8 rounds half to even, saturates, and takes NaN to 0", "[unit][dtype]") {
  const std::vector<std::pair<float, float>> cases = {
      {0.5f, 0},       {1.5f, 2},       {2.5f, 2},     {-0.5f, 0},    {-1.5f, -2},   {-2.5f, -2},
      {0.49f, 0},      {0.51f, 1},      {126.5f, 126}, {127.4f, 127}, {127.5f, 127}, {200.0f, 127},
      {-128.5f, -128}, {-129.0f, -128}, {kNaN, 0},     {kInf, 127},   {-kInf, -128}};
  for (const auto& [in, want] : cases) {
    INFO(in);
    CHECK(round_to(DType::int8, in) == want);
    uint8_t b = 0x55;
    store_element(DType::int8, &b, in);
    CHECK(load_element(DType::int8, &b) == want);
    CHECK(static_cast<int8_t>(b) == static_cast<int8_t>(want));
  }
}

TEST_CASE("uint8 rounds half to even, saturates at 0 and 255, and takes NaN to 0",
          "[unit][dtype]") {
  const std::vector<std::pair<float, float>> cases = {
      {0.5f, 0},  {1.5f, 2},    {254.5f, 254},  {255.5f, 255}, {253.5f, 254}, {-0.4f, 0},
      {-1.0f, 0}, {-300.0f, 0}, {1000.0f, 255}, {kNaN, 0},     {kInf, 255},   {-kInf, 0}};
  for (const auto& [in, want] : cases) {
    INFO(in);
    CHECK(round_to(DType::uint8, in) == want);
    uint8_t b = 0x55;
    store_element(DType::uint8, &b, in);
    CHECK(b == static_cast<uint8_t>(want));
  }
}

TEST_CASE("int32 rounds half to even and takes NaN to 0", "[unit][dtype]") {
  CHECK(stored_int32(2.5f) == 2);
  CHECK(stored_int32(3.5f) == 4);
  CHECK(stored_int32(-3.5f) == -4);
  CHECK(stored_int32(-0.5f) == 0);
  CHECK(stored_int32(kNaN) == 0);
  CHECK(stored_int32(16777216.0f) == 16777216);
  CHECK(stored_int32(2147483520.0f) == 2147483520);  // the largest float below 2^31
  CHECK(stored_int32(-2147483648.0f) == std::numeric_limits<int32_t>::min());
  // Unaligned store and load.
  uint8_t buf[7] = {};
  store_element(DType::int32, buf + 3, -123456.0f);
  CHECK(load_element(DType::int32, buf + 3) == -123456.0f);
}

TEST_CASE("int32 saturates at its limits", "[unit][dtype]") {
  CHECK(stored_int32(-3e9f) == std::numeric_limits<int32_t>::min());
  CHECK(stored_int32(-kInf) == std::numeric_limits<int32_t>::min());
  // 2^31 and above: the largest int32, not a wrapped negative value.
  CHECK(stored_int32(2147483648.0f) == std::numeric_limits<int32_t>::max());
  CHECK(stored_int32(3e9f) == std::numeric_limits<int32_t>::max());
  CHECK(stored_int32(kInf) == std::numeric_limits<int32_t>::max());
  CHECK(round_to(DType::int32, 3e9f) > 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Names

TEST_CASE("parse_dtype takes every name and alias and nothing else", "[unit][dtype]") {
  const std::vector<std::pair<std::string, DType>> names = {
      {"fp32", DType::fp32},         {"bf16", DType::bf16},
      {"fp16", DType::fp16},         {"fp8_e4m3", DType::fp8_e4m3},
      {"fp8_e5m2", DType::fp8_e5m2}, {"int32", DType::int32},
      {"int8", DType::int8},         {"uint8", DType::uint8},
      {"float32", DType::fp32},      {"bfloat16", DType::bf16},
      {"float16", DType::fp16},      {"float8_e4m3", DType::fp8_e4m3},
      {"fp8e4m3", DType::fp8_e4m3},  {"float8_e5m2", DType::fp8_e5m2},
      {"fp8e5m2", DType::fp8_e5m2},  {"int16", DType::int16},
      {"uint16", DType::uint16},     {"uint32", DType::uint32}};
  for (const auto& [name, t] : names) {
    INFO(name);
    REQUIRE(parse_dtype(name).has_value());
    CHECK(*parse_dtype(name) == t);
  }
  for (const char* bad :
       {"fp8", "e4m3", "float8_e4m3fn", "int64", "FP16", " fp16", "fp16 ", "uint64", "half", ""}) {
    INFO(bad);
    CHECK_FALSE(parse_dtype(bad).has_value());
  }
  // name_of and parse_dtype are inverses; sizes and classes.
  for (DType t : trnsim::isa::kAllDTypes) {
    CHECK(parse_dtype(trnsim::isa::name_of(t)) == t);
  }
  CHECK(trnsim::isa::dtype_names() ==
        "fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int32, int8, uint8, int16, uint16, uint32");
  CHECK(trnsim::isa::size_of(DType::fp16) == 2);
  CHECK(trnsim::isa::size_of(DType::fp8_e4m3) == 1);
  CHECK(trnsim::isa::size_of(DType::fp8_e5m2) == 1);
  CHECK(trnsim::isa::size_of(DType::int32) == 4);
  CHECK(trnsim::isa::size_of(DType::int8) == 1);
  CHECK(trnsim::isa::size_of(DType::uint8) == 1);
  CHECK(trnsim::isa::is_integer(DType::uint8));
  CHECK_FALSE(trnsim::isa::is_integer(DType::fp8_e4m3));
  CHECK(trnsim::isa::is_fp8(DType::fp8_e5m2));
  CHECK_FALSE(trnsim::isa::is_fp8(DType::int8));
  CHECK(trnsim::isa::is_half(DType::fp16));
  CHECK_FALSE(trnsim::isa::is_half(DType::fp32));
}

// ---------------------------------------------------------------------------------------------
// Exhaustive

TEST_CASE("every fp8 e4m3 code decodes to its value and encodes back", "[unit][dtype]") {
  for (uint32_t c = 0; c < 256; ++c) {
    const auto code = static_cast<uint8_t>(c);
    INFO("code " << c);
    const float v = float_from_fp8_e4m3(code);
    if ((c & 0x7F) == 0x7F) {
      CHECK(std::isnan(v));
      CHECK(fp8_e4m3_from_float(v) == 0x7F);  // canonical positive NaN
      continue;
    }
    CHECK(static_cast<double>(v) == reference_value(c, 4, 3, 7));
    CHECK(fp8_e4m3_from_float(v) == code);
    CHECK(std::signbit(v) == (c >= 0x80));
  }
}

TEST_CASE("every fp8 e5m2 code decodes to its value and encodes back", "[unit][dtype]") {
  for (uint32_t c = 0; c < 256; ++c) {
    const auto code = static_cast<uint8_t>(c);
    INFO("code " << c);
    const float v = float_from_fp8_e5m2(code);
    const uint32_t mag = c & 0x7F;
    if (mag > 0x7C) {
      CHECK(std::isnan(v));
      CHECK(fp8_e5m2_from_float(v) == 0x7E);
    } else if (mag == 0x7C) {
      CHECK(std::isinf(v));
      CHECK(fp8_e5m2_from_float(v) == (c & 0x80) + 0x7B);  // saturates
    } else {
      CHECK(static_cast<double>(v) == reference_value(c, 5, 2, 15));
      CHECK(fp8_e5m2_from_float(v) == code);
      CHECK(std::signbit(v) == (c >= 0x80));
    }
  }
}

TEST_CASE("every fp16 code decodes to its value and encodes back", "[unit][dtype]") {
  uint32_t mismatches = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    const auto code = static_cast<uint16_t>(c);
    const float v = float_from_fp16(code);
    const uint32_t mag = c & 0x7FFF;
    bool ok;
    if (mag > 0x7C00) {
      ok = std::isnan(v) && fp16_from_float(v) == 0x7E00;
    } else if (mag == 0x7C00) {
      ok = std::isinf(v) && fp16_from_float(v) == code;
    } else {
      ok = static_cast<double>(v) == reference_value(c, 5, 10, 15) && fp16_from_float(v) == code &&
           std::signbit(v) == (c >= 0x8000);
    }
    if (!ok) {
      ++mismatches;
      if (mismatches <= 5) FAIL_CHECK("code " << c << " decodes to " << v);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("the midpoint of two adjacent codes rounds to the even code", "[unit][dtype]") {
  // For each pair of adjacent finite non-negative codes (c, c + 1): the midpoint goes to the
  // one whose code is even, a hair above to c + 1, a hair below to c. Negated likewise.
  struct Format {
    const char* name;
    uint32_t max_finite;
    float (*decode)(uint32_t);
    uint32_t (*encode)(float);
    uint32_t sign;
  };
  const Format formats[] = {
      {"fp16", 0x7BFF, [](uint32_t c) { return float_from_fp16(static_cast<uint16_t>(c)); },
       [](float f) { return static_cast<uint32_t>(fp16_from_float(f)); }, 0x8000},
      {"e4m3", 0x7E, [](uint32_t c) { return float_from_fp8_e4m3(static_cast<uint8_t>(c)); },
       [](float f) { return static_cast<uint32_t>(fp8_e4m3_from_float(f)); }, 0x80},
      {"e5m2", 0x7B, [](uint32_t c) { return float_from_fp8_e5m2(static_cast<uint8_t>(c)); },
       [](float f) { return static_cast<uint32_t>(fp8_e5m2_from_float(f)); }, 0x80},
  };
  for (const Format& f : formats) {
    uint32_t mismatches = 0;
    for (uint32_t c = 0; c < f.max_finite; ++c) {
      const float lo = f.decode(c), hi = f.decode(c + 1);
      const float mid = lo + (hi - lo) / 2;  // exact: float has mantissa bits to spare
      const uint32_t even = (c % 2 == 0) ? c : c + 1;
      const bool ok = f.encode(mid) == even && f.encode(-mid) == (f.sign | even) &&
                      f.encode(std::nextafter(mid, kInf)) == c + 1 &&
                      f.encode(std::nextafter(mid, -kInf)) == c;
      if (!ok) {
        ++mismatches;
        if (mismatches <= 5) FAIL_CHECK(f.name << " between codes " << c << " and " << c + 1);
      }
    }
    INFO(f.name);
    CHECK(mismatches == 0);
  }
}
