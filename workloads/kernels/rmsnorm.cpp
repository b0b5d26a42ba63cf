#include "workloads/kernels/rmsnorm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/row_tiles.hpp"

namespace trnsim::workloads {

using isa::ActivationFunction;
using isa::AluOp;
using isa::DType;
using isa::Instruction;
using isa::SemaphoreUpdate;
using isa::SemaphoreWait;

ParamSpace rmsnorm_space(const Workload& w, const config::ArchConfig& arch) {
  ParamSpace s;
  s.kernel = "rmsnorm";
  s.unknown = "unknown rmsnorm parameter";
  const int64_t rows = w.shape.empty() ? arch.partitions : w.shape[0];
  s.integer("tile_rows", 1, arch.partitions, arch.partitions, "rows per tile, one per partition")
      .with_role(ParamRole::tile)
      .with_tried(
          covering(integer_values({8, 16, 32, 64}, 1, arch.partitions, arch.partitions), rows));
  s.integer("bufs", 1, 8, 2, "tiles in flight: the DMA of the next overlaps this one")
      .with_role(ParamRole::buffers)
      .with_tried(integer_values({1, 2, 3, 4, 6, 8}, 1, 8));
  ParamDecl& e = s.choice("scale_engine", {"scalar", "vector"}, "scalar",
                          "the engine that multiplies x by 1/rms");
  e.role = ParamRole::engine;
  e.aliases = {{"ScalarE", "scalar"}, {"VectorE", "vector"}};
  e.suggest = false;
  s.constraints = {"gamma plus an x and a scaled tile per buffer fit SBUF",
                   "about 7 instructions per tile fit the instruction cap"};
  return s;
}

RmsNormChoices parse_rmsnorm_choices(const Workload& w, const config::ArchConfig& arch) {
  const ParamSpace space = rmsnorm_space(w, arch);
  const ParamValues v(w, space);
  RmsNormChoices c;
  c.tile_rows = static_cast<uint32_t>(v.integer("tile_rows"));
  c.bufs = static_cast<uint32_t>(v.integer("bufs"));
  c.scale_engine = v.choice("scale_engine") == "vector" ? Engine::vector : Engine::scalar;
  return c;
}

std::vector<float> rmsnorm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                     int64_t rows, int64_t hidden, double eps) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &x[r * hidden];
    double sum = 0;
    for (int64_t i = 0; i < hidden; ++i) sum += static_cast<double>(row[i]) * row[i];
    const double inv_rms = 1.0 / std::sqrt(sum / static_cast<double>(hidden) + eps);
    for (int64_t i = 0; i < hidden; ++i) {
      y[r * hidden + i] = static_cast<float>(row[i] * inv_rms * gamma[i]);
    }
  }
  return y;
}

LoweredKernel lower_rmsnorm_fused(const Workload& w, const config::ArchConfig& arch,
                                  bool functional) {
  const RmsNormChoices c = parse_rmsnorm_choices(w, arch);
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);
  // HBM: x and y of rows x hidden (gamma's hidden elements are left out of the count); checked
  // before anything is allocated.
  const RowTiles tiles = check_row_kernel(w, arch, functional, c.tile_rows, 0);
  const int64_t rows = tiles.rows, hidden = tiles.hidden, count = tiles.count;
  // About 6 instructions per tile (load, store, 3 ScalarE, 1-2 VectorE).
  if (static_cast<uint64_t>(count) * 7 > arch.max_instructions) {
    throw WorkloadError(w.file, "/shape",
                        fmt::format("{} rows in tiles of {} lower to about {} instructions; a "
                                    "kernel holds at most {} (use larger tiles, params.tile_rows)",
                                    rows, c.tile_rows, count * 7, arch.max_instructions));
  }
  // More buffers than tiles buy nothing.
  const uint32_t bufs = static_cast<uint32_t>(std::min<int64_t>(c.bufs, count));
  // Per-partition SBUF placement: gamma, then per buffer an x tile and a `scaled` tile (x/rms,
  // then y in place); the fp32 per-row scalars of all buffers (mean square, 1/rms) share one
  // small region.
  OnChipLayout sb;
  const uint64_t gamma_at = sb.take(hidden * es);
  std::vector<uint64_t> x_at, scaled_at;
  for (uint32_t b = 0; b < bufs; ++b) {
    x_at.push_back(sb.take(hidden * es));
    scaled_at.push_back(sb.take(hidden * es));
  }
  const uint64_t scalars = sb.take(8 * bufs);
  check_row_sbuf(w, arch, bufs, sb.rounded(), "gamma plus an x and a scaled tile per buffer");

  LoweredKernel k;
  isa::Program& p = k.program;
  const RowTensors hbm = add_row_tensors(p, w, {"gamma"});
  const uint16_t sem_in = p.queues[hbm.q_in].semaphore;
  const uint16_t sem_out = p.queues[hbm.q_out].semaphore;
  const uint16_t act_done = p.add_semaphore("act_tile_done");
  const uint16_t dve_done = p.add_semaphore("dve_tile_done");
  const bool on_scalar = c.scale_engine == Engine::scalar;
  const uint16_t x_free = on_scalar ? act_done : dve_done;

  // Queue semaphores rise by the number of DMA engines per transfer (D1); the kernel waits for
  // the running total, as a compiler does.
  std::vector<int64_t> in_done(count), out_done(count);
  int64_t in_total = arch.dma_engines_for(tiles.parts(0));
  const int64_t gamma_done = in_total;
  int64_t out_total = 0;
  for (int64_t t = 0; t < count; ++t) {
    in_total += arch.dma_engines_for(tiles.parts(t));
    out_total += arch.dma_engines_for(tiles.parts(t));
    in_done[t] = in_total;
    out_done[t] = out_total;
  }
  // Tile t's rows of a buffer, and its per-row scalar `i` (0: mean square, 1: 1/rms).
  auto row = [&](uint64_t offset, int64_t t) { return tiles.sbuf(dt, offset, tiles.parts(t)); };
  auto column = [&](int64_t t, uint64_t i) {
    return isa::sbuf_ap(DType::fp32, 0, tiles.parts(t), scalars + 8 * (t % bufs) + 4 * i, {{1, 1}});
  };
  // rmsnorm sets its waits and updates by hand.
  auto push = [&](Instruction in) { p.stream(in.engine).push_back(std::move(in)); };

  // gamma, broadcast to every partition (partition stride 0), ahead of x on the same queue.
  push(dma_copy(hbm.q_in, row(gamma_at, 0), tiles.hbm_broadcast(dt, hbm.vectors[0]), "load gamma"));
  auto load = [&](int64_t t) {
    Instruction in = dma_copy(hbm.q_in, row(x_at[t % bufs], t), tiles.hbm(dt, hbm.x, t),
                              fmt::format("load x tile {}", t));
    // The x buffer is free once the engine that scales x has read tile t - bufs.
    if (t >= bufs) in.waits.push_back(SemaphoreWait{x_free, t - bufs + 1});
    push(std::move(in));
  };
  auto store = [&](int64_t t) {
    Instruction in = dma_copy(hbm.q_out, tiles.hbm(dt, hbm.y, t), row(scaled_at[t % bufs], t),
                              fmt::format("store y tile {}", t));
    in.waits.push_back(SemaphoreWait{dve_done, t + 1});
    push(std::move(in));
  };

  // SyncE: prefetch `bufs` tiles, then per tile issue the load `bufs` ahead and the store.
  for (int64_t t = 0; t < std::min<int64_t>(bufs, count); ++t) load(t);
  for (int64_t t = 0; t < count; ++t) {
    if (t + bufs < count) load(t + bufs);
    store(t);
  }

  const float inv_sqrt_hidden = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hidden)));
  for (int64_t t = 0; t < count; ++t) {
    const auto x = row(x_at[t % bufs], t), scaled = row(scaled_at[t % bufs], t);
    const auto mean_square = column(t, 0), inv_rms = column(t, 1);
    // ScalarE: mean of squares as square(x / sqrt(hidden)) summed along the free axis; the
    // elementwise result is scratch, written into the `scaled` tile that is rewritten below.
    Instruction sq =
        activation_reduce(Engine::scalar, ActivationFunction::square, scaled, x, inv_sqrt_hidden,
                          0.0f, mean_square, fmt::format("square-sum tile {}", t));
    sq.waits.push_back(SemaphoreWait{sem_in, in_done[t]});
    // `scaled` of this buffer holds y of tile t - bufs until its store completes.
    if (t >= bufs) sq.waits.push_back(SemaphoreWait{sem_out, out_done[t - bufs]});
    push(std::move(sq));
    Instruction rs = activation(Engine::scalar, ActivationFunction::rsqrt, inv_rms, mean_square,
                                1.0f, static_cast<float>(w.eps), fmt::format("rsqrt tile {}", t));
    // When VectorE scales, ScalarE's part of the tile ends here.
    if (!on_scalar) rs.updates.push_back(SemaphoreUpdate{act_done});
    push(std::move(rs));

    const std::string label = fmt::format("scale tile {}", t);
    Instruction mul = tensor_tensor(Engine::vector, scaled, scaled, AluOp::multiply,
                                    row(gamma_at, t), fmt::format("gamma tile {}", t));
    if (on_scalar) {
      Instruction scale =
          activation(Engine::scalar, ActivationFunction::identity, scaled, x, inv_rms, 0.0f, label);
      scale.updates.push_back(SemaphoreUpdate{act_done});
      push(std::move(scale));
      mul.waits.push_back(SemaphoreWait{act_done, t + 1});
    } else {
      Instruction scale = tensor_scalar(Engine::vector, scaled, x, AluOp::multiply, inv_rms, label);
      scale.waits.push_back(SemaphoreWait{act_done, t + 1});
      push(std::move(scale));
    }
    // gamma arrives ahead of x tile 0 on the same in-order queue; said explicitly all the same.
    if (t == 0) mul.waits.push_back(SemaphoreWait{sem_in, gamma_done});
    mul.updates.push_back(SemaphoreUpdate{dve_done});
    push(std::move(mul));
  }

  k.choices = {{"tile_rows", c.tile_rows},
               {"bufs", bufs},
               {"scale_engine", std::string(key_of(c.scale_engine))}};
  // x^2, the sum, the scale by 1/rms and the gamma multiply per element; eps and rsqrt per row.
  k.model_flops = static_cast<uint64_t>(rows) * (4 * static_cast<uint64_t>(hidden) + 2);
  // bf16 output: two roundings to bf16 (scaled x, then y) of 2^-9 relative each, plus fp32
  // accumulation; 1% is about 2.5 bf16 ulps. fp16 and fp8 alike: 2.5 ulps of the dtype (5
  // rounding units) and half a unit absolute for values that round among the smallest ones.
  if (dt == DType::fp32) {
    k.tolerance = Tolerance{1e-5, 1e-4};
  } else if (dt == DType::bf16) {
    k.tolerance = Tolerance{1e-3, 1e-2};
  } else {
    k.tolerance = Tolerance{rounding_unit(dt) / 2, 5 * rounding_unit(dt)};
  }

  if (functional) {
    SeededRandom rng(w.seed);
    HostTensor x = random_normal_tensor("x", dt, w.shape, rng, [](double n) { return n; });
    HostTensor gamma = random_tensor("gamma", dt, {hidden}, [&] { return 0.5 + rng.uniform(); });
    k.expected.push_back(HostTensor{
        "y", dt, w.shape, rmsnorm_reference(x.values, gamma.values, rows, hidden, w.eps)});
    k.inputs.push_back(std::move(x));
    k.inputs.push_back(std::move(gamma));
  }
  return k;
}

}  // namespace trnsim::workloads
