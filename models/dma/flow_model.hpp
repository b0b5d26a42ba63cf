// The flow-level (fluid) memory model, chosen with the arch flag dma_flow_model (default false:
// the detailed model of detailed_model.hpp), behind MemoryModel (memory_model.hpp). Plain C++.
//
// What it keeps of the detailed model's transfer semantics:
//   - a transfer is ready when MemoryModel::submit says (its start latency, then the setup of
//     each DMA engine it uses, one transfer at a time per engine);
//   - its partitions are spread over plan.engines engines from plan.first_engine (plan_transfer
//     as is); each engine's part goes to the engine's hardware queue queue % queues_per_engine,
//     and a hardware queue works its parts in order;
//   - an engine's part costs dma_descriptor_overhead_ns per descriptor plus its bytes at the
//     transfer's engine rate (plan.engine_bytes_per_ns, transposes included), so a lone part
//     takes the engine time plan_transfer computes;
//   - in-order completion per queue; the module raises the semaphore by plan.engines.
//
// What it replaces: chunks and HBM pieces. The flows are the engine parts at the head of their
// (engine, hardware queue): an engine round-robins between its queues by equal-size chunks, so
// its heads share it by bytes; one flow per part (rather than one per transfer) lets the parts
// of one transfer on different engines progress at their own engines' pace, and a transfer on
// engines 8-15 run beside one on engines 0-7 of the same queue, as in the detailed model. The
// active flows get byte rates by max-min fairness (progressive filling) under three kinds of
// constraint:
//   - engine time: on each DMA engine, the sum over its flows of rate x engine seconds per byte
//     (the part's engine time over its bytes) is at most 1;
//   - outstanding window: on each engine, the bytes its HBM flows keep in flight, the sum of
//     rate x round trip (Little's law), are at most dma_engine_outstanding_chunks x
//     dma_chunk_bytes; a round trip is hbm_latency_ns + CL (CWL for a write, the larger for
//     both) + one interleave unit at one pseudo-channel's share of the stack peak, the unloaded
//     time of a chunk whose pieces go to different pseudo-channels in parallel;
//   - HBM: on each pseudo-channel of each stack (cores share stacks by hbm.cores_per_stack),
//     the bytes per ps the flows put on it are at most its share of
//     HbmModel::stack_peak_bytes_per_ns(). A flow spreads its bytes over pseudo-channels as the
//     address map does (HbmModel::locate: interleave_bytes units round-robin): the spread is a
//     histogram of its descriptors' HBM ranges, computed once when the transfer becomes ready
//     (from at most kSampledDescriptors descriptors per part, evenly spaced, when it has more).
//     A flow that reads and writes HBM counts on both sides' channels (its bytes twice, as
//     hbm_bytes does). So a transfer whose partitions sit a multiple of interleave_bytes x
//     pseudo_channels apart (rows of 16 KiB, say) is held to the few channels it touches, as
//     in the detailed model, while a contiguous stream reaches the stack's peak. A broadcast
//     read (partition stride 0) costs its channels the tCCD_L rate of one bank group, and when
//     it reads only HBM, one run per partition shorter than a chunk, HBM moves each chunk's run
//     once on the channels the run puts one unit on (the detailed engine's chunk of several
//     runs coalesces their pieces of one unit there).
// Rates are recomputed only when the set of active flows changes (a transfer becomes ready, a
// part finishes or drains) or a queue's lone head gets a part behind it (its drain time is
// worked out); in between every flow's remaining bytes fall at its rate. A
// transfer that touches HBM completes hbm_latency_ns + CL (reads; CWL for writes, the larger
// when both) after its last byte moved: the round trip of its last piece, which holds no engine.
// Draining: an engine runs ahead of HBM by up to its outstanding window (the detailed engine
// issues a chunk whenever fewer than dma_engine_outstanding_chunks are in flight). So when a
// part that HBM or the window holds back, not its engine, has no more than a window of bytes
// left, its engine has issued all of it: the next part of its (engine, hardware queue) starts
// then, while these last bytes keep their HBM and window terms (not the engine's) until they
// have moved. One part per (engine, hardware queue) drains at a time. A part whose engine is
// saturated (by it or by the engine's other queues) has nothing issued ahead and does not drain;
// this is asked again at every rate computation. Approximations (docs/validation.md 6.2): a
// part is taken to have a full window issued whatever its history, the window is counted per
// queue rather than shared by an engine's queues, and the draining bytes share HBM equally
// with the next part's where FR-FCFS would mostly serve the older ones first.
//
// Assumptions (docs/architecture.md, docs/validation.md): a pseudo-channel with work streams
// at its peak: no row-buffer misses or conflicts, no bank or bank-group timing (but for
// broadcast reads, above), no refresh, no read/write turnaround, no FR-FCFS reordering. HBM
// counters: read and written bytes and the data-bus busy time (bytes at one pseudo-channel's rate)
// are kept; row hits, misses, conflicts, refresh stalls and turnarounds are not modelled and stay
// zero (stats.json leaves them out).
//
// Cost: a few events per transfer (ready, parts finishing, completion) and one rate
// computation per change of the active set, independent of the bytes moved.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"
#include "models/dma/memory_model.hpp"
#include "models/hbm/hbm.hpp"

namespace trnsim::models {

class FlowMemoryModel final : public MemoryModel {
 public:
  FlowMemoryModel(const config::ArchConfig& arch, uint32_t cores, size_t max_transfers);
  std::string_view name() const override { return "flow"; }
  void run_until(Picoseconds horizon) override;
  Picoseconds next_event_time() const override;
  uint64_t events_processed() const override { return events_processed_; }
  Picoseconds engine_busy(uint32_t core, uint32_t engine) const override {
    return engines_[core * arch_.dma_engines + engine].busy;
  }
  // Read and written bytes and data-bus busy time; the row-buffer counters stay zero.
  const HbmCounters& hbm_counters() const override { return counters_; }

  // How many times over the DMA engines that share an HBM stack could keep its peak busy with
  // their outstanding windows (dma_engine_outstanding_chunks x dma_chunk_bytes each) at a
  // chunk's unloaded read round trip, the one the window term uses: engines x window / round
  // trip / stack peak (3.4 on trn1). The detailed engines' round trips are longer (queueing at
  // the pseudo-channels, refresh), which this model leaves out, so the lower this is, the more
  // optimistic it is where the window limits the DMA (docs/validation.md 6.2, "The window
  // away from its default").
  static double window_coverage(const config::ArchConfig& arch);

 private:
  // An engine's outstanding window, bytes: chunks x chunk bytes.
  static double window_bytes(const config::ArchConfig& arch);
  // A chunk's unloaded round trip through HBM, ps: the path and CL (CWL for a write), in whole
  // ps as a transfer's tail, plus one interleave unit at one pseudo-channel's share of
  // `stack_peak` (bytes per ps), the time of a chunk whose pieces go to different
  // pseudo-channels in parallel.
  static double round_trip_ps(const config::ArchConfig& arch, double stack_peak, bool write);
  void on_submit(uint32_t id, Picoseconds ready) override;
  static constexpr uint32_t kNone = UINT32_MAX;
  enum class EventKind : uint8_t { transfer_ready, transfer_done };
  // Descriptors per part the pseudo-channel spread is computed from, at most.
  static constexpr uint64_t kSampledDescriptors = 256;
  struct Term {  // a flow's use of one constraint: coefficient x rate
    uint32_t constraint;
    double coefficient;
  };
  struct Flow {  // one engine's part of one transfer
    uint32_t transfer = 0;
    uint32_t engine = 0;     // global: core * dma_engines + engine
    uint32_t next = kNone;   // next part in its (engine, hardware queue)
    uint32_t active_at = 0;  // index in active_ while active
    double remaining = 0;    // bytes
    double hbm_factor = 0;   // 0: no HBM; 1: reads or writes; 2: both
    // Its terms: its own, engine time (ps per byte) and, when it touches HBM, the window
    // (round-trip ps: bytes in flight per byte per ps; after release() the only one); then the
    // pseudo-channels' (share of the bytes on each), in spreads_[spread] (kNone: none), which
    // the parts of one transfer with the same spread share.
    std::array<Term, 2> own{};
    uint32_t own_terms = 0;
    uint32_t spread = kNone;
    double rate = 0;          // bytes per ps
    int64_t finish = kNever;  // when it finishes at its current rate
    Picoseconds engine_time;  // busy time it costs its engine
    uint64_t bytes = 0;
    int64_t release = kNever;  // when its queue's next part may start (remaining = window)
  };
  struct Spread {  // pseudo-channel terms, shared by `users` flows
    std::vector<Term> terms;
    uint32_t users = 0;
  };
  // Whether pred(term) holds for one of the flow's terms, asked in order (its own first) up to
  // the first that does.
  template <typename F>
  bool any_term(const Flow& flow, F&& pred) const {
    for (uint32_t k = 0; k < flow.own_terms; ++k) {
      if (pred(flow.own[k])) return true;
    }
    if (flow.spread == kNone) return false;
    for (const Term& term : spreads_[flow.spread].terms) {
      if (pred(term)) return true;
    }
    return false;
  }
  // Calls f(term) for each of the flow's terms in order, its own first.
  template <typename F>
  void for_each_term(const Flow& flow, F&& f) const {
    any_term(flow, [&f](const Term& term) {
      f(term);
      return false;
    });
  }
  bool has_terms(const Flow& flow) const { return flow.own_terms > 0 || flow.spread != kNone; }
  uint32_t new_spread();
  void drop_spread(Flow& flow);
  struct Engine {
    std::vector<IndexList> queues;
    // Per hardware queue: its draining flow, or kNone. A draining flow's engine has issued all
    // of its part and moved on to the next part of the queue; its last bytes are still on their
    // way through HBM (it has no engine-time term).
    std::vector<uint32_t> draining;
    Picoseconds busy;
  };

  void schedule(Picoseconds t, EventKind kind, uint32_t id);
  void on_ready(uint32_t transfer, Picoseconds now);
  void on_done(uint32_t transfer, Picoseconds now);
  void activate(uint32_t flow, Picoseconds now);
  void finish(uint32_t flow, Picoseconds now);
  void release(uint32_t flow, Picoseconds now);
  // Whether `flow`, the head of its queue, may let the next part start once no more than a
  // window of its bytes is left.
  bool may_release(uint32_t flow) const;
  void advance(Picoseconds now);
  void recompute(Picoseconds now);
  // Adds the pseudo-channel spread of descriptors [first, end) of one side of `t` to
  // channel_bytes_.
  void spread(const DmaTransfer& t, bool write, uint64_t first, uint64_t end);

  uint32_t cores_per_stack_;
  uint32_t channels_;    // pseudo-channels per stack
  uint64_t core_bytes_;  // a core's HBM address space: cores sharing a stack sit side by side
  std::vector<uint64_t> channel_bytes_;  // scratch of spread()
  std::vector<uint32_t> run_units_;      // scratch of on_ready(): a run's units per channel
  double stack_peak_;                    // bytes per ps
  double window_bytes_;                  // an engine's outstanding window: chunks x chunk bytes
  double read_round_trip_, write_round_trip_;  // ps, of one chunk through HBM
  Picoseconds read_tail_, write_tail_;
  // How much slower a pseudo-channel serves bursts that all fall in one bank group (tCCD_L
  // against the data bus), as a broadcast read does: every partition re-reads the same units.
  double same_group_factor_ = 1.0;
  double bus_ps_per_byte_;  // one pseudo-channel's data bus
  EventHeap<EventKind> events_;
  uint64_t events_processed_ = 0;
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_flows_;
  std::vector<Spread> spreads_;
  std::vector<uint32_t> free_spreads_;
  std::vector<Engine> engines_;
  std::vector<uint32_t> active_;  // flows with a rate
  bool changed_ = false;          // the active set changed since the last rate computation
  Picoseconds last_;              // remaining bytes are as of this time
  int64_t next_finish_ = kNever;
  // Progressive filling scratch, per constraint: engines' time, engines' window, pseudo-channels.
  std::vector<double> cap_, used_, weight_, level_;
  std::vector<uint32_t> unfrozen_;  // flows of the constraint not yet given their rate
  std::vector<uint8_t> state_;      // 0 untouched, 1 touched, 2 saturated
  std::vector<uint32_t> touched_;
  std::vector<uint32_t> open_;   // recompute: the active flows not yet fixed, in active_ order
  std::vector<uint32_t> fixed_;  // recompute: the flows fixed in one round, in active_ order
  std::vector<uint32_t> finishing_;
  HbmCounters counters_;
};

}  // namespace trnsim::models
