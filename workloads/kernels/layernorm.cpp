#include "workloads/kernels/layernorm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/row_tiles.hpp"

namespace trnsim::workloads {

using isa::ActivationFunction;
using isa::AluOp;
using isa::DType;

ParamSpace layernorm_space(const Workload& w, const config::ArchConfig& arch) {
  ParamSpace s;
  s.kernel = "layernorm";
  s.unknown = "unknown layernorm parameter";
  s.choice("method", {"bn_stats", "two_pass"}, "bn_stats",
           "the statistics: VectorE bn_stats/bn_aggr, or a sum and a sum of squares")
      .as_option()
      .with_role(ParamRole::algorithm);
  const int64_t rows = w.shape.empty() ? arch.partitions : w.shape[0];
  s.integer("tile_rows", 1, arch.partitions, arch.partitions, "rows per tile, one per partition")
      .with_role(ParamRole::tile)
      .with_tried(
          covering(integer_values({8, 16, 32, 64}, 1, arch.partitions, arch.partitions), rows));
  ParamDecl& bufs = s.integer("bufs", 1, 8, nullptr, "tiles in flight");
  bufs.default_note = "the most of 3 that fit SBUF";
  bufs.role = ParamRole::buffers;
  bufs.tried = integer_values({1, 2, 3, 4, 6, 8}, 1, 8);
  // GpSimdE takes beta's add off VectorE, the busiest engine, unless the two share the SBUF
  // port (trn1), where it only waits for VectorE.
  s.choice("beta_engine", {"gpsimd", "vector"}, arch.shared_sbuf_psum_ports ? "vector" : "gpsimd",
           "the engine that adds beta after VectorE multiplied by gamma")
      .with_role(ParamRole::engine);
  s.constraints = {"gamma, beta and an x and a y tile per buffer fit SBUF",
                   "the instructions per tile fit the instruction cap"};
  return s;
}

LayerNormChoices parse_layernorm_choices(const Workload& w, const config::ArchConfig& arch) {
  const ParamSpace space = layernorm_space(w, arch);
  const ParamValues v(w, space);
  LayerNormChoices c;
  c.method =
      v.choice("method") == "two_pass" ? LayerNormMethod::two_pass : LayerNormMethod::bn_stats;
  c.tile_rows = static_cast<uint32_t>(v.integer("tile_rows"));
  c.bufs = static_cast<uint32_t>(v.integer("bufs"));
  c.beta_engine = v.choice("beta_engine") == "vector" ? Engine::vector : Engine::gpsimd;
  return c;
}

std::vector<float> layernorm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                       const std::vector<float>& beta, int64_t rows, int64_t hidden,
                                       double eps) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &x[r * hidden];
    double sum = 0;
    for (int64_t i = 0; i < hidden; ++i) sum += row[i];
    const double mean = sum / static_cast<double>(hidden);
    double ssd = 0;
    for (int64_t i = 0; i < hidden; ++i) ssd += (row[i] - mean) * (row[i] - mean);
    const double rstd = 1.0 / std::sqrt(ssd / static_cast<double>(hidden) + eps);
    for (int64_t i = 0; i < hidden; ++i) {
      y[r * hidden + i] = static_cast<float>((row[i] - mean) * rstd * gamma[i] + beta[i]);
    }
  }
  return y;
}

LoweredKernel lower_layernorm(const Workload& w, const config::ArchConfig& arch, bool functional) {
  const LayerNormChoices c = parse_layernorm_choices(w, arch);
  const bool bn = c.method == LayerNormMethod::bn_stats;
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);
  const int64_t hidden = w.shape[1];
  // HBM: x and y of rows x hidden, gamma and beta of hidden.
  const RowTiles tiles =
      check_row_kernel(w, arch, functional, c.tile_rows,
                       2 * static_cast<uint64_t>(hidden) * es + 256, " with gamma and beta");
  // bn_stats takes at most bn_stats_free_max elements: one per chunk of the row.
  const uint32_t chunk = arch.bn_stats_free_max;
  const int64_t chunks = (hidden + chunk - 1) / chunk;
  // Per tile: load and store; VectorE the statistics (bn_stats per chunk, bn_aggr, rstd, -mean *
  // rstd; or the sum, -mean, rstd, -mean * rstd), gamma and beta; ScalarE the normalisation (and
  // the squares of two_pass). Plus gamma and beta, loaded once.
  check_row_instructions(w, arch, tiles, bn ? 2 + (chunks + 5) + 1 : 2 + 6 + 2, 2);

  // SBUF per partition: gamma and beta; per buffer an x and a y tile and the fp32 per-row
  // values (bn_stats: (count, mean, M2) per chunk, (mean, var), rstd, -mean * rstd; two_pass:
  // sum, -mean / sqrt(hidden), var, rstd, -mean * rstd). two_pass: ScalarE's squares are only
  // summed; their elementwise output goes to a bf16 row of its own, which only ScalarE touches,
  // so the square of the next tile needs no wait.
  const uint64_t small_floats = bn ? 3 * chunks + 4 : 5;
  struct Layout {
    uint64_t gamma = 0, beta = 0, scratch = 0, bytes = 0;
    std::vector<uint64_t> x, y, small;
  };
  auto layout = [&](uint32_t n) {
    Layout l;
    OnChipLayout sb;
    l.gamma = sb.take(hidden * es);
    l.beta = sb.take(hidden * es);
    for (uint32_t b = 0; b < n; ++b) {
      l.x.push_back(sb.take(hidden * es));
      l.y.push_back(sb.take(hidden * es));
    }
    l.scratch = bn ? 0 : sb.take(hidden * isa::size_of(DType::bf16));
    for (uint32_t b = 0; b < n; ++b) l.small.push_back(sb.take(4 * small_floats));
    l.bytes = sb.rounded();
    return l;
  };
  const uint32_t bufs = row_buffers(c.bufs, 3, tiles.count, [&](uint32_t n) {
    return layout(n).bytes <= arch.sbuf_partition_bytes;
  });
  const Layout sb = layout(bufs);
  check_row_sbuf(w, arch, bufs, sb.bytes,
                 fmt::format("gamma and beta, an x and a y tile per buffer{}",
                             bn ? "" : ", a bf16 row for the squares"));

  LoweredKernel k;
  isa::Program& p = k.program;
  const RowTensors hbm = add_row_tensors(p, w, {"gamma", "beta"});
  SyncTracker tracker(p, arch);
  const uint16_t sem_stats = tracker.semaphore("dve_stats_done");
  const uint16_t sem_square = bn ? 0 : tracker.semaphore("act_square_done");
  const uint16_t sem_rstd = bn ? 0 : tracker.semaphore("dve_rstd_done");
  const uint16_t sem_norm = tracker.semaphore("act_norm_done");
  const bool beta_on_pool = c.beta_engine == Engine::gpsimd;
  const uint16_t sem_gamma = beta_on_pool ? tracker.semaphore("dve_gamma_done") : 0;
  const uint16_t sem_affine =
      tracker.semaphore(beta_on_pool ? "pool_beta_done" : "dve_affine_done");
  EngineHandle sync(tracker, Engine::sync), act(tracker, Engine::scalar),
      dve(tracker, Engine::vector), pool(tracker, Engine::gpsimd);

  // Tile t's rows in a buffer at `offset`, and `n` of buffer t % bufs's per-row values from
  // column `i` ([parts, n] fp32).
  auto row = [&](uint64_t offset, int64_t t) { return tiles.sbuf(dt, offset, tiles.parts(t)); };
  auto x_of = [&](int64_t t) { return row(sb.x[t % bufs], t); };
  auto y_of = [&](int64_t t) { return row(sb.y[t % bufs], t); };
  auto small = [&](int64_t t, uint64_t i, uint32_t n = 1) {
    return isa::sbuf_ap(DType::fp32, 0, tiles.parts(t), sb.small[t % bufs] + 4 * i, {{1, n}});
  };
  // Named columns of the per-row values.
  const uint64_t col_mean = bn ? 3 * chunks : 0;  // bn: (mean, var) pair; two_pass: the sum
  const uint64_t col_var = bn ? 3 * chunks + 1 : 2;
  const uint64_t col_nmean = 1;  // two_pass: -mean / sqrt(hidden)
  const uint64_t col_rstd = bn ? 3 * chunks + 2 : 3;
  const uint64_t col_nmr = bn ? 3 * chunks + 3 : 4;
  auto label = [](const char* what, int64_t t) { return fmt::format("{} tile {}", what, t); };

  const int64_t n = tiles.count;
  std::vector<Signal> loaded(n, kNotEmitted), stored(n, kNotEmitted), stats(n, kNotEmitted),
      normed(n, kNotEmitted), gammaed(n, kNotEmitted), affine(n, kNotEmitted);
  // bn_stats has no squares and no separate rstd stage: nothing to wait for.
  std::vector<Signal> squared(n, bn ? Signal{} : kNotEmitted), rstd(n, bn ? Signal{} : kNotEmitted);

  // gamma and beta, broadcast to every partition (partition stride 0), ahead of x on its queue.
  sync.dma_copy(hbm.q_in, row(sb.gamma, 0), tiles.hbm_broadcast(dt, hbm.vectors[0]), "load gamma");
  const Signal params_loaded = sync.dma_copy(hbm.q_in, row(sb.beta, 0),
                                             tiles.hbm_broadcast(dt, hbm.vectors[1]), "load beta");

  // x of tile t - bufs is read by the statistics, the squares and the normalisation.
  auto load = [&](int64_t t) {
    loaded[t] = sync.dma_copy(
        hbm.q_in, x_of(t), tiles.hbm(dt, hbm.x, t), fmt::format("load x tile {}", t),
        {before(stats, t - bufs), before(squared, t - bufs), before(normed, t - bufs)});
  };
  // rstd = (var + eps)^-0.5, on VectorE next to the statistics.
  auto rstd_of = [&](int64_t t, const std::vector<Signal>& deps) {
    dve.tensor_scalar(small(t, col_rstd), small(t, col_var), AluOp::add, static_cast<float>(w.eps),
                      AluOp::pow, -0.5f, label("rstd", t), deps);
  };
  auto stats_stage = [&](int64_t t) {
    // The per-row values of this buffer were last read by tile t - bufs's squares and
    // normalisation.
    const std::vector<Signal> deps = {loaded[t], before(squared, t - bufs),
                                      before(normed, t - bufs)};
    if (!bn) {
      dve.tensor_reduce(small(t, col_mean), AluOp::add, x_of(t), label("sum", t), deps);
      // -mean / sqrt(hidden): the bias that centres x / sqrt(hidden) for the squares.
      stats[t] = dve.tensor_scalar(
          small(t, col_nmean), small(t, col_mean), AluOp::multiply,
          static_cast<float>(-1.0 / (hidden * std::sqrt(static_cast<double>(hidden)))),
          label("-mean", t), {}, sem_stats);
      return;
    }
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const auto width = static_cast<uint32_t>(std::min<int64_t>(chunk, hidden - ch * chunk));
      dve.bn_stats(
          small(t, 3 * ch, 3),
          isa::sbuf_ap(dt, 0, tiles.parts(t), sb.x[t % bufs] + ch * chunk * es, {{1, width}}),
          fmt::format("bn_stats tile {} chunk {}", t, ch), ch == 0 ? deps : std::vector<Signal>{});
    }
    dve.bn_aggr(small(t, col_mean, 2), small(t, 0, static_cast<uint32_t>(3 * chunks)),
                label("bn_aggr", t));
    // rstd and -mean * rstd.
    rstd_of(t, {});
    stats[t] = dve.scalar_tensor_tensor(small(t, col_nmr), small(t, col_mean), AluOp::multiply,
                                        -1.0f, AluOp::multiply, small(t, col_rstd),
                                        label("-mean*rstd", t), {}, sem_stats);
  };
  // two_pass: var = sum((x / sqrt(hidden) - mean / sqrt(hidden))^2) on ScalarE, then rstd and
  // -mean * rstd on VectorE.
  auto square_stage = [&](int64_t t) {
    squared[t] = act.activation_reduce(
        ActivationFunction::square, tiles.sbuf(DType::bf16, sb.scratch, tiles.parts(t)), x_of(t),
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(hidden))), small(t, col_nmean),
        small(t, col_var), label("square-sum", t), {stats[t], before(rstd, t - bufs)}, sem_square);
  };
  auto rstd_stage = [&](int64_t t) {
    rstd_of(t, {squared[t], before(normed, t - bufs)});
    // -mean * rstd = (-mean / sqrt(hidden)) * sqrt(hidden) * rstd.
    rstd[t] = dve.scalar_tensor_tensor(small(t, col_nmr), small(t, col_nmean), AluOp::multiply,
                                       static_cast<float>(std::sqrt(static_cast<double>(hidden))),
                                       AluOp::multiply, small(t, col_rstd), label("-mean*rstd", t),
                                       {}, sem_rstd);
  };
  // ScalarE: (x - mean) * rstd as x * rstd + (-mean * rstd), its scale and bias per partition.
  // y of tile t - bufs is rewritten by VectorE and then stored.
  auto norm_stage = [&](int64_t t) {
    normed[t] = act.activation(
        ActivationFunction::identity, y_of(t), x_of(t), small(t, col_rstd), small(t, col_nmr),
        label("normalize", t),
        {bn ? stats[t] : rstd[t], before(affine, t - bufs), before(stored, t - bufs)}, sem_norm);
  };
  // VectorE: y * gamma, in place (gamma and beta vary along the free axis); + beta on VectorE
  // or GpSimdE.
  auto add_beta = [&](int64_t t, EngineHandle& e, const std::vector<Signal>& deps) {
    affine[t] = e.tensor_tensor(y_of(t), y_of(t), AluOp::add, row(sb.beta, t), label("beta", t),
                                deps, sem_affine);
  };
  auto gamma_stage = [&](int64_t t) {
    const Signal g = dve.tensor_tensor(
        y_of(t), y_of(t), AluOp::multiply, row(sb.gamma, t), label("gamma", t),
        {normed[t], params_loaded, before(stored, t - bufs)}, beta_on_pool ? sem_gamma : -1);
    if (beta_on_pool) {
      gammaed[t] = g;
    } else {
      add_beta(t, dve, {});
    }
  };
  auto beta_stage = [&](int64_t t) { add_beta(t, pool, {gammaed[t], params_loaded}); };
  auto store = [&](int64_t t) {
    stored[t] = sync.dma_copy(hbm.q_out, tiles.hbm(dt, hbm.y, t), y_of(t),
                              fmt::format("store y tile {}", t), {affine[t]});
  };

  // The software pipeline. With two or more buffers, VectorE works out the statistics of tile
  // t + 1 (and two_pass's rstd of tile t) before it applies gamma and beta to tile t, so that
  // ScalarE's work on tile t overlaps it; SyncE loads bufs - 1 tiles ahead. With one buffer each
  // tile waits for the previous one.
  std::vector<PipelineStage> stages;
  if (bufs == 1) {
    stages = bn ? std::vector<PipelineStage>{{0, load},
                                             {0, stats_stage},
                                             {0, norm_stage},
                                             {0, gamma_stage}}
                : std::vector<PipelineStage>{{0, load},       {0, stats_stage}, {0, square_stage},
                                             {0, rstd_stage}, {0, norm_stage},  {0, gamma_stage}};
    if (beta_on_pool) stages.push_back({0, beta_stage});
    stages.push_back({0, store});
  } else {
    // SyncE triggers each load as soon as its x buffer is free (after the normalisation of
    // tile t - bufs), ahead of the store it would otherwise queue behind.
    const int64_t ahead = 1 - static_cast<int64_t>(bufs);
    const int64_t late = bn ? 1 : 2;  // the lag of gamma, beta and the store
    stages =
        bn ? std::vector<PipelineStage>{{0, stats_stage},
                                        {1, norm_stage},
                                        {ahead, load},
                                        {late, gamma_stage}}
           : std::vector<PipelineStage>{{1, rstd_stage},   {1, norm_stage}, {0, stats_stage},
                                        {0, square_stage}, {ahead, load},   {late, gamma_stage}};
    if (beta_on_pool) stages.push_back({late, beta_stage});
    stages.push_back({late, store});
  }
  run_pipeline(tiles.count, stages);

  k.choices = {{"method", bn ? "bn_stats" : "two_pass"},
               {"tile_rows", c.tile_rows},
               {"bufs", bufs},
               {"stats_engine", "vector"},
               {"normalize_engine", "scalar"},
               {"gamma_engine", "vector"},
               {"beta_engine", std::string(key_of(c.beta_engine))}};
  if (bn) k.choices["bn_stats_chunks"] = chunks;
  // Per element: the mean's add, the deviation, its square and sum (the variance), the scale by
  // rstd, gamma's multiply and beta's add; per row: eps, the root and its reciprocal.
  k.model_flops = static_cast<uint64_t>(tiles.rows) * (7 * static_cast<uint64_t>(hidden) + 3);
  // Each output rounds three times in its dtype (the normalised row, times gamma, plus beta): up
  // to 3u relative to the larger of |y| and |(x - mean) * rstd * gamma| <= |y| + |beta|. With
  // |beta| < 0.5: rtol 4u with atol 2u covers it, u the dtype's rounding unit, plus the fp32
  // statistics (1e-5 relative).
  if (dt == DType::fp32) {
    k.tolerance = Tolerance{1e-5, 1e-4};
  } else {
    const double u = rounding_unit(dt);
    k.tolerance = Tolerance{2 * u, 4 * u};
  }

  if (functional) {
    SeededRandom rng(w.seed);
    // x ~ 1 + 2 N(0, 1): a mean away from zero, which the normalisation must remove.
    HostTensor x =
        random_normal_tensor("x", dt, w.shape, rng, [](double n) { return 1.0 + 2.0 * n; });
    HostTensor gamma = random_tensor("gamma", dt, {hidden}, [&] { return 0.5 + rng.uniform(); });
    HostTensor beta = random_tensor("beta", dt, {hidden}, [&] { return rng.uniform() - 0.5; });
    k.expected.push_back(HostTensor{
        "y", dt, w.shape,
        layernorm_reference(x.values, gamma.values, beta.values, tiles.rows, hidden, w.eps)});
    k.inputs.push_back(std::move(x));
    k.inputs.push_back(std::move(gamma));
    k.inputs.push_back(std::move(beta));
  }
  return k;
}

}  // namespace trnsim::workloads
