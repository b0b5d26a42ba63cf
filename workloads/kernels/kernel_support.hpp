// What the tiled kernels of the library share (layernorm, softmax, attention): reading their
// options and params, sizing checks, and the synchronization bookkeeping of a software pipeline.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

isa::Instruction make_instruction(isa::Opcode op, Engine e, std::string label);

// --- options (top-level keys, "/key") and params ("/params/key") ---------------------------

// Refuses a params key not in `known`, naming it and the nearest known one.
void check_param_keys(const Workload& w, const std::string& kernel,
                      const std::vector<std::string>& known);
// params[key] as an integer in [lo, hi], or `fallback` when absent.
int64_t int_param(const Workload& w, const std::string& key, int64_t lo, int64_t hi,
                  int64_t fallback);
// params[key] (or the option `key` when `option` is set) as one of `allowed`, or `fallback`.
std::string choice_param(const Workload& w, const std::string& key,
                         const std::vector<std::string>& allowed, const std::string& fallback);
std::string choice_option(const Workload& w, const std::string& key,
                          const std::vector<std::string>& allowed, const std::string& fallback);
bool bool_option(const Workload& w, const std::string& key, bool fallback);

// --- sizes ------------------------------------------------------------------------------------

// The product of `factors`, or UINT64_MAX when it overflows.
uint64_t saturating_product(std::initializer_list<uint64_t> factors);

// Refuses HBM tensors of `bytes` in all that do not fit the core's HBM, or that a functional
// run (over w.cores) would hold in host memory; `what` names them ("x and y of [4, 8] bf16").
void check_hbm_bytes(const Workload& w, const config::ArchConfig& arch, bool functional,
                     uint64_t bytes, const std::string& what);

// Refuses a kernel of `instructions` (or at least that many, when `lower_bound`) over
// arch.max_instructions; `hint` says how to shrink it.
void check_instruction_count(const Workload& w, const config::ArchConfig& arch,
                             uint64_t instructions, const std::string& hint,
                             bool lower_bound = false);

// Per-partition placement of on-chip buffers, bump-allocated in 64-byte aligned rows (SBUF), or
// at a given alignment (PSUM banks).
struct OnChipLayout {
  uint64_t bytes = 0;
  uint64_t take(uint64_t n, uint64_t align = 64) {
    bytes = (bytes + align - 1) / align * align;
    const uint64_t at = bytes;
    bytes += n;
    return at;
  }
  uint64_t rounded(uint64_t align = 64) const { return (bytes + align - 1) / align * align; }
};

// --- synchronization ---------------------------------------------------------------------------

// "Semaphore `semaphore` has reached `value`": the completion of a stage of the pipeline. A
// value of 0 or less is met from the start.
struct Signal {
  uint16_t semaphore = 0;
  int64_t value = 0;
};
// The signal of a stage not emitted yet: what a kernel's per-item signals start as, so that a
// dependency on a stage that comes later in the emission order is caught (std::logic_error)
// instead of being taken as met. A stage that emits nothing for an item sets Signal{}.
constexpr Signal kNotEmitted{UINT16_MAX, 0};
// The signal of item i of a stage, or one met from the start for an item before the first: what
// the reuse of a buffer by item i + bufs waits for.
inline Signal before(const std::vector<Signal>& signals, int64_t i) {
  return i < 0 ? Signal{} : signals[i];
}

// Emits instructions into their engines' streams with the semaphore waits their dependencies
// need, and no more: a dependency is dropped when the engine already knows it is met (its own
// stream order, or what the signals it waited for knew when they were raised), as a compiler
// does (isa/synchronize.cpp computes the same from memory regions, in quadratic time; here the
// kernel names its dependencies, so this is linear). Each wait met late costs the waiting
// instruction the semaphore's wake latency (pipeline.semaphore_*_ns), so fewer waits is fewer
// chances to pay it.
//
// Instructions must be emitted in an order where every signal waited for was emitted earlier
// (any interleaving of the engines' streams that respects the dependencies); a wait for a signal
// not yet emitted is an internal error (std::logic_error).
class SyncTracker {
 public:
  SyncTracker(isa::Program& program, const config::ArchConfig& arch);
  // A semaphore raised by one engine, one per completed stage. All semaphores and queues must
  // exist before the first emit.
  uint16_t semaphore(std::string name);
  // Appends `in` after the waits for `deps` the engine does not already know are met. When
  // `raise` names a semaphore, the instruction raises it by one as it completes, and the new
  // value is returned. A DMA instruction returns its queue's signal: the running count of DMA
  // engines its transfer raises the queue's semaphore to (D1).
  Signal emit(isa::Instruction in, const std::vector<Signal>& deps, int raise = -1);
  // Instructions that form one step, emitted in order: the first waits for `deps`, the last
  // raises `raise`; returns the last one's signal (Signal{} when there are none).
  Signal emit_sequence(std::vector<isa::Instruction> ins, const std::vector<Signal>& deps,
                       int raise = -1);
  uint64_t waits() const { return waits_; }
  uint64_t dropped() const { return dropped_; }

 private:
  size_t executor_of(const isa::Instruction& in) const;
  const int64_t* snapshot_of(const Signal& s) const;
  void record(uint16_t semaphore, int64_t value, const std::vector<int64_t>& knowledge);

  isa::Program& program_;
  const config::ArchConfig& arch_;
  size_t sems_ = 0;  // fixed at the first emit
  std::vector<int64_t> value_;
  std::vector<std::vector<int64_t>> known_;  // per executor (engines, then queues)
  // Per semaphore: the values it was raised to, in order, and what was known then.
  std::vector<std::vector<int64_t>> event_values_;
  std::vector<std::vector<size_t>> event_snapshot_;
  std::vector<int64_t> snapshots_;  // sems_ values per snapshot
  uint64_t waits_ = 0, dropped_ = 0;
};

// " (did you mean \"x\"?)" for the name of `known` closest to `word`, or "" (error messages).
std::string did_you_mean(const std::string& word, const std::vector<std::string>& known);
// "a", "b" or "c", each quoted (error messages).
std::string quoted_list(const std::vector<std::string>& names);

// A software pipeline: stage k handles item i at step i + lag_k; steps run in order and, within
// a step, the stages in the order given. The order is the emission order for a SyncTracker, and
// per engine it is the stream order: a stage with a smaller lag runs ahead on its engine.
struct PipelineStage {
  int64_t lag = 0;
  std::function<void(int64_t)> emit;
};
void run_pipeline(int64_t items, const std::vector<PipelineStage>& stages);
// The same with item i at step steps[i] (strictly increasing) instead of i: gaps between items
// hold back the stages of the later ones, e.g. to drain a buffer before it is refilled.
void run_pipeline(const std::vector<int64_t>& steps, const std::vector<PipelineStage>& stages);

}  // namespace trnsim::workloads
