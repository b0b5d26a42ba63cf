#include "workloads/kernels/tile_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "isa/instruction.hpp"
#include "workloads/kernels/instruction_builder.hpp"

namespace trnsim::workloads {

using isa::DType;
using isa::Instruction;

MatmulTiles matmul_tiles(const config::ArchConfig& arch) {
  MatmulTiles t;
  t.k = std::min(arch.pe_rows, arch.partitions);
  t.m = std::min(arch.pe_columns, arch.partitions);
  const uint64_t bank_fp32 = arch.psum_partition_bytes / arch.psum_banks / 4;
  t.n = static_cast<uint32_t>(std::max<uint64_t>(
      1, std::min<uint64_t>({arch.matmul_moving_max, bank_fp32, arch.psum_free_elements_max})));
  return t;
}

Tolerance output_tolerance(DType dt, const std::vector<float>& reference) {
  double sum = 0;
  for (float v : reference) sum += static_cast<double>(v) * v;
  const double rms = reference.empty() ? 1.0 : std::sqrt(sum / reference.size());
  // rtol covers the output's rounding to dtype (half an ulp: 2^-9 for bf16, 2^-4 for e4m3) with
  // room for fp32 accumulation in a different order; atol covers outputs near zero, whose error
  // is the accumulation's, a fraction of the typical output.
  switch (dt) {
    case DType::fp32:
      return {1e-4 * rms, 1e-4};
    case DType::fp16:
      return {1e-3 * rms, 2e-3};
    case DType::fp8_e4m3:
      return {2e-2 * rms, 7e-2};
    case DType::fp8_e5m2:
      return {2e-2 * rms, 0.13};
    default:
      return {1e-3 * rms, 1e-2};
  }
}

SbufRing::SbufRing(SbufAllocator& sbuf, uint32_t count, uint64_t bytes) {
  for (uint32_t i = 0; i < count; ++i) tiles_.push_back(OnChipTile{sbuf.take(bytes), {}});
}

PsumBanks::PsumBanks(const config::ArchConfig& arch, uint32_t count) {
  const uint64_t bank = arch.psum_partition_bytes / arch.psum_banks;
  for (uint32_t i = 0; i < count; ++i) banks_.push_back(OnChipTile{i * bank, {}});
}

TileOps::TileOps(EngineStreams& streams, const config::ArchConfig& /*arch*/, DType dtype)
    : streams_(streams), dt_(dtype), es_(isa::size_of(dtype)) {}

Completion TileOps::load(uint16_t queue, const HbmMatrix& m, int64_t r0, int64_t rows, int64_t c0,
                         int64_t cols, uint32_t tile_rows, uint64_t offset, int64_t row_stride,
                         const Completions& after) {
  const int64_t whole = rows / tile_rows;
  const int64_t rest = rows % tile_rows;
  Completion done;
  auto transfer = [&](int64_t first_row, uint32_t parts, int64_t tiles, uint64_t at) {
    const auto n = static_cast<uint32_t>(cols);
    const auto t = static_cast<uint32_t>(tiles);
    if (streams_.counting()) {
      loaded_ += uint64_t{parts} * t * n * es_;
      done = streams_.count(Engine::sync, isa::Opcode::dma_copy, after, queue, parts);
      return;
    }
    const uint64_t src = m.address + (first_row * m.cols + c0) * es_;
    Instruction in =
        tiles == 1
            ? dma_copy(queue, isa::sbuf_ap(dt_, 0, parts, at, {{1, n}}),
                       isa::hbm_ap(dt_, src, parts, m.cols, {{1, n}}),
                       fmt::format("load {} r{} c{}", m.name, first_row, c0))
            : dma_copy(queue, isa::sbuf_ap(dt_, 0, parts, at, {{row_stride, t}, {1, n}}),
                       isa::hbm_ap(dt_, src, parts, m.cols, {{tile_rows * m.cols, t}, {1, n}}),
                       fmt::format("load {} r{} c{}", m.name, first_row, c0));
    loaded_ += in.dst->bytes();
    done = streams_.emit(std::move(in), after);
  };
  if (whole > 0) transfer(r0, tile_rows, whole, offset);
  if (rest > 0) {
    transfer(r0 + whole * tile_rows, static_cast<uint32_t>(rest), 1,
             offset + whole * row_stride * es_);
  }
  return done;
}

Completion TileOps::load_transposed(uint16_t queue, const HbmMatrix& m, int64_t r0, int64_t rows,
                                    int64_t c0, int64_t cols, uint32_t tile_rows, uint64_t offset,
                                    int64_t row_stride, const Completions& after) {
  Completion done;
  for (int64_t t = 0; t * tile_rows < rows; ++t) {
    const auto parts = static_cast<uint32_t>(std::min<int64_t>(tile_rows, rows - t * tile_rows));
    const int64_t first = r0 + t * tile_rows;  // a column of m
    if (streams_.counting()) {
      loaded_ += uint64_t{parts} * static_cast<uint32_t>(cols) * es_;
      done = streams_.count(Engine::sync, isa::Opcode::dma_transpose, after, queue, parts);
      continue;
    }
    // m[c0 .. c0 + cols, first .. first + parts]: `cols` rows of m in, `parts` partitions out.
    Instruction in = dma_transpose(queue,
                                   isa::sbuf_ap(dt_, 0, parts, offset + t * row_stride * es_,
                                                {{1, static_cast<uint32_t>(cols)}}),
                                   isa::hbm_ap(dt_, m.address + (c0 * m.cols + first) * es_,
                                               static_cast<uint32_t>(cols), m.cols, {{1, parts}}),
                                   fmt::format("load {}^T r{} c{}", m.name, first, c0));
    loaded_ += in.dst->bytes();
    done = streams_.emit(std::move(in), after);
  }
  return done;
}

Completion TileOps::matmul(uint64_t bank, uint32_t k, uint32_t m, uint32_t n, uint64_t stationary,
                           uint64_t moving, bool start, bool stop, const Completions& after,
                           LazyLabel label) {
  if (streams_.counting()) return streams_.count(Engine::tensor, isa::Opcode::matmul, after);
  return streams_.emit(
      workloads::matmul(isa::psum_ap(DType::fp32, 0, m, bank, {{1, n}}),
                        isa::sbuf_ap(dt_, 0, k, stationary, {{1, m}}),
                        isa::sbuf_ap(dt_, 0, k, moving, {{1, n}}), start, stop, label()),
      after);
}

Completion TileOps::evacuate(Engine engine, isa::ActivationFunction f, uint64_t bank,
                             uint32_t parts, uint32_t n, DType to, uint64_t dst,
                             const Completions& after, LazyLabel label) {
  if (streams_.counting()) {
    return streams_.count(
        engine, engine == Engine::scalar ? isa::Opcode::activation : isa::Opcode::tensor_copy,
        after);
  }
  const auto from = isa::psum_ap(DType::fp32, 0, parts, bank, {{1, n}});
  const auto into = isa::sbuf_ap(to, 0, parts, dst, {{1, n}});
  return streams_.emit(engine == Engine::scalar
                           ? activation(Engine::scalar, f, into, from, 1.0f, 0.0f, label())
                           : tensor_copy(engine, into, from, label()),
                       after);
}

Completion TileOps::accumulate(uint64_t bank, uint32_t parts, uint32_t n, uint64_t acc, DType to,
                               uint64_t dst, const Completions& after, LazyLabel label,
                               DType acc_type) {
  if (streams_.counting()) {
    return streams_.count(Engine::vector, isa::Opcode::tensor_tensor, after);
  }
  return streams_.emit(
      tensor_tensor(Engine::vector, isa::sbuf_ap(to, 0, parts, dst, {{1, n}}),
                    isa::psum_ap(DType::fp32, 0, parts, bank, {{1, n}}), isa::AluOp::add,
                    isa::sbuf_ap(acc_type, 0, parts, acc, {{1, n}}), label()),
      after);
}

Completion TileOps::zero(Engine engine, uint32_t parts, uint32_t n, uint64_t dst,
                         const Completions& after, LazyLabel label) {
  if (streams_.counting()) return streams_.count(engine, isa::Opcode::memset, after);
  return streams_.emit(memset(engine, isa::sbuf_ap(dt_, 0, parts, dst, {{1, n}}), 0.0f, label()),
                       after);
}

Completion TileOps::store(Engine issuer, uint16_t queue, const HbmMatrix& m, int64_t r0,
                          int64_t rows, int64_t c0, int64_t cols, uint64_t offset,
                          const Completions& after) {
  const auto parts = static_cast<uint32_t>(rows);
  const auto n = static_cast<uint32_t>(cols);
  if (streams_.counting())
    return streams_.count(issuer, isa::Opcode::dma_copy, after, queue, parts);
  return streams_.emit(
      dma_copy(queue,
               isa::hbm_ap(dt_, m.address + (r0 * m.cols + c0) * es_, parts, m.cols, {{1, n}}),
               isa::sbuf_ap(dt_, 0, parts, offset, {{1, n}}),
               fmt::format("store {} r{} c{}", m.name, r0, c0), issuer),
      after);
}

}  // namespace trnsim::workloads
