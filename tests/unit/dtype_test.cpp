// Data types: bf16 conversion (round to nearest, ties to even), special values, element access.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "isa/dtype.hpp"

using trnsim::isa::bf16_from_float;
using trnsim::isa::DType;
using trnsim::isa::float_from_bf16;
using trnsim::isa::load_element;
using trnsim::isa::round_to;
using trnsim::isa::store_element;

namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

TEST_CASE("dtype sizes, names and parsing", "[unit][dtype]") {
  CHECK(trnsim::isa::size_of(DType::fp32) == 4);
  CHECK(trnsim::isa::size_of(DType::bf16) == 2);
  CHECK(trnsim::isa::name_of(DType::fp32) == "fp32");
  CHECK(trnsim::isa::name_of(DType::bf16) == "bf16");
  CHECK(trnsim::isa::parse_dtype("bf16") == DType::bf16);
  CHECK(trnsim::isa::parse_dtype("bfloat16") == DType::bf16);
  CHECK(trnsim::isa::parse_dtype("fp32") == DType::fp32);
  CHECK(trnsim::isa::parse_dtype("float32") == DType::fp32);
  CHECK_FALSE(trnsim::isa::parse_dtype("fp64").has_value());
  CHECK_FALSE(trnsim::isa::parse_dtype("BF16").has_value());
  CHECK_FALSE(trnsim::isa::parse_dtype("").has_value());
}

TEST_CASE("bf16 keeps values it can represent exactly", "[unit][dtype]") {
  CHECK(bf16_from_float(0.0f) == 0x0000);
  CHECK(bf16_from_float(-0.0f) == 0x8000);
  CHECK(bf16_from_float(1.0f) == 0x3F80);
  CHECK(bf16_from_float(-2.0f) == 0xC000);
  CHECK(bf16_from_float(1.5f) == 0x3FC0);
  CHECK(bf16_from_float(0.15625f) == 0x3E20);
  CHECK(bf16_from_float(1.0078125f) == 0x3F81);  // 1 + 2^-7, one ulp above 1
  CHECK(bf16_from_float(65536.0f) == 0x4780);
  for (float v : {0.0f, 1.0f, -2.0f, 1.5f, 0.15625f, 1.0078125f, 65536.0f, -0.5f}) {
    CHECK(float_from_bf16(bf16_from_float(v)) == v);
    CHECK(round_to(DType::bf16, v) == v);
  }
  CHECK(float_from_bf16(0x3F80) == 1.0f);
  CHECK(float_from_bf16(0xC040) == -3.0f);
  CHECK(round_to(DType::bf16, 1.5f) == 1.5f);
}

TEST_CASE("bf16 rounds to nearest", "[unit][dtype]") {
  // Just above the halfway point rounds up, just below rounds down.
  CHECK(bf16_from_float(from_bits(0x3F808001u)) == 0x3F81);
  CHECK(bf16_from_float(from_bits(0x3F807FFFu)) == 0x3F80);
  CHECK(bf16_from_float(from_bits(0x3F80FFFFu)) == 0x3F81);
  CHECK(bf16_from_float(from_bits(0x3F800001u)) == 0x3F80);
  // Negative values round by magnitude.
  CHECK(bf16_from_float(from_bits(0xBF808001u)) == 0xBF81);
  CHECK(bf16_from_float(from_bits(0xBF807FFFu)) == 0xBF80);
  // A carry into the exponent: 1.99999 rounds to 2.
  CHECK(bf16_from_float(from_bits(0x3FFFFFFFu)) == 0x4000);
  CHECK(round_to(DType::bf16, 3.14159265f) == 3.140625f);
}

TEST_CASE("bf16 rounds ties to even", "[unit][dtype]") {
  // 1 + 2^-8 lies halfway between 1 (even mantissa) and 1 + 2^-7 (odd): stays at 1.
  CHECK(bf16_from_float(from_bits(0x3F808000u)) == 0x3F80);
  CHECK(round_to(DType::bf16, 1.00390625f) == 1.0f);
  // 1 + 3 x 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): goes up.
  CHECK(bf16_from_float(from_bits(0x3F818000u)) == 0x3F82);
  CHECK(round_to(DType::bf16, 1.01171875f) == 1.015625f);
  // The same for negative numbers.
  CHECK(bf16_from_float(from_bits(0xBF808000u)) == 0xBF80);
  CHECK(bf16_from_float(from_bits(0xBF818000u)) == 0xBF82);
  // Subnormal ties.
  CHECK(bf16_from_float(from_bits(0x00008000u)) == 0x0000);
  CHECK(bf16_from_float(from_bits(0x00018000u)) == 0x0002);
}

TEST_CASE("bf16 keeps infinities and overflows to infinity", "[unit][dtype]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(bf16_from_float(inf) == 0x7F80);
  CHECK(bf16_from_float(-inf) == 0xFF80);
  CHECK(std::isinf(float_from_bf16(0x7F80)));
  CHECK(float_from_bf16(0xFF80) == -inf);
  // The largest float is past the largest bf16 by more than half an ulp.
  CHECK(bf16_from_float(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(bf16_from_float(-std::numeric_limits<float>::max()) == 0xFF80);
  // The largest bf16 itself stays finite.
  CHECK(bf16_from_float(from_bits(0x7F7F0000u)) == 0x7F7F);
}

TEST_CASE("bf16 keeps NaN a NaN", "[unit][dtype]") {
  // Payloads that truncation or rounding would turn into infinity or zero.
  const std::array<uint32_t, 6> nans = {0x7FC00000u, 0x7F800001u, 0x7F80FFFFu,
                                        0x7FFFFFFFu, 0xFFC00000u, 0xFF800001u};
  for (uint32_t bits : nans) {
    INFO("fp32 bits " << std::hex << bits);
    const uint16_t b = bf16_from_float(from_bits(bits));
    CHECK(std::isnan(float_from_bf16(b)));
    CHECK((b & 0x0040) != 0);          // quiet
    CHECK((b >> 15) == (bits >> 31));  // sign kept
    CHECK(std::isnan(round_to(DType::bf16, from_bits(bits))));
  }
  CHECK(std::isnan(round_to(DType::bf16, std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("round_to fp32 is the identity", "[unit][dtype]") {
  for (uint32_t bits : {0x3F808000u, 0x3F800001u, 0x00000001u, 0x7F7FFFFFu}) {
    CHECK(bits_of(round_to(DType::fp32, from_bits(bits))) == bits);
  }
}

TEST_CASE("load_element and store_element read and write at unaligned addresses", "[unit][dtype]") {
  std::array<uint8_t, 16> mem{};
  store_element(DType::fp32, mem.data() + 1, 1.00390625f);
  CHECK(load_element(DType::fp32, mem.data() + 1) == 1.00390625f);
  CHECK(mem[0] == 0);
  CHECK(mem[5] == 0);
  // bf16 stores two bytes, little-endian, rounded.
  store_element(DType::bf16, mem.data() + 7, 1.00390625f);
  CHECK(mem[7] == 0x80);
  CHECK(mem[8] == 0x3F);
  CHECK(mem[9] == 0);
  CHECK(load_element(DType::bf16, mem.data() + 7) == 1.0f);
  store_element(DType::bf16, mem.data() + 11, -3.0f);
  CHECK(mem[11] == 0x40);
  CHECK(mem[12] == 0xC0);
  CHECK(load_element(DType::bf16, mem.data() + 11) == -3.0f);
}
