#include "config/arch.hpp"

#include "config/arch_file.hpp"

namespace trnsim::config {

// The presets are data: arch/*.json, embedded at build time and read by isa/arch_file.cpp.
std::optional<ArchConfig> preset(std::string_view name) {
  const ArchSpec* s = find_preset_spec(name);
  if (s == nullptr) return std::nullopt;
  return s->config;
}

ArchConfig trn1() {
  return *preset("trn1");
}

ArchConfig trn2() {
  return *preset("trn2");
}

ArchConfig trn3() {
  return *preset("trn3");
}

std::string preset_names() {
  std::string names;
  for (const std::string& n : preset_name_list()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

}  // namespace trnsim::config
