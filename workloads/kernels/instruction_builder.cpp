#include "workloads/kernels/instruction_builder.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace trnsim::workloads {

using isa::AccessPattern;
using isa::Instruction;
using isa::Opcode;

namespace {

Instruction dma(Opcode op, uint16_t queue, const AccessPattern& dst, const AccessPattern& src,
                std::string label, Engine issuer) {
  Instruction in = make_instruction(op, issuer, std::move(label));
  in.src[0] = src;
  in.dst = dst;
  in.dma_queue = queue;
  return in;
}

// An instruction of one source and a destination.
Instruction unary(Opcode op, Engine e, const AccessPattern& dst, const AccessPattern& src,
                  std::string label) {
  Instruction in = make_instruction(op, e, std::move(label));
  in.src[0] = src;
  in.dst = dst;
  return in;
}

}  // namespace

Instruction dma_copy(uint16_t queue, const AccessPattern& dst, const AccessPattern& src,
                     std::string label, Engine issuer) {
  return dma(Opcode::dma_copy, queue, dst, src, std::move(label), issuer);
}

Instruction dma_transpose(uint16_t queue, const AccessPattern& dst, const AccessPattern& src,
                          std::string label, Engine issuer) {
  return dma(Opcode::dma_transpose, queue, dst, src, std::move(label), issuer);
}

Instruction collective(isa::CollectiveOp op, isa::AluOp reduce, const AccessPattern& dst,
                       const AccessPattern& src, std::string label, Engine issuer) {
  Instruction in;
  in.opcode = Opcode::collective;
  in.engine = issuer;
  in.collective_op = op;
  in.op0 = reduce;
  in.dst = dst;
  in.src[0] = src;
  in.label = std::move(label);
  return in;
}

Instruction activation(Engine e, isa::ActivationFunction f, const AccessPattern& dst,
                       const AccessPattern& src, Scalar scale, Scalar bias, std::string label) {
  Instruction in = unary(Opcode::activation, e, dst, src, std::move(label));
  in.function = f;
  in.scale = std::move(scale.operand);
  in.bias = std::move(bias.operand);
  return in;
}

Instruction activation_reduce(Engine e, isa::ActivationFunction f, const AccessPattern& dst,
                              const AccessPattern& src, Scalar scale, Scalar bias,
                              const AccessPattern& accumulate, std::string label) {
  Instruction in = activation(e, f, dst, src, std::move(scale), std::move(bias), std::move(label));
  in.accumulate = accumulate;
  return in;
}

Instruction tensor_tensor(Engine e, const AccessPattern& dst, const AccessPattern& a, isa::AluOp op,
                          const AccessPattern& b, std::string label) {
  Instruction in = unary(Opcode::tensor_tensor, e, dst, a, std::move(label));
  in.src[1] = b;
  in.op0 = op;
  return in;
}

Instruction tensor_scalar(Engine e, const AccessPattern& dst, const AccessPattern& src,
                          isa::AluOp op0, Scalar operand0, std::string label) {
  Instruction in = unary(Opcode::tensor_scalar, e, dst, src, std::move(label));
  in.op0 = op0;
  in.operand0 = std::move(operand0.operand);
  return in;
}

Instruction tensor_scalar(Engine e, const AccessPattern& dst, const AccessPattern& src,
                          isa::AluOp op0, Scalar operand0, isa::AluOp op1, Scalar operand1,
                          std::string label) {
  Instruction in = tensor_scalar(e, dst, src, op0, std::move(operand0), std::move(label));
  in.op1 = op1;
  in.operand1 = std::move(operand1.operand);
  return in;
}

Instruction scalar_tensor_tensor(Engine e, const AccessPattern& dst, const AccessPattern& src0,
                                 isa::AluOp op0, Scalar operand0, isa::AluOp op1,
                                 const AccessPattern& src1, std::string label) {
  Instruction in = unary(Opcode::scalar_tensor_tensor, e, dst, src0, std::move(label));
  in.src[1] = src1;
  in.op0 = op0;
  in.operand0 = std::move(operand0.operand);
  in.op1 = op1;
  return in;
}

Instruction tensor_reduce(Engine e, const AccessPattern& dst, isa::AluOp op,
                          const AccessPattern& src, std::string label) {
  Instruction in = unary(Opcode::tensor_reduce, e, dst, src, std::move(label));
  in.op0 = op;
  return in;
}

Instruction tensor_copy(Engine e, const AccessPattern& dst, const AccessPattern& src,
                        std::string label) {
  return unary(Opcode::tensor_copy, e, dst, src, std::move(label));
}

Instruction reciprocal(Engine e, const AccessPattern& dst, const AccessPattern& src,
                       std::string label) {
  return unary(Opcode::reciprocal, e, dst, src, std::move(label));
}

Instruction memset(Engine e, const AccessPattern& dst, float value, std::string label) {
  Instruction in = make_instruction(Opcode::memset, e, std::move(label));
  in.dst = dst;
  in.operand0 = isa::ScalarOperand::immediate(value);
  return in;
}

Instruction iota(Engine e, const AccessPattern& dst, int32_t index_base, int32_t partition_step,
                 const std::array<int32_t, isa::kMaxFreeDims>& steps, std::string label) {
  Instruction in = make_instruction(Opcode::iota, e, std::move(label));
  in.dst = dst;
  in.extra.edit().index_base = index_base;
  in.extra.edit().partition_step = partition_step;
  in.extra.edit().index_steps = steps;
  return in;
}

Instruction affine_select(Engine e, const AccessPattern& dst, const AccessPattern& src,
                          int32_t partition_step,
                          const std::array<int32_t, isa::kMaxFreeDims>& index_steps, isa::AluOp op,
                          float fill, std::string label) {
  Instruction in = unary(Opcode::affine_select, e, dst, src, std::move(label));
  in.extra.edit().partition_step = partition_step;
  in.extra.edit().index_steps = index_steps;
  in.op0 = op;
  in.extra.edit().fill = fill;
  return in;
}

Instruction select(Engine e, const AccessPattern& dst, const AccessPattern& predicate,
                   const AccessPattern& on_true, const AccessPattern& on_false, std::string label) {
  Instruction in = unary(Opcode::select, e, dst, predicate, std::move(label));
  in.src[1] = on_true;
  in.src[2] = on_false;
  return in;
}

Instruction bn_stats(Engine e, const AccessPattern& dst, const AccessPattern& src,
                     std::string label) {
  return unary(Opcode::bn_stats, e, dst, src, std::move(label));
}

Instruction bn_aggr(Engine e, const AccessPattern& dst, const AccessPattern& src,
                    std::string label) {
  return unary(Opcode::bn_aggr, e, dst, src, std::move(label));
}

Instruction matmul(const AccessPattern& dst, const AccessPattern& stationary,
                   const AccessPattern& moving, bool start, bool stop, std::string label) {
  Instruction in = unary(Opcode::matmul, Engine::tensor, dst, stationary, std::move(label));
  in.src[1] = moving;
  in.accumulate_start = start;
  in.accumulate_stop = stop;
  return in;
}

Instruction transpose(Engine e, const AccessPattern& dst, const AccessPattern& src,
                      std::string label) {
  return unary(Opcode::transpose, e, dst, src, std::move(label));
}

Signal EngineHandle::emit(Instruction in, const Deps& deps, int raise) {
  if (in.engine != engine_) {
    throw std::logic_error(fmt::format("EngineHandle of {}: '{}' is for {}", name_of(engine_),
                                       in.label, name_of(in.engine)));
  }
  return tracker_.emit(std::move(in), deps, raise);
}

}  // namespace trnsim::workloads
