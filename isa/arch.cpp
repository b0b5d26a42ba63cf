#include "isa/arch.hpp"

#include "isa/arch_file.hpp"

namespace trnsim::isa {

std::string_view name_of(Engine e) {
  switch (e) {
    case Engine::tensor:
      return "TensorE";
    case Engine::vector:
      return "VectorE";
    case Engine::scalar:
      return "ScalarE";
    case Engine::gpsimd:
      return "GpSimdE";
    case Engine::sync:
      return "SyncE";
  }
  return "?";
}

std::string_view key_of(Engine e) {
  switch (e) {
    case Engine::tensor:
      return "tensor";
    case Engine::vector:
      return "vector";
    case Engine::scalar:
      return "scalar";
    case Engine::gpsimd:
      return "gpsimd";
    case Engine::sync:
      return "sync";
  }
  return "?";
}

std::optional<Engine> parse_engine(std::string_view name) {
  for (Engine e : kAllEngines) {
    if (name == key_of(e) || name == name_of(e)) return e;
  }
  return std::nullopt;
}

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

}  // namespace trnsim::isa
