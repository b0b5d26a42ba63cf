// Engine pipelines, plain C++ (the SystemC engine applies them; docs/architecture.md, "Engine
// pipelines"). Three figures per instruction:
//   - the initiation interval (cost.hpp): how long the engine is busy before it can start the
//     next instruction (I1's "back to back" cost);
//   - the result latency: how much later its results are committed to SBUF/PSUM (A1: engines
//     pipeline reads, compute and writes; P Opt #5a: "the next instruction cannot start data
//     read until the previous instruction has all of its output committed to the local SRAM").
//     Its semaphore updates fire then, and a later instruction of the same engine that reads
//     those results waits for them;
//   - the wake latency of a semaphore wait: from the update that met it to the waiting
//     instruction's start, by who updated (the same engine, another engine, a DMA queue).
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"
#include "isa/program.hpp"

namespace trnsim::models {

// Cycles of the instruction's engine from the end of its initiation interval to its results
// being committed. 0 for DMA triggers (the queue moves the data) and nop (no results).
Cycles result_latency_cycles(const isa::Instruction& in, const config::ArchConfig& arch);
Picoseconds result_latency(const isa::Instruction& in, const config::ArchConfig& arch);

// How far back in its engine's stream an instruction looks for a producer of what it reads.
// The result latency is a few initiation intervals (at most about 400 cycles against a MIN_II of
// 64), so a producer further back has committed its results before the reader is ready.
constexpr size_t kProducerWindow = 8;

// For each instruction of `stream`, the position of the latest earlier instruction of the same
// stream, at most kProducerWindow back, whose written SBUF/PSUM region overlaps a region this one
// reads (read after write); -1 when there is none. A matmul accumulating into PSUM does not
// count as reading its own destination: TensorE accumulates in the PSUM array at full rate.
std::vector<int32_t> same_engine_producers(const isa::InstructionStream& stream);

// The same, one instruction at a time, as an engine issues its stream in order: next(in) is
// the producer of `in`, the instruction at position count() (the number of instructions seen
// so far). It keeps only the regions the last kProducerWindow instructions wrote, so an engine
// needs no table sized by its stream.
class ProducerTracker {
 public:
  int32_t next(const isa::Instruction& in);
  size_t count() const { return seen_; }

 private:
  struct Written {
    int32_t index = -1;
    isa::Region regions[2];
    int count = 0;
  };
  Written ring_[kProducerWindow];
  size_t seen_ = 0;
};

// Who made a semaphore reach the value a wait needed.
enum class SemaphoreSource : uint8_t { same_engine, other_engine, dma_queue };
Picoseconds wake_latency(SemaphoreSource source, const config::ArchConfig& arch);

// TensorE dI/dt throttling (X2, X4; trn2, trn3): when work begins (or resumes after TensorE's
// occupancy over the last window_ns fell below threshold), the rate starts at start_fraction of
// full and ramps linearly (assumption: the ramp's shape is not public) to full over ramp_ns. An
// instruction's busy time is its unthrottled time over the rate at its start.
class TensorThrottle {
 public:
  explicit TensorThrottle(const config::ArchConfig& arch);
  bool enabled() const { return start_ < 1.0; }
  // The busy time of an instruction that would take `busy` at full rate and starts at `start`
  // (starts never decrease); records it as TensorE occupancy.
  Picoseconds busy_time(Picoseconds start, Picoseconds busy);
  // The rate limit at `t` (1 when full), for tests and traces.
  double limit(Picoseconds t) const;

 private:
  double start_, ramp_ps_, window_ps_, threshold_;
  int64_t ramp_begin_ = INT64_MIN;
  std::deque<std::pair<int64_t, int64_t>> busy_;  // occupancy intervals in the last window
  int64_t busy_sum_ = 0;                          // their total length
};

}  // namespace trnsim::models
