// LayerNorm: y = (x - mean) / sqrt(var + eps) * gamma + beta, over the last axis.
#pragma once

#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::workloads {

enum class LayerNormMethod { bn_stats, two_pass };

// The lowering's choices (reported in stats.json under "choices").
struct LayerNormChoices {
  LayerNormMethod method = LayerNormMethod::bn_stats;  // the "method" option
  uint32_t tile_rows = 128;  // rows per tile, one per partition (1..partitions)
  // Tiles in flight (1..8); 0: the most of 3 that fit SBUF (three hide a store's latency).
  uint32_t bufs = 0;
  // The engine that adds beta after VectorE multiplied by gamma: gpsimd (the default where
  // GpSimdE has an SBUF port of its own, trn2: VectorE is the busiest engine) or vector (the
  // default on trn1, where the two share one).
  Engine beta_engine = Engine::gpsimd;
};

// Its parameters: the option method; tile_rows, bufs, beta_engine.
ParamSpace layernorm_space(const Workload& w, const config::ArchConfig& arch);
LayerNormChoices parse_layernorm_choices(const Workload& w, const config::ArchConfig& arch);
LoweredKernel lower_layernorm(const Workload& w, const config::ArchConfig& arch, bool functional);

// The reference, in double precision from the same (dtype-rounded) inputs; population variance.
std::vector<float> layernorm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                       const std::vector<float>& beta, int64_t rows, int64_t hidden,
                                       double eps);

}  // namespace trnsim::workloads
