// The NeuronCore's engines (fact sheet section 1): TensorE, VectorE, ScalarE, GpSimdE and the Sync
// engine that mostly triggers DMAs. Every layer names them, so they live in namespace trnsim
// beside the time units (base/units.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace trnsim {

enum class Engine : uint8_t { tensor = 0, vector = 1, scalar = 2, gpsimd = 3, sync = 4 };
constexpr int kEngineCount = 5;
constexpr std::array<Engine, kEngineCount> kAllEngines = {
    Engine::tensor, Engine::vector, Engine::scalar, Engine::gpsimd, Engine::sync};
constexpr int index_of(Engine e) {
  return static_cast<int>(e);
}
// The profiler's names: TensorE, VectorE, ScalarE, GpSimdE, SyncE.
std::string_view name_of(Engine e);
// Short names used in stats.json keys, as the profiler's metric names spell them
// (tensor_engine_active_time, ...): tensor, vector, scalar, gpsimd, sync.
std::string_view key_of(Engine e);
std::optional<Engine> parse_engine(std::string_view name);
// Assembler names of the engines (the profiler's: pe, dve, act, pool, sp).
std::string_view assembler_name_of(Engine e);

}  // namespace trnsim
