#include "workloads/kernels/layernorm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "workloads/kernels/kernel_support.hpp"

namespace trnsim::workloads {

using isa::ActivationFunction;
using isa::AluOp;
using isa::DType;
using isa::Instruction;
using isa::Opcode;
using isa::ScalarOperand;

LayerNormChoices parse_layernorm_choices(const Workload& w, const config::ArchConfig& arch) {
  LayerNormChoices c;
  c.method = choice_option(w, "method", {"bn_stats", "two_pass"}, "bn_stats") == "two_pass"
                 ? LayerNormMethod::two_pass
                 : LayerNormMethod::bn_stats;
  check_param_keys(w, "layernorm", {"tile_rows", "bufs", "beta_engine"});
  c.tile_rows = static_cast<uint32_t>(
      int_param(w, "tile_rows", 1, arch.partitions, static_cast<int64_t>(arch.partitions)));
  c.bufs = static_cast<uint32_t>(int_param(w, "bufs", 1, 8, 0));
  // GpSimdE takes beta's add off VectorE, the busiest engine, unless the two share the SBUF
  // port (trn1), where it only waits for VectorE.
  const std::string beta = choice_param(w, "beta_engine", {"gpsimd", "vector"},
                                        arch.shared_sbuf_psum_ports ? "vector" : "gpsimd");
  c.beta_engine = beta == "vector" ? Engine::vector : Engine::gpsimd;
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
  const int64_t rows = w.shape[0];
  const int64_t hidden = w.shape[1];
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);

  if (static_cast<uint64_t>(hidden) > arch.sbuf_free_elements_max) {
    throw WorkloadError(w.file, "/shape/1",
                        fmt::format("hidden size {} exceeds the {} elements per partition an "
                                    "engine instruction can read from SBUF",
                                    hidden, arch.sbuf_free_elements_max));
  }
  // HBM: x and y of rows x hidden, gamma and beta of hidden.
  const uint64_t xy =
      saturating_product({2, static_cast<uint64_t>(rows), static_cast<uint64_t>(hidden), es});
  check_hbm_bytes(
      w, arch, functional,
      xy == UINT64_MAX ? xy : xy + 2 * static_cast<uint64_t>(hidden) * es + 256,
      fmt::format("x and y of [{}, {}] {} with gamma and beta", rows, hidden, isa::name_of(dt)));

  const int64_t tiles = (rows + c.tile_rows - 1) / c.tile_rows;
  // bn_stats takes at most bn_stats_free_max elements: one per chunk of the row.
  const uint32_t chunk = arch.bn_stats_free_max;
  const int64_t chunks = (hidden + chunk - 1) / chunk;
  // Per tile: load and store; VectorE the statistics (bn_stats per chunk, bn_aggr, rstd, -mean *
  // rstd; or the sum, -mean, rstd, -mean * rstd), gamma and beta; ScalarE the normalisation (and
  // the squares of two_pass). Plus gamma and beta, loaded once.
  const uint64_t per_tile = bn ? 2 + (chunks + 5) + 1 : 2 + 6 + 2;
  const uint64_t instructions =
      saturating_product({static_cast<uint64_t>(tiles), per_tile}) == UINT64_MAX
          ? UINT64_MAX
          : 2 + static_cast<uint64_t>(tiles) * per_tile;
  check_instruction_count(w, arch, instructions,
                          "use larger tiles, params.tile_rows, or fewer rows");

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
  // More buffers than tiles buy nothing.
  uint32_t bufs = static_cast<uint32_t>(std::min<int64_t>(c.bufs == 0 ? 3 : c.bufs, tiles));
  while (c.bufs == 0 && bufs > 1 && layout(bufs).bytes > arch.sbuf_partition_bytes) --bufs;
  const Layout sb = layout(bufs);
  if (sb.bytes > arch.sbuf_partition_bytes) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("layernorm of hidden size {} ({}) with {} buffers needs {} bytes per "
                    "partition of SBUF (gamma and beta, an x and a y tile per buffer{}); {} has "
                    "{}. Use fewer buffers (params.bufs) or a smaller hidden size.",
                    hidden, isa::name_of(dt), bufs, sb.bytes,
                    bn ? "" : ", a bf16 row for the squares", arch.name,
                    arch.sbuf_partition_bytes));
  }
  const uint64_t gamma_at = sb.gamma, beta_at = sb.beta, scratch_at = sb.scratch;
  const std::vector<uint64_t>& x_at = sb.x;
  const std::vector<uint64_t>& y_at = sb.y;
  const std::vector<uint64_t>& small_at = sb.small;

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const uint64_t x_addr = p.add_dram_tensor("x", dt, {rows, hidden}).address;
  const uint64_t gamma_addr = p.add_dram_tensor("gamma", dt, {hidden}).address;
  const uint64_t beta_addr = p.add_dram_tensor("beta", dt, {hidden}).address;
  const uint64_t y_addr = p.add_dram_tensor("y", dt, {rows, hidden}).address;
  const uint16_t q_in = p.add_queue("qSyncIn");
  const uint16_t q_out = p.add_queue("qSyncOut");
  SyncTracker sync(p, arch);
  const uint16_t sem_stats = sync.semaphore("dve_stats_done");
  const uint16_t sem_square = bn ? 0 : sync.semaphore("act_square_done");
  const uint16_t sem_rstd = bn ? 0 : sync.semaphore("dve_rstd_done");
  const uint16_t sem_norm = sync.semaphore("act_norm_done");
  const bool beta_on_pool = c.beta_engine == Engine::gpsimd;
  const uint16_t sem_gamma = beta_on_pool ? sync.semaphore("dve_gamma_done") : 0;
  const uint16_t sem_affine = sync.semaphore(beta_on_pool ? "pool_beta_done" : "dve_affine_done");

  auto parts_of = [&](int64_t t) {
    return static_cast<uint32_t>(std::min<int64_t>(c.tile_rows, rows - t * c.tile_rows));
  };
  auto row = [&](uint64_t offset, uint32_t parts) {
    return isa::sbuf_ap(dt, 0, parts, offset, {{1, static_cast<uint32_t>(hidden)}});
  };
  // Column `i` of buffer b's per-row values ([parts, n] fp32 from there).
  auto small = [&](uint32_t b, uint64_t i, uint32_t parts, uint32_t n = 1) {
    return isa::sbuf_ap(DType::fp32, 0, parts, small_at[b] + 4 * i, {{1, n}});
  };
  // Named columns of the per-row values.
  const uint64_t col_mean = bn ? 3 * chunks : 0;  // bn: (mean, var) pair; two_pass: the sum
  const uint64_t col_var = bn ? 3 * chunks + 1 : 2;
  const uint64_t col_nmean = 1;  // two_pass: -mean / sqrt(hidden)
  const uint64_t col_rstd = bn ? 3 * chunks + 2 : 3;
  const uint64_t col_nmr = bn ? 3 * chunks + 3 : 4;

  std::vector<Signal> loaded(tiles, kNotEmitted), stored(tiles, kNotEmitted),
      stats(tiles, kNotEmitted), normed(tiles, kNotEmitted), gammaed(tiles, kNotEmitted),
      affine(tiles, kNotEmitted);
  // bn_stats has no squares and no separate rstd stage: nothing to wait for.
  std::vector<Signal> squared(tiles, bn ? Signal{} : kNotEmitted),
      rstd(tiles, bn ? Signal{} : kNotEmitted);
  auto before = [&](const std::vector<Signal>& s, int64_t t) { return t < 0 ? Signal{} : s[t]; };

  // gamma and beta, broadcast to every partition (partition stride 0), ahead of x on its queue.
  const uint32_t bcast = static_cast<uint32_t>(std::min<int64_t>(c.tile_rows, rows));
  Signal params_loaded;
  for (const auto& [name, addr, at] :
       {std::tuple{"gamma", gamma_addr, gamma_at}, std::tuple{"beta", beta_addr, beta_at}}) {
    Instruction in = make_instruction(Opcode::dma_copy, Engine::sync, fmt::format("load {}", name));
    in.src[0] = isa::hbm_ap(dt, addr, bcast, 0, {{1, static_cast<uint32_t>(hidden)}});
    in.dst = row(at, bcast);
    in.dma_queue = q_in;
    params_loaded = sync.emit(in, {});
  }

  auto add_beta = [&](int64_t t, Engine e) {
    const uint32_t parts = parts_of(t);
    const uint32_t b = static_cast<uint32_t>(t % bufs);
    Instruction be = make_instruction(Opcode::tensor_tensor, e, fmt::format("beta tile {}", t));
    be.op0 = AluOp::add;
    be.src[0] = row(y_at[b], parts);
    be.src[1] = row(beta_at, parts);
    be.dst = row(y_at[b], parts);
    return be;
  };
  const PipelineStage load{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        Instruction in =
            make_instruction(Opcode::dma_copy, Engine::sync, fmt::format("load x tile {}", t));
        in.src[0] = isa::hbm_ap(dt, x_addr + t * c.tile_rows * hidden * es, parts, hidden,
                                {{1, static_cast<uint32_t>(hidden)}});
        in.dst = row(x_at[t % bufs], parts);
        in.dma_queue = q_in;
        // x of tile t - bufs is read by the statistics, the squares and the normalisation.
        loaded[t] = sync.emit(
            in, {before(stats, t - bufs), before(squared, t - bufs), before(normed, t - bufs)});
      }};
  const PipelineStage stats_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        // The per-row values of this buffer were last read by tile t - bufs's squares and
        // normalisation.
        std::vector<Signal> deps = {loaded[t], before(squared, t - bufs), before(normed, t - bufs)};
        if (bn) {
          for (int64_t ch = 0; ch < chunks; ++ch) {
            const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(chunk, hidden - ch * chunk));
            Instruction st = make_instruction(Opcode::bn_stats, Engine::vector,
                                              fmt::format("bn_stats tile {} chunk {}", t, ch));
            st.src[0] = isa::sbuf_ap(dt, 0, parts, x_at[b] + ch * chunk * es, {{1, n}});
            st.dst = small(b, 3 * ch, parts, 3);
            sync.emit(st, ch == 0 ? deps : std::vector<Signal>{});
          }
          Instruction ag =
              make_instruction(Opcode::bn_aggr, Engine::vector, fmt::format("bn_aggr tile {}", t));
          ag.src[0] = small(b, 0, parts, static_cast<uint32_t>(3 * chunks));
          ag.dst = small(b, col_mean, parts, 2);
          sync.emit(ag, {});
        } else {
          Instruction sum = make_instruction(Opcode::tensor_reduce, Engine::vector,
                                             fmt::format("sum tile {}", t));
          sum.op0 = AluOp::add;
          sum.src[0] = row(x_at[b], parts);
          sum.dst = small(b, col_mean, parts);
          sync.emit(sum, deps);
          // -mean / sqrt(hidden): the bias that centres x / sqrt(hidden) for the squares.
          Instruction nm = make_instruction(Opcode::tensor_scalar, Engine::vector,
                                            fmt::format("-mean tile {}", t));
          nm.op0 = AluOp::multiply;
          nm.operand0 = ScalarOperand::immediate(
              static_cast<float>(-1.0 / (hidden * std::sqrt(static_cast<double>(hidden)))));
          nm.src[0] = small(b, col_mean, parts);
          nm.dst = small(b, col_nmean, parts);
          stats[t] = sync.emit(nm, {}, sem_stats);
          return;
        }
        // rstd = (var + eps)^-0.5 and -mean * rstd, on VectorE next to the statistics.
        Instruction rs =
            make_instruction(Opcode::tensor_scalar, Engine::vector, fmt::format("rstd tile {}", t));
        rs.op0 = AluOp::add;
        rs.operand0 = ScalarOperand::immediate(static_cast<float>(w.eps));
        rs.op1 = AluOp::pow;
        rs.operand1 = ScalarOperand::immediate(-0.5f);
        rs.src[0] = small(b, col_var, parts);
        rs.dst = small(b, col_rstd, parts);
        sync.emit(rs, {});
        Instruction nmr = make_instruction(Opcode::scalar_tensor_tensor, Engine::vector,
                                           fmt::format("-mean*rstd tile {}", t));
        nmr.op0 = AluOp::multiply;
        nmr.operand0 = ScalarOperand::immediate(-1.0f);
        nmr.op1 = AluOp::multiply;
        nmr.src[0] = small(b, col_mean, parts);
        nmr.src[1] = small(b, col_rstd, parts);
        nmr.dst = small(b, col_nmr, parts);
        stats[t] = sync.emit(nmr, {}, sem_stats);
      }};
  // two_pass: var = sum((x / sqrt(hidden) - mean / sqrt(hidden))^2) on ScalarE, then rstd and
  // -mean * rstd on VectorE.
  const PipelineStage square_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        Instruction sq = make_instruction(Opcode::activation, Engine::scalar,
                                          fmt::format("square-sum tile {}", t));
        sq.function = ActivationFunction::square;
        sq.src[0] = row(x_at[b], parts);
        sq.dst =
            isa::sbuf_ap(DType::bf16, 0, parts, scratch_at, {{1, static_cast<uint32_t>(hidden)}});
        sq.scale = ScalarOperand::immediate(
            static_cast<float>(1.0 / std::sqrt(static_cast<double>(hidden))));
        sq.bias = ScalarOperand::from(small(b, col_nmean, parts));
        sq.accumulate = small(b, col_var, parts);
        squared[t] = sync.emit(sq, {stats[t], before(rstd, t - bufs)}, sem_square);
      }};
  const PipelineStage rstd_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        Instruction rs =
            make_instruction(Opcode::tensor_scalar, Engine::vector, fmt::format("rstd tile {}", t));
        rs.op0 = AluOp::add;
        rs.operand0 = ScalarOperand::immediate(static_cast<float>(w.eps));
        rs.op1 = AluOp::pow;
        rs.operand1 = ScalarOperand::immediate(-0.5f);
        rs.src[0] = small(b, col_var, parts);
        rs.dst = small(b, col_rstd, parts);
        sync.emit(rs, {squared[t], before(normed, t - bufs)});
        // -mean * rstd = (-mean / sqrt(hidden)) * sqrt(hidden) * rstd.
        Instruction nmr = make_instruction(Opcode::scalar_tensor_tensor, Engine::vector,
                                           fmt::format("-mean*rstd tile {}", t));
        nmr.op0 = AluOp::multiply;
        nmr.operand0 =
            ScalarOperand::immediate(static_cast<float>(std::sqrt(static_cast<double>(hidden))));
        nmr.op1 = AluOp::multiply;
        nmr.src[0] = small(b, col_nmean, parts);
        nmr.src[1] = small(b, col_rstd, parts);
        nmr.dst = small(b, col_nmr, parts);
        rstd[t] = sync.emit(nmr, {}, sem_rstd);
      }};
  // ScalarE: (x - mean) * rstd as x * rstd + (-mean * rstd), its scale and bias per partition.
  const PipelineStage norm_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        Instruction nz = make_instruction(Opcode::activation, Engine::scalar,
                                          fmt::format("normalize tile {}", t));
        nz.function = ActivationFunction::identity;
        nz.src[0] = row(x_at[b], parts);
        nz.dst = row(y_at[b], parts);
        nz.scale = ScalarOperand::from(small(b, col_rstd, parts));
        nz.bias = ScalarOperand::from(small(b, col_nmr, parts));
        // y of tile t - bufs is rewritten by VectorE and then stored.
        normed[t] = sync.emit(
            nz, {bn ? stats[t] : rstd[t], before(affine, t - bufs), before(stored, t - bufs)},
            sem_norm);
      }};
  // VectorE: y * gamma, in place (gamma and beta vary along the free axis); + beta on VectorE
  // or GpSimdE.
  const PipelineStage gamma_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        Instruction g = make_instruction(Opcode::tensor_tensor, Engine::vector,
                                         fmt::format("gamma tile {}", t));
        g.op0 = AluOp::multiply;
        g.src[0] = row(y_at[b], parts);
        g.src[1] = row(gamma_at, parts);
        g.dst = row(y_at[b], parts);
        const std::vector<Signal> deps = {normed[t], params_loaded, before(stored, t - bufs)};
        if (beta_on_pool) {
          gammaed[t] = sync.emit(g, deps, sem_gamma);
          return;
        }
        sync.emit(g, deps);
        affine[t] = sync.emit(add_beta(t, Engine::vector), {}, sem_affine);
      }};
  const PipelineStage beta_stage{
      0, [&](int64_t t) {
        affine[t] = sync.emit(add_beta(t, Engine::gpsimd), {gammaed[t], params_loaded}, sem_affine);
      }};
  const PipelineStage store{0, [&](int64_t t) {
                              const uint32_t parts = parts_of(t);
                              Instruction in = make_instruction(Opcode::dma_copy, Engine::sync,
                                                                fmt::format("store y tile {}", t));
                              in.src[0] = row(y_at[t % bufs], parts);
                              in.dst =
                                  isa::hbm_ap(dt, y_addr + t * c.tile_rows * hidden * es, parts,
                                              hidden, {{1, static_cast<uint32_t>(hidden)}});
                              in.dma_queue = q_out;
                              stored[t] = sync.emit(in, {affine[t]});
                            }};

  // The software pipeline. With two or more buffers, VectorE works out the statistics of tile
  // t + 1 (and two_pass's rstd of tile t) before it applies gamma and beta to tile t, so that
  // ScalarE's work on tile t overlaps it; SyncE loads bufs - 1 tiles ahead. With one buffer each
  // tile waits for the previous one.
  auto at = [](PipelineStage s, int64_t lag) {
    s.lag = lag;
    return s;
  };
  const int64_t ahead = 1 - static_cast<int64_t>(bufs);
  std::vector<PipelineStage> stages;
  if (bufs == 1) {
    stages = bn ? std::vector<PipelineStage>{load, stats_stage, norm_stage, gamma_stage}
                : std::vector<PipelineStage>{load,       stats_stage, square_stage,
                                             rstd_stage, norm_stage,  gamma_stage};
    if (beta_on_pool) stages.push_back(beta_stage);
    stages.push_back(store);
  } else {
    // SyncE triggers each load as soon as its x buffer is free (after the normalisation of
    // tile t - bufs), ahead of the store it would otherwise queue behind.
    const int64_t late = bn ? 1 : 2;  // the lag of gamma, beta and the store
    stages = bn ? std::vector<PipelineStage>{at(stats_stage, 0), at(norm_stage, 1), at(load, ahead),
                                             at(gamma_stage, late)}
                : std::vector<PipelineStage>{at(rstd_stage, 1),  at(norm_stage, 1),
                                             at(stats_stage, 0), at(square_stage, 0),
                                             at(load, ahead),    at(gamma_stage, late)};
    if (beta_on_pool) stages.push_back(at(beta_stage, late));
    stages.push_back(at(store, late));
  }
  run_pipeline(tiles, stages);

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
  k.model_flops = static_cast<uint64_t>(rows) * (7 * static_cast<uint64_t>(hidden) + 3);
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
    HostTensor x{"x", dt, {rows, hidden}, std::vector<float>(rows * hidden)};
    for (float& v : x.values) v = isa::round_to(dt, static_cast<float>(1.0 + 2.0 * rng.normal()));
    HostTensor gamma{"gamma", dt, {hidden}, std::vector<float>(hidden)};
    for (float& v : gamma.values) v = isa::round_to(dt, static_cast<float>(0.5 + rng.uniform()));
    HostTensor beta{"beta", dt, {hidden}, std::vector<float>(hidden)};
    for (float& v : beta.values) v = isa::round_to(dt, static_cast<float>(rng.uniform() - 0.5));
    k.expected.push_back(
        HostTensor{"y",
                   dt,
                   {rows, hidden},
                   layernorm_reference(x.values, gamma.values, beta.values, rows, hidden, w.eps)});
    k.inputs.push_back(std::move(x));
    k.inputs.push_back(std::move(gamma));
    k.inputs.push_back(std::move(beta));
  }
  return k;
}

}  // namespace trnsim::workloads
