// Building blocks of the TensorE kernels (matmul, mlp): tile sizes from the arch, SBUF and PSUM
// placement, and one emitter per kind of instruction (loads, DMA transposes, matmuls, PSUM
// evacuation, stores), each synchronized through EngineStreams.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "config/arch.hpp"
#include "isa/dtype.hpp"
#include "workloads/kernels/engine_streams.hpp"
#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

// TensorE tile sizes from the PE array and PSUM, never hard-coded 128/512: the contraction
// (partitions of both operands) is at most pe_rows; the stationary's columns at most
// pe_columns and the PSUM partitions they become (so also at most `partitions`); the moving's
// columns at most matmul_moving_max, one PSUM bank of fp32, and what an engine reads from PSUM.
struct MatmulTiles {
  uint32_t k = 128;  // contraction rows per matmul
  uint32_t m = 128;  // output rows (stationary columns) per matmul
  uint32_t n = 512;  // output columns (moving columns) per matmul
};
MatmulTiles matmul_tiles(const config::ArchConfig& arch);

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The functional check's tolerance for a kernel output in `dt` computed with fp32 accumulation,
// from the reference's scale (its root mean square).
Tolerance output_tolerance(isa::DType dt, const std::vector<float>& reference);

// Per-partition SBUF placement, bump-allocated in 64-byte aligned pieces.
struct SbufAllocator {
  uint64_t bytes = 0;
  uint64_t take(uint64_t n) {
    const uint64_t at = bytes;
    bytes += (n + 63) / 64 * 64;
    return at;
  }
};

// A tile's place in SBUF or PSUM (offset in each partition) and the accesses to it.
struct OnChipTile {
  uint64_t offset = 0;
  RegionAccesses access;
};

// `count` SBUF tiles of `bytes` per partition used in turn: buffers whose reuse waits for the
// readers of the previous contents.
class SbufRing {
 public:
  SbufRing() = default;
  SbufRing(SbufAllocator& sbuf, uint32_t count, uint64_t bytes);
  OnChipTile& next() { return tiles_[next_++ % tiles_.size()]; }
  size_t size() const { return tiles_.size(); }

 private:
  std::vector<OnChipTile> tiles_;
  size_t next_ = 0;
};

// PSUM banks (arch.psum_banks of 2 KiB per partition on trn1/trn2) used in turn by the
// accumulation groups: a group's first matmul waits until the previous group of its bank was
// read out.
class PsumBanks {
 public:
  PsumBanks(const config::ArchConfig& arch, uint32_t count);
  OnChipTile& next() { return banks_[next_++ % banks_.size()]; }

 private:
  std::vector<OnChipTile> banks_;  // offset: the bank's first byte in each PSUM partition
  size_t next_ = 0;
};

// A row-major matrix in HBM.
struct HbmMatrix {
  std::string name;
  uint64_t address = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};

// An instruction's label, made only when the instruction is: a counting pass (a streamed
// program's first) builds none. Refers to a callable returning the text, which must outlive
// the call it is passed to (a lambda written in the call does). Only a parameter: one kept in
// a variable would refer to a lambda gone at the end of its statement.
class LazyLabel {
 public:
  template <typename F, typename = std::enable_if_t<std::is_invocable_r_v<std::string, const F&>>>
  LazyLabel(const F& make)  // NOLINT: a lambda at the call site is the label
      : make_(&make), call_([](const void* f) { return (*static_cast<const F*>(f))(); }) {}
  std::string operator()() const { return call_(make_); }

 private:
  const void* make_;
  std::string (*call_)(const void*);
};

// Emits the instructions of a TensorE kernel in program order. In a counting pass
// (EngineStreams::counting) it builds no instruction: it tells the streams what each would be.
class TileOps {
 public:
  TileOps(EngineStreams& streams, const config::ArchConfig& arch, isa::DType dtype);

  // Copies rows [r0, r0 + rows) x columns [c0, c0 + cols) of `m` into SBUF: row r0 + i goes to
  // partition i % tile_rows at element (i / tile_rows) * row_stride from `offset`. One transfer
  // for the whole tiles of rows, one for a partial last tile; the second completes after the
  // first (same queue). SyncE triggers them.
  Completion load(uint16_t queue, const HbmMatrix& m, int64_t r0, int64_t rows, int64_t c0,
                  int64_t cols, uint32_t tile_rows, uint64_t offset, int64_t row_stride,
                  const Completions& after);
  // The same layout for the transpose of `m`: layout row r0 + i (a column of m) at partition
  // i % tile_rows, its elements being rows [c0, c0 + cols) of m. One dma_transpose per tile of
  // rows (up to tile_rows columns of m in, as many partitions out).
  Completion load_transposed(uint16_t queue, const HbmMatrix& m, int64_t r0, int64_t rows,
                             int64_t c0, int64_t cols, uint32_t tile_rows, uint64_t offset,
                             int64_t row_stride, const Completions& after);

  // PSUM[bank][0:m, 0:n] (+)= stationary[0:k, 0:m]^T @ moving[0:k, 0:n], operands in SBUF.
  Completion matmul(uint64_t bank, uint32_t k, uint32_t m, uint32_t n, uint64_t stationary,
                    uint64_t moving, bool start, bool stop, const Completions& after,
                    LazyLabel label);
  // SBUF[dst][0:parts, 0:n] (dtype `to`) = f(PSUM[bank][0:parts, 0:n]): ScalarE activation
  // (f = copy for a plain evacuation), or VectorE tensor_copy (f must be copy).
  Completion evacuate(Engine engine, isa::ActivationFunction f, uint64_t bank, uint32_t parts,
                      uint32_t n, isa::DType to, uint64_t dst, const Completions& after,
                      LazyLabel label);
  // VectorE: SBUF[dst] (dtype `to`) = PSUM[bank] + SBUF[acc] (dtype `acc_type`).
  Completion accumulate(uint64_t bank, uint32_t parts, uint32_t n, uint64_t acc, isa::DType to,
                        uint64_t dst, const Completions& after, LazyLabel label,
                        isa::DType acc_type = isa::DType::fp32);
  // SBUF[dst][0:parts, 0:n] = 0 in the kernel's dtype, on `engine`.
  Completion zero(Engine engine, uint32_t parts, uint32_t n, uint64_t dst, const Completions& after,
                  LazyLabel label);
  // Copies SBUF [rows partitions, cols] from `offset` to m[r0 + p, c0 + j], triggered by
  // `issuer` on `queue`.
  Completion store(Engine issuer, uint16_t queue, const HbmMatrix& m, int64_t r0, int64_t rows,
                   int64_t c0, int64_t cols, uint64_t offset, const Completions& after);

  // Bytes the DMAs emitted so far read from HBM.
  uint64_t hbm_bytes_loaded() const { return loaded_; }

 private:
  EngineStreams& streams_;
  isa::DType dt_;
  uint64_t es_;
  uint64_t loaded_ = 0;
};

}  // namespace trnsim::workloads
