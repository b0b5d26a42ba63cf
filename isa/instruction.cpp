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
     "dma_trigger_cycles on the issuing engine; the transfer: descriptors over the DMA engines",
     "D1, D2; trigger: assumption"},
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
     "dst [P x kept], src; op0 in add/max/min/mean; reduce_dims (innermost free dims)",
     "dst = op0 over the innermost reduce_dims free dims of src (order dims to choose axes)",
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
}};

constexpr std::array<std::string_view, kActivationFunctionCount> kActivationNames = {
    "identity", "copy", "square",  "sqrt", "rsqrt",     "reciprocal", "exp", "log",
    "relu",     "tanh", "sigmoid", "gelu", "gelu_tanh", "silu",       "sin", "abs"};
constexpr std::array<std::string_view, kAluOpCount> kAluNames = {
    "bypass",      "add",        "subtract",    "multiply",   "divide",      "max",   "min",
    "pow",         "is_equal",   "not_equal",   "is_ge",      "is_gt",       "is_le", "is_lt",
    "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right", "mean"};

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
  }
  return a;
}

uint64_t Instruction::free_size() const {
  switch (opcode) {
    case Opcode::memset:
    case Opcode::iota:
    case Opcode::nop:
      return dst.free_elements();
    case Opcode::matmul:
      return src[1].free_elements();  // N_moving
    default:
      return src[0].present() ? src[0].free_elements() : dst.free_elements();
  }
}

}  // namespace trnsim::isa
