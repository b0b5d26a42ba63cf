// Instructions as kernels write them: one call per instruction. Each constructor below returns
// an isa::Instruction with its opcode, engine, operands and label set and every other field at
// its default, so that a kernel says what the instruction computes in one line instead of
// setting fields one by one. Operands come in the order of the operation they compute
// (tensor_scalar(e, dst, src, op0, operand0, ...) is dst = src op0 operand0), the destination
// first as in NKI (nki.isa).
//
// EngineHandle binds the constructors to one engine and emits through a SyncTracker, so that a
// stage of a software pipeline reads act.activation(...), dve.tensor_scalar(...), one call per
// instruction with the signals it waits for and the semaphore it raises.
//
// Why here and not in isa/: the constructors alone would fit isa/, but the handles are kernel
// notions (SyncTracker, Signal), and isa/ stays the definition of the instruction set that every
// layer reads; one header keeps the constructors next to the only code that calls them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/instruction.hpp"
#include "workloads/kernels/kernel_support.hpp"

namespace trnsim::workloads {

// An ISA scalar operand: an immediate, or one value per partition read from a [P, 1] pattern.
// Converts from either, so that constructors take 1.0f or a column alike.
struct Scalar {
  Scalar(float imm)  // NOLINT: an immediate is a scalar operand
      : operand(isa::ScalarOperand::immediate(imm)) {}
  Scalar(const isa::AccessPattern& per_partition)  // NOLINT: so is a [P, 1] pattern
      : operand(isa::ScalarOperand::from(per_partition)) {}
  Scalar(isa::ScalarOperand op) : operand(std::move(op)) {}  // NOLINT: as it is
  isa::ScalarOperand operand;
};

// --- DMA: `issuer` triggers it, `queue` moves the data -----------------------------------------

isa::Instruction dma_copy(uint16_t queue, const isa::AccessPattern& dst,
                          const isa::AccessPattern& src, std::string label,
                          Engine issuer = Engine::sync);
// Through the DMA transpose unit: src's rows land on dst's partitions.
isa::Instruction dma_transpose(uint16_t queue, const isa::AccessPattern& dst,
                               const isa::AccessPattern& src, std::string label,
                               Engine issuer = Engine::sync);

// A collective between the run's cores (docs/chip.md): `issuer` triggers it; every core's
// `src` is combined into every core's `dst` as `op` says (`reduce` for all_reduce and
// reduce_scatter).
isa::Instruction collective(isa::CollectiveOp op, isa::AluOp reduce, const isa::AccessPattern& dst,
                            const isa::AccessPattern& src, std::string label,
                            Engine issuer = Engine::sync);

// --- compute ------------------------------------------------------------------------------------

// dst = f(src * scale + bias).
isa::Instruction activation(Engine e, isa::ActivationFunction f, const isa::AccessPattern& dst,
                            const isa::AccessPattern& src, Scalar scale, Scalar bias,
                            std::string label);
// The same, also summing each partition's outputs into `accumulate` (fp32 [P, 1]).
isa::Instruction activation_reduce(Engine e, isa::ActivationFunction f,
                                   const isa::AccessPattern& dst, const isa::AccessPattern& src,
                                   Scalar scale, Scalar bias, const isa::AccessPattern& accumulate,
                                   std::string label);
// dst = a op b.
isa::Instruction tensor_tensor(Engine e, const isa::AccessPattern& dst, const isa::AccessPattern& a,
                               isa::AluOp op, const isa::AccessPattern& b, std::string label);
// dst = src op0 operand0.
isa::Instruction tensor_scalar(Engine e, const isa::AccessPattern& dst,
                               const isa::AccessPattern& src, isa::AluOp op0, Scalar operand0,
                               std::string label);
// dst = (src op0 operand0) op1 operand1.
isa::Instruction tensor_scalar(Engine e, const isa::AccessPattern& dst,
                               const isa::AccessPattern& src, isa::AluOp op0, Scalar operand0,
                               isa::AluOp op1, Scalar operand1, std::string label);
// dst = (src0 op0 operand0) op1 src1.
isa::Instruction scalar_tensor_tensor(Engine e, const isa::AccessPattern& dst,
                                      const isa::AccessPattern& src0, isa::AluOp op0,
                                      Scalar operand0, isa::AluOp op1,
                                      const isa::AccessPattern& src1, std::string label);
// dst = reduce(op, src) along the innermost free dimension.
isa::Instruction tensor_reduce(Engine e, const isa::AccessPattern& dst, isa::AluOp op,
                               const isa::AccessPattern& src, std::string label);
// dst = src, converted to dst's dtype.
isa::Instruction tensor_copy(Engine e, const isa::AccessPattern& dst, const isa::AccessPattern& src,
                             std::string label);
// dst = 1 / src.
isa::Instruction reciprocal(Engine e, const isa::AccessPattern& dst, const isa::AccessPattern& src,
                            std::string label);
// dst = value.
isa::Instruction memset(Engine e, const isa::AccessPattern& dst, float value, std::string label);
// dst[p, i] = index_base + partition_step * p + sum(index_steps * i).
isa::Instruction iota(Engine e, const isa::AccessPattern& dst, int32_t index_base,
                      int32_t partition_step, const std::array<int32_t, isa::kMaxFreeDims>& steps,
                      std::string label);
// dst = (partition_step * p + sum(index_steps * i) op 0) ? src : fill.
isa::Instruction affine_select(Engine e, const isa::AccessPattern& dst,
                               const isa::AccessPattern& src, int32_t partition_step,
                               const std::array<int32_t, isa::kMaxFreeDims>& index_steps,
                               isa::AluOp op, float fill, std::string label);
// dst = predicate != 0 ? on_true : on_false.
isa::Instruction select(Engine e, const isa::AccessPattern& dst,
                        const isa::AccessPattern& predicate, const isa::AccessPattern& on_true,
                        const isa::AccessPattern& on_false, std::string label);
// Batch-norm statistics: dst[p] = (count, mean, M2) of src[p]; bn_aggr combines such groups into
// (mean, variance).
isa::Instruction bn_stats(Engine e, const isa::AccessPattern& dst, const isa::AccessPattern& src,
                          std::string label);
isa::Instruction bn_aggr(Engine e, const isa::AccessPattern& dst, const isa::AccessPattern& src,
                         std::string label);
// TensorE: PSUM dst[m, n] (+)= sum_k stationary[k, m] * moving[k, n]; `start` zeroes the
// accumulation group, `stop` closes it.
isa::Instruction matmul(const isa::AccessPattern& dst, const isa::AccessPattern& stationary,
                        const isa::AccessPattern& moving, bool start, bool stop, std::string label);
// dst = src^T (TensorE through the PE array into PSUM, or VectorE in 32 x 32 blocks).
isa::Instruction transpose(Engine e, const isa::AccessPattern& dst, const isa::AccessPattern& src,
                           std::string label);

// --- engine handles ------------------------------------------------------------------------------

// One engine's stream as a SyncTracker kernel writes it: each call builds one instruction on
// this engine and emits it after the signals `deps` it waits for; `raise` names the semaphore it
// raises as it completes (-1: none). Returns SyncTracker::emit's signal.
class EngineHandle {
 public:
  using Deps = std::vector<Signal>;
  EngineHandle(SyncTracker& tracker, Engine engine) : tracker_(tracker), engine_(engine) {}
  Engine engine() const { return engine_; }

  // Any instruction built for this engine (std::logic_error for another engine's).
  Signal emit(isa::Instruction in, const Deps& deps = {}, int raise = -1);

  // A DMA raises its queue's semaphore, not one of its own.
  Signal dma_copy(uint16_t queue, const isa::AccessPattern& dst, const isa::AccessPattern& src,
                  std::string label, const Deps& deps = {}) {
    return emit(workloads::dma_copy(queue, dst, src, std::move(label), engine_), deps);
  }
  Signal dma_transpose(uint16_t queue, const isa::AccessPattern& dst, const isa::AccessPattern& src,
                       std::string label, const Deps& deps = {}) {
    return emit(workloads::dma_transpose(queue, dst, src, std::move(label), engine_), deps);
  }
  Signal activation(isa::ActivationFunction f, const isa::AccessPattern& dst,
                    const isa::AccessPattern& src, Scalar scale, Scalar bias, std::string label,
                    const Deps& deps = {}, int raise = -1) {
    return emit(workloads::activation(engine_, f, dst, src, std::move(scale), std::move(bias),
                                      std::move(label)),
                deps, raise);
  }
  Signal activation_reduce(isa::ActivationFunction f, const isa::AccessPattern& dst,
                           const isa::AccessPattern& src, Scalar scale, Scalar bias,
                           const isa::AccessPattern& accumulate, std::string label,
                           const Deps& deps = {}, int raise = -1) {
    return emit(workloads::activation_reduce(engine_, f, dst, src, std::move(scale),
                                             std::move(bias), accumulate, std::move(label)),
                deps, raise);
  }
  Signal tensor_tensor(const isa::AccessPattern& dst, const isa::AccessPattern& a, isa::AluOp op,
                       const isa::AccessPattern& b, std::string label, const Deps& deps = {},
                       int raise = -1) {
    return emit(workloads::tensor_tensor(engine_, dst, a, op, b, std::move(label)), deps, raise);
  }
  Signal tensor_scalar(const isa::AccessPattern& dst, const isa::AccessPattern& src, isa::AluOp op0,
                       Scalar operand0, std::string label, const Deps& deps = {}, int raise = -1) {
    return emit(
        workloads::tensor_scalar(engine_, dst, src, op0, std::move(operand0), std::move(label)),
        deps, raise);
  }
  Signal tensor_scalar(const isa::AccessPattern& dst, const isa::AccessPattern& src, isa::AluOp op0,
                       Scalar operand0, isa::AluOp op1, Scalar operand1, std::string label,
                       const Deps& deps = {}, int raise = -1) {
    return emit(workloads::tensor_scalar(engine_, dst, src, op0, std::move(operand0), op1,
                                         std::move(operand1), std::move(label)),
                deps, raise);
  }
  Signal scalar_tensor_tensor(const isa::AccessPattern& dst, const isa::AccessPattern& src0,
                              isa::AluOp op0, Scalar operand0, isa::AluOp op1,
                              const isa::AccessPattern& src1, std::string label,
                              const Deps& deps = {}, int raise = -1) {
    return emit(workloads::scalar_tensor_tensor(engine_, dst, src0, op0, std::move(operand0), op1,
                                                src1, std::move(label)),
                deps, raise);
  }
  Signal tensor_reduce(const isa::AccessPattern& dst, isa::AluOp op, const isa::AccessPattern& src,
                       std::string label, const Deps& deps = {}, int raise = -1) {
    return emit(workloads::tensor_reduce(engine_, dst, op, src, std::move(label)), deps, raise);
  }
  Signal tensor_copy(const isa::AccessPattern& dst, const isa::AccessPattern& src,
                     std::string label, const Deps& deps = {}, int raise = -1) {
    return emit(workloads::tensor_copy(engine_, dst, src, std::move(label)), deps, raise);
  }
  Signal reciprocal(const isa::AccessPattern& dst, const isa::AccessPattern& src, std::string label,
                    const Deps& deps = {}, int raise = -1) {
    return emit(workloads::reciprocal(engine_, dst, src, std::move(label)), deps, raise);
  }
  Signal memset(const isa::AccessPattern& dst, float value, std::string label,
                const Deps& deps = {}, int raise = -1) {
    return emit(workloads::memset(engine_, dst, value, std::move(label)), deps, raise);
  }
  Signal affine_select(const isa::AccessPattern& dst, const isa::AccessPattern& src,
                       int32_t partition_step,
                       const std::array<int32_t, isa::kMaxFreeDims>& index_steps, isa::AluOp op,
                       float fill, std::string label, const Deps& deps = {}, int raise = -1) {
    return emit(workloads::affine_select(engine_, dst, src, partition_step, index_steps, op, fill,
                                         std::move(label)),
                deps, raise);
  }
  Signal bn_stats(const isa::AccessPattern& dst, const isa::AccessPattern& src, std::string label,
                  const Deps& deps = {}, int raise = -1) {
    return emit(workloads::bn_stats(engine_, dst, src, std::move(label)), deps, raise);
  }
  Signal bn_aggr(const isa::AccessPattern& dst, const isa::AccessPattern& src, std::string label,
                 const Deps& deps = {}, int raise = -1) {
    return emit(workloads::bn_aggr(engine_, dst, src, std::move(label)), deps, raise);
  }

 private:
  SyncTracker& tracker_;
  Engine engine_;
};

}  // namespace trnsim::workloads
