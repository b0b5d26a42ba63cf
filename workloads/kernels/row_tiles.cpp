#include "workloads/kernels/row_tiles.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "workloads/kernels/kernel_support.hpp"

namespace trnsim::workloads {

RowTiles::RowTiles(int64_t rows_, int64_t hidden_, uint32_t tile_rows_)
    : rows(rows_),
      hidden(hidden_),
      tile_rows(tile_rows_),
      count((rows_ + tile_rows_ - 1) / tile_rows_) {}

uint32_t RowTiles::parts(int64_t t) const {
  return static_cast<uint32_t>(std::min<int64_t>(tile_rows, rows - t * tile_rows));
}

isa::AccessPattern RowTiles::hbm(isa::DType dt, uint64_t address, int64_t t) const {
  return isa::hbm_ap(dt, address + t * tile_rows * hidden * isa::size_of(dt), parts(t), hidden,
                     {{1, static_cast<uint32_t>(hidden)}});
}

isa::AccessPattern RowTiles::hbm_broadcast(isa::DType dt, uint64_t address) const {
  return isa::hbm_ap(dt, address, parts(0), 0, {{1, static_cast<uint32_t>(hidden)}});
}

isa::AccessPattern RowTiles::sbuf(isa::DType dt, uint64_t offset, uint32_t parts) const {
  return isa::sbuf_ap(dt, 0, parts, offset, {{1, static_cast<uint32_t>(hidden)}});
}

RowTiles check_row_kernel(const Workload& w, const config::ArchConfig& arch, bool functional,
                          uint32_t tile_rows, uint64_t other_hbm_bytes, const std::string& with) {
  const int64_t rows = w.shape[0];
  const int64_t hidden = w.shape[1];
  if (static_cast<uint64_t>(hidden) > arch.sbuf_free_elements_max) {
    throw WorkloadError(w.file, "/shape/1",
                        fmt::format("hidden size {} exceeds the {} elements per partition an "
                                    "engine instruction can read from SBUF",
                                    hidden, arch.sbuf_free_elements_max));
  }
  const uint64_t xy = saturating_product(
      {2, static_cast<uint64_t>(rows), static_cast<uint64_t>(hidden), isa::size_of(w.dtype)});
  check_hbm_bytes(
      w, arch, functional, xy == UINT64_MAX ? xy : xy + other_hbm_bytes,
      fmt::format("x and y of [{}, {}] {}{}", rows, hidden, isa::name_of(w.dtype), with));
  return RowTiles(rows, hidden, tile_rows);
}

void check_row_instructions(const Workload& w, const config::ArchConfig& arch,
                            const RowTiles& tiles, uint64_t per_tile, uint64_t fixed) {
  const uint64_t all = saturating_product({static_cast<uint64_t>(tiles.count), per_tile});
  check_instruction_count(w, arch, all == UINT64_MAX ? all : fixed + all,
                          "use larger tiles, params.tile_rows, or fewer rows");
}

uint32_t row_buffers(uint32_t given, uint32_t most, int64_t tiles,
                     const std::function<bool(uint32_t)>& fits) {
  uint32_t bufs = static_cast<uint32_t>(std::min<int64_t>(given == 0 ? most : given, tiles));
  while (given == 0 && bufs > 1 && !fits(bufs)) --bufs;
  return bufs;
}

void check_row_sbuf(const Workload& w, const config::ArchConfig& arch, uint32_t bufs,
                    uint64_t bytes, const std::string& holds) {
  if (bytes <= arch.sbuf_partition_bytes) return;
  throw WorkloadError(
      w.file, "/shape",
      fmt::format("{} of hidden size {} ({}) with {} buffers needs {} bytes per partition of SBUF "
                  "({}); {} has {}. Use fewer buffers (params.bufs) or a smaller hidden size.",
                  w.kernel, w.shape[1], isa::name_of(w.dtype), bufs, bytes, holds, arch.name,
                  arch.sbuf_partition_bytes));
}

RowTensors add_row_tensors(isa::Program& p, const Workload& w,
                           const std::vector<std::string>& vectors) {
  const int64_t rows = w.shape[0];
  const int64_t hidden = w.shape[1];
  RowTensors r;
  p.name = w.name;
  r.x = p.add_dram_tensor("x", w.dtype, {rows, hidden}).address;
  for (const std::string& v : vectors) {
    r.vectors.push_back(p.add_dram_tensor(v, w.dtype, {hidden}).address);
  }
  r.y = p.add_dram_tensor("y", w.dtype, {rows, hidden}).address;
  r.q_in = p.add_queue("qSyncIn");
  r.q_out = p.add_queue("qSyncOut");
  return r;
}

HostTensor random_tensor(std::string name, isa::DType dt, std::vector<int64_t> shape,
                         const std::function<double()>& draw) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  HostTensor t{std::move(name), dt, std::move(shape), std::vector<float>(n)};
  for (float& v : t.values) v = isa::round_to(dt, static_cast<float>(draw()));
  return t;
}

}  // namespace trnsim::workloads
