// RMSNorm: y = x / sqrt(mean(x^2, last axis) + eps) * gamma.
#pragma once

#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::workloads {

// The fused kernel's choices (reported in stats.json under "choices").
struct RmsNormChoices {
  uint32_t tile_rows = 128;  // rows per tile, one per partition (1..partitions)
  uint32_t bufs = 2;         // tiles in flight: DMA of the next overlaps this one (1..8)
  Engine scale_engine = Engine::scalar;  // multiplies x by 1/rms: scalar or vector
};

// Its parameters: tile_rows, bufs, scale_engine.
ParamSpace rmsnorm_space(const Workload& w, const config::ArchConfig& arch);
RmsNormChoices parse_rmsnorm_choices(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_rmsnorm_fused(const Workload& w, const config::ArchConfig& arch,
                                  bool functional);

// The reference, in double precision from the same (dtype-rounded) inputs.
std::vector<float> rmsnorm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                     int64_t rows, int64_t hidden, double eps);

}  // namespace trnsim::workloads
