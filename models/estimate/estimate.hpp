// The timing a lowering may ask for (design brief: "a lowering may call only the model's
// estimate API"). Each estimate is the simulation's own formula applied to one instruction or
// one transfer alone, with no contention and no waiting, so a kernel that sizes its blocks or
// picks an engine by these numbers cannot drift from the model: there is no second copy of a
// cost formula in workloads/. scripts/check-layers keeps workloads/ from including the timing
// models directly.
#pragma once

#include <cstdint>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/dtype.hpp"
#include "isa/instruction.hpp"

namespace trnsim::models::estimate {

// The instruction's time on its engine, back to back (models/neuroncore/cost.hpp): what the
// engine is busy for before it can start its next instruction.
Picoseconds instruction_time(const isa::Instruction& in, const config::ArchConfig& arch);

// The same in nanoseconds, as a real number (for sums over many instructions).
double instruction_ns(const isa::Instruction& in, const config::ArchConfig& arch);

// A matmul of `stationary_columns` x `moving_columns` in `dtype`: instruction_ns of that matmul.
double matmul_ns(uint32_t stationary_columns, uint32_t moving_columns, isa::DType dtype,
                 const config::ArchConfig& arch);

// A DMA transfer alone (models/dma/dma_plan.hpp): from its trigger to its last byte on the
// busiest DMA engine it uses (the start latency, then that engine's descriptors), no HBM queueing.
Picoseconds dma_time(const isa::Instruction& dma, const config::ArchConfig& arch);

// Nanoseconds for the core's DMA engines, all busy at once, to move `bytes` in descriptors of
// `run_bytes` each: every descriptor costs an engine dma_descriptor_overhead_ns plus its bytes
// at dma_engine_bytes_per_ns (engine_time_for's per-descriptor cost). No start latency.
double dma_stream_ns(double bytes, double run_bytes, const config::ArchConfig& arch);

}  // namespace trnsim::models::estimate
