#include "config/engine.hpp"

namespace trnsim {

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

std::string_view assembler_name_of(Engine e) {
  switch (e) {
    case Engine::tensor:
      return "pe";
    case Engine::vector:
      return "dve";
    case Engine::scalar:
      return "act";
    case Engine::gpsimd:
      return "pool";
    case Engine::sync:
      return "sp";
  }
  return "?";
}

}  // namespace trnsim
