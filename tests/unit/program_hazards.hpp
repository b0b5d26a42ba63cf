// Checks on a lowered program that need no simulation: that its semaphores order every pair of
// conflicting accesses, and that it runs to the end when DMAs complete at once.
//
// find_unordered_conflicts plays the program as find_deadlock does and gives every instruction
// (and every DMA transfer, on its queue) a vector clock: what it knows has completed on each
// engine and queue, through its engine's order, its queue's order and the semaphore signals it
// waited for. Two accesses to overlapping bytes of SBUF, PSUM or HBM on different engines or
// queues, one of them a write, must be ordered: the later one's clock must include the earlier
// one. A pair that is not is a race the simulator might not show.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"

namespace trnsim_test {

struct HazardRegion {
  trnsim::isa::Memory memory;
  int64_t part_lo, part_hi, byte_lo, byte_hi;
  bool overlaps(const HazardRegion& o) const {
    return memory == o.memory && part_lo < o.part_hi && o.part_lo < part_hi &&
           byte_lo < o.byte_hi && o.byte_lo < byte_hi;
  }
};

inline HazardRegion hazard_region(const trnsim::isa::AccessPattern& ap) {
  const int64_t es = trnsim::isa::size_of(ap.dtype);
  HazardRegion r{ap.memory, 0, 1, 0, 0};
  if (ap.memory == trnsim::isa::Memory::hbm) {
    const int64_t span = ap.partition_stride * (static_cast<int64_t>(ap.partitions) - 1);
    r.byte_lo = static_cast<int64_t>(ap.offset) +
                (std::min<int64_t>(0, span) + ap.min_element_offset()) * es;
    r.byte_hi = static_cast<int64_t>(ap.offset) +
                (std::max<int64_t>(0, span) + ap.max_element_offset_exclusive()) * es;
  } else {
    r.part_lo = ap.start_partition;
    r.part_hi = ap.start_partition + ap.partitions;
    r.byte_lo = static_cast<int64_t>(ap.offset) + ap.min_element_offset() * es;
    r.byte_hi = static_cast<int64_t>(ap.offset) + ap.max_element_offset_exclusive() * es;
  }
  return r;
}

struct HazardItem {
  size_t executor;  // engine index, or kEngineCount + queue for a DMA transfer
  size_t position;  // in the executor's order
  std::string what;
  std::vector<HazardRegion> reads, writes;
  std::vector<int64_t> clock;  // per executor: items known complete
};

// Returns a description of the first unordered conflicting pairs (up to `limit`), or "" when
// every conflict is ordered; "deadlock: ..." when the program cannot run to the end. Requires
// every semaphore to be raised by one executor only (engine updates, or one queue's transfers).
inline std::string find_unordered_conflicts(const trnsim::isa::Program& p,
                                            const trnsim::config::ArchConfig& arch,
                                            size_t limit = 5) {
  using namespace trnsim;
  using namespace trnsim::isa;
  using namespace trnsim::config;
  using namespace trnsim::compiler;
  const size_t executors = kEngineCount + p.queues.size();
  std::vector<HazardItem> items;
  std::vector<size_t> count(executors, 0);
  std::vector<std::vector<int64_t>> clock(executors, std::vector<int64_t>(executors, 0));
  // Per semaphore: (value reached, clock of the item that raised it).
  std::vector<std::vector<std::pair<int64_t, std::vector<int64_t>>>> events(p.semaphores.size());
  std::vector<int64_t> value(p.semaphores.size(), 0);
  std::vector<size_t> next(kEngineCount, 0);
  std::vector<int> owner(p.semaphores.size(), -1);
  auto raise = [&](uint16_t sem, int64_t by, size_t executor, const std::vector<int64_t>& c) {
    if (owner[sem] >= 0 && owner[sem] != static_cast<int>(executor)) return false;
    owner[sem] = static_cast<int>(executor);
    value[sem] += by;
    events[sem].emplace_back(value[sem], c);
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (Engine e : kAllEngines) {
      const size_t x = static_cast<size_t>(index_of(e));
      const auto& stream = p.stream(e);
      while (next[x] < stream.size()) {
        const Instruction& in = stream[next[x]];
        bool ready = true;
        for (const auto& w : in.waits) ready = ready && value[w.semaphore] >= w.value;
        if (!ready) break;
        std::vector<int64_t> c = clock[x];
        for (const auto& w : in.waits) {
          for (const auto& [v, ec] : events[w.semaphore]) {
            if (v >= w.value) {
              for (size_t k = 0; k < executors; ++k) c[k] = std::max(c[k], ec[k]);
              break;
            }
          }
        }
        HazardItem item;
        std::ostringstream what;
        what << name_of(e) << " " << next[x] << " (" << name_of(in.opcode) << " '" << in.label
             << "')";
        item.what = what.str();
        if (is_dma(in.opcode)) {
          // The trigger completes on the engine; the transfer on its queue, after the trigger
          // and after the queue's earlier transfers.
          c[x] = static_cast<int64_t>(++count[x]);
          clock[x] = c;
          const size_t q = kEngineCount + in.dma_queue;
          std::vector<int64_t> qc = clock[q];
          for (size_t k = 0; k < executors; ++k) qc[k] = std::max(qc[k], c[k]);
          item.executor = q;
          item.position = count[q]++;
          qc[q] = static_cast<int64_t>(count[q]);
          clock[q] = qc;
          item.clock = qc;
          item.reads.push_back(hazard_region(in.src[0]));
          item.writes.push_back(hazard_region(in.dst));
          if (!raise(p.queues[in.dma_queue].semaphore, arch.dma_engines_for(in.dst->partitions), q,
                     qc)) {
            return "semaphore " + p.semaphores[p.queues[in.dma_queue].semaphore].name +
                   " has more than one raiser";
          }
        } else {
          item.executor = x;
          item.position = count[x]++;
          c[x] = static_cast<int64_t>(count[x]);
          clock[x] = c;
          item.clock = c;
          for (const auto& s : in.src) {
            if (s.present()) item.reads.push_back(hazard_region(s));
          }
          for (const ScalarOperand* s : {&in.scale, &in.bias, &in.operand0, &in.operand1}) {
            if (s->per_partition().present())
              item.reads.push_back(hazard_region(s->per_partition()));
          }
          if (in.opcode == Opcode::matmul && !in.accumulate_start) {
            item.reads.push_back(hazard_region(in.dst));
          }
          if (in.dst->present()) item.writes.push_back(hazard_region(in.dst));
          if (in.accumulate->present()) item.writes.push_back(hazard_region(in.accumulate));
          for (const auto& u : in.updates) {
            if (u.kind != SemaphoreUpdateKind::add || !raise(u.semaphore, u.value, x, c)) {
              return "semaphore " + p.semaphores[u.semaphore].name +
                     " is set, or raised by more than one engine";
            }
          }
        }
        items.push_back(std::move(item));
        ++next[x];
        progress = true;
      }
    }
  }
  for (Engine e : kAllEngines) {
    const size_t x = static_cast<size_t>(index_of(e));
    if (next[x] < p.stream(e).size()) {
      return "deadlock: " + std::string(name_of(e)) + " stops at instruction " +
             std::to_string(next[x]);
    }
  }
  auto conflict = [](const HazardItem& a, const HazardItem& b) {
    for (const auto& w : a.writes) {
      for (const auto& r : b.reads)
        if (w.overlaps(r)) return true;
      for (const auto& r : b.writes)
        if (w.overlaps(r)) return true;
    }
    for (const auto& r : a.reads) {
      for (const auto& w : b.writes)
        if (r.overlaps(w)) return true;
    }
    return false;
  };
  auto knows = [](const HazardItem& later, const HazardItem& earlier) {
    return later.clock[earlier.executor] > static_cast<int64_t>(earlier.position);
  };
  std::string out;
  size_t found = 0;
  for (size_t i = 0; i < items.size() && found < limit; ++i) {
    for (size_t j = i + 1; j < items.size() && found < limit; ++j) {
      const HazardItem& a = items[i];
      const HazardItem& b = items[j];
      if (a.executor == b.executor) continue;
      if (knows(a, b) || knows(b, a)) continue;
      if (!conflict(a, b)) continue;
      out += a.what + " and " + b.what + " touch the same bytes unordered\n";
      ++found;
    }
  }
  return out;
}

}  // namespace trnsim_test
