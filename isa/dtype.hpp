// Data types of the NeuronCore and the conversions the hardware applies when it writes them:
// round-to-nearest-even for every float format; fp8 saturates to its largest finite value;
// integers round to nearest even and saturate; NaN becomes 0 in an integer.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trnsim::isa {

// int16, uint16 and uint32 came with NKI kernels (nc_find_index8 writes uint32 indices,
// local_gather reads uint16 ones); they are appended so the earlier codes keep their values.
enum class DType : uint8_t {
  fp32,
  bf16,
  fp16,
  fp8_e4m3,
  fp8_e5m2,
  int32,
  int8,
  uint8,
  int16,
  uint16,
  uint32
};
constexpr int kDTypeCount = 11;
constexpr std::array<DType, kDTypeCount> kAllDTypes = {
    DType::fp32, DType::bf16,  DType::fp16,  DType::fp8_e4m3, DType::fp8_e5m2, DType::int32,
    DType::int8, DType::uint8, DType::int16, DType::uint16,   DType::uint32};

constexpr uint32_t size_of(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::int32:
    case DType::uint32:
      return 4;
    case DType::bf16:
    case DType::fp16:
    case DType::int16:
    case DType::uint16:
      return 2;
    default:
      return 1;
  }
}
constexpr bool is_integer(DType t) {
  return t == DType::int32 || t == DType::int8 || t == DType::uint8 || t == DType::int16 ||
         t == DType::uint16 || t == DType::uint32;
}
constexpr bool is_fp8(DType t) {
  return t == DType::fp8_e4m3 || t == DType::fp8_e5m2;
}
// bf16 and fp16: the 2-byte float types that the fast paths of the cost formulas name.
constexpr bool is_half(DType t) {
  return t == DType::bf16 || t == DType::fp16;
}

std::string_view name_of(DType t);
std::optional<DType> parse_dtype(std::string_view name);
// Names accepted by parse_dtype, comma separated, for error messages.
std::string dtype_names();

// fp32 -> bf16 with round-to-nearest-even; NaN stays NaN (quiet), infinities stay infinite.
uint16_t bf16_from_float(float f);
float float_from_bf16(uint16_t b);
// fp32 -> IEEE binary16, round-to-nearest-even, overflow to infinity.
uint16_t fp16_from_float(float f);
float float_from_fp16(uint16_t h);
// fp32 -> fp8 E4M3 (OCP "FN": bias 7, no infinity, max 448, NaN = S.1111.111) and E5M2
// (bias 15, max finite 57344), round-to-nearest-even, saturating: values beyond the largest
// finite magnitude, infinities included, become it; NaN stays NaN.
uint8_t fp8_e4m3_from_float(float f);
float float_from_fp8_e4m3(uint8_t b);
uint8_t fp8_e5m2_from_float(float f);
float float_from_fp8_e5m2(uint8_t b);

// The value `f` becomes once stored as `t` (identity for fp32).
float round_to(DType t, float f);

// Reads or writes one element of type `t` at `p` (unaligned access is fine).
float load_element(DType t, const uint8_t* p);
void store_element(DType t, uint8_t* p, float f);
// The same for `n` elements `stride` elements apart (a run of an access pattern): the dtype is
// looked at once, so the common runs (bf16 and fp32, stride 1) are tight loops.
void load_elements(DType t, const uint8_t* p, int64_t stride, uint32_t n, float* out);
void store_elements(DType t, uint8_t* p, int64_t stride, uint32_t n, const float* in);

}  // namespace trnsim::isa
