#include "workloads/kernels/softmax.hpp"

#include <fmt/format.h>

#include <cmath>

#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/row_tiles.hpp"

namespace trnsim::workloads {

using isa::ActivationFunction;
using isa::AluOp;
using isa::DType;

ParamSpace softmax_space(const Workload& w, const config::ArchConfig& arch) {
  ParamSpace s;
  s.kernel = "softmax";
  s.unknown = "unknown softmax parameter";
  const int64_t rows = w.shape.empty() ? arch.partitions : w.shape[0];
  s.integer("tile_rows", 1, arch.partitions, arch.partitions, "rows per tile, one per partition")
      .with_role(ParamRole::tile)
      .with_tried(
          covering(integer_values({8, 16, 32, 64}, 1, arch.partitions, arch.partitions), rows));
  ParamDecl& bufs = s.integer("bufs", 1, 8, nullptr, "tiles in flight");
  bufs.default_note = "the most of 3 that fit SBUF";
  bufs.role = ParamRole::buffers;
  bufs.tried = integer_values({1, 2, 3, 4, 6, 8}, 1, 8);
  s.choice("scale_engine", {"vector", "scalar"}, "vector",
           "the engine that multiplies exp(x - max) by 1 / sum")
      .with_role(ParamRole::engine);
  s.constraints = {"an x tile and its per-row values per buffer fit SBUF",
                   "the instructions per tile fit the instruction cap"};
  return s;
}

SoftmaxChoices parse_softmax_choices(const Workload& w, const config::ArchConfig& arch) {
  const ParamSpace space = softmax_space(w, arch);
  const ParamValues v(w, space);
  SoftmaxChoices c;
  c.tile_rows = static_cast<uint32_t>(v.integer("tile_rows"));
  c.bufs = static_cast<uint32_t>(v.integer("bufs"));
  c.scale_engine = v.choice("scale_engine") == "scalar" ? Engine::scalar : Engine::vector;
  return c;
}

std::vector<float> softmax_reference(const std::vector<float>& x, int64_t rows, int64_t hidden) {
  std::vector<float> y(x.size());
  std::vector<double> e(static_cast<size_t>(hidden));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &x[r * hidden];
    double mx = row[0];
    for (int64_t i = 1; i < hidden; ++i) mx = std::max<double>(mx, row[i]);
    double sum = 0;
    for (int64_t i = 0; i < hidden; ++i) sum += e[i] = std::exp(row[i] - mx);
    for (int64_t i = 0; i < hidden; ++i) y[r * hidden + i] = static_cast<float>(e[i] / sum);
  }
  return y;
}

LoweredKernel lower_softmax(const Workload& w, const config::ArchConfig& arch, bool functional) {
  const SoftmaxChoices c = parse_softmax_choices(w, arch);
  const bool on_vector = c.scale_engine == Engine::vector;
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);
  const RowTiles tiles = check_row_kernel(w, arch, functional, c.tile_rows, 128);
  // Per tile: load, store; the max and its negation (VectorE), exp with the sum (ScalarE), the
  // reciprocal and the scale.
  check_row_instructions(w, arch, tiles, 7);

  // One tile per buffer: exp(x - max) and then y overwrite x in place. Per buffer also the row
  // max (in the data's dtype: a max is one of the values, and VectorE reduces bf16 to bf16 at
  // two elements a cycle), then fp32 -max, the sum and 1 / sum.
  struct Layout {
    std::vector<uint64_t> x, small;
    uint64_t bytes = 0;
  };
  auto layout = [&](uint32_t n) {
    Layout l;
    OnChipLayout sb;
    for (uint32_t b = 0; b < n; ++b) l.x.push_back(sb.take(tiles.hidden * es));
    for (uint32_t b = 0; b < n; ++b) l.small.push_back(sb.take(16));
    l.bytes = sb.rounded();
    return l;
  };
  const uint32_t bufs = row_buffers(c.bufs, 3, tiles.count, [&](uint32_t n) {
    return layout(n).bytes <= arch.sbuf_partition_bytes;
  });
  const Layout sb = layout(bufs);
  check_row_sbuf(w, arch, bufs, sb.bytes, "an x tile per buffer");

  LoweredKernel k;
  isa::Program& p = k.program;
  const RowTensors hbm = add_row_tensors(p, w);
  SyncTracker tracker(p, arch);
  const uint16_t sem_max = tracker.semaphore("dve_max_done");
  const uint16_t sem_exp = tracker.semaphore("act_exp_done");
  const uint16_t sem_scale = tracker.semaphore(on_vector ? "dve_scale_done" : "act_scale_done");
  EngineHandle sync(tracker, Engine::sync), act(tracker, Engine::scalar),
      dve(tracker, Engine::vector);

  auto row = [&](int64_t t) { return tiles.sbuf(dt, sb.x[t % bufs], tiles.parts(t)); };
  auto col = [&](int64_t t, uint64_t i, DType type = DType::fp32) {
    return isa::sbuf_ap(type, 0, tiles.parts(t), sb.small[t % bufs] + 4 * i, {{1, 1}});
  };
  constexpr uint64_t kMax = 0, kNegMax = 1, kSum = 2, kRecip = 3;

  std::vector<Signal> loaded(tiles.count, kNotEmitted), stored(tiles.count, kNotEmitted),
      maxed(tiles.count, kNotEmitted), exped(tiles.count, kNotEmitted),
      scaled(tiles.count, kNotEmitted);

  // The buffer holds y of tile t - bufs until its store completes.
  auto load = [&](int64_t t) {
    loaded[t] = sync.dma_copy(hbm.q_in, row(t), tiles.hbm(dt, hbm.x, t),
                              fmt::format("load x tile {}", t), {before(stored, t - bufs)});
  };
  // -max of tile t - bufs is read by its exp; the sum and 1 / sum by the scale.
  auto max_stage = [&](int64_t t) {
    dve.tensor_reduce(col(t, kMax, dt), AluOp::max, row(t), fmt::format("max tile {}", t),
                      {loaded[t], before(exped, t - bufs), before(scaled, t - bufs)});
    maxed[t] = dve.tensor_scalar(col(t, kNegMax), col(t, kMax, dt), AluOp::multiply, -1.0f,
                                 fmt::format("-max tile {}", t), {}, sem_max);
  };
  // ScalarE: exp(x - max) in place, its bias the row's -max, summed along the row as it goes.
  auto exp_stage = [&](int64_t t) {
    exped[t] = act.activation_reduce(ActivationFunction::exp, row(t), row(t), 1.0f, col(t, kNegMax),
                                     col(t, kSum), fmt::format("exp tile {}", t),
                                     {maxed[t], before(scaled, t - bufs)}, sem_exp);
  };
  // y = exp(x - max) * (1 / sum), in place.
  auto scale_stage = [&](int64_t t) {
    const std::string recip = fmt::format("1/sum tile {}", t),
                      scale = fmt::format("scale tile {}", t);
    if (on_vector) {
      dve.reciprocal(col(t, kRecip), col(t, kSum), recip, {exped[t]});
      scaled[t] =
          dve.tensor_scalar(row(t), row(t), AluOp::multiply, col(t, kRecip), scale, {}, sem_scale);
    } else {
      act.activation(ActivationFunction::reciprocal, col(t, kRecip), col(t, kSum), 1.0f, 0.0f,
                     recip, {exped[t]});
      scaled[t] = act.activation(ActivationFunction::identity, row(t), row(t), col(t, kRecip), 0.0f,
                                 scale, {}, sem_scale);
    }
  };
  auto store = [&](int64_t t) {
    stored[t] = sync.dma_copy(hbm.q_out, tiles.hbm(dt, hbm.y, t), row(t),
                              fmt::format("store y tile {}", t), {scaled[t]});
  };

  // With two or more buffers VectorE finds the max of tile t + 1 while ScalarE takes the exp of
  // tile t, and SyncE loads bufs - 1 tiles ahead.
  if (bufs == 1) {
    run_pipeline(tiles.count,
                 {{0, load}, {0, max_stage}, {0, exp_stage}, {0, scale_stage}, {0, store}});
  } else {
    run_pipeline(tiles.count, {{0, max_stage},
                               {1, exp_stage},
                               {1, scale_stage},
                               {1, store},
                               {1 - static_cast<int64_t>(bufs), load}});
  }

  k.choices = {{"tile_rows", c.tile_rows},
               {"bufs", bufs},
               {"scale_engine", std::string(key_of(c.scale_engine))}};
  // Per element: the max's compare, the subtraction, exp, the sum and the scale; per row the
  // reciprocal.
  k.model_flops = static_cast<uint64_t>(tiles.rows) * (5 * static_cast<uint64_t>(tiles.hidden) + 1);
  // y rounds twice in its dtype (exp(x - max), then times 1 / sum): 2u relative, u the dtype's
  // rounding unit; rtol 4u. Values that underflow are off by up to the dtype's smallest
  // subnormal: the absolute part (fp16 2^-24, fp8_e4m3 2^-9, fp8_e5m2 2^-16).
  double atol = 1e-12;
  if (dt == DType::fp16) atol = 0x1.0p-24;
  if (dt == DType::fp8_e4m3) atol = 0x1.0p-9;
  if (dt == DType::fp8_e5m2) atol = 0x1.0p-16;
  k.tolerance = Tolerance{atol, dt == DType::fp32 ? 1e-5 : 4 * rounding_unit(dt)};

  if (functional) {
    SeededRandom rng(w.seed);
    // x ~ 2 N(0, 1): rows whose exps span several orders of magnitude.
    HostTensor x = random_normal_tensor("x", dt, w.shape, rng, [](double n) { return 2.0 * n; });
    k.expected.push_back(
        HostTensor{"y", dt, w.shape, softmax_reference(x.values, tiles.rows, tiles.hidden)});
    k.inputs.push_back(std::move(x));
  }
  return k;
}

}  // namespace trnsim::workloads
