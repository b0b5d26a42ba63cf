#include "sim/report/stats.hpp"

#include <algorithm>

#include "models/neuroncore/cost.hpp"

namespace trnsim::sim {

StatsCollector::StatsCollector(const isa::Program& program, const config::ArchConfig& arch,
                               uint32_t cores)
    : program_(program),
      arch_(arch),
      cores_(cores),
      queues_(cores * program.queues.size()),
      per_core_(cores),
      core_dma_intervals_(cores),
      core_dma_(cores),
      core_compute_intervals_(cores),
      track_compute_(cores > 1 && has_collective(program)) {}

bool StatsCollector::has_collective(const isa::Program& p) {
  for (Engine e : kAllEngines) {
    for (const isa::Instruction& in : p.stream(e)) {
      if (isa::is_collective(in.opcode)) return true;
    }
  }
  return false;
}

namespace {
using Intervals = std::vector<std::pair<Picoseconds, Picoseconds>>;

// Adds [start, end) to intervals kept sorted and disjoint (touching ones merged): the list holds
// the pieces of the union so far, not an entry per record: one per gap between them (few on a
// busy DMA, about one per transfer where the DMAs idle between transfers). Records come about in
// the order they end, so the intervals a new one merges with are at the back.
void add_interval(Intervals& v, Picoseconds start, Picoseconds end) {
  if (!(start < end)) return;  // adds nothing to the union (merged() drops it too)
  // The first interval that ends at or after `start` (the ends of disjoint, sorted intervals
  // increase too), and the first after it that starts after `end`.
  const auto first = std::lower_bound(
      v.begin(), v.end(), start,
      [](const std::pair<Picoseconds, Picoseconds>& iv, Picoseconds t) { return iv.second < t; });
  auto last = first;
  while (last != v.end() && last->first <= end) ++last;
  if (first == last) {
    v.insert(first, {start, end});
    return;
  }
  first->first = std::min(first->first, start);
  first->second = max((last - 1)->second, end);
  v.erase(first + 1, last);
}

// Sorted, disjoint intervals covering the same time.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Intervals out;
  for (const auto& [s, e] : v) {
    if (!out.empty() && s <= out.back().second) {
      out.back().second = max(out.back().second, e);
    } else if (e > s) {
      out.emplace_back(s, e);
    }
  }
  return out;
}

Picoseconds union_length(Intervals v) {
  Picoseconds total;
  for (const auto& [s, e] : merged(std::move(v))) total = total + (e - s);
  return total;
}

// Time of `a` inside `b`, both sorted and disjoint.
Picoseconds overlap_length(const Intervals& a, const Intervals& b) {
  Picoseconds total;
  size_t j = 0;
  for (const auto& [s, e] : a) {
    while (j < b.size() && b[j].second <= s) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      const Picoseconds from = max(s, b[k].first);
      const Picoseconds to = b[k].second < e ? b[k].second : e;
      if (to > from) total = total + (to - from);
    }
  }
  return total;
}
}  // namespace

StatsCollector::CollectiveOverlap StatsCollector::collective_overlap(uint32_t c) const {
  Intervals windows;
  for (const models::CollectiveRecord& r : collectives_) {
    if (models::collective_has_core(r, c)) windows.emplace_back(r.first_trigger, r.end);
  }
  windows = merged(std::move(windows));
  CollectiveOverlap o;
  for (const auto& [s, e] : windows) o.in_collectives = o.in_collectives + (e - s);
  o.overlapped = overlap_length(windows, merged(core_compute_intervals_[c]));
  o.exposed = o.in_collectives - o.overlapped;
  return o;
}

Picoseconds StatsCollector::core_dma_active(uint32_t c) const {
  return core_dma_[c].length + union_length(core_dma_intervals_[c]);
}

Picoseconds StatsCollector::core_work(uint32_t c) const {
  const CoreStats& cs = per_core_[c];
  Picoseconds work = core_dma_active(c);
  for (const Picoseconds& a : cs.active) work = max(work, a);
  return work;
}

void StatsCollector::count(const isa::AccessPattern& ap, bool write) {
  if (!ap.present()) return;
  MemoryTraffic& t = traffic_[static_cast<int>(ap.memory)];
  (write ? t.written : t.read) += ap.bytes();
}

void StatsCollector::on_instruction(const models::InstructionRecord& r) {
  const isa::Instruction& in = program_of(r.core).stream(r.engine)[r.index];
  EngineStats& s = engines_[index_of(r.engine)];
  ++s.instructions;
  s.active = s.active + (r.end - r.start);
  s.semaphore_wait = s.semaphore_wait + (r.start - r.ready - r.port_wait - r.pipeline_wait);
  s.pipeline_wait = s.pipeline_wait + r.pipeline_wait;
  s.port_wait = s.port_wait + r.port_wait;
  s.flops += models::instruction_flops(in);
  CoreStats& cs = per_core_[r.core];
  ++cs.instructions;
  cs.active[index_of(r.engine)] = cs.active[index_of(r.engine)] + (r.end - r.start);
  cs.end = max(cs.end, r.results);
  if (track_compute_ && r.engine != Engine::sync && !isa::is_dma(in.opcode) &&
      !isa::is_collective(in.opcode)) {
    add_interval(core_compute_intervals_[r.core], r.start, r.end);
  }
  // Counted when the transfer (or the collective) completes.
  if (isa::is_dma(in.opcode) || isa::is_collective(in.opcode)) return;
  isa::for_each_operand(in,
                        [&](const isa::AccessPattern& ap, bool written) { count(ap, written); });
  // A matmul that accumulates reads PSUM as well as writing it.
  if (in.opcode == isa::Opcode::matmul && !in.accumulate_start) count(in.dst, false);
}

void StatsCollector::on_transfer(const models::TransferRecord& r) {
  const isa::Instruction& in = program_of(r.core).stream(r.issuer)[r.index];
  ++transfers_;
  dma_bytes_ += r.bytes;
  // A queue completes in order, so its intervals arrive sorted by end.
  QueueStats& q = queues_[r.core * program_.queues.size() + r.queue];
  q.bytes += r.bytes;
  ++q.transfers;
  const Picoseconds from = max(r.start, q.covered_to);
  if (r.end > from) q.busy = q.busy + (r.end - from);
  q.covered_to = max(q.covered_to, r.end);
  CoreStats& cs = per_core_[r.core];
  cs.dma_bytes += r.bytes;
  cs.end = max(cs.end, r.end);
  if (cores_ > 1) {
    add_interval(core_dma_intervals_[r.core], r.start, r.end);
    fold(core_dma_[r.core], core_dma_intervals_[r.core], r.horizon);
  }
  count(in.src[0], false);
  count(in.dst, true);
  add_interval(dma_intervals_, r.start, r.end);
  fold(dma_, dma_intervals_, r.horizon);
}

void StatsCollector::fold(Folded& f, Intervals& pieces, const models::TransferHorizon* horizon) {
  if (pieces.size() < f.fold_at || horizon == nullptr) return;
  // No record to come starts before `later`: the pieces that end by then are final.
  const Picoseconds later = horizon->later_starts_from();
  auto done = pieces.begin();
  for (; done != pieces.end() && done->second <= later; ++done) {
    f.length = f.length + (done->second - done->first);
  }
  pieces.erase(pieces.begin(), done);
  // Ask again when the list has doubled: a run whose transfers stay in flight a long time folds
  // little, and should not pay a fold per record for it.
  f.fold_at = std::max(Folded::kFoldAt, 2 * pieces.size());
}

Picoseconds StatsCollector::dma_active() const {
  return dma_.length + union_length(dma_intervals_);
}

}  // namespace trnsim::sim
