// Instructions of the NeuronCore ISA, modelled on the public NKI ISA (nki.isa), and the
// semaphore operations that order them across engines.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/shared_value.hpp"
#include "base/small_vector.hpp"
#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/collective.hpp"
#include "isa/pattern_ref.hpp"

namespace trnsim::isa {

enum class Opcode : uint8_t {
  dma_copy,              // any engine triggers it; a DMA queue moves the data
  dma_transpose,         // DMA that swaps the partition axis and the free axis of a 2-D tile
  matmul,                // TensorE: PSUM[m, n] (+)= sum_k stationary[k, m] * moving[k, n]
  transpose,             // TensorE (through the PE array, into PSUM) or VectorE (32x32 blocks)
  activation,            // ScalarE: dst = func(src * scale + bias), optional sum along free axes
  tensor_tensor,         // dst = src0 op0 src1
  tensor_scalar,         // dst = (src op0 operand0) op1 operand1
  scalar_tensor_tensor,  // dst = (src0 op0 operand0) op1 src1
  tensor_reduce,         // dst = reduce(op0, src) over the innermost `reduce_dims` free dims
  tensor_copy,           // dst = src, converted to dst's dtype
  memset,                // dst = operand0.imm()
  iota,                  // dst[p, i] = index_base + partition_step * p + sum(index_steps * i)
  select,                // dst = src0 != 0 ? src1 : src2
  bn_stats,              // dst[p] = (count, mean, M2) of src[p]: batch-norm statistics
  bn_aggr,               // dst[p] = (mean, variance) from groups of (count, mean, M2)
  reciprocal,            // dst = 1 / src
  shuffle,               // dst partition p = src partition (p & ~31) + shuffle_mask[p & 31]
  affine_select,         // dst = (affine index expression op0 0) ? src : fill
  partition_reduce,      // dst[0, i] = reduce(op0, src[:, i]) across partitions
  partition_all_reduce,  // dst[p, i] = reduce(op0, src[:, i]) for every partition p
  nop,                   // waits and updates semaphores only (a barrier, a fence)
  // Added for NKI kernels (nki.isa); appended so that the earlier opcodes keep their codes.
  tensor_scalar_reduce,      // dst = src op0 operand0; accumulate = reduce(op1) along free axes
  tensor_tensor_scan,        // r = op1(op0(src0[i], r), src1[i]) along the free axis, r0 = operand0
  tensor_scalar_cumulative,  // r = op1(op0(src[i], operand0), r) along the free axis, dst[i] = r
  max8,                      // dst[p, 0:8] = the 8 largest values of src[p], descending
  find_index8,               // dst[p, k] = first index of src1[p, k] in src0[p] (all ones: none)
  match_replace8,            // dst = src0 with the first occurrence of each src1[p, k] = operand0
  range_select,              // dst = (index op0 operand0) and (index op1 operand1) ? src : fill
  copy_predicated,           // dst = src0 != 0 ? src1 : dst (reverse: where src0 == 0)
  local_gather,              // dst[p] = src0[p] at the partition slice's flattened indices src1
  gather,                    // dst[p, i] = src0[p, flat src1[p, i]] (per-partition gather)
  // Appended for collectives between the run's cores (docs/chip.md, "Collectives in a program").
  collective,  // any engine triggers it; every core's data moves when the last rank triggers
};
constexpr int kOpcodeCount = 32;
// DMA instructions: the issuing engine only triggers them; a DMA queue moves the data.
constexpr bool is_dma(Opcode op) {
  return op == Opcode::dma_copy || op == Opcode::dma_transpose;
}
// A collective: triggered like a DMA; its semaphore updates fire on every rank at its end.
constexpr bool is_collective(Opcode op) {
  return op == Opcode::collective;
}
std::string_view name_of(Opcode op);
std::optional<Opcode> parse_opcode(std::string_view name);
// The opcode as the Neuron profiler shows it (DMA, MATMUL, ACTIVATE, TENSOR_TENSOR, ...).
std::string_view profiler_name_of(Opcode op);
// Whether `engine` can execute `op` (section 4 of the fact sheet), from the opcode table.
bool runs_on(Opcode op, Engine engine);

// One row of the opcode table: the single source for validation, `trnsim isa` and docs/isa.md.
struct OpcodeInfo {
  Opcode opcode;
  std::string_view name;
  std::string_view profiler_name;
  uint8_t engines;  // bit index_of(Engine)
  std::string_view operands;
  std::string_view semantics;
  std::string_view cost;    // in cycles of the engine that runs it
  std::string_view source;  // where the cost comes from (fact-sheet key, or "assumption")
};
const OpcodeInfo& info(Opcode op);
const std::array<OpcodeInfo, kOpcodeCount>& opcode_table();

enum class ActivationFunction : uint8_t {
  identity,
  copy,
  square,
  sqrt,
  rsqrt,
  reciprocal,
  exp,
  log,
  relu,
  tanh,
  sigmoid,
  gelu,
  gelu_tanh,
  silu,
  sin,
  abs,
  // NKI's further activation functions (nki.api.shared, "Supported Activation Functions").
  gelu_dx,
  gelu_apprx_sigmoid,
  silu_dx,
  softplus,
  mish,
  erf,
  erf_dx,
  arctan,
  sign
};
constexpr int kActivationFunctionCount = 25;
std::string_view name_of(ActivationFunction f);
std::optional<ActivationFunction> parse_activation_function(std::string_view name);
float apply(ActivationFunction f, float x);

enum class AluOp : uint8_t {
  bypass,
  add,
  subtract,
  multiply,
  divide,
  max,
  min,
  pow,
  is_equal,
  not_equal,
  is_ge,
  is_gt,
  is_le,
  is_lt,  // 1.0 when true, else 0.0
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  shift_left,
  shift_right,  // on int32 values
  mean,         // reductions only
  logical_and,  // 1.0 when both are non-zero
  logical_or,
  logical_xor,
};
constexpr int kAluOpCount = 23;
std::string_view name_of(AluOp op);
std::optional<AluOp> parse_alu_op(std::string_view name);
float apply(AluOp op, float a, float b);
constexpr bool is_bitwise(AluOp op) {
  return op >= AluOp::bitwise_and && op <= AluOp::shift_right;
}
// Ops a reduction accepts: add, max, min, mean.
constexpr bool is_reduction(AluOp op) {
  return op == AluOp::add || op == AluOp::max || op == AluOp::min || op == AluOp::mean;
}

// The access pattern of a per-partition scalar, shared between copies of the instruction (a
// PatternRef): most scalars are immediates, and an Instruction holds four of them. Reads like a
// const AccessPattern: present(), ->field, and it converts to const AccessPattern& (an absent
// pattern when there is none).
using ScalarPattern = PatternRef;

// An immediate, or one value per partition read from a [P, 1] access pattern. 8 bytes (an
// Instruction holds four, and most are immediates): the shared pattern's pointer, or the
// immediate's bits in the same word, told apart by the lowest bit (a pattern's address is
// aligned, so its lowest bit is 0).
class ScalarOperand {
 public:
  ScalarOperand() noexcept { set_immediate(0.0f); }
  static ScalarOperand immediate(float v) {
    ScalarOperand s;
    s.set_immediate(v);
    return s;
  }
  static ScalarOperand from(const AccessPattern& ap) {
    ScalarOperand s;
    new (&s.pattern_) ScalarPattern(ap);
    return s;
  }
  ScalarOperand(const ScalarOperand& o) noexcept {
    if (o.is_immediate()) {
      bits_ = o.bits_;
    } else {
      new (&pattern_) ScalarPattern(o.pattern_);
    }
  }
  ScalarOperand(ScalarOperand&& o) noexcept {
    if (o.is_immediate()) {
      bits_ = o.bits_;
    } else {
      new (&pattern_) ScalarPattern(std::move(o.pattern_));
      o.pattern_.~ScalarPattern();
      o.set_immediate(0.0f);
    }
  }
  ScalarOperand& operator=(const ScalarOperand& o) noexcept {
    if (this != &o) {
      this->~ScalarOperand();
      new (this) ScalarOperand(o);
    }
    return *this;
  }
  ScalarOperand& operator=(ScalarOperand&& o) noexcept {
    if (this != &o) {
      this->~ScalarOperand();
      new (this) ScalarOperand(std::move(o));
    }
    return *this;
  }
  ~ScalarOperand() {
    if (!is_immediate()) pattern_.~ScalarPattern();
  }

  // The immediate (0 when the operand is per-partition).
  float imm() const {
    if (!is_immediate()) return 0.0f;
    float v;
    const auto b = static_cast<uint32_t>(bits_ >> 32);
    std::memcpy(&v, &b, sizeof v);
    return v;
  }
  // The [P, 1] pattern: present() when per-partition.
  const ScalarPattern& per_partition() const { return is_immediate() ? no_pattern() : pattern_; }

 private:
  bool is_immediate() const {
    uint64_t word;  // the union's word, whichever member is in it
    std::memcpy(&word, static_cast<const void*>(this), sizeof word);
    return (word & 1u) != 0;
  }
  void set_immediate(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    bits_ = (static_cast<uint64_t>(b) << 32) | 1u;
  }
  static const ScalarPattern& no_pattern();
  union {
    uint64_t bits_;
    ScalarPattern pattern_;
  };
};
static_assert(sizeof(ScalarPattern) == sizeof(uint64_t), "ScalarOperand packs a pattern in a word");

// Wait until semaphore `semaphore` holds at least `value` (the profiler's "S[4] reaches 36").
struct SemaphoreWait {
  uint16_t semaphore = 0;
  int64_t value = 0;
};

enum class SemaphoreUpdateKind : uint8_t { add, set };
// Applied when the instruction completes on its engine. An increment is add 1.
struct SemaphoreUpdate {
  uint16_t semaphore = 0;
  SemaphoreUpdateKind kind = SemaphoreUpdateKind::add;
  int64_t value = 1;
};

// The fields only a few opcodes use, held out of line by Instruction::extra.
struct ExtraFields {
  // iota and affine_select: the affine expression of the partition and free indices
  // (range_select: index_base, and fill).
  int32_t index_base = 0;
  int32_t partition_step = 0;
  std::array<int32_t, kMaxFreeDims> index_steps{};  // per free dim of dst, outermost first
  float fill = 0.0f;                                // affine_select where the test fails
  std::array<uint8_t, 32> shuffle_mask{};  // shuffle: source lane within each 32 partitions
};

struct Instruction {
  Opcode opcode = Opcode::tensor_copy;
  Engine engine = Engine::vector;
  ActivationFunction function = ActivationFunction::identity;  // activation
  // Where the instruction came from: 1 + an index into Program::sources ("kernel.py:12"), or
  // 0 when it has no source (instructions of trnsim's own lowerings). The small fields sit
  // together, so that the Instruction has no padding to speak of (192 bytes).
  uint32_t source = 0;
  // The operands are shared patterns (isa/pattern_ref.hpp): `in.dst->offset` reads a field,
  // `in.dst = pattern` replaces one, `in.dst.edit().offset = x` changes this one's own copy.
  PatternRef dst;
  // matmul: src[0] stationary, src[1] moving; select: src[0] predicate, src[1], src[2]
  std::array<PatternRef, 3> src{};

  // activation
  ScalarOperand scale = ScalarOperand::immediate(1.0f);
  ScalarOperand bias = ScalarOperand::immediate(0.0f);
  PatternRef accumulate;  // activation_reduce: fp32 [P, 1] sum of the outputs

  // tensor_scalar (op0 then op1), tensor_tensor (op0), tensor_reduce (op0), memset (operand0)
  AluOp op0 = AluOp::bypass;
  AluOp op1 = AluOp::bypass;
  // collective send/recv: the partner core, peer=P or peer=+K / -K (isa/collective.hpp). In the
  // padding after op1: the Instruction does not grow.
  PeerKind peer_kind = PeerKind::none;
  int16_t peer = 0;
  ScalarOperand operand0;
  ScalarOperand operand1;
  uint8_t reduce_dims = 1;
  // collective: which one; op0 is its reduction (all_reduce, reduce_scatter), src[0] this
  // rank's input and dst its output (sizes as nccom-test's, isa/collective.hpp); a send has
  // only src[0], a recv only dst (dst is absent on a send, src[0] on a recv). Here, in the
  // padding after reduce_dims, it costs the Instruction no bytes.
  CollectiveOp collective_op = CollectiveOp::all_reduce;

  // matmul: start zeroes the PSUM accumulation group, stop closes it.
  bool accumulate_start = true;
  bool accumulate_stop = true;

  uint16_t dma_queue = 0;
  // dma_copy: descriptors generated by hardware when the instruction runs (DGE, v3): the
  // issuing engine pays arch.dma_dge_instruction_ns instead of a plain trigger.
  bool dma_dge = false;
  // dma_copy: through the DMA transpose unit. The access patterns already say where each
  // element goes; the flag only changes the cost (a fraction of copy throughput, section 3).
  bool dma_transpose = false;

  // The fields of iota, affine_select, range_select and shuffle (60 bytes), out of line and
  // shared: `in.extra->fill` reads one, `in.extra.edit().fill = x` sets one.
  base::SharedValue<ExtraFields> extra;

  // tensor_scalar, scalar_tensor_tensor, tensor_tensor_scan: bit 0 puts operand0 (scan: the
  // running value) on the left of op0, bit 1 puts src1/operand1 on the left of op1 (NKI's
  // reverse0/reverse1). copy_predicated: bit 0 copies where the predicate is zero.
  uint8_t reverse = 0;
  // tensor_reduce: the result is negated (NKI's negate=True; free, I1).
  bool negate = false;
  // local_gather: elements gathered per index, and indices used per 16-partition slice.
  uint8_t gather_elements = 1;  // 1 to 32
  // collective: its ranks are groups of this many consecutive cores (core c in group c / G),
  // each group its own collective; 0: one group of every core of the run. Beside
  // gather_elements (a byte since then), in what was padding: the Instruction does not grow.
  uint8_t collective_group = 0;
  uint32_t gather_indices = 0;

  // Inline room for one of each (most instructions have at most one): no heap allocation.
  base::SmallVector<SemaphoreWait, 1> waits;
  base::SmallVector<SemaphoreUpdate, 1> updates;
  std::string label;  // for people: shows in traces and error messages

  // The free size N that the cost formulas use (elements per partition of the main input).
  uint64_t free_size() const;
};

// Whether the instruction may read its destination too: a matmul accumulates into its PSUM
// group (counted whether or not it starts one, as the synchronization always has), and
// copy_predicated keeps dst where the predicate says so.
inline bool reads_dst(const Instruction& in) {
  return in.opcode == Opcode::matmul || in.opcode == Opcode::copy_predicated;
}

// Calls fn(pattern, written) for every operand slot of `in`: the three sources, the four
// per-partition scalars, then dst and accumulate (written). Absent operands are passed too
// (present() is false). A matmul that accumulates also reads dst: callers that care add it.
template <typename Fn>
void for_each_operand(const Instruction& in, Fn&& fn) {
  for (const PatternRef& s : in.src) fn(s.get(), false);
  fn(in.scale.per_partition().get(), false);
  fn(in.bias.per_partition().get(), false);
  fn(in.operand0.per_partition().get(), false);
  fn(in.operand1.per_partition().get(), false);
  fn(in.dst.get(), true);
  fn(in.accumulate.get(), true);
}

}  // namespace trnsim::isa
