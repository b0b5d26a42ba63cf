// The MLP, y[M, D] = act(x[M, D] @ w1[D, F]) @ w2[F, D] (docs/kernels.md, "## mlp").
//
// HBM tensors (their names are an interface: graph tensors are bound to them by name): x
// [M, D], w1 [D, F], w2 [F, D], y [M, D], all in the workload's dtype.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/instruction.hpp"
#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::workloads {

// The MLP's choices.
struct MlpChoices {
  isa::ActivationFunction activation = isa::ActivationFunction::gelu;
  int64_t block_m = 0;     // rows of x per chunk: the moving of the first matmul
  uint32_t w1_tiles = 4;   // columns of w1 per load, in F tiles
  uint32_t w2_tiles = 8;   // rows of w2 per load, in F tiles
  uint32_t bufs = 2;       // weight buffers of each kind (1..8)
  uint32_t x_bufs = 2;     // x^T chunks in SBUF (1 or 2)
  uint32_t out_bufs = 4;   // output staging tiles
  uint32_t psum_bufs = 8;  // PSUM banks
  // Which of the sizes shrunk to fit SBUF came from params (those are kept).
  bool block_m_given = false, w1_tiles_given = false, x_bufs_given = false;
};

// Its parameters: block_m, w1_tiles, w2_tiles, bufs, x_bufs, out_bufs, psum_bufs.
ParamSpace mlp_space(const Workload& w, const config::ArchConfig& arch);
MlpChoices parse_mlp_choices(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_mlp(const Workload& w, const config::ArchConfig& arch, bool functional);

// The activation in double precision, by the formulas isa::apply uses in float.
double activation_reference(isa::ActivationFunction f, double x);

// y = act(x @ w1) @ w2 in double precision; the hidden is rounded to `hidden_dtype` as the
// kernel stores it (TensorE reads it as a matmul operand in that dtype).
std::vector<float> mlp_reference(const std::vector<float>& x, const std::vector<float>& w1,
                                 const std::vector<float>& w2, int64_t m, int64_t d, int64_t f,
                                 isa::ActivationFunction act, isa::DType hidden_dtype);

}  // namespace trnsim::workloads
