#include "workloads/kernels/matmul.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "base/gemm.hpp"
#include "base/large_page_allocator.hpp"
#include "models/estimate/estimate.hpp"

namespace trnsim::workloads {

using isa::ActivationFunction;
using isa::DType;
using nlohmann::json;

namespace {

constexpr int64_t kMaxBlock = 16384;  // elements: keeps SBUF strides within int16 (section 4)

const char* strategy_name(int s) {
  switch (s) {
    case 1:
      return "tiled";
    case 2:
      return "hoisted loads";
    case 3:
      return "blocked free dimensions";
    default:
      return "blocked all dimensions";
  }
}

int64_t round_up(int64_t x, int64_t multiple) {
  return ceil_div(x, multiple) * multiple;
}

// The sizes the lowering works with: blocks clamped to the shape, and what SBUF holds.
struct MatmulPlan {
  int64_t bm = 0, bk = 0, bn = 0;  // block of C rows, contraction, C columns
  int64_t a_stride = 0;            // elements between the k-tiles of an A buffer
  int64_t b_stride = 0;            // ... of a B buffer
  uint64_t a_bytes = 0, b_bytes = 0, out_bytes = 0, acc_bytes = 0;  // per partition, each
  uint32_t a_bufs = 0, b_bufs = 0, out_bufs = 0;
  uint64_t total() const {
    auto pad = [](uint64_t n) { return (n + 63) / 64 * 64; };
    return a_bufs * pad(a_bytes) + b_bufs * pad(b_bytes) + out_bufs * pad(out_bytes) +
           pad(acc_bytes);
  }
};

MatmulPlan plan_matmul(const MatmulChoices& c, const MatmulTiles& t,
                       const std::vector<int64_t>& shape, uint64_t es) {
  const int64_t M = shape[0], K = shape[1], N = shape[2];
  MatmulPlan p;
  switch (c.strategy) {
    case 1:
      p.bm = t.m, p.bk = t.k, p.bn = t.n;
      break;
    case 2:
      p.bm = t.m, p.bk = round_up(K, t.k), p.bn = t.n;
      break;
    case 3:
      p.bm = std::min(c.block_m, round_up(M, t.m));
      p.bk = round_up(K, t.k);
      p.bn = std::min(c.block_n, round_up(N, t.n));
      break;
    default:
      p.bm = std::min(c.block_m, round_up(M, t.m));
      p.bk = std::min(c.block_k, round_up(K, t.k));
      p.bn = std::min(c.block_n, round_up(N, t.n));
      break;
  }
  p.bm = std::min(p.bm, round_up(M, t.m));
  p.bn = std::min(p.bn, round_up(N, t.n));
  const int64_t k_tiles = ceil_div(p.bk, t.k);
  p.a_stride = p.bm;
  p.b_stride = p.bn;
  p.a_bytes = k_tiles * p.bm * es;
  p.b_bytes = k_tiles * p.bn * es;
  p.a_bufs = c.bufs;
  p.b_bufs = c.bufs;
  p.out_bufs = c.out_bufs;
  if (c.strategy == 2) p.a_bufs = c.a_bufs;
  if (c.strategy == 4) {
    // The result tiles of a whole column block (every tile_m rows of C, bn columns, in the
    // kernel's dtype), accumulated across the K blocks and stored from there.
    p.acc_bytes = ceil_div(M, t.m) * p.bn * es;
    p.out_bytes = 0;
    p.out_bufs = 0;
  } else {
    p.out_bytes = std::min<int64_t>(t.n, N) * es;
  }
  return p;
}

}  // namespace

ParamSpace matmul_space(const Workload& w, const config::ArchConfig& arch) {
  ParamSpace s;
  ParamDecl& strategy = s.integer("strategy", 1, 4, 4,
                                  "1 tiled, 2 hoisted loads, 3 blocked M and N, 4 blocked M, K, N");
  strategy.option = true;
  strategy.role = ParamRole::algorithm;
  strategy.range_error =
      "unknown matmul strategy {got}; expected 1 (tiled), 2 (hoisted loads), 3 (blocked free "
      "dimensions) or 4 (blocked all dimensions)";
  strategy.tried = {1, 2, 3, 4};
  const json given = read_value(w, strategy);
  const int st = given.is_null() ? 4 : static_cast<int>(given.get<int64_t>());
  s.kernel = fmt::format("matmul strategy {} ({})", st, strategy_name(st));
  s.unknown = fmt::format("unknown parameter for matmul strategy {} ({})", st, strategy_name(st));

  const MatmulTiles t = matmul_tiles(arch);
  auto dim = [&](size_t i) { return w.shape.size() > i ? w.shape[i] : int64_t{4096}; };
  auto block = [&](const char* name, int64_t tile, const char* tile_name, int64_t cover,
                   json default_value, const char* meaning) {
    ParamDecl& d = s.integer(name, tile, kMaxBlock, std::move(default_value), meaning);
    d.multiple = tile;
    d.range_error =
        fmt::format("expected a multiple of the {}-element tile of {} from {} to {}, got {{got}}",
                    tile, tile_name, tile, kMaxBlock);
    d.role = ParamRole::block;
    d.tried = covering(doubling_values(tile, kMaxBlock, cover), cover);
    return &d;
  };
  const char* m_tile = "output rows (tile_m, from pe_columns)";
  const char* k_tile = "contraction rows (tile_k, from pe_rows)";
  const char* n_tile = "output columns (tile_n, from matmul_moving_max)";
  if (st == 3) {
    // The tutorial's TILES_IN_BLOCK_M = TILES_IN_BLOCK_N = 2 (docs/kernels.md).
    const char* tutorial = "2 tiles, the NKI tutorial's block_free_dimension kernel";
    block("block_m", t.m, m_tile, dim(0), 2 * int64_t{t.m}, "rows of C per block")->default_note =
        tutorial;
    block("block_n", t.n, n_tile, dim(2), 2 * int64_t{t.n}, "columns of C per block")
        ->default_note = tutorial;
  } else if (st == 4) {
    // The tutorial's fully_optimized blocks: 2048 x 1024 x 1024 (M x K x N) in whole tiles.
    const char* shrunk = "halved, M first, then K, then N, until the buffers fit SBUF";
    block("block_m", t.m, m_tile, dim(0), std::max<int64_t>(1, 2048 / t.m) * t.m,
          "rows of C per block")
        ->default_note = shrunk;
    block("block_k", t.k, k_tile, dim(1), std::max<int64_t>(1, 1024 / t.k) * t.k,
          "contraction depth per block")
        ->default_note = shrunk;
    block("block_n", t.n, n_tile, dim(2), std::max<int64_t>(1, 1024 / t.n) * t.n,
          "columns of C per block")
        ->default_note = shrunk;
  }
  ParamDecl& bufs =
      s.integer("bufs", 1, 8, st == 1 ? json(4) : json(2), "operand buffers of each kind");
  if (st == 3) bufs.default_note = "2, or 1 when two of each strip do not fit SBUF";
  bufs.role = ParamRole::buffers;
  bufs.tried = integer_values({1, 2, 3, 4}, 1, 8, bufs.default_value);
  s.integer("out_bufs", 1, 8, 4, "output staging tiles in SBUF")
      .with_role(ParamRole::buffers)
      .with_tried(integer_values({1, 2, 4, 8}, 1, 8));
  s.integer("psum_bufs", 1, arch.psum_banks, arch.psum_banks,
            "PSUM banks the accumulation groups rotate through")
      .with_role(ParamRole::buffers)
      .with_tried(integer_values({2, 4, 8}, 1, arch.psum_banks, arch.psum_banks));
  s.constraints = {"the A, B and output buffers (and strategy 4's result tiles) fit SBUF",
                   "the instructions fit the instruction cap"};
  return s;
}

MatmulChoices parse_matmul_choices(const Workload& w, const config::ArchConfig& arch) {
  const ParamSpace space = matmul_space(w, arch);  // checks /strategy first
  MatmulChoices c;
  if (w.options.contains("a_layout")) {
    const auto& l = w.options["a_layout"];
    if (!l.is_string() || (l.get<std::string>() != "km" && l.get<std::string>() != "mk")) {
      throw WorkloadError(w.file, "/a_layout",
                          fmt::format("expected \"km\" (the left operand given transposed, a_t "
                                      "[K, M]; the default) or \"mk\" (a [M, K], transposed on "
                                      "chip), got {}",
                                      l.dump()));
    }
    c.a_transposed = l.get<std::string>() == "km";
  }
  const ParamValues v(w, space);
  c.strategy = static_cast<int>(v.integer("strategy"));
  c.bufs = static_cast<uint32_t>(v.integer("bufs"));
  c.out_bufs = static_cast<uint32_t>(v.integer("out_bufs"));
  c.psum_bufs = static_cast<uint32_t>(v.integer("psum_bufs"));
  // Set by graph lowering only (the kernel form does not accept them).
  if (w.options.contains("b_layout")) c.b_transposed = w.options["b_layout"] == "nk";
  if (w.options.contains("batch")) c.batch = w.options["batch"].get<int64_t>();
  if (w.options.contains("b_batched")) c.b_batched = w.options["b_batched"].get<bool>();
  if (c.strategy >= 3) {
    // The tutorial's blocks unless given (docs/kernels.md); strategy 4's are shrunk in
    // lower_matmul until they fit.
    c.block_m = v.integer("block_m");
    c.block_n = v.integer("block_n");
    c.block_m_given = v.given("block_m");
    c.block_n_given = v.given("block_n");
  }
  if (c.strategy == 4) {
    c.block_k = v.integer("block_k");
    c.block_k_given = v.given("block_k");
  }
  return c;
}

uint64_t matmul_sbuf_bytes(const MatmulChoices& c, const MatmulTiles& t,
                           const std::vector<int64_t>& shape, DType dt) {
  return plan_matmul(c, t, shape, isa::size_of(dt)).total();
}

namespace {

// The reference's output tiles (one task each for base::parallel_chunks) and its K chunks. The
// tiles are fixed, not derived from the number of threads, so that every element is computed
// by the same sequence of operations whatever the number of threads; each chunk of K is one
// base::gemm call (OpenBLAS) adding into the tile. Which kernels OpenBLAS picks (with FMA or
// without, and their own blocking of K) depends on the processor, so the last bits may differ
// between processors; the error analysis below holds for any order of the fp32 additions.
constexpr int64_t kReferenceRows = 128;
constexpr int64_t kReferenceCols = 1024;
constexpr int64_t kReferenceDepth = 256;

}  // namespace

std::vector<float> matmul_reference(const std::vector<float>& a, const std::vector<float>& b,
                                    int64_t m, int64_t k, int64_t n, DType out) {
  using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowMajorD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajorF> A(a.data(), m, k);
  const Eigen::Map<const RowMajorF> B(b.data(), k, n);
  std::vector<float> c = base::large_vector<float>(static_cast<size_t>(m * n));
  Eigen::Map<RowMajorF> C(c.data(), m, n);
  const int64_t col_tiles = ceil_div(n, kReferenceCols);
  const auto tiles = static_cast<size_t>(ceil_div(m, kReferenceRows) * col_tiles);
  auto tile_of = [&](size_t t, int64_t& r0, int64_t& c0, int64_t& rows, int64_t& cols) {
    r0 = static_cast<int64_t>(t) / col_tiles * kReferenceRows;
    c0 = static_cast<int64_t>(t) % col_tiles * kReferenceCols;
    rows = std::min(kReferenceRows, m - r0);
    cols = std::min(kReferenceCols, n - c0);
  };
  Eigen::initParallel();
  if (out == DType::fp32) {
    // An fp32 output is checked to 1e-4 of its RMS, within reach of an fp32 sum's own error
    // over a long K: the sums are in double, rounded once.
    const RowMajorD Ad = A.cast<double>(), Bd = B.cast<double>();
    base::parallel_chunks(tiles, 1, [&](size_t begin, size_t end) {
      RowMajorD part;
      for (size_t t = begin; t < end; ++t) {
        int64_t r0 = 0, c0 = 0, rows = 0, cols = 0;
        tile_of(t, r0, c0, rows, cols);
        part.resize(rows, cols);
        base::gemm(rows, cols, k, Ad.data() + r0 * k, k, false, Bd.data() + c0, n, false, 0.0,
                   part.data(), cols);
        C.block(r0, c0, rows, cols) = part.cast<float>();
      }
    });
    return c;
  }
  // bf16, fp16 and fp8 outputs. Their inputs' products are exact in fp32 (at most 11 + 11
  // significant bits), so the reference's error is that of the fp32 additions: each rounds by
  // at most 2^-24 of the running sum, and over K terms of random sign these errors add up like
  // a random walk, to about 2^-24 sqrt(K) |sum|, i.e. 5e-6 of the output for K = 8192 (and
  // 4 x 10^-5 for the 1,048,576 the largest one-core matmul could take). The tightest of these
  // checks allows 1e-3 of the output's RMS absolute plus 1e-2 (bf16), 2e-3 (fp16) of the value:
  // the reference's error is under 1% of the allowance, which is spent on the hardware's own
  // rounding to the dtype (2^-9 for bf16). tests/unit/matmul_lowering_test.cpp measures it
  // against the double-precision reference.
  base::parallel_chunks(tiles, 1, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      int64_t r0 = 0, c0 = 0, rows = 0, cols = 0;
      tile_of(t, r0, c0, rows, cols);
      for (int64_t k0 = 0; k0 < k; k0 += kReferenceDepth) {
        const int64_t depth = std::min(kReferenceDepth, k - k0);
        base::gemm(rows, cols, depth, a.data() + r0 * k + k0, k, false, b.data() + k0 * n + c0, n,
                   false, 1.0f, c.data() + r0 * n + c0, n);
      }
    }
  });
  return c;
}

namespace {

// Strategy 4 with default blocks that do not fit (a wide dtype, a small SBUF): halve those not
// given, M first, then K, then N.
void shrink_blocks(MatmulChoices& c, const MatmulTiles& t, const std::vector<int64_t>& shape,
                   DType dt, uint64_t sbuf) {
  auto halve = [](int64_t& b, int64_t tile, bool given) {
    if (given || b <= tile) return false;
    b = std::max<int64_t>(tile, b / 2 / tile * tile);
    return true;
  };
  while (matmul_sbuf_bytes(c, t, shape, dt) > sbuf) {
    if (!halve(c.block_m, t.m, c.block_m_given) && !halve(c.block_k, t.k, c.block_k_given) &&
        !halve(c.block_n, t.n, c.block_n_given)) {
      return;
    }
  }
}

}  // namespace

LoweredKernel lower_matmul(const Workload& w, const config::ArchConfig& arch, bool functional) {
  MatmulChoices c = parse_matmul_choices(w, arch);
  const MatmulTiles t = matmul_tiles(arch);
  const int64_t M = w.shape[0], K = w.shape[1], N = w.shape[2];
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);

  // HBM: A, B and C, checked before anything is allocated.
  uint64_t mk = 0, kn = 0, mn = 0, hbm = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(M), static_cast<uint64_t>(K), &mk) ||
      __builtin_mul_overflow(static_cast<uint64_t>(K), static_cast<uint64_t>(N), &kn) ||
      __builtin_mul_overflow(static_cast<uint64_t>(M), static_cast<uint64_t>(N), &mn) ||
      __builtin_add_overflow(mk, kn, &hbm) || __builtin_add_overflow(hbm, mn, &hbm) ||
      __builtin_mul_overflow(hbm, es, &hbm) || hbm > arch.hbm_capacity_bytes) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("A [{}, {}], B [{}, {}] and C [{}, {}] in {} do not fit the {} "
                    "bytes of HBM of a {} core",
                    M, K, K, N, M, N, isa::name_of(dt), arch.hbm_capacity_bytes, arch.name));
  }

  // Blocks and buffers against SBUF.
  const uint64_t sbuf = arch.sbuf_partition_bytes;
  // Strategy 3 double-buffers its strips when they fit, as the tutorial leaves to the compiler.
  if (c.strategy == 3 && !w.params.contains("bufs") &&
      plan_matmul(c, t, w.shape, es).total() > sbuf)
    c.bufs = 1;
  if (c.strategy == 4) shrink_blocks(c, t, w.shape, dt, sbuf);
  if (c.strategy == 2 && plan_matmul(c, t, w.shape, es).total() > sbuf) c.a_bufs = 1;
  const MatmulPlan plan = plan_matmul(c, t, w.shape, es);
  if (plan.total() > sbuf) {
    const std::string need = fmt::format(
        "needs {} bytes per partition of SBUF ({} x {} for A, {} x {} for B, {} x {} for the "
        "output{}); {} has {}",
        plan.total(), plan.a_bufs, plan.a_bytes, plan.b_bufs, plan.b_bytes, plan.out_bufs,
        plan.out_bytes,
        plan.acc_bytes > 0
            ? fmt::format(", {} for the result tiles of a column block", plan.acc_bytes)
            : "",
        arch.name, sbuf);
    // A size the user chose is named; otherwise K is what does not fit.
    for (const char* key : {"block_k", "block_m", "block_n", "bufs", "out_bufs"}) {
      if (!w.params.contains(key)) continue;
      throw WorkloadError(
          w.file, fmt::format("/params/{}", key),
          fmt::format("matmul strategy {} ({}) with blocks of {} x {} x {} (block_m x block_k x "
                      "block_n, clamped to the shape) and {} bufs {}. Use smaller blocks or "
                      "fewer bufs",
                      c.strategy, strategy_name(c.strategy), plan.bm, plan.bk, plan.bn, c.bufs,
                      need));
    }
    throw WorkloadError(w.file, "/shape/1",
                        fmt::format("matmul strategy {} ({}) with K = {} ({}) {}. {}", c.strategy,
                                    strategy_name(c.strategy), K, isa::name_of(dt), need,
                                    c.strategy == 4 ? "Its smallest blocks do not fit either"
                                                    : "Strategy 4 blocks K and fits any K"));
  }

  // Instructions, estimated before anything is emitted (EngineStreams also counts them).
  const double MT = ceil_div(M, t.m), NT = ceil_div(N, t.n), KT = ceil_div(K, t.k);
  const double mb = ceil_div(M, plan.bm), nb = ceil_div(N, plan.bn), kb = ceil_div(K, plan.bk);
  // The tutorial's counts (docs/kernels.md, tests/integration/sim_matmul.cpp).
  // By kind: matmuls (TensorE), loads (DMA triggers on the sync engine) and the rest
  // (evacuations, accumulations and stores on ScalarE, VectorE or sync).
  const double matmuls = MT * NT * KT;
  double loads = 0, rest = 0;
  switch (c.strategy) {
    case 1:
      loads = 2 * MT * NT * KT;
      rest = 2 * MT * NT;
      break;
    case 2:
    case 3:
      loads = MT * KT + mb * NT * KT;
      rest = 2 * MT * NT;
      break;
    default:
      loads = nb * KT + nb * mb * KT;
      rest = MT * NT * kb + 2 * nb * MT;
  }
  const double estimate = (matmuls + loads + rest) * static_cast<double>(c.batch);
  // A program of stream_from instructions or more is streamed: lowered once to count (what
  // EngineStreams needs to write each instruction final), then again while the run reads it.
  // max_instructions bounds the memory of a program held whole; a streamed one is not held.
  const bool streamed = estimate >= static_cast<double>(w.stream_from);
  if (!streamed && estimate > static_cast<double>(arch.max_instructions)) {
    throw WorkloadError(
        w.file, "/shape",
        fmt::format("[{}, {}, {}] with matmul strategy {} lowers to about {:.0f} "
                    "instructions; a kernel holds at most {}{}",
                    M, K, N, c.strategy, estimate, arch.max_instructions,
                    c.strategy < 4 ? " (strategy 4 with large blocks needs fewest)" : ""));
  }

  // Last: the one limit that --timing-only lifts.
  if (functional) {
    const std::string why = functional_size_problem(hbm * w.cores);
    if (!why.empty()) throw WorkloadError(w.file, "/shape", why);
  }

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const int64_t B = c.batch, BB = c.b_batched ? c.batch : 1;
  if (functional && (B > 1 || c.b_transposed || (B > 1 && c.a_transposed))) {
    throw WorkloadError(w.file, "/options",
                        "batched and b_layout \"nk\" matmuls run inside graphs only");
  }
  const HbmMatrix a_hbm =
      c.a_transposed ? HbmMatrix{"a_t", p.add_dram_tensor("a_t", dt, {K, M}).address, K, M}
                     : HbmMatrix{"a", p.add_dram_tensor("a", dt, {B * M, K}).address, M, K};
  const HbmMatrix b_hbm =
      c.b_transposed ? HbmMatrix{"b_t", p.add_dram_tensor("b_t", dt, {BB * N, K}).address, N, K}
                     : HbmMatrix{"b", p.add_dram_tensor("b", dt, {BB * K, N}).address, K, N};
  const HbmMatrix c_hbm{"c", p.add_dram_tensor("c", dt, {B * M, N}).address, M, N};

  EngineStreams streams(p, arch, w.file,
                        streamed ? EngineStreams::Mode::count : EngineStreams::Mode::store);
  // The streams' sizes, from the counts above (upper bounds for the engines that share `rest`).
  const auto per_batch = [&](double n) {
    return static_cast<uint64_t>(n * static_cast<double>(B));
  };
  streams.reserve(Engine::tensor, per_batch(matmuls));
  streams.reserve(Engine::sync, per_batch(loads + rest));
  streams.reserve(Engine::scalar, per_batch(rest));
  streams.reserve(Engine::vector, per_batch(rest));
  const uint16_t q_a = streams.add_queue("q_load_a");
  const uint16_t q_b = streams.add_queue("q_load_b");
  const uint16_t q_store_act = streams.add_queue("q_store_act");
  const uint16_t q_store_dve = streams.add_queue("q_store_dve");

  // Emits the whole kernel into `streams`; returns the bytes its DMAs read from HBM. Everything
  // it needs is its own (a copy), so that a streamed program can run it again later.
  const auto emit_all = [=](EngineStreams& streams) -> uint64_t {
    TileOps ops(streams, arch, dt);
    auto store_queue = [&](Engine e) { return e == Engine::scalar ? q_store_act : q_store_dve; };
    HbmMatrix a = a_hbm, b = b_hbm, cm = c_hbm;

    SbufAllocator sb;
    SbufRing a_bufs(sb, plan.a_bufs, plan.a_bytes);
    SbufRing b_bufs(sb, plan.b_bufs, plan.b_bytes);
    SbufRing out_bufs(sb, plan.out_bufs, plan.out_bytes);
    const uint64_t acc_base = plan.acc_bytes > 0 ? sb.take(plan.acc_bytes) : 0;
    PsumBanks banks(arch, c.psum_bufs);

    auto load_a = [&](OnChipTile& slot, int64_t k0, int64_t kc, int64_t m0, int64_t mc) {
      const Completion done = c.a_transposed
                                  ? ops.load(q_a, a, k0, kc, m0, mc, t.k, slot.offset,
                                             plan.a_stride, slot.access.before_write())
                                  : ops.load_transposed(q_a, a, k0, kc, m0, mc, t.k, slot.offset,
                                                        plan.a_stride, slot.access.before_write());
      slot.access.wrote(done);
    };
    auto load_b = [&](OnChipTile& slot, int64_t k0, int64_t kc, int64_t n0, int64_t nc) {
      slot.access.wrote(c.b_transposed
                            ? ops.load_transposed(q_b, b, k0, kc, n0, nc, t.k, slot.offset,
                                                  plan.b_stride, slot.access.before_write())
                            : ops.load(q_b, b, k0, kc, n0, nc, t.k, slot.offset, plan.b_stride,
                                       slot.access.before_write()));
    };
    // One DMA per 128-row tile of K (and, for A in strategies 2 and 3, per tile_m columns), as the
    // tutorial's loops issue them; all into one buffer, waiting once for its previous readers.
    auto load_tiles_a = [&](OnChipTile& slot, int64_t m0b, int64_t bmr, int64_t cols) {
      const Completions free = slot.access.before_write();
      Completions done;
      for (int64_t c0 = 0; c0 < bmr; c0 += cols) {
        for (int64_t k0 = 0; k0 < K; k0 += t.k) {
          const int64_t kc = std::min<int64_t>(t.k, K - k0), mc = std::min(cols, bmr - c0);
          const uint64_t at = slot.offset + ((k0 / t.k) * plan.a_stride + c0) * es;
          done.add(c.a_transposed
                       ? ops.load(q_a, a, k0, kc, m0b + c0, mc, t.k, at, plan.a_stride, free)
                       : ops.load_transposed(q_a, a, k0, kc, m0b + c0, mc, t.k, at, plan.a_stride,
                                             free));
        }
      }
      slot.access.wrote(done);
    };
    auto load_tiles_a_block = [&](OnChipTile& slot, int64_t k0b, int64_t bkr, int64_t m0b,
                                  int64_t bmr) {
      const Completions free = slot.access.before_write();
      Completions done;
      for (int64_t k0 = 0; k0 < bkr; k0 += t.k) {
        const int64_t kc = std::min<int64_t>(t.k, bkr - k0);
        const uint64_t at = slot.offset + (k0 / t.k) * plan.a_stride * es;
        done.add(c.a_transposed
                     ? ops.load(q_a, a, k0b + k0, kc, m0b, bmr, t.k, at, plan.a_stride, free)
                     : ops.load_transposed(q_a, a, k0b + k0, kc, m0b, bmr, t.k, at, plan.a_stride,
                                           free));
      }
      slot.access.wrote(done);
    };
    auto load_tiles_b = [&](OnChipTile& slot, int64_t k0b, int64_t bkr, int64_t n0b, int64_t bnr,
                            int64_t cols) {
      const Completions free = slot.access.before_write();
      Completions done;
      for (int64_t c0 = 0; c0 < bnr; c0 += cols) {
        for (int64_t k0 = 0; k0 < bkr; k0 += t.k) {
          const int64_t kc = std::min<int64_t>(t.k, bkr - k0), nc = std::min(cols, bnr - c0);
          const uint64_t at = slot.offset + ((k0 / t.k) * plan.b_stride + c0) * es;
          done.add(c.b_transposed ? ops.load_transposed(q_b, b, k0b + k0, kc, n0b + c0, nc, t.k, at,
                                                        plan.b_stride, free)
                                  : ops.load(q_b, b, k0b + k0, kc, n0b + c0, nc, t.k, at,
                                             plan.b_stride, free));
        }
      }
      slot.access.wrote(done);
    };
    // One accumulation group: the tile_m x tile_n tile (i, j) of the blocks in `as` and `bs`
    // over `depth` rows of K from k0, in the next PSUM bank, which it returns written.
    auto accumulate_group = [&](OnChipTile& as, OnChipTile& bs, int64_t i, int64_t j, int64_t m0,
                                uint32_t mr, int64_t n0, uint32_t nr, int64_t k0,
                                int64_t depth) -> OnChipTile& {
      OnChipTile& bank = banks.next();
      Completion last;
      for (int64_t kt = 0; kt * t.k < depth; ++kt) {
        const auto kr = static_cast<uint32_t>(std::min<int64_t>(t.k, depth - kt * t.k));
        Completions after = as.access.before_read() + bs.access.before_read();
        if (kt == 0) after.add(bank.access.before_write());
        last = ops.matmul(bank.offset, kr, mr, nr, as.offset + (kt * plan.a_stride + i * t.m) * es,
                          bs.offset + (kt * plan.b_stride + j * t.n) * es, kt == 0,
                          (kt + 1) * t.k >= depth, after,
                          [&] { return fmt::format("mm r{} c{} k{}", m0, n0, k0 + kt * t.k); });
        as.access.read(last);
        bs.access.read(last);
      }
      bank.access.wrote(last);
      return bank;
    };
    // Evacuation alternates ScalarE and VectorE so that neither holds TensorE back when K is
    // small; each engine stores what it evacuated on a queue of its own (in-order completion).
    uint64_t groups = 0;
    auto evacuate_and_store = [&](OnChipTile& bank, int64_t m0, uint32_t mr, int64_t n0,
                                  uint32_t nr) {
      const Engine e = groups++ % 2 == 0 ? Engine::scalar : Engine::vector;
      OnChipTile& out = out_bufs.next();
      const Completion done =
          ops.evacuate(e, ActivationFunction::copy, bank.offset, mr, nr, dt, out.offset,
                       bank.access.before_read() + out.access.before_write(),
                       [&] { return fmt::format("evac c r{} c{}", m0, n0); });
      bank.access.read(done);
      out.access.wrote(done);
      out.access.read(
          ops.store(e, store_queue(e), cm, m0, mr, n0, nr, out.offset, out.access.before_read()));
    };

    for (int64_t batch = 0; batch < B; ++batch) {
      a.address = a_hbm.address + static_cast<uint64_t>(batch * M * K) * es;
      b.address = b_hbm.address + static_cast<uint64_t>((c.b_batched ? batch : 0) * K * N) * es;
      cm.address = c_hbm.address + static_cast<uint64_t>(batch * M * N) * es;
      if (c.strategy == 1) {
        for (int64_t m0 = 0; m0 < M; m0 += t.m) {
          const auto mr = static_cast<uint32_t>(std::min<int64_t>(t.m, M - m0));
          for (int64_t n0 = 0; n0 < N; n0 += t.n) {
            const auto nr = static_cast<uint32_t>(std::min<int64_t>(t.n, N - n0));
            OnChipTile& bank = banks.next();
            Completion last;
            for (int64_t k0 = 0; k0 < K; k0 += t.k) {
              const auto kr = static_cast<uint32_t>(std::min<int64_t>(t.k, K - k0));
              OnChipTile& as = a_bufs.next();
              OnChipTile& bs = b_bufs.next();
              load_a(as, k0, kr, m0, mr);
              load_b(bs, k0, kr, n0, nr);
              Completions after = as.access.before_read() + bs.access.before_read();
              if (k0 == 0) after.add(bank.access.before_write());
              last =
                  ops.matmul(bank.offset, kr, mr, nr, as.offset, bs.offset, k0 == 0, k0 + t.k >= K,
                             after, [&] { return fmt::format("mm r{} c{} k{}", m0, n0, k0); });
              as.access.read(last);
              bs.access.read(last);
            }
            bank.access.wrote(last);
            evacuate_and_store(bank, m0, mr, n0, nr);
          }
        }
      } else if (c.strategy != 4) {
        // Strategies 2 and 3, the tutorial's nki_matmul_hoist_load_ and
        // nki_matmul_block_free_dimension_ (docs/kernels.md): per block of bm rows of C, A's
        // [K, bm] strip is loaded once, one DMA per 128 x 128 tile (hoisted out of the N loop); per
        // block of bn columns, B's [K, bn] strip, one DMA per 128 x 512 tile; then every
        // tile_m x tile_n tile of C accumulates over all of K in one PSUM bank, is copied to SBUF
        // and stored. Strategy 2 is the 1 x 1-tile block.
        for (int64_t m0b = 0; m0b < M; m0b += plan.bm) {
          const int64_t bmr = std::min(plan.bm, M - m0b);
          OnChipTile& as = a_bufs.next();
          load_tiles_a(as, m0b, bmr, t.m);
          for (int64_t n0b = 0; n0b < N; n0b += plan.bn) {
            const int64_t bnr = std::min(plan.bn, N - n0b);
            OnChipTile& bs = b_bufs.next();
            load_tiles_b(bs, 0, K, n0b, bnr, t.n);
            for (int64_t i = 0; i * t.m < bmr; ++i) {
              const int64_t m0 = m0b + i * t.m;
              const auto mr = static_cast<uint32_t>(std::min<int64_t>(t.m, bmr - i * t.m));
              for (int64_t j = 0; j * t.n < bnr; ++j) {
                const int64_t n0 = n0b + j * t.n;
                const auto nr = static_cast<uint32_t>(std::min<int64_t>(t.n, bnr - j * t.n));
                OnChipTile& bank = accumulate_group(as, bs, i, j, m0, mr, n0, nr, 0, K);
                evacuate_and_store(bank, m0, mr, n0, nr);
              }
            }
          }
        }
      } else {
        // Strategy 4, the tutorial's nki_matmul_fully_optimized_: per block of bn columns of C,
        // every tile_m row tile of C is a result tile in SBUF (zeroed once); per block of bk of K
        // (in order), B's [bk, bn] block is loaded, one DMA per 128-row tile, and reused by every
        // block of bm rows, whose A block [bk, bm] is loaded the same way; each tile_m x tile_n
        // tile accumulates its bk in PSUM and VectorE adds it into the result tile. After the last
        // K block, each result tile is stored with one DMA of bn columns.
        const int64_t row_tiles = ceil_div(M, t.m);
        std::vector<RegionAccesses> result(static_cast<size_t>(row_tiles));
        for (int64_t n0b = 0; n0b < N; n0b += plan.bn) {
          const int64_t bnr = std::min(plan.bn, N - n0b);
          for (int64_t r = 0; r < row_tiles; ++r) {
            const auto mr = static_cast<uint32_t>(std::min<int64_t>(t.m, M - r * t.m));
            RegionAccesses& res = result[static_cast<size_t>(r)];
            res.wrote(Completions(ops.zero(
                Engine::vector, mr, static_cast<uint32_t>(bnr), acc_base + r * plan.bn * es,
                res.before_write(), [&] { return fmt::format("zero c r{} c{}", r * t.m, n0b); })));
          }
          for (int64_t k0b = 0; k0b < K; k0b += plan.bk) {
            const int64_t bkr = std::min(plan.bk, K - k0b);
            OnChipTile& bs = b_bufs.next();
            load_tiles_b(bs, k0b, bkr, n0b, bnr, bnr);
            for (int64_t m0b = 0; m0b < M; m0b += plan.bm) {
              const int64_t bmr = std::min(plan.bm, M - m0b);
              OnChipTile& as = a_bufs.next();
              load_tiles_a_block(as, k0b, bkr, m0b, bmr);
              for (int64_t j = 0; j * t.n < bnr; ++j) {
                const int64_t n0 = n0b + j * t.n;
                const auto nr = static_cast<uint32_t>(std::min<int64_t>(t.n, bnr - j * t.n));
                for (int64_t i = 0; i * t.m < bmr; ++i) {
                  const int64_t m0 = m0b + i * t.m;
                  const auto mr = static_cast<uint32_t>(std::min<int64_t>(t.m, bmr - i * t.m));
                  OnChipTile& bank = accumulate_group(as, bs, i, j, m0, mr, n0, nr, k0b, bkr);
                  RegionAccesses& res = result[static_cast<size_t>(m0 / t.m)];
                  const uint64_t at = acc_base + ((m0 / t.m) * plan.bn + j * t.n) * es;
                  const Completion done = ops.accumulate(
                      bank.offset, mr, nr, at, dt, at,
                      bank.access.before_read() + res.before_update(),
                      [&] { return fmt::format("accumulate c r{} c{} k{}", m0, n0, k0b); }, dt);
                  bank.access.read(done);
                  res.wrote(Completions(done));
                }
              }
            }
          }
          for (int64_t r = 0; r < row_tiles; ++r) {
            const auto mr = static_cast<uint32_t>(std::min<int64_t>(t.m, M - r * t.m));
            RegionAccesses& res = result[static_cast<size_t>(r)];
            res.read(ops.store(Engine::sync, q_store_dve, cm, r * t.m, mr, n0b, bnr,
                               acc_base + r * plan.bn * es, res.before_read()));
          }
        }
      }
    }  // batch
    return ops.hbm_bytes_loaded();
  };
  const uint64_t hbm_bytes_loaded = emit_all(streams);
  streams.finish(emit_all);  // a streamed program runs it again as it is read

  k.choices = {{"strategy", c.strategy},
               {"strategy_name", strategy_name(c.strategy)},
               {"a_layout", c.a_transposed ? "km" : "mk"},
               {"tile_m", t.m},
               {"tile_k", t.k},
               {"tile_n", t.n},
               {"bufs", c.bufs},
               {"out_bufs", c.out_bufs},
               {"psum_bufs", c.psum_bufs},
               {"sbuf_bytes_per_partition", plan.total()},
               {"hbm_bytes_loaded", hbm_bytes_loaded}};
  if (!c.a_transposed) k.choices["a_transpose"] = "dma_transpose";
  if (c.strategy == 2) k.choices["a_bufs"] = plan.a_bufs;
  if (c.strategy >= 3) {
    k.choices["block_m"] = plan.bm;
    k.choices["block_n"] = plan.bn;
  }
  if (c.strategy == 4) k.choices["block_k"] = plan.bk;
  k.model_flops =
      2ULL * static_cast<uint64_t>(M) * static_cast<uint64_t>(K) * static_cast<uint64_t>(N);

  if (functional) {
    SeededRandom rng(w.seed);
    std::vector<float> av(static_cast<size_t>(M * K)), bv(static_cast<size_t>(K * N));
    auto value = [dt](double n) { return isa::round_to(dt, static_cast<float>(n)); };
    rng.fill_normal(av.data(), av.size(), value);
    rng.fill_normal(bv.data(), bv.size(), value);
    std::vector<float> expected = matmul_reference(av, bv, M, K, N, dt);
    k.tolerance = output_tolerance(dt, expected);
    if (c.strategy == 4 && K > plan.bk) {
      // The tutorial's kernel adds each K block's PSUM result into result tiles held in the
      // output dtype: every add but the first rounds a partial sum to it. One rounding's error
      // (rounding_unit) of a partial sum bounded by 8 x the output's RMS, per add.
      double sum = 0;
      for (float v : expected) sum += static_cast<double>(v) * v;
      const double rms = expected.empty() ? 1.0 : std::sqrt(sum / expected.size());
      k.tolerance.atol +=
          static_cast<double>(ceil_div(K, plan.bk) - 1) * 8 * rms * rounding_unit(dt);
    }
    if (c.a_transposed) {
      HostTensor at{"a_t", dt, {K, M}, std::vector<float>(av.size())};
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < K; ++j) at.values[j * M + i] = av[i * K + j];
      k.inputs.push_back(std::move(at));
    } else {
      k.inputs.push_back(HostTensor{"a", dt, {M, K}, std::move(av)});
    }
    k.inputs.push_back(HostTensor{"b", dt, {K, N}, std::move(bv)});
    k.expected.push_back(HostTensor{"c", dt, {M, N}, std::move(expected)});
  } else {
    k.tolerance = output_tolerance(dt, {});
  }
  return k;
}

}  // namespace trnsim::workloads
