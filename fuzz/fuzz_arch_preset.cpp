// The arch names and files (--arch NAME|FILE, a program's `.arch NAME`, arch/*.json):
// - as a name, any bytes give a preset or nothing, and a preset found is one of the names
//   preset_names() lists;
// - as an arch file, any bytes give an ArchSpec or an ArchFileError (never another exception,
//   a crash or a hang), and an ArchSpec printed by arch_document reads back to the same values
//   and sources.
#include <cstdlib>

#include "config/arch.hpp"
#include "config/arch_file.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = trnsim_fuzz::text_of(data, size);
  const auto a = trnsim::config::preset(text);
  if (a && (a->name != text || trnsim::config::preset_names().find(text) == std::string::npos)) {
    std::abort();
  }
  trnsim::config::ArchSpec spec;
  try {
    spec = trnsim::config::parse_arch_document(text, "fuzz.json");
  } catch (const trnsim::config::ArchFileError&) {
    return 0;
  }
  const auto back =
      trnsim::config::parse_arch_document(trnsim::config::arch_document(spec), "back.json");
  for (const auto& p : trnsim::config::parameters()) {
    if (p.get(back.config) != p.get(spec.config)) std::abort();
  }
  if (back.sources != spec.sources || back.config.name != spec.config.name) std::abort();
  return 0;
}
