// HBM: stacks of pseudo-channels, each with bank groups, banks and a row buffer per bank; an
// interleaving address map; a request queue per pseudo-channel served by an FR-FCFS scheduler;
// read/write turnaround and refresh. Plain C++ (no SystemC) and event-driven: the owner (the
// memory system in models/dma/dma_timing.cpp) calls decide() for a pseudo-channel at the times
// this model asks for, and learns when each request's data has moved. Work is done per request
// piece (the bytes of one request that fall on one pseudo-channel, at most interleave_bytes),
// never per cycle or per byte.
//
// Timing of a piece (all ns parameters from ArchConfig::Hbm):
//   row hit       column command as soon as the bank allows it
//   row miss      ACT (respecting tRRD, tFAW), column command tRCD later
//   row conflict  PRE (after tRAS / write recovery / read-to-precharge), ACT tRP later, then tRCD
//   data          CL (read) or CWL (write) after the column command, then one burst time per
//                 burst on the pseudo-channel's data bus; bursts to one bank group are spaced
//                 tCCD_L; a switch of direction costs tRTW (read to write) or tWTR (write to read)
//   refresh       each bank is unavailable for tRFC once per tREFI (per-bank refresh staggers
//                 the banks; all-bank refresh blocks them together); a refresh closes the row
// Banks prepare rows for queued requests as soon as they arrive (bank-level parallelism); the
// data bus serializes the pieces in the scheduler's order. Requests also pay hbm_latency_ns, half
// on the way in and half on the way back.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"

namespace trnsim::models {

constexpr int64_t kNever = INT64_MAX;

// Where an address lands: pseudo-channel (global over stacks), bank (within it), row.
struct HbmLocation {
  uint32_t channel = 0;
  uint32_t bank = 0;
  uint32_t bank_group = 0;
  uint64_t row = 0;
};

enum class RowOutcome : uint8_t { hit, miss, conflict };

struct HbmCounters {
  uint64_t read_bytes = 0;  // bytes moved on the data buses
  uint64_t write_bytes = 0;
  uint64_t requests = 0;  // pieces served
  uint64_t column_accesses = 0;
  uint64_t row_hits = 0;        // column accesses that found their row open
  uint64_t row_misses = 0;      // ... found the bank closed (activate)
  uint64_t row_conflicts = 0;   // ... found another row open (precharge, activate)
  uint64_t refresh_stalls = 0;  // pieces delayed or re-opened by a refresh
  uint64_t turnarounds = 0;     // read/write direction switches on a data bus
  Picoseconds bus_busy;         // summed over pseudo-channels
  double row_hit_rate() const {
    return column_accesses ? static_cast<double>(row_hits) / column_accesses : 0.0;
  }
};

// What deciding one piece produced.
struct HbmServed {
  bool served = false;
  uint32_t tag = 0;  // the owner's id for the request the piece belongs to
  Picoseconds done;  // data back at the DMA engine (reads) or written (writes)
  RowOutcome outcome = RowOutcome::hit;
  Picoseconds next_decision{kNever};  // when decide() must run again for this channel
};

class HbmModel {
 public:
  // `stacks` stacks of the preset's organisation; core c uses stack c / cores_per_stack, and
  // the cores sharing a stack have address spaces of hbm_capacity_bytes side by side.
  HbmModel(const config::ArchConfig& arch, uint32_t stacks);

  HbmLocation locate(uint32_t core, uint64_t address) const;

  // The pseudo-channel (within its stack) of interleave unit `unit` (address / interleave_bytes,
  // cores' address spaces side by side as locate() places them): its position `unit mod
  // channels` in its round, permuted by the round (hbm.channel_hash). Shared with the flow
  // model, which spreads a transfer's bytes over the channels the same way.
  uint32_t channel_of_unit(uint64_t unit) const {
    const uint64_t position = div_.channels.mod(unit);
    if (!hbm_.channel_hash) return static_cast<uint32_t>(position);
    return static_cast<uint32_t>(div_.channels.mod(position ^ round_hash(div_.channels.div(unit))));
  }

  // Queues the bytes [address, address + bytes) of `core` for reading or writing, arriving
  // at the controllers half the path latency after `at`. Calls need_decision(channel, time)
  // for every pseudo-channel that was idle and now needs its scheduler to run. Returns the
  // number of pieces queued: decide() reports each once, with `tag`.
  template <typename NeedDecision>
  uint32_t enqueue(Picoseconds at, uint32_t core, uint64_t address, uint64_t bytes, bool write,
                   uint32_t tag, NeedDecision&& need_decision);

  // The scheduler of `channel` at `now`: picks one queued piece (FR-FCFS), commits its timing.
  HbmServed decide(uint32_t channel, Picoseconds now);

  const HbmCounters& counters() const { return counters_; }
  uint32_t channels() const { return static_cast<uint32_t>(channels_.size()); }
  // Peak of one stack in bytes per ns (all pseudo-channels streaming bursts back to back).
  double stack_peak_bytes_per_ns() const { return peak_per_stack_; }
  // The same for `arch`, without building a model: bursts of whole picoseconds.
  static double peak_bytes_per_ns(const config::ArchConfig& arch) {
    return static_cast<double>(arch.hbm.burst_bytes) * arch.hbm.pseudo_channels /
           from_ns(arch.hbm.burst_ns()).ns();
  }
  uint32_t stacks() const { return stacks_; }
  size_t queued(uint32_t channel) const { return channels_[channel].queue.size(); }

 private:
  // An XOR fold of `round` in fields as wide as the channel count's bits (channels a power of two:
  // the result permutes the channels; otherwise it is reduced mod channels, still spreading).
  uint64_t round_hash(uint64_t round) const {
    uint64_t h = 0;
    for (; round != 0; round >>= channel_bits_) h ^= round & channel_mask_;
    return h;
  }
  uint32_t channel_bits_ = 1;
  uint64_t channel_mask_ = 1;

  struct Piece {
    Picoseconds arrival;
    uint64_t row = 0;
    uint32_t tag = 0;
    uint16_t bank = 0;
    uint16_t bursts = 0;
    bool write = false;
    uint8_t bank_group = 0;    // bank / banks_per_group, kept: the scheduler asks for every piece
    uint64_t first_burst = 0;  // global burst index of the first burst, for coalescing
    uint64_t last_burst = 0;
  };
  // A channel's queue in arrival order. The scheduler takes pieces from the first few
  // (its window), so a piece leaves by moving only the ones ahead of it; the space of taken
  // pieces is reclaimed once it is most of the vector.
  class PieceQueue {
   public:
    size_t size() const { return items_.size() - head_; }
    bool empty() const { return head_ == items_.size(); }
    const Piece& operator[](size_t i) const { return items_[head_ + i]; }
    Piece& back() { return items_.back(); }
    void reserve(size_t n) { items_.reserve(n); }
    void push_back(const Piece& p) {
      if (empty()) {
        items_.clear();
        head_ = 0;
      }
      items_.push_back(p);
    }
    void erase(size_t i) {
      const auto first = items_.begin() + static_cast<std::ptrdiff_t>(head_);
      std::move_backward(first, first + static_cast<std::ptrdiff_t>(i),
                         first + static_cast<std::ptrdiff_t>(i) + 1);
      ++head_;
      if (head_ >= 256 && 2 * head_ >= items_.size()) {
        items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
    }

   private:
    std::vector<Piece> items_;
    size_t head_ = 0;
  };
  struct Bank {
    int64_t open_row = -1;
    Picoseconds act_ready;  // earliest next ACT (tRP after a precharge)
    Picoseconds col_ready;  // earliest column command to the open row (tRCD after ACT)
    Picoseconds pre_ready;  // earliest precharge (tRAS, tRTP, write recovery)
    Picoseconds last_use;   // end of the last data burst
    // The first refresh of the bank to start after last_use (kNever without refresh): a row
    // left open is closed by then.
    Picoseconds next_refresh{kNever};
    // A memo for period_start(): the start of the bank's refresh period last asked for
    // (offset + k tREFI; k = -1 before the first refresh; set by the constructor). Time moves
    // forward, so the next question nearly always falls in the same period.
    mutable int64_t period = 0;
  };
  struct Channel {
    PieceQueue queue;
    std::vector<Bank> banks;
    std::vector<Picoseconds> bank_group_free;  // tCCD_L spacing
    std::array<Picoseconds, 4> last_acts{};    // tFAW window, ring
    uint32_t act_ring = 0;
    Picoseconds last_act{-1000000000};
    Picoseconds bus_free;
    bool last_write = false;
    bool scheduled = false;  // a decide() is pending for this channel
    uint32_t bypassed = 0;   // decisions the oldest piece has lost in a row
    uint32_t stack = 0;
  };
  struct Plan {
    Picoseconds act{kNever};  // kNever: no activate needed
    Picoseconds pre{kNever};
    Picoseconds data_start;
    RowOutcome outcome = RowOutcome::hit;
    bool hit_planned = false;
    bool refreshed = false;
  };

  Plan plan(const Channel& ch, const Piece& p) const;
  // Start of the first refresh of `bank` (state `b`) that overlaps [from, to), or kNever.
  Picoseconds refresh_overlapping(const Bank& b, uint32_t bank, Picoseconds from,
                                  Picoseconds to) const;
  // The last refresh start of `bank` at or before t (offset - tREFI before the first). Needs
  // refresh (tREFI and tRFC above 0).
  int64_t period_start(const Bank& b, uint32_t bank, int64_t t) const;
  bool refreshes() const { return t_refi_.value > 0 && t_rfc_.value > 0; }
  int64_t refresh_offset(uint32_t bank) const;
  int64_t refresh_periods(int64_t n) const;  // floor(n / tREFI), n >= 0

  const config::ArchConfig::Hbm hbm_;
  uint32_t stacks_;
  uint64_t core_bytes_;
  uint32_t cores_per_stack_;
  Picoseconds half_latency_;
  Picoseconds t_burst_, t_rcd_, t_rp_, t_ras_, t_cl_, t_cwl_, t_wr_, t_rtp_, t_ccd_l_, t_rrd_,
      t_faw_, t_wtr_, t_rtw_, t_refi_, t_rfc_;
  double peak_per_stack_;
  uint64_t refi_reciprocal_ = 0;          // floor((2^64 - 1) / tREFI)
  std::vector<int64_t> refresh_offsets_;  // per bank: its first refresh
  // x / d and x % d by a shift and a mask when d is a power of two.
  struct Divisor {
    Divisor() = default;
    explicit Divisor(uint64_t d_) : d(d_ == 0 ? 1 : d_) {
      if ((d & (d - 1)) == 0) {
        pow2 = true;
        while ((uint64_t{1} << shift) != d) ++shift;
      }
    }
    uint64_t div(uint64_t x) const { return pow2 ? x >> shift : x / d; }
    uint64_t mod(uint64_t x) const { return pow2 ? x & (d - 1) : x % d; }
    uint64_t d = 1;
    int shift = 0;
    bool pow2 = true;
  };
  struct {
    Divisor interleave, channels, units_per_row, bank_groups, banks_per_group, burst;
  } div_;
  std::vector<Channel> channels_;
  HbmCounters counters_;
};

template <typename NeedDecision>
uint32_t HbmModel::enqueue(Picoseconds at, uint32_t core, uint64_t address, uint64_t bytes,
                           bool write, uint32_t tag, NeedDecision&& need_decision) {
  uint32_t pieces = 0;
  const Picoseconds arrival = at + half_latency_;
  const uint64_t unit = hbm_.interleave_bytes;
  uint64_t a = address;
  const uint64_t end = address + bytes;
  while (a < end) {
    const uint64_t unit_end = std::min(end, (div_.interleave.div(a) + 1) * unit);
    const HbmLocation loc = locate(core, a);
    Channel& ch = channels_[loc.channel];
    const uint64_t first = div_.burst.div(a + core * core_bytes_);
    const uint64_t last = div_.burst.div(unit_end - 1 + core * core_bytes_);
    // Coalesce with the previous piece of the same request in the same unit (small runs).
    Piece* prev = ch.queue.empty() ? nullptr : &ch.queue.back();
    if (prev != nullptr && prev->tag == tag && prev->write == write && prev->row == loc.row &&
        prev->bank == loc.bank && prev->arrival == arrival && first >= prev->first_burst &&
        first <= prev->last_burst + 1 && last - prev->first_burst < unit / hbm_.burst_bytes) {
      if (last > prev->last_burst) {
        prev->bursts = static_cast<uint16_t>(prev->bursts + (last - prev->last_burst));
        prev->last_burst = last;
      }
    } else {
      Piece p;
      p.arrival = arrival;
      p.row = loc.row;
      p.tag = tag;
      p.bank = static_cast<uint16_t>(loc.bank);
      p.bank_group = static_cast<uint8_t>(loc.bank_group);
      p.bursts = static_cast<uint16_t>(last - first + 1);
      p.write = write;
      p.first_burst = first;
      p.last_burst = last;
      ch.queue.push_back(p);
      ++pieces;
      if (!ch.scheduled) {
        ch.scheduled = true;
        need_decision(loc.channel, arrival);
      }
    }
    a = unit_end;
  }
  return pieces;
}

}  // namespace trnsim::models
