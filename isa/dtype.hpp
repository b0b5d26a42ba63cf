// Data types of the NeuronCore and the conversions the hardware applies when it writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trnsim::isa {

enum class DType : uint8_t { fp32, bf16 };

constexpr uint32_t size_of(DType t) { return t == DType::fp32 ? 4 : 2; }
std::string_view name_of(DType t);
std::optional<DType> parse_dtype(std::string_view name);
// Names accepted by parse_dtype, comma separated, for error messages.
std::string dtype_names();

// fp32 -> bf16 with round-to-nearest-even; NaN stays NaN (quiet), infinities stay infinite.
uint16_t bf16_from_float(float f);
float float_from_bf16(uint16_t b);
// The value `f` becomes once stored as `t` (identity for fp32).
float round_to(DType t, float f);

// Reads or writes one element of type `t` at `p` (unaligned access is fine).
float load_element(DType t, const uint8_t* p);
void store_element(DType t, uint8_t* p, float f);

}  // namespace trnsim::isa
