#include "workloads/kernels/attention.hpp"

#include <fmt/format.h>

#include <Eigen/Core>
#include <cmath>

#include "base/gemm.hpp"
#include "workloads/kernels/instruction_builder.hpp"

namespace trnsim::workloads {

using isa::ActivationFunction;
using isa::AluOp;
using isa::DType;
using isa::Instruction;

namespace {

constexpr int64_t kRing = 4;       // per-block row values (-max, alpha, block sum) in flight
constexpr float kMasked = -1e30f;  // the causal mask's fill: exp of it is 0
// Pipeline lags (below): P^T of block g is made kTransposeLag steps after its scores, P V
// kPvLag steps after. P (SBUF) has a buffer per step until its transpose.
constexpr int64_t kTransposeLag = 3, kPvLag = 4;
constexpr uint32_t kPBufs = kTransposeLag + 1;
// Running row sums of query blocks in flight: a query block's first exp starts one while the
// output of the query block kLRing before may still read its own (kPvLag steps after its exp).
constexpr int64_t kLRing = kPvLag + 2;

// Queries per block (one per partition) and keys per P^T tile: 128 on both presets, less
// where a parameter set makes the partitions or the PE array smaller. The transposes take a
// tile x tile block through the PE array, and Q^T's tile columns are the matmul's stationary.
uint32_t tile_of(const config::ArchConfig& arch) {
  return std::min({arch.partitions, arch.pe_rows, arch.pe_columns});
}

// One (query block, key block) pair: the unit of the pipeline.
struct Block {
  int64_t head = 0;
  int64_t qblock = 0;                // over all heads
  int64_t q0 = 0;                    // first query (row of the head)
  uint32_t qr = 0;                   // queries
  int64_t k0 = 0;                    // first key
  uint32_t kw = 0;                   // keys
  bool first = false, last = false;  // of its query block
  bool diag = false;                 // causal: its last qr keys are the queries' own
  uint32_t tile = 128;
  uint32_t subs() const { return (kw + tile - 1) / tile; }  // P^T tiles
  uint32_t full_subs() const { return kw / tile; }
};

// Keys the query block [q0, q0 + qr) sees.
int64_t keys_seen(int64_t q0, uint32_t qr, int64_t seq, bool causal) {
  return causal ? q0 + qr : seq;
}

}  // namespace

ParamSpace attention_space(const Workload& w, const config::ArchConfig& arch) {
  ParamSpace s;
  s.kernel = "attention";
  s.unknown = "unknown attention parameter";
  const uint32_t tile = tile_of(arch);
  const int64_t seq = w.shape.size() > 1 ? w.shape[1] : 2048;
  ParamDecl& kv =
      s.integer("kv_block", tile, 2048, nullptr, "keys per block of the online softmax");
  kv.multiple = tile;
  kv.multiple_error =
      fmt::format("expected a multiple of {} (the keys of one P^T tile), got {{got}}", tile);
  kv.default_note = "1024 if it fits PSUM, else 512";
  kv.role = ParamRole::block;
  kv.tried = covering(doubling_values(tile, 2048, 2048), seq);
  s.integer("bufs", 2, 3, 2, "blocks in flight: scores, probabilities, P^T and P V")
      .with_role(ParamRole::buffers)
      .with_tried({2, 3});
  // Split between ScalarE and VectorE, which bound the kernel together; on trn1, where the two
  // cannot reach PSUM at the same time, all on ScalarE, whose copy holds the port for less time.
  s.choice("pt_copy", {"scalar", "vector", "split"},
           arch.shared_sbuf_psum_ports ? "scalar" : "split",
           "the engine that copies P^T from PSUM to SBUF (split: ScalarE five eighths)")
      .with_role(ParamRole::engine);
  s.constraints = {"the blocks' scores, P^T and output accumulators fit PSUM",
                   "Q, K, V and the blocks in flight fit SBUF"};
  return s;
}

AttentionChoices parse_attention_choices(const Workload& w, const config::ArchConfig& arch) {
  AttentionChoices c;
  c.causal = bool_option(w, "causal", false);
  const ParamSpace space = attention_space(w, arch);
  const ParamValues v(w, space);
  c.kv_block = static_cast<uint32_t>(v.integer("kv_block"));
  c.bufs = static_cast<uint32_t>(v.integer("bufs"));
  c.pt_copy = v.choice("pt_copy");
  return c;
}

namespace {

template <typename Real>
std::vector<float> attention_in(const std::vector<float>& q, const std::vector<float>& k,
                                const std::vector<float>& v, int64_t heads, int64_t seq,
                                int64_t head_dim, bool causal) {
  using Matrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<float> o(q.size());
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  for (int64_t h = 0; h < heads; ++h) {
    const size_t head = static_cast<size_t>(h * seq * head_dim);  // this head's first value
    auto load = [&](const std::vector<float>& t) {
      Matrix m(seq, head_dim);
      for (int64_t i = 0; i < seq * head_dim; ++i) m.data()[i] = t[head + i];
      return m;
    };
    const Matrix Q = load(q), K = load(k), V = load(v);
    // Rows in blocks, so that no seq x seq matrix is held; the blocks are independent and run
    // on the host's threads (each block's arithmetic is the same on any number of them).
    const auto blocks = static_cast<size_t>((seq + 127) / 128);
    base::parallel_chunks(blocks, 1, [&](size_t first, size_t last) {
      for (size_t b = first; b < last; ++b) {
        const int64_t r0 = static_cast<int64_t>(b) * 128;
        const int64_t rows = std::min<int64_t>(128, seq - r0);
        Matrix s(rows, seq);
        base::gemm(rows, seq, head_dim, Q.data() + r0 * head_dim, head_dim, false, K.data(),
                   head_dim, true, Real(0), s.data(), seq);
        s *= scale;
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t seen = causal ? r0 + i + 1 : seq;
          const Real mx = s.row(i).head(seen).maxCoeff();
          Real sum = 0;
          for (int64_t j = 0; j < seq; ++j) {
            s(i, j) = j < seen ? std::exp(s(i, j) - mx) : Real(0);
            sum += s(i, j);
          }
          s.row(i) /= sum;
        }
        Matrix out(rows, head_dim);
        base::gemm(rows, head_dim, seq, s.data(), seq, false, V.data(), head_dim, false, Real(0),
                   out.data(), head_dim);
        for (int64_t i = 0; i < rows * head_dim; ++i) {
          o[head + static_cast<size_t>(r0 * head_dim + i)] = static_cast<float>(out.data()[i]);
        }
      }
    });
  }
  return o;
}

}  // namespace

std::vector<float> attention_reference(const std::vector<float>& q, const std::vector<float>& k,
                                       const std::vector<float>& v, int64_t heads, int64_t seq,
                                       int64_t head_dim, bool causal, DType out) {
  // bf16 and fp16 outputs are checked to 6 and 3 rounding units of their dtype (2^-8, 2^-11)
  // absolute and relative; an fp32 evaluation's error is a few 2^-24 of the output (the
  // softmax's weights sum to 1, its exps and the two 128-deep and seq-long dot products round
  // in fp32): thousands of times smaller than the bf16 check, over 100 times the fp16 one.
  // An fp32 output's check (1e-4) keeps the double evaluation.
  if (out == DType::fp32) return attention_in<double>(q, k, v, heads, seq, head_dim, causal);
  return attention_in<float>(q, k, v, heads, seq, head_dim, causal);
}

LoweredKernel lower_attention(const Workload& w, const config::ArchConfig& arch, bool functional) {
  const AttentionChoices c = parse_attention_choices(w, arch);
  const int64_t heads = w.shape[0];
  const int64_t seq = w.shape[1];
  const int64_t d = w.shape[2];
  const DType dt = w.dtype;
  const uint64_t es = isa::size_of(dt);
  const uint32_t tile = tile_of(arch);

  if (isa::is_fp8(dt)) {
    throw WorkloadError(w.file, "/dtype",
                        fmt::format("attention takes fp32, bf16 or fp16, got \"{}\" (fp8 scores "
                                    "need per-tensor scales this kernel does not take)",
                                    isa::name_of(dt)));
  }
  const uint32_t contraction = std::min(arch.partitions, arch.pe_rows);
  if (d > static_cast<int64_t>(contraction)) {
    throw WorkloadError(
        w.file, "/shape/2",
        fmt::format("head_dim {} exceeds the {} partitions: Q^T and K^T hold head_dim on the "
                    "partitions, the axis the score matmul contracts over",
                    d, contraction));
  }
  // O [queries, head_dim] is the P V matmul's moving side and one fp32 PSUM bank.
  const uint64_t bank = arch.psum_partition_bytes / arch.psum_banks;
  if (static_cast<uint64_t>(d) > arch.matmul_moving_max || static_cast<uint64_t>(d) * 4 > bank) {
    throw WorkloadError(w.file, "/shape/2",
                        fmt::format("head_dim {} exceeds what one P V matmul writes: at most {} "
                                    "moving columns and one {}-byte PSUM bank of fp32",
                                    d, arch.matmul_moving_max, bank));
  }
  if (seq > 65535) {
    throw WorkloadError(w.file, "/shape/1",
                        fmt::format("seq {} exceeds 65535, the most elements of one free "
                                    "dimension (Q^T and K^T hold a head's seq on it)",
                                    seq));
  }
  const uint64_t tensor = saturating_product(
      {static_cast<uint64_t>(heads), static_cast<uint64_t>(seq), static_cast<uint64_t>(d), es});
  check_hbm_bytes(w, arch, functional, tensor > UINT64_MAX / 8 ? UINT64_MAX : 4 * tensor + 256,
                  fmt::format("q, k, v and o of [{}, {}, {}] {}", heads, seq, d, isa::name_of(dt)));

  // PSUM, per partition in banks: per buffer the scores S (fp32, kv_block wide) and P^T (the
  // data's dtype); per query block in flight (two) the output accumulator O (fp32, head_dim
  // wide); each in banks of its own.
  auto banks = [&](uint64_t bytes) { return (bytes + bank - 1) / bank; };
  auto psum_banks = [&](uint32_t kv) {
    return c.bufs * (banks(uint64_t{kv} * 4) + banks(uint64_t{kv} * es)) + 2 * banks(d * 4);
  };
  uint32_t kv_block = c.kv_block;
  if (kv_block == 0) {
    // The largest of 1024 and 512 that fits: wider blocks spread the per-block row work
    // (max, alpha, rescaling the accumulator) over more keys.
    kv_block =
        psum_banks(1024 / tile * tile) <= arch.psum_banks ? 1024 / tile * tile : 512 / tile * tile;
  }
  if (psum_banks(kv_block) > arch.psum_banks) {
    throw WorkloadError(
        w.file, w.params.contains("kv_block") ? "/params/kv_block" : "/params/bufs",
        fmt::format("kv_block {} with {} buffers needs {} PSUM banks per partition (scores "
                    "and P^T per buffer, two output accumulators, {} bytes each bank); {} has "
                    "{}. Use a smaller kv_block or fewer buffers.",
                    kv_block, c.bufs, psum_banks(kv_block), bank, arch.name, arch.psum_banks));
  }

  // SBUF, per partition: per head buffer Q^T and K^T ([head_dim, seq]) and V ([128 keys,
  // seq / 128 blocks, head_dim]); per pipeline buffer P and P^T (kv_block wide); two output
  // tiles, the per-row values and the causal mask.
  const int64_t vblocks = (seq + tile - 1) / tile;
  const uint64_t row_values = 1 + 3 * kRing + kLRing;  // max; -max, alpha, sum per ring; l
  struct Sbuf {
    std::vector<uint64_t> qt, kt, v, p, pt;
    uint64_t out[2] = {0, 0}, rows = 0, mask = 0, bytes = 0;
  };
  auto sbuf_layout = [&](uint32_t head_bufs) {
    Sbuf s;
    OnChipLayout l;
    for (uint32_t hb = 0; hb < head_bufs; ++hb) {
      s.qt.push_back(l.take(seq * es));
      s.kt.push_back(l.take(seq * es));
      s.v.push_back(l.take(vblocks * d * es));
    }
    for (uint32_t b = 0; b < kPBufs; ++b) s.p.push_back(l.take(uint64_t{kv_block} * es));
    for (uint32_t b = 0; b < c.bufs; ++b) s.pt.push_back(l.take(uint64_t{kv_block} * es));
    s.out[0] = l.take(d * es);
    s.out[1] = l.take(d * es);
    s.rows = l.take(row_values * 4);
    s.mask = c.causal ? l.take(tile * 4) : 0;
    s.bytes = l.rounded();
    return s;
  };
  // Two head buffers where they fit, so that the next head loads while this one is computed.
  const uint32_t head_bufs = heads > 1 && sbuf_layout(2).bytes <= arch.sbuf_partition_bytes ? 2 : 1;
  const Sbuf sb = sbuf_layout(head_bufs);
  if (sb.bytes > arch.sbuf_partition_bytes) {
    throw WorkloadError(
        w.file, "/shape/1",
        fmt::format("attention keeps Q^T, K^T and V of a head in SBUF: seq {} with head_dim {} "
                    "({}) needs {} bytes per partition with the block buffers (kv_block {}); {} "
                    "has {}. Use a shorter seq (or a smaller params.kv_block).",
                    seq, d, isa::name_of(dt), sb.bytes, kv_block, arch.name,
                    arch.sbuf_partition_bytes));
  }

  // The blocks, head by head, query block by query block, key block by key block; with causal
  // masking the key blocks past a query block's last query are skipped and the last one ends
  // there.
  const int64_t qblocks = (seq + tile - 1) / tile;
  uint64_t blocks_per_head = 0;
  for (int64_t j = 0; j < qblocks; ++j) {
    const int64_t q0 = j * tile;
    const auto qr = static_cast<uint32_t>(std::min<int64_t>(tile, seq - q0));
    blocks_per_head += (keys_seen(q0, qr, seq, c.causal) + kv_block - 1) / kv_block;
  }
  // At least 6 instructions a block (score matmul, max, -max, exp, transpose, P V matmul).
  const uint64_t at_least = saturating_product({static_cast<uint64_t>(heads), blocks_per_head, 6});
  if (at_least > arch.max_instructions) {
    check_instruction_count(w, arch, at_least,
                            "use a larger kv_block, or fewer heads or a shorter seq", true);
  }
  std::vector<Block> blocks;
  blocks.reserve(static_cast<size_t>(heads * blocks_per_head));
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t j = 0; j < qblocks; ++j) {
      Block b;
      b.head = h;
      b.qblock = h * qblocks + j;
      b.q0 = j * tile;
      b.qr = static_cast<uint32_t>(std::min<int64_t>(tile, seq - b.q0));
      const int64_t seen = keys_seen(b.q0, b.qr, seq, c.causal);
      for (b.k0 = 0; b.k0 < seen; b.k0 += kv_block) {
        b.kw = static_cast<uint32_t>(std::min<int64_t>(kv_block, seen - b.k0));
        b.first = b.k0 == 0;
        b.last = b.k0 + kv_block >= seen;
        b.diag = c.causal && b.last;
        b.tile = tile;
        blocks.push_back(b);
      }
    }
  }
  const int64_t nblocks = static_cast<int64_t>(blocks.size());

  // Score matmuls take at most matmul_moving_max keys each, within one PSUM bank of fp32.
  const uint32_t chunk =
      static_cast<uint32_t>(std::min<uint64_t>(arch.matmul_moving_max, bank / 4));
  // Which engine copies which P^T sub-blocks: ScalarE [0, split), VectorE [split, subs). Split:
  // ScalarE five eighths (rounded), where the two engines' other work per block balances.
  auto act_subs = [&](const Block& b) {
    return c.pt_copy == "scalar" ? b.subs() : c.pt_copy == "vector" ? 0 : (5 * b.subs() + 4) / 8;
  };
  // Copies of sub-blocks [lo, hi): one for the full ones, one for a partial last one.
  auto copies = [](const Block& b, uint32_t lo, uint32_t hi) {
    return (std::min(hi, b.full_subs()) > lo ? 1 : 0) +
           (b.full_subs() < b.subs() && hi == b.subs() && lo < hi ? 1 : 0);
  };
  auto instructions_of = [&](const Block& b) {
    const uint64_t chunks = (b.kw + chunk - 1) / chunk;
    uint64_t n = chunks + 2 * b.subs();             // TensorE
    n += (b.diag ? 1 : 0) + 2 + (b.first ? 0 : 2);  // VectorE: mask, max, -max, l, rescale
    n += b.last ? 1 : 0;                            // o = O / l
    n += (b.first ? 0 : 1) + 1;                     // ScalarE: alpha, exp
    n += copies(b, 0, act_subs(b)) + copies(b, act_subs(b), b.subs());
    n += b.last ? 1 : 0;  // the store
    return n;
  };
  const uint64_t loads_per_head = 2 + (seq / tile > 0 ? 1 : 0) + (seq % tile ? 1 : 0);
  uint64_t instructions = heads * loads_per_head + (c.causal ? 2 : 0);
  for (const Block& b : blocks) instructions += instructions_of(b);
  check_instruction_count(w, arch, instructions,
                          "use a larger kv_block, or fewer heads or a shorter seq");

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const uint64_t q_addr = p.add_dram_tensor("q", dt, {heads, seq, d}).address;
  const uint64_t k_addr = p.add_dram_tensor("k", dt, {heads, seq, d}).address;
  const uint64_t v_addr = p.add_dram_tensor("v", dt, {heads, seq, d}).address;
  const uint64_t o_addr = p.add_dram_tensor("o", dt, {heads, seq, d}).address;
  const uint16_t q_load_q = p.add_queue("qLoadQ");
  const uint16_t q_load_k = p.add_queue("qLoadK");
  const uint16_t q_load_v = p.add_queue("qLoadV");
  const uint16_t q_store = p.add_queue("qStore");
  SyncTracker tracker(p, arch);
  const uint16_t sem_scores = tracker.semaphore("pe_scores_done");
  const uint16_t sem_max = tracker.semaphore("dve_max_done");
  const uint16_t sem_exp = tracker.semaphore("act_exp_done");
  const uint16_t sem_transpose = tracker.semaphore("pe_transpose_done");
  const uint16_t sem_act_copy = tracker.semaphore("act_pt_copy_done");
  const uint16_t sem_dve_copy = tracker.semaphore("dve_pt_copy_done");
  const uint16_t sem_pv = tracker.semaphore("pe_pv_done");
  const uint16_t sem_rescale = tracker.semaphore("dve_rescale_done");
  const uint16_t sem_out = tracker.semaphore("dve_out_done");
  const uint16_t sem_mask = c.causal ? tracker.semaphore("pool_mask_done") : 0;
  EngineHandle sync(tracker, Engine::sync), act(tracker, Engine::scalar),
      dve(tracker, Engine::vector), pool(tracker, Engine::gpsimd);

  // PSUM placement, bank-aligned.
  OnChipLayout ps;
  std::vector<uint64_t> s_at, ptp_at;
  for (uint32_t b = 0; b < c.bufs; ++b) {
    s_at.push_back(ps.take(uint64_t{kv_block} * 4, bank));
    ptp_at.push_back(ps.take(uint64_t{kv_block} * es, bank));
  }
  const uint64_t o_at[2] = {ps.take(d * 4, bank), ps.take(d * 4, bank)};

  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const uint64_t head_elems = static_cast<uint64_t>(seq * d);
  const auto d32 = static_cast<uint32_t>(d), seq32 = static_cast<uint32_t>(seq);
  auto column = [&](uint64_t i, uint32_t parts) {
    return isa::sbuf_ap(DType::fp32, 0, parts, sb.rows + 4 * i, {{1, 1}});
  };
  // Per-row values: the block max, then rings of -scale * running max, alpha and the block's
  // row sums, and the running row sums of the query blocks.
  auto max_col = [&](uint32_t parts) { return column(0, parts); };
  auto negmax_col = [&](int64_t g, uint32_t parts) { return column(1 + g % kRing, parts); };
  auto alpha_col = [&](int64_t g, uint32_t parts) { return column(1 + kRing + g % kRing, parts); };
  auto bsum_col = [&](int64_t g, uint32_t parts) {
    return column(1 + 2 * kRing + g % kRing, parts);
  };
  auto l_col = [&](int64_t j, uint32_t parts) { return column(1 + 3 * kRing + j % kLRing, parts); };
  // Block g's scores S (PSUM, fp32), and query block j's output accumulator O (PSUM, fp32).
  auto s_of = [&](int64_t g) {
    return isa::psum_ap(DType::fp32, 0, blocks[g].qr, s_at[g % c.bufs], {{1, blocks[g].kw}});
  };
  auto o_of = [&](int64_t j, uint32_t parts) {
    return isa::psum_ap(DType::fp32, 0, parts, o_at[j % 2], {{1, d32}});
  };
  // "h0 q128 k512": the head, first query and first key of block g, offset by `keys`.
  auto where = [&](int64_t g, int64_t keys = 0) {
    return fmt::format("h{} q{} k{}", blocks[g].head, blocks[g].q0, blocks[g].k0 + keys);
  };

  std::vector<Signal> scores(nblocks, kNotEmitted), maxed(nblocks, kNotEmitted),
      exped(nblocks, kNotEmitted), transposed(nblocks, kNotEmitted),
      act_copied(nblocks, kNotEmitted), dve_copied(nblocks, kNotEmitted),
      pv_done(nblocks, kNotEmitted), rescaled(nblocks, kNotEmitted);
  std::vector<Signal> out_done(heads * qblocks, kNotEmitted), stored(heads * qblocks, kNotEmitted);
  std::vector<Signal> q_loaded(heads, kNotEmitted), k_loaded(heads, kNotEmitted),
      v_loaded(heads, kNotEmitted);
  std::vector<int64_t> last_of_head(heads, -1);
  for (int64_t g = 0; g < nblocks; ++g) last_of_head[blocks[g].head] = g;

  // Q^T and K^T through the DMA transpose unit ([seq, head_dim] rows to head_dim partitions),
  // V as 128-key blocks on the partitions. A head buffer is refilled once the last P V matmul
  // of the head it held is done.
  auto load_head = [&](int64_t h) {
    const uint32_t hb = static_cast<uint32_t>(h % head_bufs);
    std::vector<Signal> deps;
    if (h >= head_bufs) {
      deps = {scores[last_of_head[h - head_bufs]], pv_done[last_of_head[h - head_bufs]]};
    }
    const uint64_t at = h * head_elems * es;
    for (const auto& [name, addr, dst_at, queue, sig] :
         {std::tuple{"q", q_addr, sb.qt[hb], q_load_q, &q_loaded[h]},
          std::tuple{"k", k_addr, sb.kt[hb], q_load_k, &k_loaded[h]}}) {
      *sig = sync.dma_transpose(queue, isa::sbuf_ap(dt, 0, d32, dst_at, {{1, seq32}}),
                                isa::hbm_ap(dt, addr + at, seq32, d, {{1, d32}}),
                                fmt::format("load {}^T head {}", name, h), deps);
    }
    const int64_t full = seq / tile, tail = seq % tile;
    const auto full32 = static_cast<uint32_t>(full), tail32 = static_cast<uint32_t>(tail);
    if (full > 0) {
      v_loaded[h] =
          sync.dma_copy(q_load_v, isa::sbuf_ap(dt, 0, tile, sb.v[hb], {{d, full32}, {1, d32}}),
                        isa::hbm_ap(dt, v_addr + at, tile, d, {{tile * d, full32}, {1, d32}}),
                        fmt::format("load v head {}", h), deps);
    }
    if (tail > 0) {
      v_loaded[h] = sync.dma_copy(
          q_load_v, isa::sbuf_ap(dt, 0, tail32, sb.v[hb] + full * d * es, {{1, d32}}),
          isa::hbm_ap(dt, v_addr + (h * head_elems + full * tile * d) * es, tail32, d, {{1, d32}}),
          fmt::format("load v tail head {}", h), deps);
    }
  };

  // The causal mask of a diagonal 128 x 128 tile, built once on GpSimdE: 0 where the key is at
  // or before the query (partition p, column i: p - i >= 0), kMasked after it.
  Signal mask_ready;
  if (c.causal) {
    const auto mask = isa::sbuf_ap(DType::fp32, 0, tile, sb.mask, {{1, tile}});
    pool.memset(mask, 0.0f, "mask zeros");
    mask_ready =
        pool.affine_select(mask, mask, 1, {-1}, AluOp::is_ge, kMasked, "causal mask", {}, sem_mask);
  }
  for (int64_t h = 0; h < std::min<int64_t>(heads, head_bufs); ++h) load_head(h);

  // TensorE: S = Q K^T for the block, in moving chunks of at most 512 keys (one PSUM bank of
  // fp32 each): stationary Q^T [head_dim, qr], moving K^T [head_dim, keys].
  auto scores_stage = [&](int64_t g) {
    const Block& b = blocks[g];
    const uint32_t hb = static_cast<uint32_t>(b.head % head_bufs);
    std::vector<Instruction> mms;
    for (uint32_t off = 0; off < b.kw; off += chunk) {
      const uint32_t n = std::min(chunk, b.kw - off);
      mms.push_back(matmul(isa::psum_ap(DType::fp32, 0, b.qr, s_at[g % c.bufs] + off * 4, {{1, n}}),
                           isa::sbuf_ap(dt, 0, d32, sb.qt[hb] + b.q0 * es, {{1, b.qr}}),
                           isa::sbuf_ap(dt, 0, d32, sb.kt[hb] + (b.k0 + off) * es, {{1, n}}), true,
                           true, "S " + where(g, off)));
    }
    // S's buffer was last read by the max and the exp of block g - bufs.
    scores[g] = tracker.emit_sequence(
        std::move(mms),
        {q_loaded[b.head], k_loaded[b.head], before(maxed, g - c.bufs), before(exped, g - c.bufs)},
        sem_scores);
  };
  // VectorE: mask the diagonal, the row max, and -scale * the running max.
  auto max_stage = [&](int64_t g) {
    const Block& b = blocks[g];
    if (b.diag) {
      const auto diag =
          isa::psum_ap(DType::fp32, 0, b.qr, s_at[g % c.bufs] + (b.kw - b.qr) * 4, {{1, b.qr}});
      dve.tensor_tensor(diag, diag, AluOp::add,
                        isa::sbuf_ap(DType::fp32, 0, b.qr, sb.mask, {{1, b.qr}}),
                        fmt::format("mask h{} q{}", b.head, b.q0), {scores[g], mask_ready});
    }
    dve.tensor_reduce(max_col(b.qr), AluOp::max, s_of(g), "max " + where(g), {scores[g]});
    // This ring slot was last read by the alpha and exp of block g - kRing + 1.
    const std::vector<Signal> deps = {before(exped, g - kRing + 1)};
    if (b.first) {
      maxed[g] = dve.tensor_scalar(negmax_col(g, b.qr), max_col(b.qr), AluOp::multiply, -scale,
                                   "-max " + where(g), deps, sem_max);
    } else {
      // min(-scale * block max, -scale * running max): the running max, negated and scaled.
      maxed[g] = dve.scalar_tensor_tensor(negmax_col(g, b.qr), max_col(b.qr), AluOp::multiply,
                                          -scale, AluOp::min, negmax_col(g - 1, b.qr),
                                          "-max " + where(g), deps, sem_max);
    }
  };
  // ScalarE: alpha = exp(new - old) of the negated maxima, then P = exp(scale * S - scale *
  // max) with the row sums accumulated.
  auto exp_stage = [&](int64_t g) {
    const Block& b = blocks[g];
    if (!b.first) {
      // This ring slot's alpha was last read by the rescale of block g - kRing.
      act.activation(ActivationFunction::exp, alpha_col(g, b.qr), negmax_col(g - 1, b.qr), -1.0f,
                     negmax_col(g, b.qr), "alpha " + where(g),
                     {maxed[g], before(rescaled, g - kRing)});
    }
    // The first block's sums start the query block's running sum.
    exped[g] = act.activation_reduce(
        ActivationFunction::exp, isa::sbuf_ap(dt, 0, b.qr, sb.p[g % kPBufs], {{1, b.kw}}), s_of(g),
        scale, negmax_col(g, b.qr), b.first ? l_col(b.qblock, b.qr) : bsum_col(g, b.qr),
        "exp " + where(g),
        {maxed[g], before(transposed, g - kPBufs),
         b.first ? before(out_done, b.qblock - kLRing) : before(rescaled, g - kRing)},
        sem_exp);
  };
  // TensorE: P^T, 128 keys at a time, into PSUM.
  auto transpose_stage = [&](int64_t g) {
    const Block& b = blocks[g];
    std::vector<Instruction> ts;
    for (uint32_t i = 0; i < b.subs(); ++i) {
      const uint32_t kw = std::min(tile, b.kw - i * tile);
      ts.push_back(transpose(
          Engine::tensor, isa::psum_ap(dt, 0, kw, ptp_at[g % c.bufs] + i * tile * es, {{1, b.qr}}),
          isa::sbuf_ap(dt, 0, b.qr, sb.p[g % kPBufs] + i * tile * es, {{1, kw}}),
          "P^T " + where(g, i * tile)));
    }
    transposed[g] = tracker.emit_sequence(
        std::move(ts), {exped[g], before(act_copied, g - c.bufs), before(dve_copied, g - c.bufs)},
        sem_transpose);
  };
  // ScalarE and/or VectorE: P^T from PSUM to SBUF, where the P V matmul can read it.
  auto copy_part = [&](int64_t g, Engine e, uint32_t lo, uint32_t hi) {
    const Block& b = blocks[g];
    const uint32_t buf = static_cast<uint32_t>(g % c.bufs);
    const uint32_t full_hi = std::min(hi, b.full_subs());
    std::vector<Instruction> ins;
    if (full_hi > lo) {
      const uint32_t n = full_hi - lo;
      const uint64_t off = lo * tile * es;
      // n sub-blocks of qr queries on `tile` partitions: one run when they are whole.
      const bool whole = b.qr == tile;
      const auto src = whole ? isa::psum_ap(dt, 0, tile, ptp_at[buf] + off, {{1, n * tile}})
                             : isa::psum_ap(dt, 0, tile, ptp_at[buf] + off, {{tile, n}, {1, b.qr}});
      const auto dst = whole ? isa::sbuf_ap(dt, 0, tile, sb.pt[buf] + off, {{1, n * tile}})
                             : isa::sbuf_ap(dt, 0, tile, sb.pt[buf] + off, {{tile, n}, {1, b.qr}});
      ins.push_back(tensor_copy(e, dst, src, "copy P^T " + where(g, lo * tile)));
    }
    if (b.full_subs() < b.subs() && hi == b.subs() && lo < hi) {
      const uint32_t i = b.subs() - 1;
      const uint32_t kw = b.kw - i * tile;
      ins.push_back(tensor_copy(e, isa::sbuf_ap(dt, 0, kw, sb.pt[buf] + i * tile * es, {{1, b.qr}}),
                                isa::psum_ap(dt, 0, kw, ptp_at[buf] + i * tile * es, {{1, b.qr}}),
                                "copy P^T " + where(g, i * tile)));
    }
    // P^T's SBUF buffer was last read by the P V matmuls of block g - bufs.
    return tracker.emit_sequence(std::move(ins), {transposed[g], before(pv_done, g - c.bufs)},
                                 e == Engine::scalar ? sem_act_copy : sem_dve_copy);
  };
  auto act_copy_stage = [&](int64_t g) {
    act_copied[g] = copy_part(g, Engine::scalar, 0, act_subs(blocks[g]));
  };
  auto dve_copy_stage = [&](int64_t g) {
    dve_copied[g] = copy_part(g, Engine::vector, act_subs(blocks[g]), blocks[g].subs());
  };
  // TensorE: O += P V over the block's 128-key sub-blocks, into the query block's accumulator
  // in PSUM (the first block starts it): stationary P^T [keys, qr], moving V [keys, head_dim].
  auto pv_stage = [&](int64_t g) {
    const Block& b = blocks[g];
    const uint32_t hb = static_cast<uint32_t>(b.head % head_bufs);
    std::vector<Instruction> mms;
    for (uint32_t i = 0; i < b.subs(); ++i) {
      const uint32_t kw = std::min(tile, b.kw - i * tile);
      const int64_t vblock = (b.k0 + i * tile) / tile;
      mms.push_back(matmul(o_of(b.qblock, b.qr),
                           isa::sbuf_ap(dt, 0, kw, sb.pt[g % c.bufs] + i * tile * es, {{1, b.qr}}),
                           isa::sbuf_ap(dt, 0, kw, sb.v[hb] + vblock * d * es, {{1, d32}}),
                           b.first && i == 0, i + 1 == b.subs(), "PV " + where(g, i * tile)));
    }
    // The accumulator was rescaled for this block; a new one was last read by the output of
    // query block j - 2.
    pv_done[g] = tracker.emit_sequence(std::move(mms),
                                       {act_copied[g], dve_copied[g], v_loaded[b.head],
                                        b.first ? before(out_done, b.qblock - 2) : rescaled[g]},
                                       sem_pv);
  };
  // VectorE: l = l * alpha + the block's row sums, and O *= alpha in PSUM before this block's
  // P V adds to it.
  auto rescale_stage = [&](int64_t g) {
    const Block& b = blocks[g];
    if (b.first) {
      rescaled[g] = Signal{};
      return;
    }
    const auto l = l_col(b.qblock, b.qr), o = o_of(b.qblock, b.qr);
    dve.scalar_tensor_tensor(l, l, AluOp::multiply, alpha_col(g, b.qr), AluOp::add,
                             bsum_col(g, b.qr), "l " + where(g), {exped[g]});
    rescaled[g] =
        dve.tensor_scalar(o, o, AluOp::multiply, alpha_col(g, b.qr), "rescale O " + where(g),
                          {exped[g], pv_done[g - 1]}, sem_rescale);
  };
  // VectorE at the query block's end: o = O / l, stored by SyncE (which then loads a head into
  // the buffer this head freed).
  auto out_stage = [&](int64_t g) {
    const Block& b = blocks[g];
    if (!b.last) return;
    const int64_t j = b.qblock;
    const auto out = isa::sbuf_ap(dt, 0, b.qr, sb.out[j % 2], {{1, d32}});
    out_done[j] = dve.tensor_scalar(out, o_of(j, b.qr), AluOp::divide, l_col(j, b.qr),
                                    fmt::format("out h{} q{}", b.head, b.q0),
                                    {pv_done[g], exped[g], before(stored, j - 2)}, sem_out);
    stored[j] = sync.dma_copy(
        q_store,
        isa::hbm_ap(dt, o_addr + (b.head * head_elems + b.q0 * d) * es, b.qr, d, {{1, d32}}), out,
        fmt::format("store o h{} q{}", b.head, b.q0), {out_done[j]});
    if (g == last_of_head[b.head] && b.head + head_bufs < heads) load_head(b.head + head_bufs);
  };

  // The software pipeline, block g's stages at step g + lag. Per step s: TensorE transposes P
  // of block s - 3, computes the scores of block s, then P V of block s - 4; ScalarE copies its
  // part of P^T of block s - 3, then takes alpha and the exp of block s; VectorE takes the max
  // of block s, then copies its part of P^T and rescales O for block s - 3. Every dependency of
  // a step's work on another engine is then at least a step old, except the max on the scores
  // and the exp on the max (the one chain per block), and VectorE's wait for the scores covers
  // its P^T copy (TensorE transposed before it computed the scores). The lags keep that chain
  // off the engines' other work: P of block s is transposed three steps later, so the exp of
  // block s + 3 does not wait behind it.
  //
  // A head's first block comes kPvLag + 1 steps after the last block of the head whose
  // buffers it reuses: that block's P V matmuls, and then the loads, come first.
  std::vector<int64_t> steps(static_cast<size_t>(nblocks));
  for (int64_t g = 0; g < nblocks; ++g) {
    steps[g] = g == 0 ? 0 : steps[g - 1] + 1;
    const Block& b = blocks[g];
    if (b.head >= head_bufs && b.first && b.q0 == 0) {
      steps[g] = std::max(steps[g], steps[last_of_head[b.head - head_bufs]] + kPvLag + 1);
    }
  }
  run_pipeline(steps, {{kTransposeLag, transpose_stage},
                       {kTransposeLag, act_copy_stage},
                       {0, scores_stage},
                       {0, max_stage},
                       {0, exp_stage},
                       {kPvLag, pv_stage},
                       {kTransposeLag, dve_copy_stage},
                       {kTransposeLag, rescale_stage},
                       {kPvLag, out_stage}});
  if (p.instruction_count() != instructions) {
    throw std::logic_error(fmt::format("attention: {} instructions emitted, {} counted",
                                       p.instruction_count(), instructions));
  }

  k.choices = {{"causal", c.causal},    {"q_block", tile},        {"kv_block", kv_block},
               {"bufs", c.bufs},        {"head_bufs", head_bufs}, {"pt_copy", c.pt_copy},
               {"qk_transpose", "dma"}, {"blocks", nblocks}};
  // Q K^T and P V: 2 * seq^2 * head_dim each per head, half of it causal.
  const uint64_t flops =
      saturating_product({4, static_cast<uint64_t>(heads), static_cast<uint64_t>(seq),
                          static_cast<uint64_t>(seq), static_cast<uint64_t>(d)});
  k.model_flops = c.causal ? flops / 2 : flops;
  // o rounds once in its dtype; P rounds once before the P V matmul while the row sums add the
  // unrounded exps. With u the dtype's rounding unit the error is at most 2u |o| + u sum_j p_j
  // |v_j|, and |v| of N(0, 1) inputs stays below 6: atol 6u, rtol 3u. fp32: the fp32 matmuls
  // and sums.
  if (dt == DType::fp32) {
    k.tolerance = Tolerance{1e-5, 1e-4};
  } else {
    const double u = rounding_unit(dt);
    k.tolerance = Tolerance{6 * u, 3 * u};
  }

  if (functional) {
    SeededRandom rng(w.seed);
    const std::vector<int64_t> shape = {heads, seq, d};
    auto random = [&](const char* name) {
      HostTensor t{name, dt, shape, std::vector<float>(static_cast<size_t>(heads) * head_elems)};
      rng.fill_normal(t.values.data(), t.values.size(),
                      [dt](double n) { return isa::round_to(dt, static_cast<float>(n)); });
      return t;
    };
    HostTensor q = random("q"), kk = random("k"), v = random("v");
    k.expected.push_back(HostTensor{
        "o", dt, shape,
        attention_reference(q.values, kk.values, v.values, heads, seq, d, c.causal, dt)});
    k.inputs.push_back(std::move(q));
    k.inputs.push_back(std::move(kk));
    k.inputs.push_back(std::move(v));
  }
  return k;
}

}  // namespace trnsim::workloads
