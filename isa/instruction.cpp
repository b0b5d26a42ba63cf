#include "isa/instruction.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace trnsim::isa {

namespace {

constexpr uint8_t kPE = 1 << 0, kDVE = 1 << 1, kACT = 1 << 2, kPOOL = 1 << 3, kSP = 1 << 4;
constexpr uint8_t kAny = kPE | kDVE | kACT | kPOOL | kSP;

// The opcode table. Cost strings restate models/neuroncore/cost.cpp, which is pinned by
// tests/contract/; sources are keys of the fact sheet (I1: nki.isa cost notes; A1/A2: the
// architecture guides; D2: the DMA bandwidth guide) or "assumption" (see docs/architecture.md).
constexpr std::array<OpcodeInfo, kOpcodeCount> kTable = {{
    {Opcode::dma_copy, "dma_copy", "DMA", kAny, "dst, src (HBM, SBUF or PSUM on either side)",
     "copies src to dst through a DMA queue; the queue's semaphore rises by the DMA engines used",
     "dma_trigger_ns on the issuing engine; the transfer: descriptors over the DMA engines",
     "D1, D2"},
    {Opcode::dma_transpose, "dma_transpose", "DMA_TRANSPOSE", kAny,
     "dst [F x P], src [P x F] (2-D)", "dst[j, i] = src[i, j] through a DMA queue",
     "as dma_copy, at 90% of copy bandwidth from HBM, 50% SBUF to SBUF", "A2, section 3"},
    {Opcode::matmul, "matmul", "MATMUL", kPE,
     "dst PSUM fp32 [M x N], stationary [K x M<=128], moving [K x N<=512]; start, stop",
     "dst (+)= stationary^T . moving, contracting over partitions; start zeroes the group",
     "max(min(64, M), N); x4 if an input is fp32; /2 for fp8 where the preset has the rate",
     "I1, A2"},
    {Opcode::transpose, "transpose", "TRANSPOSE", kPE | kDVE,
     "dst [F x P], src [P x F]; TensorE: P, F <= 128, dst PSUM; VectorE: P, F <= 32",
     "dst[j, i] = src[i, j]", "TensorE max(P, min(64, F)); VectorE max(MIN_II, N)", "I1"},
    {Opcode::activation, "activation", "ACTIVATE", kACT,
     "dst, src; function, scale and bias (immediate or per partition), accumulate [P x 1] fp32",
     "dst = function(src * scale + bias); accumulate = sum of dst along the free axes",
     "max(MIN_II, N); + MIN_II with accumulate", "I1"},
    {Opcode::tensor_tensor, "tensor_tensor", "TENSOR_TENSOR", kDVE | kPOOL, "dst, src0, src1; op0",
     "dst = src0 op0 src1",
     "max(MIN_II, N) if SBUF/SBUF or SBUF/PSUM, all bf16, add/subtract/multiply, stride 1; else "
     "max(MIN_II, 2N); v3 perf mode (both SBUF, all bf16/fp16): max(MIN_II, N/2)",
     "I1; perf mode A2"},
    {Opcode::tensor_scalar, "tensor_scalar", "TENSOR_SCALAR", kDVE | kACT | kPOOL,
     "dst, src; op0 operand0 [, op1 operand1] (immediate or per partition)",
     "dst = (src op0 operand0) op1 operand1",
     "max(MIN_II, N); VectorE v3 perf mode: N/4 (SBUF, bf16/fp16, contiguous) or N/2", "I1, A2"},
    {Opcode::scalar_tensor_tensor, "scalar_tensor_tensor", "SCALAR_TENSOR_TENSOR", kDVE | kPOOL,
     "dst, src0, src1; op0 operand0, op1", "dst = (src0 op0 operand0) op1 src1",
     "N for bf16 data with subtract then multiply and N even; else 2N", "I1"},
    {Opcode::tensor_reduce, "tensor_reduce", "TENSOR_REDUCE", kDVE | kPOOL,
     "dst [P x kept], src; op0 in add/max/min/mean; reduce_dims (innermost free dims); negate",
     "dst = op0 over the innermost reduce_dims free dims of src (order dims to choose axes), "
     "negated with negate",
     "N/2 for bf16 in and out with add or max; else N", "I1"},
    {Opcode::tensor_copy, "tensor_copy", "TENSOR_COPY", kDVE | kACT | kPOOL, "dst, src",
     "dst = src, converted to dst's dtype",
     "max(MIN_II, N); VectorE v3 perf mode: N/4 (SBUF, bf16/fp16, contiguous) or N/2", "I1, A2"},
    {Opcode::memset, "memset", "MEMSET", kDVE | kPOOL, "dst; operand0 immediate", "dst = operand0",
     "max(MIN_II, N/2) for zero in bf16/fp16; else max(MIN_II, N)", "I1"},
    {Opcode::iota, "iota", "IOTA", kDVE | kPOOL, "dst; index_base, partition_step, index_steps",
     "dst[p, i] = index_base + partition_step * p + sum_k index_steps[k] * i_k",
     "GpSimdE 150 + N; VectorE max(MIN_II, N)", "I1; VectorE: assumption"},
    {Opcode::select, "select", "SELECT", kDVE | kPOOL, "dst, predicate, on_true, on_false",
     "dst = predicate != 0 ? on_true : on_false", "max(MIN_II, 2N)",
     "assumption (two-input VectorE rate, A1)"},
    {Opcode::bn_stats, "bn_stats", "BN_STATS", kDVE, "dst [P x 3] fp32, src [P x N<=512]",
     "dst[p] = (count, mean, sum of squared deviations) of src[p]", "max(MIN_II, N)", "I1"},
    {Opcode::bn_aggr, "bn_aggr", "BN_AGGR", kDVE, "dst [P x 2] fp32, src [P x 3G] from bn_stats",
     "dst[p] = (mean, population variance) combining G bn_stats groups", "max(MIN_II, 13N/3)",
     "I1"},
    {Opcode::reciprocal, "reciprocal", "RECIPROCAL", kDVE, "dst, src", "dst = 1 / src",
     "max(MIN_II, 8N)", "I1"},
    {Opcode::shuffle, "shuffle", "SHUFFLE", kDVE, "dst, src (same partitions); shuffle_mask[32]",
     "dst partition p = src partition 32 * (p / 32) + shuffle_mask[p % 32]", "max(MIN_II, N)",
     "assumption (one-input VectorE rate, A1)"},
    {Opcode::affine_select, "affine_select", "AFFINE_SELECT", kPOOL,
     "dst, src; index_base, partition_step, index_steps, op0 (comparison), fill",
     "dst = (index_base + partition_step * p + sum index_steps * i) op0 0 ? src : fill", "150 + N",
     "I1"},
    {Opcode::partition_reduce, "partition_reduce", "PARTITION_REDUCE", kPOOL,
     "dst [1 x F], src [P x F]; op0 in add/max/min/mean",
     "dst[0, i] = op0 over partitions of src[:, i]", "150 + N",
     "assumption (GpSimd cross-partition op, like iota I1)"},
    {Opcode::partition_all_reduce, "partition_all_reduce", "PARTITION_ALL_REDUCE", kPOOL,
     "dst [P x F], src [P x F]; op0 in add/max/min/mean",
     "dst[p, i] = op0 over partitions of src[:, i], for every p", "150 + 2N",
     "assumption (reduce, then broadcast back)"},
    {Opcode::nop, "nop", "EVENT_SEMAPHORE", kAny, "(none); wait, update",
     "only its semaphore waits and updates", "MIN_II", "assumption"},
    {Opcode::tensor_scalar_reduce, "tensor_scalar_reduce", "TENSOR_SCALAR_REDUCE", kDVE,
     "dst, src; op0 operand0; op1 in add/max/min (the reduction); accumulate [P x 1] fp32",
     "dst = src op0 operand0; accumulate = op1 over the free axes of dst",
     "max(MIN_II, N) + MIN_II", "I1"},
    {Opcode::tensor_tensor_scan, "tensor_tensor_scan", "TENSOR_TENSOR_SCAN", kDVE,
     "dst, src0, src1 (same shape); op0, op1; operand0 the initial value; reverse",
     "r = operand0; for each free element i: r = (src0[i] op0 r) op1 src1[i]; dst[i] = r",
     "max(MIN_II, 2N)", "I1"},
    {Opcode::tensor_scalar_cumulative, "tensor_scalar_cumulative", "TENSOR_SCALAR_CUMULATIVE", kDVE,
     "dst, src; op0 operand0; op1 in add/subtract/multiply/max/min",
     "r = identity of op1; for each free element i: r = (src[i] op0 operand0) op1 r; dst[i] = r",
     "max(MIN_II, N)", "assumption (one-input VectorE rate, A1; NKI gives no cost)"},
    {Opcode::max8, "max8", "MAX8", kDVE, "dst [P x 8], src [P x 8..16384]",
     "dst[p] = the 8 largest values of src[p], in descending order", "N",
     "I1 (engine: assumption, VectorE)"},
    {Opcode::find_index8, "find_index8", "FIND_INDEX8", kDVE,
     "dst [P x 8] (uint32 or uint16), src0 data [P x 8..16384], src1 values [P x 8]",
     "dst[p, k] = index of the first occurrence of src1[p, k] in src0[p] (repeated values take "
     "successive occurrences); all ones when absent",
     "N", "I1 (engine: assumption, VectorE)"},
    {Opcode::match_replace8, "match_replace8", "MATCH_REPLACE8", kDVE,
     "dst, src0 data [P x 8..16384], src1 values [P x 8]; operand0 immediate",
     "dst = src0 with the first occurrence of each src1[p, k] replaced by operand0",
     "max(MIN_II, N)", "I1 gives min(MIN_II, N), read as a typo for max (assumption)"},
    {Opcode::range_select, "range_select", "RANGE_SELECT", kDVE,
     "dst, src; op0 operand0 [P x 1], op1 operand1 [P x 1] (comparisons); index_base; fill; "
     "accumulate [P x 1] fp32",
     "i = index_base + free index; dst = (i op0 operand0) and (i op1 operand1) ? src : fill; "
     "accumulate = max of dst along the free axes",
     "max(MIN_II, N)", "I1"},
    {Opcode::copy_predicated, "copy_predicated", "COPY_PREDICATED", kDVE,
     "dst, predicate (src0), src (src1); reverse",
     "dst = src where the predicate is non-zero (zero with reverse); elsewhere dst is kept",
     "max(MIN_II, N) if one of predicate and src is in PSUM and the other in SBUF; else "
     "max(MIN_II, 2N)",
     "I1"},
    {Opcode::local_gather, "local_gather", "LOCAL_GATHER", kPOOL,
     "dst [P x n*E], src0 [P x F], src1 indices (uint16) [P x ...]; gather_indices n, "
     "gather_elements E in 1/2/4/8/16/32; P a multiple of 16",
     "per 16-partition slice: indices = src1 slice flattened partition first, the first n; "
     "dst[p, k*E + e] = src0[p, indices[k] + e]",
     "150 + n*E/C, C = ((28 + 4E) / 4E) / min(4 / element bytes, E)", "I1"},
    {Opcode::gather, "gather", "N_GATHER", kPOOL,
     "dst [P x N], src0 data [P x F], src1 indices (integers) [P x N]",
     "dst[p, i] = src0[p, src1[p, i]] (free dimensions flattened)", "150 + N",
     "assumption (GpSimd start as iota, I1; one element per cycle)"},
    {Opcode::collective, "collective", "CC_OP", kAny,
     "dst, src (HBM, same dtype); cc (all_reduce, all_gather, reduce_scatter, all_to_all, "
     "permute, send, recv); op0 in add/max/min for all_reduce and reduce_scatter; send takes "
     "only src, recv only dst, each with peer=P or peer=+K / -K",
     "the collective over every core of the run, in core order; its semaphore updates fire on "
     "every rank when it ends; the k-th send from core a to b meets the k-th recv on b from a, "
     "the data moves and both sides' updates fire at the end",
     "dma_trigger_ns on the issuing engine; the collective: CollectiveFabric (docs/chip.md)",
     "D1; docs/chip.md"},
}};

constexpr std::array<std::string_view, kActivationFunctionCount> kActivationNames = {
    "identity",  "copy",     "square", "sqrt", "rsqrt",   "reciprocal",
    "exp",       "log",      "relu",   "tanh", "sigmoid", "gelu",
    "gelu_tanh", "silu",     "sin",    "abs",  "gelu_dx", "gelu_apprx_sigmoid",
    "silu_dx",   "softplus", "mish",   "erf",  "erf_dx",  "arctan",
    "sign"};
constexpr std::array<std::string_view, kAluOpCount> kAluNames = {
    "bypass",      "add",   "subtract",    "multiply",   "divide",      "max",
    "min",         "pow",   "is_equal",    "not_equal",  "is_ge",       "is_gt",
    "is_le",       "is_lt", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
    "shift_right", "mean",  "logical_and", "logical_or", "logical_xor"};

template <typename E, size_t N>
std::optional<E> parse_from(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

const std::array<OpcodeInfo, kOpcodeCount>& opcode_table() {
  return kTable;
}
const OpcodeInfo& info(Opcode op) {
  return kTable[static_cast<size_t>(op)];
}
std::string_view name_of(Opcode op) {
  return info(op).name;
}
std::string_view profiler_name_of(Opcode op) {
  return info(op).profiler_name;
}
std::optional<Opcode> parse_opcode(std::string_view s) {
  for (const auto& row : kTable) {
    if (row.name == s) return row.opcode;
  }
  return std::nullopt;
}
bool runs_on(Opcode op, Engine e) {
  return (info(op).engines >> index_of(e)) & 1;
}

std::string_view name_of(ActivationFunction f) {
  return kActivationNames[static_cast<size_t>(f)];
}
std::optional<ActivationFunction> parse_activation_function(std::string_view s) {
  return parse_from<ActivationFunction>(kActivationNames, s);
}

float apply(ActivationFunction f, float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  switch (f) {
    case ActivationFunction::identity:
    case ActivationFunction::copy:
      return x;
    case ActivationFunction::square:
      return x * x;
    case ActivationFunction::sqrt:
      return std::sqrt(x);
    case ActivationFunction::rsqrt:
      return 1.0f / std::sqrt(x);
    case ActivationFunction::reciprocal:
      return 1.0f / x;
    case ActivationFunction::exp:
      return std::exp(x);
    case ActivationFunction::log:
      return std::log(x);
    case ActivationFunction::relu:
      return x > 0.0f ? x : 0.0f;
    case ActivationFunction::tanh:
      return std::tanh(x);
    case ActivationFunction::sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case ActivationFunction::gelu:  // exact: x * Phi(x)
      return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
    case ActivationFunction::gelu_tanh:
      return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    case ActivationFunction::silu:
      return x / (1.0f + std::exp(-x));
    case ActivationFunction::sin:
      return std::sin(x);
    case ActivationFunction::abs:
      return std::fabs(x);
    case ActivationFunction::gelu_dx: {  // d/dx of x * Phi(x) = Phi(x) + x * phi(x)
      const float phi = 0.3989422804014327f * std::exp(-0.5f * x * x);
      return 0.5f * (1.0f + std::erf(x * 0.7071067811865476f)) + x * phi;
    }
    case ActivationFunction::gelu_apprx_sigmoid:  // x * sigmoid(1.702 x)
      return x / (1.0f + std::exp(-1.702f * x));
    case ActivationFunction::silu_dx: {  // sigmoid(x) * (1 + x * (1 - sigmoid(x)))
      const float s = 1.0f / (1.0f + std::exp(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case ActivationFunction::softplus:  // log(1 + e^x), without overflow for large x
      return x > 20.0f ? x : std::log1p(std::exp(x));
    case ActivationFunction::mish: {
      const float sp = x > 20.0f ? x : std::log1p(std::exp(x));
      return x * std::tanh(sp);
    }
    case ActivationFunction::erf:
      return std::erf(x);
    case ActivationFunction::erf_dx:  // 2 / sqrt(pi) * e^(-x^2)
      return 1.1283791670955126f * std::exp(-x * x);
    case ActivationFunction::arctan:
      return std::atan(x);
    case ActivationFunction::sign:
      return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
  }
  return x;
}

std::string_view name_of(AluOp op) {
  return kAluNames[static_cast<size_t>(op)];
}
std::optional<AluOp> parse_alu_op(std::string_view s) {
  return parse_from<AluOp>(kAluNames, s);
}

float apply(AluOp op, float a, float b) {
  // Bitwise ops take integer operands (validated); integer data takes the exact path in
  // isa/semantics.cpp. Here a value out of int32's range or NaN saturates instead of being
  // undefined behaviour.
  auto to_i32 = [](float v) -> int32_t {
    if (std::isnan(v)) return 0;
    if (v >= 2147483647.0f) return INT32_MAX;
    if (v <= -2147483648.0f) return INT32_MIN;
    return static_cast<int32_t>(v);
  };
  switch (op) {
    case AluOp::bypass:
      return a;
    case AluOp::add:
      return a + b;
    case AluOp::subtract:
      return a - b;
    case AluOp::multiply:
      return a * b;
    case AluOp::divide:
      return a / b;
    case AluOp::max:
      return std::max(a, b);
    case AluOp::min:
      return std::min(a, b);
    case AluOp::pow:
      return std::pow(a, b);
    case AluOp::is_equal:
      return a == b ? 1.0f : 0.0f;
    case AluOp::not_equal:
      return a != b ? 1.0f : 0.0f;
    case AluOp::is_ge:
      return a >= b ? 1.0f : 0.0f;
    case AluOp::is_gt:
      return a > b ? 1.0f : 0.0f;
    case AluOp::is_le:
      return a <= b ? 1.0f : 0.0f;
    case AluOp::is_lt:
      return a < b ? 1.0f : 0.0f;
    case AluOp::bitwise_and:
      return static_cast<float>(to_i32(a) & to_i32(b));
    case AluOp::bitwise_or:
      return static_cast<float>(to_i32(a) | to_i32(b));
    case AluOp::bitwise_xor:
      return static_cast<float>(to_i32(a) ^ to_i32(b));
    case AluOp::shift_left:
      return static_cast<float>(
          static_cast<int32_t>(static_cast<uint32_t>(to_i32(a)) << (to_i32(b) & 31)));
    case AluOp::shift_right:  // arithmetic
      return static_cast<float>(to_i32(a) >> (to_i32(b) & 31));
    case AluOp::mean:
      return a + b;  // accumulates; the reduction divides by the count
    case AluOp::logical_and:
      return a != 0.0f && b != 0.0f ? 1.0f : 0.0f;
    case AluOp::logical_or:
      return a != 0.0f || b != 0.0f ? 1.0f : 0.0f;
    case AluOp::logical_xor:
      return (a != 0.0f) != (b != 0.0f) ? 1.0f : 0.0f;
  }
  return a;
}

uint64_t Instruction::free_size() const {
  switch (opcode) {
    case Opcode::memset:
    case Opcode::iota:
    case Opcode::nop:
      return dst->free_elements();
    case Opcode::matmul:
      return src[1]->free_elements();  // N_moving
    case Opcode::local_gather:
      return dst->free_elements();
    default:
      return src[0].present() ? src[0]->free_elements() : dst->free_elements();
  }
}

const ScalarPattern& ScalarOperand::no_pattern() {
  static const ScalarPattern none;
  return none;
}

}  // namespace trnsim::isa

namespace trnsim::isa {
// A long program holds millions of these (docs/performance.md, "Compact instructions"): keep an
// eye on what a new field costs. 192 bytes with libstdc++ on x86-64 (other ABIs differ).
#if defined(__GLIBCXX__) && defined(__x86_64__)
static_assert(sizeof(Instruction) <= 192, "isa::Instruction grew: see docs/performance.md");
#endif
}  // namespace trnsim::isa
