#include "workloads/kernels/mlp.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/tile_ops.hpp"

namespace trnsim::workloads {

using isa::ActivationFunction;
using isa::DType;

namespace {

const std::vector<std::string> kActivations = {"gelu", "gelu_tanh", "silu"};

// The sizes the lowering works with and what SBUF holds, per partition.
struct MlpPlan {
  int64_t mc = 0;       // rows of x per chunk
  uint32_t tf = 0;      // hidden (F) rows per tile: output partitions, then contraction
  int64_t w1_cols = 0;  // columns of w1 per load
  int64_t w2_rows = 0;  // rows of w2 per load
  int64_t d_chunk = 0;  // columns of y per accumulation group (the second matmul's moving)
  uint64_t x_bytes = 0, h_bytes = 0, w1_bytes = 0, w2_bytes = 0, out_bytes = 0;
  uint32_t x_bufs = 0, bufs = 0, out_bufs = 0;
  uint64_t total() const {
    auto pad = [](uint64_t n) { return (n + 63) / 64 * 64; };
    return x_bufs * pad(x_bytes) + pad(h_bytes) + bufs * (pad(w1_bytes) + pad(w2_bytes)) +
           out_bufs * pad(out_bytes);
  }
};

MlpPlan plan_mlp(const MlpChoices& c, const MatmulTiles& t, const std::vector<int64_t>& shape,
                 uint64_t es) {
  const int64_t M = shape[0], D = shape[1], F = shape[2];
  MlpPlan p;
  p.mc = std::min<int64_t>(c.block_m, M);
  p.tf = std::min(t.k, t.m);
  p.w1_cols = std::min<int64_t>(int64_t(c.w1_tiles) * p.tf, F);
  p.w2_rows = std::min<int64_t>(int64_t(c.w2_tiles) * p.tf, F);
  p.d_chunk = std::min<int64_t>(t.n, D);
  p.x_bytes = ceil_div(D, t.k) * p.mc * es;        // x^T: [D, mc] as d-tiles of mc
  p.h_bytes = ceil_div(F, p.tf) * p.mc * es;       // h^T: [F, mc] as f-tiles of mc
  p.w1_bytes = ceil_div(D, t.k) * p.w1_cols * es;  // w1[:, piece] as d-tiles
  p.w2_bytes = ceil_div(p.w2_rows, p.tf) * p.d_chunk * es;
  p.out_bytes = p.d_chunk * es;
  p.x_bufs = c.x_bufs;
  p.bufs = c.bufs;
  p.out_bufs = c.out_bufs;
  return p;
}

// The workload's tensor_parallel: the number of cores F is split over (1 without it).
uint32_t tensor_parallel_ranks(const Workload& w) {
  if (!w.options.contains("tensor_parallel")) return 1;
  const auto& v = w.options["tensor_parallel"];
  if (!v.is_boolean()) {
    throw WorkloadError(w.file, "/tensor_parallel",
                        fmt::format("expected true or false, got {}", v.dump()));
  }
  return v.get<bool>() ? w.cores : 1;
}

// A whole [rows, cols] HBM tensor as one access pattern (a collective's operand).
isa::AccessPattern whole(DType dt, const HbmMatrix& m) {
  return isa::hbm_ap(dt, m.address, 1, 0,
                     {{m.cols, static_cast<uint32_t>(m.rows)}, {1, static_cast<uint32_t>(m.cols)}});
}

}  // namespace

double activation_reference(ActivationFunction f, double x) {
  switch (f) {
    case ActivationFunction::gelu:  // exact: x * Phi(x), as isa::apply
      return 0.5 * x * (1.0 + std::erf(x * 0.7071067811865476));
    case ActivationFunction::gelu_tanh:
      return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case ActivationFunction::silu:
      return x / (1.0 + std::exp(-x));
    default:
      return isa::apply(f, static_cast<float>(x));
  }
}

std::vector<float> mlp_reference(const std::vector<float>& x, const std::vector<float>& w1,
                                 const std::vector<float>& w2, int64_t m, int64_t d, int64_t f,
                                 ActivationFunction act, DType hidden_dtype) {
  using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowMajorD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajorF> X(x.data(), m, d);
  const Eigen::Map<const RowMajorF> W1(w1.data(), d, f);
  const Eigen::Map<const RowMajorF> W2(w2.data(), f, d);
  RowMajorD h = X.cast<double>() * W1.cast<double>();
  for (Eigen::Index i = 0; i < h.size(); ++i) {
    h.data()[i] =
        isa::round_to(hidden_dtype, static_cast<float>(activation_reference(act, h.data()[i])));
  }
  const RowMajorD y = h * W2.cast<double>();
  std::vector<float> out(static_cast<size_t>(m * d));
  for (int64_t i = 0; i < m * d; ++i) out[i] = static_cast<float>(y.data()[i]);
  return out;
}

ParamSpace mlp_space(const Workload& w, const config::ArchConfig& arch) {
  ParamSpace s;
  s.kernel = "mlp";
  s.unknown = "unknown mlp parameter";
  const MatmulTiles t = matmul_tiles(arch);
  const int64_t M = w.shape.empty() ? t.n : w.shape[0];
  const int64_t F = w.shape.size() > 2 ? w.shape[2] : 4096;
  const int64_t tf = std::min(t.k, t.m);
  const char* fit = "the largest that fits SBUF of the default";
  // Rows of x per chunk: as many whole output tiles as one moving holds (512 on trn2).
  ParamDecl& bm = s.integer("block_m", 1, t.n, t.n >= t.m ? t.n / t.m * t.m : t.n,
                            "rows of x per chunk: the moving of the first matmul");
  bm.range_note = " (rows of x per chunk, at most one moving)";
  bm.default_note = "shrunk by tile_m until the buffers fit SBUF";
  bm.role = ParamRole::block;
  bm.tried = covering(doubling_values(t.m, t.n, M), M);
  ParamDecl& w1 = s.integer("w1_tiles", 1, 16, 4, "columns of w1 per load, in F tiles");
  w1.default_note = "4, 2 or 1: " + std::string(fit);
  w1.role = ParamRole::block;
  w1.tried = covering(doubling_values(1, 16, ceil_div(F, tf)), ceil_div(F, tf));
  s.integer("w2_tiles", 1, 64, 8, "rows of w2 per load, in F tiles")
      .with_role(ParamRole::block)
      .with_tried(covering(doubling_values(1, 64, ceil_div(F, tf)), ceil_div(F, tf)));
  s.integer("bufs", 1, 8, 2, "weight buffers of each kind")
      .with_role(ParamRole::buffers)
      .with_tried(integer_values({1, 2, 3, 4}, 1, 8));
  ParamDecl& xb = s.integer("x_bufs", 1, 2, 2, "x^T chunks in SBUF");
  xb.default_note = "2, or 1 when two do not fit SBUF";
  xb.role = ParamRole::buffers;
  xb.tried = {1, 2};
  s.integer("out_bufs", 1, 8, 4, "output staging tiles")
      .with_role(ParamRole::buffers)
      .with_tried(integer_values({1, 2, 4, 8}, 1, 8));
  s.integer("psum_bufs", 1, arch.psum_banks, arch.psum_banks, "PSUM banks")
      .with_role(ParamRole::buffers)
      .with_tried(integer_values({2, 4, 8}, 1, arch.psum_banks, arch.psum_banks));
  s.constraints = {"the hidden h^T of a chunk, x^T, w1, w2 and output buffers fit SBUF",
                   "psum_bufs holds the second matmul's accumulation groups (block_m / tile_m)",
                   "the instructions fit the instruction cap"};
  return s;
}

MlpChoices parse_mlp_choices(const Workload& w, const config::ArchConfig& arch) {
  MlpChoices c;
  if (!w.options.contains("activation")) {
    throw WorkloadError(w.file, "/activation",
                        fmt::format("missing; expected one of: {}", fmt::join(kActivations, ", ")));
  }
  const auto& a = w.options["activation"];
  const std::string name = a.is_string() ? a.get<std::string>() : a.dump();
  if (!a.is_string() ||
      std::find(kActivations.begin(), kActivations.end(), name) == kActivations.end()) {
    const std::string near = closest_name(name, kActivations);
    throw WorkloadError(
        w.file, "/activation",
        fmt::format("unknown activation {}; expected one of: {}{}", a.dump(),
                    fmt::join(kActivations, ", "),
                    near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
  }
  c.activation = *isa::parse_activation_function(name);
  const ParamSpace space = mlp_space(w, arch);
  const ParamValues v(w, space);
  c.block_m = v.integer("block_m");
  c.w1_tiles = static_cast<uint32_t>(v.integer("w1_tiles"));
  c.w2_tiles = static_cast<uint32_t>(v.integer("w2_tiles"));
  c.bufs = static_cast<uint32_t>(v.integer("bufs"));
  c.x_bufs = static_cast<uint32_t>(v.integer("x_bufs"));
  c.out_bufs = static_cast<uint32_t>(v.integer("out_bufs"));
  c.psum_bufs = static_cast<uint32_t>(v.integer("psum_bufs"));
  c.block_m_given = v.given("block_m");
  c.w1_tiles_given = v.given("w1_tiles");
  c.x_bufs_given = v.given("x_bufs");
  return c;
}

LoweredKernel lower_mlp(const Workload& w, const config::ArchConfig& arch, bool functional) {
  MlpChoices c = parse_mlp_choices(w, arch);
  const MatmulTiles t = matmul_tiles(arch);
  // Tensor parallel (docs/chip.md, "A tensor-parallel MLP"): each of the run's cores holds a
  // slice of F, columns of w1 and rows of w2, computes its partial y, and an all-reduce sums the
  // partials into y on every core (Megatron-LM's MLP split: no communication between the two
  // matmuls).
  const uint32_t ranks = tensor_parallel_ranks(w);
  const int64_t M = w.shape[0], D = w.shape[1], F_total = w.shape[2];
  if (F_total % ranks != 0) {
    throw WorkloadError(w.file, "/shape/2",
                        fmt::format("tensor_parallel splits F = {} over {} cores; {} is not a "
                                    "multiple of {}",
                                    F_total, ranks, F_total, ranks));
  }
  const int64_t F = F_total / ranks;
  std::vector<int64_t> shape = w.shape;
  shape[2] = F;
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);

  uint64_t md = 0, df = 0, hbm = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(M), static_cast<uint64_t>(D), &md) ||
      __builtin_mul_overflow(static_cast<uint64_t>(D), static_cast<uint64_t>(F), &df) ||
      __builtin_add_overflow(md, df, &hbm) || __builtin_mul_overflow(hbm, 2 * es, &hbm) ||
      hbm > arch.hbm_capacity_bytes) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("x and y [{}, {}], w1 [{}, {}] and w2 [{}, {}] in {} do not "
                    "fit the {} bytes of HBM of a {} core",
                    M, D, D, F, F, D, isa::name_of(dt), arch.hbm_capacity_bytes, arch.name));
  }

  // SBUF: the largest chunk of x (in steps of tile_m), then two x^T buffers over one, then the
  // widest w1 pieces that fit beside the hidden, among the sizes not given.
  const uint64_t sbuf = arch.sbuf_partition_bytes;
  {
    const MlpChoices start = c;
    std::vector<int64_t> chunks;
    for (int64_t mc = start.block_m; mc >= 1; mc -= t.m) {
      chunks.push_back(mc);
      if (start.block_m_given || mc <= t.m) break;
    }
    const std::vector<uint32_t> x_bufs =
        start.x_bufs_given ? std::vector<uint32_t>{start.x_bufs} : std::vector<uint32_t>{2, 1};
    const std::vector<uint32_t> w1_tiles = start.w1_tiles_given
                                               ? std::vector<uint32_t>{start.w1_tiles}
                                               : std::vector<uint32_t>{4, 2, 1};
    bool fits = false;
    for (int64_t mc : chunks) {
      for (uint32_t xb : x_bufs) {
        for (uint32_t w1t : w1_tiles) {
          MlpChoices x = start;
          x.block_m = mc, x.x_bufs = xb, x.w1_tiles = w1t;
          if (!fits && plan_mlp(x, t, shape, es).total() <= sbuf) {
            c = x;
            fits = true;
          }
        }
      }
    }
  }
  const MlpPlan plan = plan_mlp(c, t, shape, es);
  const int64_t m_tiles = ceil_div(plan.mc, t.m);  // accumulation groups open at once
  if (plan.total() > sbuf) {
    const std::string need = fmt::format(
        "needs {} bytes per partition of SBUF (the hidden h^T {} for {} rows of x, x^T {} x {}, "
        "w1 {} x {}, w2 {} x {}, output {} x {}); {} has {}",
        plan.total(), plan.h_bytes, plan.mc, plan.x_bufs, plan.x_bytes, plan.bufs, plan.w1_bytes,
        plan.bufs, plan.w2_bytes, plan.out_bufs, plan.out_bytes, arch.name, sbuf);
    for (const std::string& key : mlp_space(w, arch).param_names()) {
      if (w.params.contains(key) && key != "psum_bufs") {
        throw WorkloadError(w.file, "/params/" + key,
                            fmt::format("mlp {}. Use smaller sizes or fewer bufs", need));
      }
    }
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("mlp of D = {}, F = {} ({}) keeps the hidden of a chunk of x on "
                    "chip and {}",
                    D, F, isa::name_of(dt), need));
  }
  if (static_cast<int64_t>(c.psum_bufs) < m_tiles) {
    throw WorkloadError(
        w.file, "/params/psum_bufs",
        fmt::format("the second matmul accumulates {} output tiles at once (block_m "
                    "{} in tiles of {}); psum_bufs {} is fewer",
                    m_tiles, plan.mc, t.m, c.psum_bufs));
  }
  const double chunks = ceil_div(M, plan.mc), DT = ceil_div(D, t.k), FT = ceil_div(F, plan.tf);
  const double DC = ceil_div(D, plan.d_chunk);
  const double estimate =
      chunks * (DT + FT * DT + FT + DC * FT * m_tiles + DC * m_tiles * 2 + 2 * FT +
                DC * ceil_div(F, plan.w2_rows) + ceil_div(F, plan.w1_cols));
  // A program of stream_from instructions or more is streamed (EngineStreams::finish), on one
  // core only. max_instructions bounds the memory of a program held whole.
  const bool streamed = ranks == 1 && estimate >= static_cast<double>(w.stream_from);
  if (!streamed && estimate > static_cast<double>(arch.max_instructions)) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("mlp [{}, {}, {}] lowers to about {:.0f} instructions; a kernel "
                    "holds at most {}",
                    M, D, F, estimate, arch.max_instructions));
  }

  // Last: the one limit that --timing-only lifts.
  if (functional) {
    const std::string why = functional_size_problem(hbm * w.cores);
    if (!why.empty()) throw WorkloadError(w.file, "/shape", why);
  }

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const HbmMatrix x{"x", p.add_dram_tensor("x", dt, {M, D}).address, M, D};
  const HbmMatrix w1{"w1", p.add_dram_tensor("w1", dt, {D, F}).address, D, F};
  const HbmMatrix w2{"w2", p.add_dram_tensor("w2", dt, {F, D}).address, F, D};
  const HbmMatrix y{"y", p.add_dram_tensor("y", dt, {M, D}).address, M, D};
  // Each core's partial y before the all-reduce (tensor parallel over several cores only).
  const HbmMatrix y_partial =
      ranks > 1 ? HbmMatrix{"y_partial", p.add_dram_tensor("y_partial", dt, {M, D}).address, M, D}
                : y;

  EngineStreams streams(p, arch, w.file,
                        streamed ? EngineStreams::Mode::count : EngineStreams::Mode::store);
  const uint16_t q_x = streams.add_queue("q_load_x");
  const uint16_t q_w1 = streams.add_queue("q_load_w1");
  const uint16_t q_w2 = streams.add_queue("q_load_w2");
  const uint16_t q_y = streams.add_queue("q_store_y");

  // Emits the whole kernel into `streams`; returns the bytes its DMAs read from HBM. Everything
  // it needs is its own (a copy), so that a streamed program can run it again later.
  const auto emit_all = [=](EngineStreams& streams) -> uint64_t {
    TileOps ops(streams, arch, dt);

    SbufAllocator sb;
    SbufRing x_bufs(sb, plan.x_bufs, plan.x_bytes);
    const uint64_t h_base = sb.take(plan.h_bytes);
    SbufRing w1_bufs(sb, plan.bufs, plan.w1_bytes);
    SbufRing w2_bufs(sb, plan.bufs, plan.w2_bytes);
    SbufRing out_bufs(sb, plan.out_bufs, plan.out_bytes);
    PsumBanks banks(arch, c.psum_bufs);
    std::vector<RegionAccesses> hidden(static_cast<size_t>(FT));  // per F tile of h^T
    Completions y_stored;  // every store of y (or of the partial y)

    for (int64_t m0 = 0; m0 < M; m0 += plan.mc) {
      const int64_t mc = std::min(plan.mc, M - m0);
      // x^T of the chunk, [D, mc], through the DMA transpose unit: TensorE contracts over
      // partitions, so the first matmul's moving is x with D on partitions.
      OnChipTile& xs = x_bufs.next();
      xs.access.wrote(ops.load_transposed(q_x, x, 0, D, m0, mc, t.k, xs.offset, plan.mc,
                                          xs.access.before_write()));

      // h^T = act(w1^T x^T), an F tile at a time: stationary w1[d tile, f tile], moving x^T[d
      // tile, mc], accumulated over D in one PSUM bank; ScalarE applies the activation reading
      // PSUM and writes h^T in dtype to SBUF, where the second matmul wants it (F on partitions).
      for (int64_t f0p = 0; f0p < F; f0p += plan.w1_cols) {
        const int64_t fpc = std::min(plan.w1_cols, F - f0p);
        OnChipTile& ws = w1_bufs.next();
        ws.access.wrote(ops.load(q_w1, w1, 0, D, f0p, fpc, t.k, ws.offset, plan.w1_cols,
                                 ws.access.before_write()));
        for (int64_t ft = 0; ft * plan.tf < fpc; ++ft) {
          const int64_t f0 = f0p + ft * plan.tf;
          const auto fr = static_cast<uint32_t>(std::min<int64_t>(plan.tf, F - f0));
          const auto fi = static_cast<size_t>(f0 / plan.tf);
          OnChipTile& bank = banks.next();
          Completion last;
          for (int64_t d0 = 0; d0 < D; d0 += t.k) {
            const auto dr = static_cast<uint32_t>(std::min<int64_t>(t.k, D - d0));
            const int64_t dt_index = d0 / t.k;
            Completions after = ws.access.before_read() + xs.access.before_read();
            if (d0 == 0) after.add(bank.access.before_write());
            last = ops.matmul(bank.offset, dr, fr, static_cast<uint32_t>(mc),
                              ws.offset + (dt_index * plan.w1_cols + ft * plan.tf) * es,
                              xs.offset + dt_index * plan.mc * es, d0 == 0, d0 + t.k >= D, after,
                              [&] { return fmt::format("mm1 r{} f{} d{}", m0, f0, d0); });
            ws.access.read(last);
            xs.access.read(last);
          }
          bank.access.wrote(last);
          const Completion h = ops.evacuate(
              Engine::scalar, c.activation, bank.offset, fr, static_cast<uint32_t>(mc), dt,
              h_base + fi * plan.mc * es, bank.access.before_read() + hidden[fi].before_write(),
              [&] { return fmt::format("{} r{} f{}", isa::name_of(c.activation), m0, f0); });
          bank.access.read(h);
          hidden[fi].wrote(h);
        }
      }

      // y = h w2, a chunk of D columns at a time: one accumulation group per output tile of
      // the chunk's rows, open together across all of F; w2 streams through in pieces of rows.
      for (int64_t d0 = 0; d0 < D; d0 += plan.d_chunk) {
        const auto dc = static_cast<uint32_t>(std::min(plan.d_chunk, D - d0));
        std::vector<OnChipTile*> group;
        for (int64_t g = 0; g < ceil_div(mc, t.m); ++g) group.push_back(&banks.next());
        std::vector<Completion> last(group.size());
        for (int64_t f0p = 0; f0p < F; f0p += plan.w2_rows) {
          const int64_t frows = std::min(plan.w2_rows, F - f0p);
          OnChipTile& ws = w2_bufs.next();
          ws.access.wrote(ops.load(q_w2, w2, f0p, frows, d0, dc, plan.tf, ws.offset, plan.d_chunk,
                                   ws.access.before_write()));
          for (int64_t ft = 0; ft * plan.tf < frows; ++ft) {
            const int64_t f0 = f0p + ft * plan.tf;
            const auto fr = static_cast<uint32_t>(std::min<int64_t>(plan.tf, F - f0));
            const auto fi = static_cast<size_t>(f0 / plan.tf);
            for (size_t g = 0; g < group.size(); ++g) {
              const int64_t r0 = static_cast<int64_t>(g) * t.m;
              const auto mr = static_cast<uint32_t>(std::min<int64_t>(t.m, mc - r0));
              Completions after = hidden[fi].before_read() + ws.access.before_read();
              if (f0 == 0) after.add(group[g]->access.before_write());
              last[g] =
                  ops.matmul(group[g]->offset, fr, mr, dc, h_base + (fi * plan.mc + r0) * es,
                             ws.offset + ft * plan.d_chunk * es, f0 == 0, f0 + plan.tf >= F, after,
                             [&] { return fmt::format("mm2 r{} c{} f{}", m0 + r0, d0, f0); });
              hidden[fi].read(last[g]);
              ws.access.read(last[g]);
            }
          }
        }
        for (size_t g = 0; g < group.size(); ++g) {
          const int64_t r0 = m0 + static_cast<int64_t>(g) * t.m;
          const auto mr = static_cast<uint32_t>(std::min<int64_t>(t.m, m0 + mc - r0));
          group[g]->access.wrote(last[g]);
          OnChipTile& out = out_bufs.next();
          const Completion done =
              ops.evacuate(Engine::vector, ActivationFunction::copy, group[g]->offset, mr, dc, dt,
                           out.offset, group[g]->access.before_read() + out.access.before_write(),
                           [&] { return fmt::format("evac y r{} c{}", r0, d0); });
          group[g]->access.read(done);
          out.access.wrote(done);
          const Completion stored = ops.store(Engine::vector, q_y, y_partial, r0, mr, d0, dc,
                                              out.offset, out.access.before_read());
          out.access.read(stored);
          y_stored.add(stored);
        }
      }
    }
    if (ranks > 1) {
      // Every core's partial y is in HBM: SyncE triggers the all-reduce that sums them into y.
      streams.emit(collective(isa::CollectiveOp::all_reduce, isa::AluOp::add, whole(dt, y),
                              whole(dt, y_partial), "all_reduce y"),
                   y_stored);
    }
    return ops.hbm_bytes_loaded();
  };
  const uint64_t hbm_bytes_loaded = emit_all(streams);
  streams.finish(emit_all);  // a streamed program runs it again as it is read

  k.choices = {{"activation", std::string(isa::name_of(c.activation))},
               {"tile_m", t.m},
               {"tile_k", t.k},
               {"tile_n", t.n},
               {"block_m", plan.mc},
               {"w1_tiles", c.w1_tiles},
               {"w2_tiles", c.w2_tiles},
               {"bufs", c.bufs},
               {"x_bufs", c.x_bufs},
               {"out_bufs", c.out_bufs},
               {"psum_bufs", c.psum_bufs},
               {"x_transpose", "dma_transpose"},
               {"sbuf_bytes_per_partition", plan.total()},
               {"hbm_bytes_loaded", hbm_bytes_loaded}};
  k.model_flops =
      4ULL * static_cast<uint64_t>(M) * static_cast<uint64_t>(D) * static_cast<uint64_t>(F);

  if (functional) {
    SeededRandom rng(w.seed);
    // Weights scaled by 1/sqrt(fan-in) so the activation sees values of order 1.
    auto fill = [&](std::vector<float>& v, double scale) {
      rng.fill_normal(v.data(), v.size(),
                      [&](double n) { return isa::round_to(dt, static_cast<float>(n * scale)); });
    };
    // The whole MLP's tensors (the same whatever the number of cores); tensor parallel, each
    // core takes its slice of F.
    std::vector<float> xv(static_cast<size_t>(M * D)), w1v(static_cast<size_t>(D * F_total)),
        w2v(static_cast<size_t>(F_total * D));
    fill(xv, 1.0);
    fill(w1v, 1.0 / std::sqrt(static_cast<double>(D)));
    fill(w2v, 1.0 / std::sqrt(static_cast<double>(F_total)));
    if (ranks == 1) {
      std::vector<float> expected = mlp_reference(xv, w1v, w2v, M, D, F, c.activation, dt);
      k.tolerance = output_tolerance(dt, expected);
      k.inputs.push_back(HostTensor{"x", dt, {M, D}, std::move(xv)});
      k.inputs.push_back(HostTensor{"w1", dt, {D, F}, std::move(w1v)});
      k.inputs.push_back(HostTensor{"w2", dt, {F, D}, std::move(w2v)});
      k.expected.push_back(HostTensor{"y", dt, {M, D}, std::move(expected)});
    } else {
      // The reference is the tensor-parallel computation's: each core's partial y in double
      // precision, stored in the dtype (as the kernel stores y_partial), then summed in fp32 in
      // rank order and rounded once more, as the all-reduce does. (Against the whole MLP in one
      // piece, bf16 partials add up to `ranks` roundings: docs/chip.md.)
      std::vector<float> expected(static_cast<size_t>(M * D), 0.0f);
      double partial_squares = 0;  // sum over the cores of their largest |partial y|, squared
      for (uint32_t r = 0; r < ranks; ++r) {
        // Core r: columns [r F, (r + 1) F) of w1 and the same rows of w2.
        std::vector<float> w1r(static_cast<size_t>(D * F)), w2r(static_cast<size_t>(F * D));
        for (int64_t d = 0; d < D; ++d) {
          std::copy_n(w1v.begin() + d * F_total + r * F, F, w1r.begin() + d * F);
        }
        std::copy_n(w2v.begin() + r * F * D, F * D, w2r.begin());
        const std::vector<float> partial = mlp_reference(xv, w1r, w2r, M, D, F, c.activation, dt);
        float largest = 0;
        for (size_t i = 0; i < expected.size(); ++i) {
          expected[i] += isa::round_to(dt, partial[i]);
          largest = std::max(largest, std::abs(partial[i]));
        }
        partial_squares += static_cast<double>(largest) * largest;
        k.core_inputs.push_back({HostTensor{"x", dt, {M, D}, xv},
                                 HostTensor{"w1", dt, {D, F}, std::move(w1r)},
                                 HostTensor{"w2", dt, {F, D}, std::move(w2r)}});
      }
      for (float& v : expected) v = isa::round_to(dt, v);
      k.tolerance = output_tolerance(dt, expected);
      // A core's partial, accumulated in fp32 in PSUM in another order than the reference's
      // double, may round to the neighbouring value of the dtype: one ulp (2 rounding units) of
      // the partial reaches the sum. Such flips are rare and independent between cores, so
      // their bound adds up as a root sum of squares of each core's largest ulp.
      k.tolerance.atol += 2 * rounding_unit(dt) * std::sqrt(partial_squares);
      // Every core ends with the whole y.
      for (uint32_t r = 0; r < ranks; ++r) {
        k.core_expected.push_back({HostTensor{"y", dt, {M, D}, expected}});
      }
      k.inputs = k.core_inputs[0];
      k.expected = k.core_expected[0];
    }
  } else {
    k.tolerance = output_tolerance(dt, {});
  }
  return k;
}

}  // namespace trnsim::workloads
