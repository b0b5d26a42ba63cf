#include "models/neuroncore/cost.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::models {

using isa::AluOp;
using isa::DType;
using isa::Memory;
using isa::Opcode;

namespace {
bool all_operands(const isa::Instruction& in, bool (*pred)(const isa::AccessPattern&)) {
  if (in.dst->present() && !pred(in.dst)) return false;
  for (const auto& s : in.src) {
    if (s.present() && !pred(s)) return false;
  }
  return true;
}
}  // namespace

bool tensor_tensor_fast_path(const isa::Instruction& in) {
  const auto& a = in.src[0].get();
  const auto& b = in.src[1].get();
  // I1 lists two rows for max(MIN_II, N): one input in PSUM and the other in SBUF (with no
  // condition on dtype or op: the evacuation of matmul results), and both in SBUF with every
  // operand bf16, op add/subtract/multiply and stride 1.
  const bool psum_and_sbuf = (a.memory == Memory::sbuf && b.memory == Memory::psum) ||
                             (a.memory == Memory::psum && b.memory == Memory::sbuf);
  if (psum_and_sbuf) return true;
  const bool both_sbuf = a.memory == Memory::sbuf && b.memory == Memory::sbuf;
  const bool all_bf16 =
      a.dtype == DType::bf16 && b.dtype == DType::bf16 && in.dst->dtype == DType::bf16;
  const bool op = in.op0 == AluOp::add || in.op0 == AluOp::subtract || in.op0 == AluOp::multiply;
  const bool stride_one =
      a.innermost_stride_one() && b.innermost_stride_one() && in.dst->innermost_stride_one();
  return both_sbuf && all_bf16 && op && stride_one;
}

uint32_t vector_perf_mode(const isa::Instruction& in, const config::ArchConfig& arch) {
  if (!arch.vector_perf_modes || in.engine != Engine::vector) return 1;
  const bool half =
      all_operands(in, [](const isa::AccessPattern& ap) { return isa::is_half(ap.dtype); });
  if (!half || in.operand0.per_partition()->memory == Memory::psum) return 1;
  const bool sbuf =
      all_operands(in, [](const isa::AccessPattern& ap) { return ap.memory == Memory::sbuf; });
  const bool contiguous =
      all_operands(in, [](const isa::AccessPattern& ap) { return ap.innermost_stride_one(); });
  switch (in.opcode) {
    case Opcode::tensor_copy:
    case Opcode::tensor_scalar:
      return sbuf && contiguous ? 4 : 2;  // A2: 4x all-SBUF contiguous; 2x strided or PSUM
    case Opcode::tensor_tensor:
      return in.src[0]->memory == Memory::sbuf && in.src[1]->memory == Memory::sbuf ? 2 : 1;
    default:
      return 1;
  }
}

Cycles instruction_cycles(const isa::Instruction& in, const config::ArchConfig& arch) {
  const uint64_t min_ii = arch.min_ii_cycles;
  const uint64_t n = in.free_size();
  const uint64_t mode = vector_perf_mode(in, arch);
  uint64_t c = 0;
  switch (in.opcode) {
    case Opcode::dma_copy:
    case Opcode::dma_transpose:
    case Opcode::collective:  // triggered like a DMA (D1); the fabric times the data movement
      c = static_cast<uint64_t>(std::ceil(arch.dma_trigger_ns * arch.mhz(in.engine) / 1000.0));
      // D2: a hardware-generated (DGE) DMA instruction costs about 600 ns on v3, in the issuing
      // engine's cycles, rounded up.
      if (in.dma_dge) {
        const auto dge = static_cast<uint64_t>(
            std::ceil(arch.dma_dge_instruction_ns * arch.mhz(in.engine) / 1000.0));
        c = std::max<uint64_t>(c, dge);
      }
      break;
    case Opcode::matmul: {
      // I1: max(min(64, N_stationary), N_moving); 4x for fp32; fp8 at the preset's rate (A2).
      const uint64_t n_stationary = in.src[0]->free_elements();
      uint64_t n_moving = in.src[1]->free_elements();
      if (isa::is_fp8(in.src[0]->dtype) && isa::is_fp8(in.src[1]->dtype)) {
        n_moving = (n_moving + arch.matmul_fp8_rate - 1) / arch.matmul_fp8_rate;
      }
      c = std::max(std::min<uint64_t>(arch.matmul_min_cycles, n_stationary), n_moving);
      if (in.src[0]->dtype == DType::fp32 || in.src[1]->dtype == DType::fp32) {
        c *= arch.matmul_fp32_factor;
      }
      break;
    }
    case Opcode::transpose:
      // I1: TensorE max(P, min(64, F)); VectorE max(MIN_II, N).
      c = in.engine == Engine::tensor
              ? std::max<uint64_t>(in.src[0]->partitions, std::min<uint64_t>(min_ii, n))
              : std::max(min_ii, n);
      break;
    case Opcode::activation:
      // I1: max(MIN_II, N); with accumulate, + MIN_II to read the accumulator.
      c = std::max(min_ii, n) + (in.accumulate->present() ? min_ii : 0);
      break;
    case Opcode::tensor_scalar:
    case Opcode::tensor_copy:
      c = std::max(min_ii, n / mode);  // I1: one or two ops alike; A2 modes
      break;
    case Opcode::tensor_tensor:
      c = std::max(min_ii, (tensor_tensor_fast_path(in) ? n : 2 * n) / mode);
      break;
    case Opcode::scalar_tensor_tensor: {
      // I1: N for bf16 data, subtract then multiply, N even; otherwise 2N.
      const bool bf16 = in.src[0]->dtype == DType::bf16 && in.src[1]->dtype == DType::bf16 &&
                        in.dst->dtype == DType::bf16;
      const bool fast =
          bf16 && in.op0 == AluOp::subtract && in.op1 == AluOp::multiply && n % 2 == 0;
      c = std::max<uint64_t>(1, fast ? n : 2 * n);
      break;
    }
    case Opcode::tensor_reduce: {
      // I1: N/2 for bf16 in and out with add or max; otherwise N (no MIN_II in the note).
      const bool fast = in.src[0]->dtype == DType::bf16 && in.dst->dtype == DType::bf16 &&
                        (in.op0 == AluOp::add || in.op0 == AluOp::max);
      c = std::max<uint64_t>(1, fast ? n / 2 : n);  // at least one cycle, even for N = 1
      break;
    }
    case Opcode::memset: {
      // I1: max(MIN_II, N/2) for zero in bf16/fp16, else max(MIN_II, N).
      const bool fast = in.operand0.imm() == 0.0f && isa::is_half(in.dst->dtype);
      c = std::max(min_ii, fast ? n / 2 : n);
      break;
    }
    case Opcode::iota:
      c = in.engine == Engine::gpsimd ? arch.gpsimd_fixed_cycles + n : std::max(min_ii, n);
      break;
    case Opcode::affine_select:
    case Opcode::partition_reduce:
      c = arch.gpsimd_fixed_cycles + n;
      break;
    case Opcode::partition_all_reduce:
      c = arch.gpsimd_fixed_cycles + 2 * n;
      break;
    case Opcode::select:
      c = std::max(min_ii, 2 * n);
      break;
    case Opcode::bn_stats:
    case Opcode::shuffle:
      c = std::max(min_ii, n);
      break;
    case Opcode::bn_aggr:
      c = std::max(min_ii, 13 * n / 3);
      break;
    case Opcode::reciprocal:
      c = std::max(min_ii, 8 * n);
      break;
    case Opcode::nop:
      c = min_ii;
      break;
    case Opcode::tensor_scalar_reduce:
      c = std::max(min_ii, n) + min_ii;  // I1: reading the accumulator costs about MIN_II
      break;
    case Opcode::tensor_tensor_scan:
      c = std::max(min_ii, 2 * n);  // I1: two inputs per element
      break;
    case Opcode::tensor_scalar_cumulative:
    case Opcode::match_replace8:  // I1 prints min(MIN_II, N): read as max (docs/isa.md)
    case Opcode::range_select:
      c = std::max(min_ii, n);
      break;
    case Opcode::max8:
    case Opcode::find_index8:
      c = std::max<uint64_t>(1, n);  // I1: N
      break;
    case Opcode::copy_predicated: {
      // I1: max(MIN_II, N) with one of predicate and data in PSUM and the other in SBUF;
      // max(MIN_II, 2N) otherwise.
      const Memory a = in.src[0]->memory, b = in.src[1]->memory;
      const bool split = (a == Memory::psum) != (b == Memory::psum);
      c = std::max(min_ii, split ? n : 2 * n);
      break;
    }
    case Opcode::local_gather: {
      // I1: GPSIMD_START + (num_valid_indices * num_elem_per_idx) / C with
      // C = ((28 + t * E) / (t * E)) / min(4 / dtype_size, E), t = 4.
      const double e = in.gather_elements;
      const double t = 4.0;
      const double per_word = std::min(4.0 / isa::size_of(in.src[0]->dtype), e);
      const double cc = ((28.0 + t * e) / (t * e)) / per_word;
      c = arch.gpsimd_fixed_cycles +
          static_cast<uint64_t>(std::ceil(static_cast<double>(in.gather_indices) * e / cc));
      break;
    }
    case Opcode::gather:
      c = arch.gpsimd_fixed_cycles + n;
      break;
  }
  return Cycles(c);
}

Picoseconds instruction_time(const isa::Instruction& in, const config::ArchConfig& arch) {
  return instruction_time(instruction_cycles(in, arch), in, arch);
}

uint32_t ports_of(const isa::Instruction& in, const config::ArchConfig& arch) {
  if (isa::is_dma(in.opcode) || in.opcode == Opcode::nop || isa::is_collective(in.opcode)) {
    return 0;  // DMA data moves on the queues, not through the engine's ports
  }
  const bool sbuf =
      !all_operands(in, [](const isa::AccessPattern& ap) { return ap.memory != Memory::sbuf; });
  const bool psum =
      !all_operands(in, [](const isa::AccessPattern& ap) { return ap.memory != Memory::psum; });
  uint32_t ports = 0;
  const Engine e = in.engine;
  if (arch.shared_sbuf_psum_ports) {
    if (sbuf && (e == Engine::vector || e == Engine::gpsimd)) ports |= kPortSbufVectorGpSimd;
    if (psum && (e == Engine::vector || e == Engine::scalar)) ports |= kPortPsumVectorScalar;
  } else {
    // v3: the perf modes use a bus GpSimdE shares; PSUM banks are the remaining conflict.
    if ((e == Engine::vector && vector_perf_mode(in, arch) > 1) || (e == Engine::gpsimd && sbuf)) {
      ports |= kPortSbufVectorGpSimd;
    }
    const uint64_t bank_bytes = arch.psum_partition_bytes / arch.psum_banks;
    auto banks = [&](const isa::AccessPattern& ap) {
      if (!ap.present() || ap.memory != Memory::psum) return;
      const int64_t es = isa::size_of(ap.dtype);
      const int64_t lo = static_cast<int64_t>(ap.offset) + ap.min_element_offset() * es;
      const int64_t hi = static_cast<int64_t>(ap.offset) + ap.max_element_offset_exclusive() * es;
      for (int64_t b = lo / static_cast<int64_t>(bank_bytes);
           b <= (hi - 1) / static_cast<int64_t>(bank_bytes); ++b) {
        if (b >= 0 && b < static_cast<int64_t>(arch.psum_banks)) ports |= kPortPsumBank0 << b;
      }
    };
    banks(in.dst);
    for (const auto& s : in.src) banks(s);
    banks(in.accumulate);
  }
  return ports;
}

uint64_t instruction_flops(const isa::Instruction& in) {
  switch (in.opcode) {
    case Opcode::dma_copy:
    case Opcode::dma_transpose:
    case Opcode::collective:
    case Opcode::memset:
    case Opcode::tensor_copy:
    case Opcode::transpose:
    case Opcode::shuffle:
    case Opcode::iota:
    case Opcode::nop:
      return 0;
    case Opcode::matmul:
      return 2ULL * in.src[0]->partitions * in.src[0]->free_elements() * in.src[1]->free_elements();
    case Opcode::activation:
      return in.dst->elements() * (in.accumulate->present() ? 2 : 1);
    case Opcode::tensor_scalar:
    case Opcode::scalar_tensor_tensor:
      return in.dst->elements() * (in.op1 == AluOp::bypass ? 1 : 2);
    case Opcode::tensor_tensor:
    case Opcode::select:
    case Opcode::reciprocal:
    case Opcode::affine_select:
      return in.dst->elements();
    case Opcode::tensor_reduce:
    case Opcode::partition_reduce:
    case Opcode::partition_all_reduce:
    case Opcode::bn_stats:
    case Opcode::bn_aggr:
    case Opcode::max8:
    case Opcode::find_index8:
    case Opcode::match_replace8:
    case Opcode::range_select:
      return in.src[0]->elements();
    case Opcode::tensor_scalar_reduce:
    case Opcode::tensor_tensor_scan:
    case Opcode::tensor_scalar_cumulative:
      return 2 * in.dst->elements();
    case Opcode::copy_predicated:
    case Opcode::local_gather:
    case Opcode::gather:
      return 0;
  }
  return 0;
}

}  // namespace trnsim::models
