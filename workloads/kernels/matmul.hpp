// Matmul, C[M, N] = A[M, K] @ B[K, N], in four strategies (docs/kernels.md, "## matmul").
//
// HBM tensors (their names are an interface: graph tensors are bound to them by name): a_t
// [K, M] (a_layout "km", the default) or a [M, K] (a_layout "mk"), b [K, N] (or b_t [N, K] with
// b_layout "nk", graphs only), c [M, N], all in the workload's dtype. Graphs also ask for
// `batch` products in one kernel (a, c and, with b_batched, b stacked along their rows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"
#include "workloads/kernels/tile_ops.hpp"

namespace trnsim::workloads {

// The matmul's choices (reported in stats.json under "choices").
struct MatmulChoices {
  int strategy = 4;           // 1 tiled, 2 hoisted loads, 3 blocked M and N, 4 blocked M, K, N
  bool a_transposed = true;   // a_layout "km": the left operand is given as a_t [K, M]
  bool b_transposed = false;  // b_layout "nk": the right operand is given as b_t [N, K]
  // Graph matmuls ([..., M, K] @ [..., K, N]): `batch` products one after another in the
  // kernel, A and C [batch * M, ...]; B one per batch (b_batched) or one for all.
  int64_t batch = 1;
  bool b_batched = false;
  uint32_t bufs = 2;       // operand buffers of each kind (1..8)
  uint32_t out_bufs = 4;   // output staging tiles in SBUF (1..8)
  uint32_t psum_bufs = 8;  // PSUM banks the accumulation groups rotate through
  int64_t block_m = 0;     // strategies 3 and 4: rows of C per block
  int64_t block_n = 0;     // strategies 3 and 4: columns of C per block
  int64_t block_k = 0;     // strategy 4: contraction depth per block
  uint32_t a_bufs = 2;     // strategy 2: A strips (2 when they fit, so the next one loads
                           // while this one is used; else 1)
  // Which block sizes came from params: those are kept; the others are chosen or shrunk to fit.
  bool block_m_given = false, block_k_given = false, block_n_given = false;
};

// Its parameters: the option strategy; per strategy, its blocks (3: block_m, block_n; 4: block_m,
// block_k, block_n), bufs, out_bufs, psum_bufs.
ParamSpace matmul_space(const Workload& w, const config::ArchConfig& arch);
MatmulChoices parse_matmul_choices(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_matmul(const Workload& w, const config::ArchConfig& arch, bool functional);

// Bytes per partition of SBUF the strategy's buffers take for `shape` [M, K, N].
uint64_t matmul_sbuf_bytes(const MatmulChoices& c, const MatmulTiles& t,
                           const std::vector<int64_t>& shape, isa::DType dt);

// c = a @ b from a [M, K] and b [K, N] (row-major), for an output of dtype `out`: in double
// precision for fp32; for the narrower dtypes in single precision (fp32 sums of 256-term fp32
// dot products, in a fixed order), which is exact enough for their tolerance (matmul.cpp says
// why). On base::host_threads() threads; the same bytes on any number of them.
std::vector<float> matmul_reference(const std::vector<float>& a, const std::vector<float>& b,
                                    int64_t m, int64_t k, int64_t n,
                                    isa::DType out = isa::DType::fp32);

}  // namespace trnsim::workloads
