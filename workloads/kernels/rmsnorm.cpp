#include "workloads/kernels/rmsnorm.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trnsim::workloads {

using isa::AccessPattern;
using isa::ActivationFunction;
using isa::AluOp;
using isa::DType;
using isa::Instruction;
using isa::Opcode;
using isa::ScalarOperand;
using isa::SemaphoreUpdate;
using isa::SemaphoreWait;

RmsNormChoices parse_rmsnorm_choices(const Workload& w, const config::ArchConfig& arch) {
  RmsNormChoices c;
  c.tile_rows = arch.partitions;
  const std::vector<std::string> known = {"tile_rows", "bufs", "scale_engine"};
  for (const auto& item : w.params.items()) {
    const std::string where = "/params/" + item.key();
    const auto& v = item.value();
    if (item.key() == "tile_rows" || item.key() == "bufs") {
      const bool rows = item.key() == "tile_rows";
      const int64_t hi = rows ? arch.partitions : 8;
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > hi) {
        throw WorkloadError(w.file, where,
                            fmt::format("expected an integer in [1, {}], got {}", hi, v.dump()));
      }
      (rows ? c.tile_rows : c.bufs) = static_cast<uint32_t>(v.get<int64_t>());
    } else if (item.key() == "scale_engine") {
      const auto e = v.is_string() ? parse_engine(v.get<std::string>()) : std::nullopt;
      if (!e || (*e != Engine::scalar && *e != Engine::vector)) {
        throw WorkloadError(w.file, where,
                            fmt::format("expected \"scalar\" or \"vector\", got {}", v.dump()));
      }
      c.scale_engine = *e;
    } else {
      const std::string near = closest_name(item.key(), known);
      throw WorkloadError(
          w.file, where,
          fmt::format("unknown rmsnorm parameter; expected one of: {}{}", fmt::join(known, ", "),
                      near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
  }
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

namespace {

// Per-partition SBUF placement of the kernel's tiles, bump-allocated. Each buffer holds an x
// tile and a `scaled` tile (x/rms, then y in place); the fp32 per-row scalars of all buffers
// share one small region.
struct SbufLayout {
  uint64_t gamma = 0;
  std::vector<uint64_t> x, scaled, mean_square, inv_rms;
  uint64_t bytes = 0;

  uint64_t take(uint64_t n) {
    const uint64_t at = bytes;
    bytes += (n + 63) / 64 * 64;  // 64-byte aligned rows
    return at;
  }
};

Instruction make(Opcode op, Engine e, std::string label) {
  Instruction in;
  in.opcode = op;
  in.engine = e;
  in.label = std::move(label);
  return in;
}

}  // namespace

LoweredKernel lower_rmsnorm_fused(const Workload& w, const config::ArchConfig& arch,
                                  bool functional) {
  const RmsNormChoices c = parse_rmsnorm_choices(w, arch);
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
  // HBM: x and y of rows x hidden, gamma of hidden; checked before anything is allocated.
  uint64_t tensor_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(rows), static_cast<uint64_t>(hidden),
                             &tensor_bytes) ||
      __builtin_mul_overflow(tensor_bytes, 2 * es, &tensor_bytes) ||
      tensor_bytes > arch.hbm_capacity_bytes) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("x and y of [{}, {}] {} do not fit the {} bytes of HBM of a "
                    "{} core",
                    rows, hidden, isa::name_of(dt), arch.hbm_capacity_bytes, arch.name));
  }
  if (functional) {
    // tensor_bytes <= HBM capacity, so times 64 cores cannot overflow.
    const std::string why = functional_size_problem(tensor_bytes * w.cores);
    if (!why.empty()) throw WorkloadError(w.file, "/shape", why);
  }
  const int64_t tiles = (rows + c.tile_rows - 1) / c.tile_rows;
  // About 6 instructions per tile (load, store, 3 ScalarE, 1-2 VectorE).
  if (static_cast<uint64_t>(tiles) * 7 > arch.max_instructions) {
    throw WorkloadError(w.file, "/shape",
                        fmt::format("{} rows in tiles of {} lower to about {} instructions; a "
                                    "kernel holds at most {} (use larger tiles, params.tile_rows)",
                                    rows, c.tile_rows, tiles * 7, arch.max_instructions));
  }
  // More buffers than tiles buy nothing.
  const uint32_t bufs = static_cast<uint32_t>(std::min<int64_t>(c.bufs, tiles));
  SbufLayout sb;
  sb.gamma = sb.take(hidden * es);
  for (uint32_t b = 0; b < bufs; ++b) {
    sb.x.push_back(sb.take(hidden * es));
    sb.scaled.push_back(sb.take(hidden * es));
  }
  const uint64_t scalars = sb.take(8 * bufs);
  for (uint32_t b = 0; b < bufs; ++b) {
    sb.mean_square.push_back(scalars + 8 * b);
    sb.inv_rms.push_back(scalars + 8 * b + 4);
  }
  if (sb.bytes > arch.sbuf_partition_bytes) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("rmsnorm of hidden size {} ({}) with {} buffers needs {} bytes per "
                    "partition of SBUF (gamma plus an x and a scaled tile per buffer); {} "
                    "has {}. Use fewer buffers (params.bufs) or a smaller hidden size.",
                    hidden, isa::name_of(dt), bufs, sb.bytes, arch.name,
                    arch.sbuf_partition_bytes));
  }

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const auto& x_t = p.add_dram_tensor("x", dt, {rows, hidden});
  const uint64_t x_addr = x_t.address;
  const uint64_t gamma_addr = p.add_dram_tensor("gamma", dt, {hidden}).address;
  const uint64_t y_addr = p.add_dram_tensor("y", dt, {rows, hidden}).address;
  const uint16_t q_in = p.add_queue("qSyncIn");
  const uint16_t q_out = p.add_queue("qSyncOut");
  const uint16_t sem_in = p.queues[q_in].semaphore;
  const uint16_t sem_out = p.queues[q_out].semaphore;
  const uint16_t act_done = p.add_semaphore("act_tile_done");
  const uint16_t dve_done = p.add_semaphore("dve_tile_done");
  const uint16_t x_free = c.scale_engine == Engine::scalar ? act_done : dve_done;

  auto tile_parts = [&](int64_t t) {
    return static_cast<uint32_t>(std::min<int64_t>(c.tile_rows, rows - t * c.tile_rows));
  };
  // Queue semaphores rise by the number of DMA engines per transfer (D1); the kernel waits for
  // the running total, as a compiler does.
  const int64_t gamma_parts = std::min<int64_t>(c.tile_rows, rows);
  std::vector<int64_t> in_done(tiles), out_done(tiles);
  int64_t in_total = arch.dma_engines_for(static_cast<uint32_t>(gamma_parts));
  const int64_t gamma_done = in_total;
  int64_t out_total = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    in_total += arch.dma_engines_for(tile_parts(t));
    out_total += arch.dma_engines_for(tile_parts(t));
    in_done[t] = in_total;
    out_done[t] = out_total;
  }
  auto row = [&](uint64_t offset, uint32_t parts) {
    return isa::sbuf_ap(dt, 0, parts, offset, {{1, static_cast<uint32_t>(hidden)}});
  };
  auto column = [&](uint64_t offset, uint32_t parts) {
    return isa::sbuf_ap(DType::fp32, 0, parts, offset, {{1, 1}});
  };

  auto& sync = p.stream(Engine::sync);
  auto& act = p.stream(Engine::scalar);
  auto& dve = p.stream(Engine::vector);

  // gamma, broadcast to every partition (partition stride 0), ahead of x on the same queue.
  {
    Instruction in = make(Opcode::dma_copy, Engine::sync, "load gamma");
    in.src[0] = isa::hbm_ap(dt, gamma_addr, static_cast<uint32_t>(gamma_parts), 0,
                            {{1, static_cast<uint32_t>(hidden)}});
    in.dst = row(sb.gamma, static_cast<uint32_t>(gamma_parts));
    in.dma_queue = q_in;
    sync.push_back(in);
  }
  auto load = [&](int64_t t) {
    const uint32_t parts = tile_parts(t);
    Instruction in = make(Opcode::dma_copy, Engine::sync, fmt::format("load x tile {}", t));
    in.src[0] = isa::hbm_ap(dt, x_addr + t * c.tile_rows * hidden * es, parts, hidden,
                            {{1, static_cast<uint32_t>(hidden)}});
    in.dst = row(sb.x[t % bufs], parts);
    in.dma_queue = q_in;
    // The x buffer is free once the engine that scales x has read tile t - bufs.
    if (t >= bufs) in.waits.push_back(SemaphoreWait{x_free, t - bufs + 1});
    sync.push_back(in);
  };
  auto store = [&](int64_t t) {
    const uint32_t parts = tile_parts(t);
    Instruction in = make(Opcode::dma_copy, Engine::sync, fmt::format("store y tile {}", t));
    in.src[0] = row(sb.scaled[t % bufs], parts);
    in.dst = isa::hbm_ap(dt, y_addr + t * c.tile_rows * hidden * es, parts, hidden,
                         {{1, static_cast<uint32_t>(hidden)}});
    in.dma_queue = q_out;
    in.waits.push_back(SemaphoreWait{dve_done, t + 1});
    sync.push_back(in);
  };

  // SyncE: prefetch `bufs` tiles, then per tile issue the load `bufs` ahead and the store.
  for (int64_t t = 0; t < std::min<int64_t>(bufs, tiles); ++t) load(t);
  for (int64_t t = 0; t < tiles; ++t) {
    if (t + bufs < tiles) load(t + bufs);
    store(t);
  }

  const float inv_sqrt_hidden = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hidden)));
  for (int64_t t = 0; t < tiles; ++t) {
    const uint32_t parts = tile_parts(t);
    const uint32_t b = static_cast<uint32_t>(t % bufs);
    // ScalarE: mean of squares as square(x / sqrt(hidden)) summed along the free axis; the
    // elementwise result is scratch, written into the `scaled` tile that is rewritten below.
    Instruction sq = make(Opcode::activation, Engine::scalar, fmt::format("square-sum tile {}", t));
    sq.function = ActivationFunction::square;
    sq.src[0] = row(sb.x[b], parts);
    sq.dst = row(sb.scaled[b], parts);
    sq.scale = ScalarOperand::immediate(inv_sqrt_hidden);
    sq.accumulate = column(sb.mean_square[b], parts);
    sq.waits.push_back(SemaphoreWait{sem_in, in_done[t]});
    // `scaled` of this buffer holds y of tile t - bufs until its store completes.
    if (t >= bufs) sq.waits.push_back(SemaphoreWait{sem_out, out_done[t - bufs]});
    act.push_back(sq);

    Instruction rs = make(Opcode::activation, Engine::scalar, fmt::format("rsqrt tile {}", t));
    rs.function = ActivationFunction::rsqrt;
    rs.src[0] = column(sb.mean_square[b], parts);
    rs.dst = column(sb.inv_rms[b], parts);
    rs.bias = ScalarOperand::immediate(static_cast<float>(w.eps));
    // When VectorE scales, ScalarE's part of the tile ends here.
    if (c.scale_engine == Engine::vector) rs.updates.push_back(SemaphoreUpdate{act_done});
    act.push_back(rs);

    Instruction scale;
    if (c.scale_engine == Engine::scalar) {
      scale = make(Opcode::activation, Engine::scalar, fmt::format("scale tile {}", t));
      scale.function = ActivationFunction::identity;
      scale.scale = ScalarOperand::from(column(sb.inv_rms[b], parts));
    } else {
      scale = make(Opcode::tensor_scalar, Engine::vector, fmt::format("scale tile {}", t));
      scale.op0 = AluOp::multiply;
      scale.operand0 = ScalarOperand::from(column(sb.inv_rms[b], parts));
      scale.waits.push_back(SemaphoreWait{act_done, t + 1});
    }
    scale.src[0] = row(sb.x[b], parts);
    scale.dst = row(sb.scaled[b], parts);

    Instruction mul = make(Opcode::tensor_tensor, Engine::vector, fmt::format("gamma tile {}", t));
    mul.op0 = AluOp::multiply;
    mul.src[0] = row(sb.scaled[b], parts);
    mul.src[1] = row(sb.gamma, parts);
    mul.dst = row(sb.scaled[b], parts);  // in place
    if (c.scale_engine == Engine::scalar) {
      scale.updates.push_back(SemaphoreUpdate{act_done});
      act.push_back(scale);
      mul.waits.push_back(SemaphoreWait{act_done, t + 1});
    } else {
      dve.push_back(scale);
    }
    // gamma arrives ahead of x tile 0 on the same in-order queue; said explicitly all the same.
    if (t == 0) mul.waits.push_back(SemaphoreWait{sem_in, gamma_done});
    mul.updates.push_back(SemaphoreUpdate{dve_done});
    dve.push_back(mul);
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
    HostTensor x{"x", dt, {rows, hidden}, std::vector<float>(rows * hidden)};
    for (float& v : x.values) v = isa::round_to(dt, static_cast<float>(rng.normal()));
    HostTensor gamma{"gamma", dt, {hidden}, std::vector<float>(hidden)};
    for (float& v : gamma.values) v = isa::round_to(dt, static_cast<float>(0.5 + rng.uniform()));
    k.expected.push_back(HostTensor{
        "y", dt, {rows, hidden}, rmsnorm_reference(x.values, gamma.values, rows, hidden, w.eps)});
    k.inputs.push_back(std::move(x));
    k.inputs.push_back(std::move(gamma));
  }
  return k;
}

}  // namespace trnsim::workloads
