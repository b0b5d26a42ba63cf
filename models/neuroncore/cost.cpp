#include "models/neuroncore/cost.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::models {

using isa::AluOp;
using isa::DType;
using isa::Memory;
using isa::Opcode;

bool tensor_tensor_fast_path(const isa::Instruction& in) {
  const auto& a = in.src[0];
  const auto& b = in.src[1];
  const bool placement = (a.memory == Memory::sbuf && b.memory == Memory::sbuf) ||
                         (a.memory == Memory::sbuf && b.memory == Memory::psum) ||
                         (a.memory == Memory::psum && b.memory == Memory::sbuf);
  const bool all_bf16 =
      a.dtype == DType::bf16 && b.dtype == DType::bf16 && in.dst.dtype == DType::bf16;
  const bool op = in.op0 == AluOp::add || in.op0 == AluOp::subtract || in.op0 == AluOp::multiply;
  const bool stride_one =
      a.innermost_stride_one() && b.innermost_stride_one() && in.dst.innermost_stride_one();
  return placement && all_bf16 && op && stride_one;
}

Cycles instruction_cycles(const isa::Instruction& in, const isa::ArchConfig& arch) {
  const uint64_t min_ii = arch.min_ii_cycles;
  const uint64_t n = in.free_size();
  uint64_t c = 0;
  switch (in.opcode) {
    case Opcode::dma_copy:
      c = arch.dma_trigger_cycles;
      // D2: a hardware-generated (DGE) DMA instruction costs about 600 ns on v3, in the issuing
      // engine's cycles, rounded up.
      if (in.dma_dge) {
        const auto dge = static_cast<uint64_t>(
            std::ceil(arch.dma_dge_instruction_ns * arch.mhz(in.engine) / 1000.0));
        c = std::max<uint64_t>(c, dge);
      }
      break;
    case Opcode::matmul: {
      // I1: max(min(64, N_stationary), N_moving); 4x for fp32.
      const uint64_t n_stationary = in.src[0].free_elements();
      const uint64_t n_moving = in.src[1].free_elements();
      c = std::max(std::min<uint64_t>(min_ii, n_stationary), n_moving);
      if (in.src[0].dtype == DType::fp32 || in.src[1].dtype == DType::fp32) {
        c *= arch.matmul_fp32_factor;
      }
      break;
    }
    case Opcode::activation:
      // I1: max(MIN_II, N); with accumulate, + MIN_II to read the accumulator.
      c = std::max(min_ii, n) + (in.accumulate.present() ? min_ii : 0);
      break;
    case Opcode::tensor_scalar:
    case Opcode::tensor_copy:
      c = std::max(min_ii, n);  // I1: one or two ops alike
      break;
    case Opcode::tensor_tensor:
      c = tensor_tensor_fast_path(in) ? std::max(min_ii, n) : std::max(min_ii, 2 * n);
      break;
    case Opcode::tensor_reduce: {
      // I1: N/2 for bf16 in and out with add or max; otherwise N (no MIN_II in the note).
      const bool fast = in.src[0].dtype == DType::bf16 && in.dst.dtype == DType::bf16 &&
                        (in.op0 == AluOp::add || in.op0 == AluOp::max);
      c = fast ? n / 2 : n;
      break;
    }
    case Opcode::memset: {
      // I1: max(MIN_II, N/2) for zero in bf16/fp16, else max(MIN_II, N).
      const bool fast = in.operand0.imm == 0.0f && in.dst.dtype == DType::bf16;
      c = std::max(min_ii, fast ? n / 2 : n);
      break;
    }
  }
  if (!in.waits.empty()) c += arch.dependent_overhead_cycles;
  return Cycles(c);
}

Picoseconds instruction_time(const isa::Instruction& in, const isa::ArchConfig& arch) {
  return to_picoseconds(instruction_cycles(in, arch), arch.mhz(in.engine));
}

uint64_t instruction_flops(const isa::Instruction& in) {
  switch (in.opcode) {
    case Opcode::dma_copy:
    case Opcode::memset:
    case Opcode::tensor_copy:
      return 0;
    case Opcode::matmul:
      return 2ULL * in.src[0].partitions * in.src[0].free_elements() * in.src[1].free_elements();
    case Opcode::activation:
      return in.dst.elements() * (in.accumulate.present() ? 2 : 1);
    case Opcode::tensor_scalar:
      return in.dst.elements() * (in.op1 == AluOp::bypass ? 1 : 2);
    case Opcode::tensor_tensor:
      return in.dst.elements();
    case Opcode::tensor_reduce:
      return in.src[0].elements();
  }
  return 0;
}

}  // namespace trnsim::models
