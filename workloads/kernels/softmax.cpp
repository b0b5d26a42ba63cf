#include "workloads/kernels/softmax.hpp"

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

SoftmaxChoices parse_softmax_choices(const Workload& w, const config::ArchConfig& arch) {
  SoftmaxChoices c;
  check_param_keys(w, "softmax", {"tile_rows", "bufs", "scale_engine"});
  c.tile_rows = static_cast<uint32_t>(
      int_param(w, "tile_rows", 1, arch.partitions, static_cast<int64_t>(arch.partitions)));
  c.bufs = static_cast<uint32_t>(int_param(w, "bufs", 1, 8, 0));
  c.scale_engine = choice_param(w, "scale_engine", {"vector", "scalar"}, "vector") == "scalar"
                       ? Engine::scalar
                       : Engine::vector;
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
  const uint64_t xy =
      saturating_product({2, static_cast<uint64_t>(rows), static_cast<uint64_t>(hidden), es});
  check_hbm_bytes(w, arch, functional, xy == UINT64_MAX ? xy : xy + 128,
                  fmt::format("x and y of [{}, {}] {}", rows, hidden, isa::name_of(dt)));
  const int64_t tiles = (rows + c.tile_rows - 1) / c.tile_rows;
  // Per tile: load, store; the max and its negation (VectorE), exp with the sum (ScalarE), the
  // reciprocal and the scale.
  const uint64_t instructions = saturating_product({static_cast<uint64_t>(tiles), 7});
  check_instruction_count(w, arch, instructions,
                          "use larger tiles, params.tile_rows, or fewer rows");

  // One tile per buffer: exp(x - max) and then y overwrite x in place. Per buffer also the row
  // max (in the data's dtype: a max is one of the values, and VectorE reduces bf16 to bf16 at
  // two elements a cycle), then fp32 -max, the sum and 1 / sum.
  auto layout = [&](uint32_t n, std::vector<uint64_t>* x_at, std::vector<uint64_t>* small_at) {
    OnChipLayout sb;
    for (uint32_t b = 0; b < n; ++b) x_at->push_back(sb.take(hidden * es));
    for (uint32_t b = 0; b < n; ++b) small_at->push_back(sb.take(16));
    return sb.rounded();
  };
  // More buffers than tiles buy nothing.
  uint32_t bufs = static_cast<uint32_t>(std::min<int64_t>(c.bufs == 0 ? 3 : c.bufs, tiles));
  std::vector<uint64_t> x_at, small_at;
  uint64_t sbuf_bytes = layout(bufs, &x_at, &small_at);
  while (c.bufs == 0 && bufs > 1 && sbuf_bytes > arch.sbuf_partition_bytes) {
    x_at.clear();
    small_at.clear();
    sbuf_bytes = layout(--bufs, &x_at, &small_at);
  }
  if (sbuf_bytes > arch.sbuf_partition_bytes) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("softmax of hidden size {} ({}) with {} buffers needs {} bytes per partition "
                    "of SBUF (an x tile per buffer); {} has {}. Use fewer buffers (params.bufs) "
                    "or a smaller hidden size.",
                    hidden, isa::name_of(dt), bufs, sbuf_bytes, arch.name,
                    arch.sbuf_partition_bytes));
  }

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const uint64_t x_addr = p.add_dram_tensor("x", dt, {rows, hidden}).address;
  const uint64_t y_addr = p.add_dram_tensor("y", dt, {rows, hidden}).address;
  const uint16_t q_in = p.add_queue("qSyncIn");
  const uint16_t q_out = p.add_queue("qSyncOut");
  SyncTracker sync(p, arch);
  const uint16_t sem_max = sync.semaphore("dve_max_done");
  const uint16_t sem_exp = sync.semaphore("act_exp_done");
  const uint16_t sem_scale = sync.semaphore(on_vector ? "dve_scale_done" : "act_scale_done");

  auto parts_of = [&](int64_t t) {
    return static_cast<uint32_t>(std::min<int64_t>(c.tile_rows, rows - t * c.tile_rows));
  };
  auto row = [&](uint32_t b, uint32_t parts) {
    return isa::sbuf_ap(dt, 0, parts, x_at[b], {{1, static_cast<uint32_t>(hidden)}});
  };
  auto col = [&](uint32_t b, uint64_t i, uint32_t parts, DType t = DType::fp32) {
    return isa::sbuf_ap(t, 0, parts, small_at[b] + 4 * i, {{1, 1}});
  };
  constexpr uint64_t kMax = 0, kNegMax = 1, kSum = 2, kRecip = 3;

  std::vector<Signal> loaded(tiles, kNotEmitted), stored(tiles, kNotEmitted),
      maxed(tiles, kNotEmitted), exped(tiles, kNotEmitted), scaled(tiles, kNotEmitted);
  auto before = [&](const std::vector<Signal>& s, int64_t t) { return t < 0 ? Signal{} : s[t]; };

  const PipelineStage load{0, [&](int64_t t) {
                             const uint32_t parts = parts_of(t);
                             Instruction in = make_instruction(Opcode::dma_copy, Engine::sync,
                                                               fmt::format("load x tile {}", t));
                             in.src[0] =
                                 isa::hbm_ap(dt, x_addr + t * c.tile_rows * hidden * es, parts,
                                             hidden, {{1, static_cast<uint32_t>(hidden)}});
                             in.dst = row(t % bufs, parts);
                             in.dma_queue = q_in;
                             // The buffer holds y of tile t - bufs until its store completes.
                             loaded[t] = sync.emit(in, {before(stored, t - bufs)});
                           }};
  const PipelineStage max_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        Instruction mx =
            make_instruction(Opcode::tensor_reduce, Engine::vector, fmt::format("max tile {}", t));
        mx.op0 = AluOp::max;
        mx.src[0] = row(b, parts);
        mx.dst = col(b, kMax, parts, dt);
        // -max of tile t - bufs is read by its exp; the sum and 1 / sum by the scale.
        sync.emit(mx, {loaded[t], before(exped, t - bufs), before(scaled, t - bufs)});
        Instruction neg =
            make_instruction(Opcode::tensor_scalar, Engine::vector, fmt::format("-max tile {}", t));
        neg.op0 = AluOp::multiply;
        neg.operand0 = ScalarOperand::immediate(-1.0f);
        neg.src[0] = col(b, kMax, parts, dt);
        neg.dst = col(b, kNegMax, parts);
        maxed[t] = sync.emit(neg, {}, sem_max);
      }};
  // ScalarE: exp(x - max) in place, its bias the row's -max, summed along the row as it goes.
  const PipelineStage exp_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        Instruction ex =
            make_instruction(Opcode::activation, Engine::scalar, fmt::format("exp tile {}", t));
        ex.function = ActivationFunction::exp;
        ex.src[0] = row(b, parts);
        ex.dst = row(b, parts);
        ex.bias = ScalarOperand::from(col(b, kNegMax, parts));
        ex.accumulate = col(b, kSum, parts);
        exped[t] = sync.emit(ex, {maxed[t], before(scaled, t - bufs)}, sem_exp);
      }};
  // y = exp(x - max) * (1 / sum), in place.
  const PipelineStage scale_stage{
      0, [&](int64_t t) {
        const uint32_t parts = parts_of(t);
        const uint32_t b = static_cast<uint32_t>(t % bufs);
        Instruction rc, sc;
        if (on_vector) {
          rc =
              make_instruction(Opcode::reciprocal, Engine::vector, fmt::format("1/sum tile {}", t));
          sc = make_instruction(Opcode::tensor_scalar, Engine::vector,
                                fmt::format("scale tile {}", t));
          sc.op0 = AluOp::multiply;
          sc.operand0 = ScalarOperand::from(col(b, kRecip, parts));
        } else {
          rc =
              make_instruction(Opcode::activation, Engine::scalar, fmt::format("1/sum tile {}", t));
          rc.function = ActivationFunction::reciprocal;
          sc =
              make_instruction(Opcode::activation, Engine::scalar, fmt::format("scale tile {}", t));
          sc.function = ActivationFunction::identity;
          sc.scale = ScalarOperand::from(col(b, kRecip, parts));
        }
        rc.src[0] = col(b, kSum, parts);
        rc.dst = col(b, kRecip, parts);
        sync.emit(rc, {exped[t]});
        sc.src[0] = row(b, parts);
        sc.dst = row(b, parts);
        scaled[t] = sync.emit(sc, {}, sem_scale);
      }};
  const PipelineStage store{0, [&](int64_t t) {
                              const uint32_t parts = parts_of(t);
                              Instruction in = make_instruction(Opcode::dma_copy, Engine::sync,
                                                                fmt::format("store y tile {}", t));
                              in.src[0] = row(t % bufs, parts);
                              in.dst =
                                  isa::hbm_ap(dt, y_addr + t * c.tile_rows * hidden * es, parts,
                                              hidden, {{1, static_cast<uint32_t>(hidden)}});
                              in.dma_queue = q_out;
                              stored[t] = sync.emit(in, {scaled[t]});
                            }};

  // With two or more buffers VectorE finds the max of tile t + 1 while ScalarE takes the exp of
  // tile t, and SyncE loads bufs - 1 tiles ahead.
  auto at = [](PipelineStage s, int64_t lag) {
    s.lag = lag;
    return s;
  };
  if (bufs == 1) {
    run_pipeline(tiles, {load, max_stage, exp_stage, scale_stage, store});
  } else {
    run_pipeline(tiles, {at(max_stage, 0), at(exp_stage, 1), at(scale_stage, 1), at(store, 1),
                         at(load, 1 - static_cast<int64_t>(bufs))});
  }

  k.choices = {{"tile_rows", c.tile_rows},
               {"bufs", bufs},
               {"scale_engine", std::string(key_of(c.scale_engine))}};
  // Per element: the max's compare, the subtraction, exp, the sum and the scale; per row the
  // reciprocal.
  k.model_flops = static_cast<uint64_t>(rows) * (5 * static_cast<uint64_t>(hidden) + 1);
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
    HostTensor x{"x", dt, {rows, hidden}, std::vector<float>(rows * hidden)};
    for (float& v : x.values) v = isa::round_to(dt, static_cast<float>(2.0 * rng.normal()));
    k.expected.push_back(
        HostTensor{"y", dt, {rows, hidden}, softmax_reference(x.values, rows, hidden)});
    k.inputs.push_back(std::move(x));
  }
  return k;
}

}  // namespace trnsim::workloads
