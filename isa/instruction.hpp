// Instructions of the NeuronCore ISA, modelled on the public NKI ISA (nki.isa), and the
// semaphore operations that order them across engines.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/access_pattern.hpp"
#include "isa/arch.hpp"

namespace trnsim::isa {

enum class Opcode : uint8_t {
  dma_copy,       // any engine triggers it; a DMA queue moves the data
  matmul,         // TensorE: PSUM[m, n] (+)= sum_k stationary[k, m] * moving[k, n]
  activation,     // ScalarE: dst = func(src * scale + bias), optional sum along the free axes
  tensor_tensor,  // VectorE/GpSimdE: dst = src0 op src1
  tensor_scalar,  // VectorE/ScalarE/GpSimdE: dst = (src op0 operand0) op1 operand1
  tensor_reduce,  // VectorE: dst = reduce(op, src) over the innermost `reduce_dims` free dims
  tensor_copy,    // VectorE/ScalarE/GpSimdE: dst = src, converted to dst's dtype
  memset,         // VectorE/GpSimdE: dst = operand0.imm
};
constexpr int kOpcodeCount = 8;
std::string_view name_of(Opcode op);
std::optional<Opcode> parse_opcode(std::string_view name);
// The opcode as the Neuron profiler shows it (DMA, MATMUL, ACTIVATE, TENSOR_TENSOR, ...).
std::string_view profiler_name_of(Opcode op);
// Whether `engine` can execute `op` (section 4 of the fact sheet).
bool runs_on(Opcode op, Engine engine);

enum class ActivationFunction : uint8_t {
  identity, square, sqrt, rsqrt, reciprocal, exp, relu, tanh, sigmoid
};
std::string_view name_of(ActivationFunction f);
std::optional<ActivationFunction> parse_activation_function(std::string_view name);
float apply(ActivationFunction f, float x);

enum class AluOp : uint8_t { bypass, add, subtract, multiply, divide, max, min, pow };
std::string_view name_of(AluOp op);
std::optional<AluOp> parse_alu_op(std::string_view name);
float apply(AluOp op, float a, float b);

// An immediate, or one value per partition read from a [P, 1] access pattern.
struct ScalarOperand {
  float imm = 0.0f;
  AccessPattern per_partition;  // present() when per-partition
  static ScalarOperand immediate(float v) { return ScalarOperand{v, {}}; }
  static ScalarOperand from(const AccessPattern& ap) { return ScalarOperand{0.0f, ap}; }
};

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

struct Instruction {
  Opcode opcode = Opcode::tensor_copy;
  Engine engine = Engine::vector;
  AccessPattern dst;
  std::array<AccessPattern, 2> src{};  // matmul: src[0] stationary, src[1] moving

  // activation
  ActivationFunction function = ActivationFunction::identity;
  ScalarOperand scale = ScalarOperand::immediate(1.0f);
  ScalarOperand bias = ScalarOperand::immediate(0.0f);
  AccessPattern accumulate;  // activation_reduce: fp32 [P, 1] sum of the outputs

  // tensor_scalar (op0 then op1), tensor_tensor (op0), tensor_reduce (op0), memset (operand0)
  AluOp op0 = AluOp::bypass;
  AluOp op1 = AluOp::bypass;
  ScalarOperand operand0;
  ScalarOperand operand1;
  uint8_t reduce_dims = 1;

  // matmul: start zeroes the PSUM accumulation group, stop closes it.
  bool accumulate_start = true;
  bool accumulate_stop = true;

  uint16_t dma_queue = 0;

  std::vector<SemaphoreWait> waits;
  std::vector<SemaphoreUpdate> updates;
  std::string label;  // for people: shows in traces and error messages

  // The free size N that the cost formulas use (elements per partition of the main input).
  uint64_t free_size() const;
};

}  // namespace trnsim::isa
