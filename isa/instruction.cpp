#include "isa/instruction.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::isa {

namespace {
template <typename E, size_t N>
std::optional<E> parse_from(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

constexpr std::array<std::string_view, kOpcodeCount> kOpcodeNames = {
    "dma_copy",      "matmul",      "activation", "tensor_tensor",
    "tensor_scalar", "tensor_reduce", "tensor_copy", "memset"};
constexpr std::array<std::string_view, kOpcodeCount> kProfilerNames = {
    "DMA",           "MATMUL",        "ACTIVATE",    "TENSOR_TENSOR",
    "TENSOR_SCALAR", "TENSOR_REDUCE", "TENSOR_COPY", "MEMSET"};
constexpr std::array<std::string_view, 9> kActivationNames = {
    "identity", "square", "sqrt", "rsqrt", "reciprocal", "exp", "relu", "tanh", "sigmoid"};
constexpr std::array<std::string_view, 8> kAluNames = {"bypass", "add", "subtract", "multiply",
                                                       "divide", "max", "min",      "pow"};
}  // namespace

std::string_view name_of(Opcode op) { return kOpcodeNames[static_cast<size_t>(op)]; }
std::string_view profiler_name_of(Opcode op) { return kProfilerNames[static_cast<size_t>(op)]; }
std::optional<Opcode> parse_opcode(std::string_view s) {
  return parse_from<Opcode>(kOpcodeNames, s);
}

bool runs_on(Opcode op, Engine e) {
  switch (op) {
    case Opcode::dma_copy:
      return true;  // any engine's sequencer can trigger a DMA queue
    case Opcode::matmul:
      return e == Engine::tensor;
    case Opcode::activation:
      return e == Engine::scalar;
    case Opcode::tensor_tensor:
    case Opcode::memset:
      return e == Engine::vector || e == Engine::gpsimd;
    case Opcode::tensor_scalar:
    case Opcode::tensor_copy:
      return e == Engine::vector || e == Engine::scalar || e == Engine::gpsimd;
    case Opcode::tensor_reduce:
      return e == Engine::vector;
  }
  return false;
}

std::string_view name_of(ActivationFunction f) {
  return kActivationNames[static_cast<size_t>(f)];
}
std::optional<ActivationFunction> parse_activation_function(std::string_view s) {
  return parse_from<ActivationFunction>(kActivationNames, s);
}

float apply(ActivationFunction f, float x) {
  switch (f) {
    case ActivationFunction::identity:
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
    case ActivationFunction::relu:
      return x > 0.0f ? x : 0.0f;
    case ActivationFunction::tanh:
      return std::tanh(x);
    case ActivationFunction::sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
  }
  return x;
}

std::string_view name_of(AluOp op) { return kAluNames[static_cast<size_t>(op)]; }
std::optional<AluOp> parse_alu_op(std::string_view s) { return parse_from<AluOp>(kAluNames, s); }

float apply(AluOp op, float a, float b) {
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
  }
  return a;
}

uint64_t Instruction::free_size() const {
  switch (opcode) {
    case Opcode::memset:
      return dst.free_elements();
    case Opcode::matmul:
      return src[1].free_elements();  // N_moving
    default:
      return src[0].present() ? src[0].free_elements() : dst.free_elements();
  }
}

}  // namespace trnsim::isa
