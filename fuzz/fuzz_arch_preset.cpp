// The arch preset name parser (--arch NAME, a program's `.arch NAME`): any bytes give a preset
// or nothing, and a preset found is one of the names preset_names() lists.
#include <cstdlib>

#include "fuzz/fuzz_support.hpp"
#include "isa/arch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string name = trnsim_fuzz::text_of(data, size);
  const auto a = trnsim::isa::preset(name);
  if (a && (a->name != name || trnsim::isa::preset_names().find(name) == std::string::npos)) {
    std::abort();
  }
  return 0;
}
