// Instruction cost: plain functions of (instruction, arch), no SystemC. The formulas are the
// documented per-instruction estimates (fact sheet section 5, source I1; performance modes
// A2); each rule has a contract test in tests/contract/ named after it.
#pragma once

#include <cstdint>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"

namespace trnsim::models {

// Cycles of the instruction's engine from the start of the instruction to the point where the
// engine can start the next one (the "back to back" cost of I1): its initiation interval. When
// its results are committed, and what a dependent instruction waits for, is the pipeline's
// (models/neuroncore/pipeline.hpp).
Cycles instruction_cycles(const isa::Instruction& in, const config::ArchConfig& arch);

// The same in picoseconds of the instruction's engine clock.
Picoseconds instruction_time(const isa::Instruction& in, const config::ArchConfig& arch);
// instruction_time() of cycles already worked out by instruction_cycles().
inline Picoseconds instruction_time(Cycles cycles, const isa::Instruction& in,
                                    const config::ArchConfig& arch) {
  return to_picoseconds(cycles, arch.mhz(in.engine));
}

// True when tensor_tensor takes the documented fast path, max(MIN_II, N) (I1): one input in
// PSUM and the other in SBUF, whatever the dtype and op; or both in SBUF with every operand
// bf16, op add/subtract/multiply and innermost stride 1.
bool tensor_tensor_fast_path(const isa::Instruction& in);

// The v3 VectorE performance mode an instruction runs in (A2): 4, 2, or 1 (none).
uint32_t vector_perf_mode(const isa::Instruction& in, const config::ArchConfig& arch);

// Shared ports an instruction holds while it runs; two instructions that need a common port
// do not overlap (the v2 port conflicts, and on v3 the PSUM banks and the bus VectorE's
// performance modes share with GpSimdE).
enum Port : uint32_t {
  kPortSbufVectorGpSimd = 1u << 0,
  kPortPsumVectorScalar = 1u << 1,
  kPortPsumBank0 = 1u << 8,  // bank b is kPortPsumBank0 << b
};
uint32_t ports_of(const isa::Instruction& in, const config::ArchConfig& arch);

// Floating-point operations the instruction performs (matmul: 2 x K x M x N; elementwise: one
// per output element per op). DMA moves bytes and does no FLOPs.
uint64_t instruction_flops(const isa::Instruction& in);

}  // namespace trnsim::models
