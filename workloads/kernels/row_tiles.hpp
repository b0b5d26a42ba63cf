// What the row kernels share: rmsnorm, layernorm and softmax of the library, and the graph
// form's row kernels (workloads/graph). A row kernel holds a [rows, hidden] tensor one row per
// partition, in tiles of tile_rows rows (the last one possibly partial) that rotate through a
// few SBUF buffers, SyncE loading a tile while the engines work on the one before.
//
// The checks come in the order every row kernel reports them: hidden against what one engine
// instruction reads (check_row_kernel), HBM and host memory (the same), the instruction cap
// (check_row_instructions), then SBUF for the buffers chosen (row_buffers, check_row_sbuf).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

struct RowTiles {
  RowTiles(int64_t rows, int64_t hidden, uint32_t tile_rows);
  int64_t rows = 0;
  int64_t hidden = 0;
  uint32_t tile_rows = 0;
  int64_t count = 0;  // tiles

  // Rows (partitions) of tile t.
  uint32_t parts(int64_t t) const;
  // Tile t of a row-major [rows, hidden] tensor of `dt` at `address` in HBM.
  isa::AccessPattern hbm(isa::DType dt, uint64_t address, int64_t t) const;
  // A [hidden] vector at `address` in HBM, read into every partition of the first (fullest) tile
  // (partition stride 0): gamma and beta, loaded once.
  isa::AccessPattern hbm_broadcast(isa::DType dt, uint64_t address) const;
  // [parts, hidden] of `dt` at `offset` in SBUF: a tile, or a broadcast vector.
  isa::AccessPattern sbuf(isa::DType dt, uint64_t offset, uint32_t parts) const;
};

// Checks w.shape = [rows, hidden] before anything is allocated: hidden against the elements an
// engine instruction reads from SBUF (/shape/1), then x and y plus `other_hbm_bytes` against the
// core's HBM and, when `functional`, host memory (check_hbm_bytes; the message names "x and y of
// [rows, hidden] dtype" followed by `with`). Returns the tiles of `tile_rows` rows.
RowTiles check_row_kernel(const Workload& w, const config::ArchConfig& arch, bool functional,
                          uint32_t tile_rows, uint64_t other_hbm_bytes,
                          const std::string& with = "");

// Refuses `fixed` instructions plus `per_tile` for each tile over arch.max_instructions.
void check_row_instructions(const Workload& w, const config::ArchConfig& arch,
                            const RowTiles& tiles, uint64_t per_tile, uint64_t fixed = 0);

// The SBUF buffers the tiles rotate through: `given` (params.bufs), or when it is 0 the most of
// `most` for which fits(bufs), down to 1; never more than `tiles` (more buy nothing).
uint32_t row_buffers(uint32_t given, uint32_t most, int64_t tiles,
                     const std::function<bool(uint32_t)>& fits);

// Refuses `bytes` per partition of SBUF over the arch's, naming what one buffer holds (`holds`).
void check_row_sbuf(const Workload& w, const config::ArchConfig& arch, uint32_t bufs,
                    uint64_t bytes, const std::string& holds);

// The row kernel's HBM tensors and queues: x, the [hidden] vectors named `vectors` (gamma, beta)
// in that order, then y; SyncE loads on qSyncIn and stores on qSyncOut. The program takes the
// workload's name.
struct RowTensors {
  uint64_t x = 0;
  uint64_t y = 0;
  std::vector<uint64_t> vectors;
  uint16_t q_in = 0;
  uint16_t q_out = 0;
};
RowTensors add_row_tensors(isa::Program& p, const Workload& w,
                           const std::vector<std::string>& vectors = {});

// A host tensor of `shape` whose values draw() gives in order, each rounded to `dt`.
HostTensor random_tensor(std::string name, isa::DType dt, std::vector<int64_t> shape,
                         const std::function<double()>& draw);
// The same for draws of rng.normal(): value(x) of the i-th normal, rounded to `dt`; the same
// values and rng state as random_tensor(name, dt, shape, [&] { return value(rng.normal()); }),
// on base::host_threads() threads (SeededRandom::fill_normal).
template <typename Value>
HostTensor random_normal_tensor(std::string name, isa::DType dt, std::vector<int64_t> shape,
                                SeededRandom& rng, const Value& value) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  HostTensor t{std::move(name), dt, std::move(shape), std::vector<float>(n)};
  rng.fill_normal(t.values.data(), n,
                  [&](double x) { return isa::round_to(dt, static_cast<float>(value(x))); });
  return t;
}

}  // namespace trnsim::workloads
