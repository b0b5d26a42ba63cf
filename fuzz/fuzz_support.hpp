// Shared by the libFuzzer targets: the input as text. A target catches only the errors its
// function documents for bad input; anything else (another exception, a crash, a sanitizer
// report, a hang) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trnsim_fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace trnsim_fuzz
