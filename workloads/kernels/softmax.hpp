// Softmax over the last axis, numerically stable: y = exp(x - max) / sum(exp(x - max)).
#pragma once

#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::workloads {

// The lowering's choices (reported in stats.json under "choices").
struct SoftmaxChoices {
  uint32_t tile_rows = 128;  // rows per tile, one per partition (1..partitions)
  // Tiles in flight (1..8); 0: the most of 3 that fit SBUF (three hide a store's latency).
  uint32_t bufs = 0;
  // The engine that multiplies exp(x - max) by 1 / sum: vector (VectorE reciprocal and
  // tensor_scalar) or scalar (ScalarE reciprocal and scaled copy).
  Engine scale_engine = Engine::vector;
};

// Its parameters: tile_rows, bufs, scale_engine.
ParamSpace softmax_space(const Workload& w, const config::ArchConfig& arch);
SoftmaxChoices parse_softmax_choices(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_softmax(const Workload& w, const config::ArchConfig& arch, bool functional);

// The reference, in double precision from the same (dtype-rounded) inputs.
std::vector<float> softmax_reference(const std::vector<float>& x, int64_t rows, int64_t hidden);

}  // namespace trnsim::workloads
