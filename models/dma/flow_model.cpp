#include "models/dma/flow_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::models {

FlowMemoryModel::FlowMemoryModel(const config::ArchConfig& arch, uint32_t cores,
                                 size_t max_transfers)
    : MemoryModel(arch, cores, max_transfers),
      cores_per_stack_(std::max(1u, arch.hbm.cores_per_stack)),
      channels_(std::max(1u, arch.hbm.pseudo_channels)),
      core_bytes_(arch.hbm_capacity_bytes),
      channel_bytes_(channels_, 0),
      stack_peak_(hbm_.stack_peak_bytes_per_ns() / 1000.0),
      window_bytes_(window_bytes(arch)),
      read_tail_(from_ns(arch.hbm_latency_ns + arch.hbm.t_cl)),
      write_tail_(from_ns(arch.hbm_latency_ns + arch.hbm.t_cwl)) {
  run_units_.assign(channels_, 0);
  // One pseudo-channel's share of the stack peak, bytes per ps.
  const double channel = stack_peak_ / channels_;
  bus_ps_per_byte_ = channel > 0 ? 1.0 / channel : 0.0;
  // The detailed model spaces column accesses of one bank group by tCCD_L (one burst when 0).
  const double burst_ps = static_cast<double>(arch.hbm.burst_bytes) * bus_ps_per_byte_;
  same_group_factor_ = burst_ps > 0 ? std::max(1.0, arch.hbm.t_ccd_l * 1000.0 / burst_ps) : 1.0;
  read_round_trip_ = round_trip_ps(arch, stack_peak_, false);
  write_round_trip_ = round_trip_ps(arch, stack_peak_, true);

  const size_t engines = static_cast<size_t>(cores_) * arch.dma_engines;
  engines_.resize(engines);
  for (auto& e : engines_) {
    e.queues.resize(hw_queue(arch.dma_queues) + 1);
    e.draining.assign(e.queues.size(), kNone);
  }
  flows_.reserve(engines * 16);  // grown as needed: flows are reused once finished
  events_.reserve(1024);
  const size_t channels = static_cast<size_t>(hbm_.stacks()) * channels_;
  const size_t constraints = 2 * engines + channels;
  cap_.assign(constraints, 0.0);
  used_.assign(constraints, 0.0);
  weight_.assign(constraints, 0.0);
  level_.assign(constraints, 0.0);
  unfrozen_.assign(constraints, 0);
  state_.assign(constraints, 0);
  for (size_t e = 0; e < engines; ++e) {
    cap_[e] = 1.0;                      // engine ps per ps
    cap_[engines + e] = window_bytes_;  // bytes in flight
  }
  for (size_t c = 0; c < channels; ++c) cap_[2 * engines + c] = channel;
}

double FlowMemoryModel::window_bytes(const config::ArchConfig& arch) {
  return static_cast<double>(std::max(1u, arch.dma_engine_outstanding_chunks)) *
         std::max(1u, arch.dma_chunk_bytes);
}

double FlowMemoryModel::round_trip_ps(const config::ArchConfig& arch, double stack_peak,
                                      bool write) {
  const double channel = stack_peak / std::max(1u, arch.hbm.pseudo_channels);
  const double bus_ps_per_byte = channel > 0 ? 1.0 / channel : 0.0;
  const Picoseconds tail = from_ns(arch.hbm_latency_ns + (write ? arch.hbm.t_cwl : arch.hbm.t_cl));
  return static_cast<double>(tail.value) +
         static_cast<double>(arch.hbm.interleave_bytes) * bus_ps_per_byte;
}

double FlowMemoryModel::window_coverage(const config::ArchConfig& arch) {
  // The model's own figures: the stack peak (bytes per ps) and the read round trip (ps).
  const double peak = HbmModel::peak_bytes_per_ns(arch) / 1000.0;
  if (!(peak > 0)) return std::numeric_limits<double>::infinity();
  const double engines =
      static_cast<double>(arch.dma_engines) * std::max(1u, arch.hbm.cores_per_stack);
  return engines * window_bytes(arch) / round_trip_ps(arch, peak, false) / peak;
}

void FlowMemoryModel::schedule(Picoseconds t, EventKind kind, uint32_t id) {
  events_.push(t, kind, id);
}

Picoseconds FlowMemoryModel::next_event_time() const {
  const int64_t heap = events_.next_time();
  // A pending rate computation happens at the time of the change that asked for it, which
  // run_until has already reached: it is never later than last_.
  const int64_t pending = changed_ ? last_.value : kNever;
  return Picoseconds(std::min({heap, next_finish_, pending}));
}

void FlowMemoryModel::on_submit(uint32_t id, Picoseconds ready) {
  schedule(ready, EventKind::transfer_ready, id);
}

void FlowMemoryModel::run_until(Picoseconds horizon) {
  for (;;) {
    const int64_t heap = events_.next_time();
    int64_t t = std::min(heap, next_finish_);
    if (changed_) t = std::min(t, last_.value);
    if (t == kNever || t >= horizon.value) return;
    const Picoseconds now(t);
    advance(now);
    while (events_.next_time() == t) {
      const auto e = events_.pop();
      ++events_processed_;
      if (e.kind == EventKind::transfer_ready) {
        on_ready(e.id, now);
      } else {
        on_done(e.id, now);
      }
    }
    if (next_finish_ <= t) {
      finishing_.clear();
      for (uint32_t f : active_) {
        if (flows_[f].finish <= t || flows_[f].release <= t) finishing_.push_back(f);
      }
      // In flow-id order, so that the order does not depend on the active list's history.
      std::sort(finishing_.begin(), finishing_.end());
      for (uint32_t f : finishing_) {
        if (flows_[f].finish <= t) {
          finish(f, now);
        } else if (may_release(f)) {
          release(f, now);
        } else {
          flows_[f].release = kNever;  // asked again when the queue's draining part finishes
        }
      }
      next_finish_ = kNever;
      for (uint32_t f : active_) {
        next_finish_ = std::min({next_finish_, flows_[f].finish, flows_[f].release});
      }
    }
    if (changed_) {
      ++events_processed_;
      recompute(now);
    }
  }
}

void FlowMemoryModel::advance(Picoseconds now) {
  const double dt = static_cast<double>(now.value - last_.value);
  last_ = now;
  if (dt <= 0) return;
  for (uint32_t f : active_) {
    Flow& flow = flows_[f];
    flow.remaining = std::max(0.0, flow.remaining - flow.rate * dt);
  }
}

void FlowMemoryModel::spread(const DmaTransfer& t, bool write, uint64_t first, uint64_t end) {
  const DmaPlan& plan = t.plan;
  const isa::Instruction& in = *t.instruction;
  const isa::AccessPattern& ap = write ? in.dst : in.src[0];
  const uint64_t unit = std::max(1u, arch_.hbm.interleave_bytes);
  const uint64_t period = unit * channels_;
  const uint64_t base = (t.core % cores_per_stack_) * core_bytes_;
  // Unit by unit through the address map (HbmModel::channel_of_unit), except whole aligned
  // rounds over the pseudo-channels, which put `unit` bytes on every channel (the channel hash
  // permutes a round).
  auto range = [&](uint64_t a, uint64_t len, uint64_t weight) {
    const uint64_t g = a + base;
    uint64_t u = g / unit;
    uint64_t in_unit = g - u * unit;
    while (len > 0) {
      if (in_unit == 0 && u % channels_ == 0 && len >= period) {
        const uint64_t rounds = len / period;
        for (uint64_t& b : channel_bytes_) b += weight * rounds * unit;
        len -= rounds * period;
        u += rounds * channels_;
        continue;
      }
      const uint64_t take = std::min(len, unit - in_unit);
      channel_bytes_[hbm_.channel_of_unit(u)] += weight * take;
      len -= take;
      in_unit = 0;
      ++u;
    }
  };
  // A transposing transfer reads its HBM block in descriptor order: one contiguous range.
  if (plan.transpose) {
    range(ap.offset + first * plan.run_bytes, (end - first) * plan.run_bytes, 1);
    return;
  }
  const uint64_t n = end - first;
  const uint64_t step = (n + kSampledDescriptors - 1) / kSampledDescriptors;
  // Sampled descriptors stand for the `step` of them they were picked from.
  for (uint64_t d = first; d < end; d += step) {
    range(run_address(ap, plan, d), plan.run_bytes, std::min(step, end - d));
  }
}

void FlowMemoryModel::on_ready(uint32_t id, Picoseconds now) {
  const DmaTransfer& t = book_[id];
  const DmaPlan& plan = t.plan;
  const uint32_t queue = hw_queue(t.queue);
  const bool reads = plan.reads_hbm, writes = plan.writes_hbm;
  const uint32_t engines = static_cast<uint32_t>(engines_.size());
  const uint32_t first_channel = 2 * engines + (t.core / cores_per_stack_) * channels_;
  const double round_trip = !reads && !writes ? 0.0
                                              : std::max(reads ? read_round_trip_ : 0.0,
                                                         writes ? write_round_trip_ : 0.0);
  // When one part's HBM addresses are another's shifted by whole rounds over the
  // pseudo-channels (rows 16 KiB apart, 8 rows of 1 KiB, ...), the parts with as many
  // partitions have the same spread: it is computed once.
  const uint64_t period =
      static_cast<uint64_t>(std::max(1u, arch_.hbm.interleave_bytes)) * channels_;
  auto shifts_by_rounds = [&](const isa::AccessPattern& ap) {
    const uint64_t part_shift =
        plan.transpose
            ? uint64_t{plan.partitions_per_engine} * plan.runs_per_partition * plan.run_bytes
            : uint64_t{plan.partitions_per_engine} *
                  static_cast<uint64_t>(std::llabs(ap.partition_stride)) * isa::size_of(ap.dtype);
    return part_shift % period == 0;
  };
  const bool same_spread = (!reads || shifts_by_rounds(t.instruction->src[0])) &&
                           (!writes || shifts_by_rounds(t.instruction->dst));
  // The spread computed for the first part, shared by the parts with as many partitions
  // (cached_count 0: none computed yet; cached_spread may be kNone, a spread without terms).
  uint32_t cached_count = 0;
  uint32_t cached_spread = kNone;
  uint32_t parts = 0;
  for (uint32_t i = 0; i < plan.engines; ++i) {
    const uint32_t first = i * plan.partitions_per_engine;
    if (first >= plan.partitions) break;
    const uint32_t count = std::min(plan.partitions_per_engine, plan.partitions - first);
    const uint32_t fid = take_slot(flows_, free_flows_);
    Flow& flow = flows_[fid];
    flow.transfer = id;
    flow.engine = t.core * arch_.dma_engines + (plan.first_engine + i) % arch_.dma_engines;
    flow.next = kNone;
    flow.bytes = static_cast<uint64_t>(count) * plan.runs_per_partition * plan.run_bytes;
    flow.engine_time = engine_time_for(plan, arch_, count);
    flow.remaining = static_cast<double>(flow.bytes);
    flow.hbm_factor = (reads ? 1.0 : 0.0) + (writes ? 1.0 : 0.0);
    flow.rate = 0;
    flow.finish = kNever;
    flow.release = kNever;
    flow.own_terms = 0;
    flow.spread = kNone;
    if (flow.bytes > 0) {
      const double bytes = static_cast<double>(flow.bytes);
      flow.own[flow.own_terms++] = {flow.engine,
                                    static_cast<double>(flow.engine_time.value) / bytes};
      if (round_trip > 0) flow.own[flow.own_terms++] = {engines + flow.engine, round_trip};
      if ((reads || writes) && same_spread && cached_count == count) {
        flow.spread = cached_spread;
        if (flow.spread != kNone) ++spreads_[flow.spread].users;
      } else if (reads || writes) {
        // Each side spreads the same bytes over pseudo-channels: the shares of one side sum
        // to 1, of both to 2.
        std::fill(channel_bytes_.begin(), channel_bytes_.end(), 0);
        const uint64_t d0 = first * plan.runs_per_partition;
        const uint64_t d1 = (first + count) * plan.runs_per_partition;
        if (reads) spread(t, false, d0, d1);
        if (writes) spread(t, true, d0, d1);
        uint64_t total = 0;
        for (uint64_t b : channel_bytes_) total += b;
        // A broadcast read (partition stride 0) hits the same units, so the same bank group,
        // with every burst: its channels serve it at the tCCD_L rate.
        const bool broadcast_read = reads && !plan.transpose &&
                                    t.instruction->src[0]->partition_stride == 0 &&
                                    plan.partitions > 1;
        const double scale = total > 0 ? flow.hbm_factor / static_cast<double>(total) *
                                             (broadcast_read ? same_group_factor_ : 1.0)
                                       : 0.0;
        // And the detailed engine cuts a part whose runs are shorter than a chunk into chunks of
        // several runs, whose pieces of one unit coalesce (HbmModel::enqueue): when every
        // partition reads the same run, a chunk reads it once for all its descriptors, on each
        // channel the run puts one unit on. (Where it puts two, a descriptor's second piece
        // sits between the first pieces of two descriptors, and nothing coalesces.)
        double dedup = 1.0;
        const uint64_t chunk_bytes = std::max(1u, arch_.dma_chunk_bytes);
        if (broadcast_read && !writes && plan.runs_per_partition == 1 &&
            plan.run_bytes < chunk_bytes && plan.run_bytes > 0) {
          const uint64_t per_chunk = std::min<uint64_t>(chunk_bytes / plan.run_bytes, count);
          const uint64_t chunks = (count + per_chunk - 1) / per_chunk;
          dedup = static_cast<double>(chunks) / count;
          std::fill(run_units_.begin(), run_units_.end(), 0);
          const uint64_t unit = std::max(1u, arch_.hbm.interleave_bytes);
          const uint64_t start = run_address(t.instruction->src[0], plan, d0) +
                                 (t.core % cores_per_stack_) * core_bytes_;
          for (uint64_t u = start / unit; u <= (start + plan.run_bytes - 1) / unit; ++u) {
            ++run_units_[hbm_.channel_of_unit(u)];
          }
        }
        flow.spread = new_spread();
        std::vector<Term>& terms = spreads_[flow.spread].terms;
        for (uint32_t c = 0; c < channels_; ++c) {
          if (channel_bytes_[c] == 0) continue;
          const double once = dedup != 1.0 && run_units_[c] == 1 ? dedup : 1.0;
          terms.push_back(
              {first_channel + c, static_cast<double>(channel_bytes_[c]) * scale * once});
        }
        if (terms.empty()) drop_spread(flow);  // (bytes on no channel: not seen, kept safe)
        if (same_spread && cached_count == 0) {
          cached_spread = flow.spread;
          cached_count = count;
        }
      }
    }
    IndexList& q = engines_[flow.engine].queues[queue];
    ++parts;
    if (q.tail == kNone) {
      q.head = q.tail = fid;
      activate(fid, now);
    } else {
      // Right behind the head: the head may now let it start early (its release time).
      if (q.tail == q.head) changed_ = true;
      flows_[q.tail].next = fid;
      q.tail = fid;
    }
  }
  book_[id].parts_open = parts;
  if (parts == 0) schedule(now, EventKind::transfer_done, id);
}

uint32_t FlowMemoryModel::new_spread() {
  const uint32_t s = take_slot(spreads_, free_spreads_);
  spreads_[s].terms.clear();
  spreads_[s].users = 1;
  return s;
}

void FlowMemoryModel::drop_spread(Flow& flow) {
  if (flow.spread != kNone && --spreads_[flow.spread].users == 0) {
    free_spreads_.push_back(flow.spread);
  }
  flow.spread = kNone;
}

void FlowMemoryModel::activate(uint32_t f, Picoseconds now) {
  Flow& flow = flows_[f];
  flow.active_at = static_cast<uint32_t>(active_.size());
  flow.rate = 0;
  flow.finish = kNever;
  active_.push_back(f);
  changed_ = true;
  DmaTransfer& t = book_[flow.transfer];
  if (t.start.value == kNever) t.start = now;
}

void FlowMemoryModel::finish(uint32_t f, Picoseconds now) {
  Flow& flow = flows_[f];
  Engine& engine = engines_[flow.engine];
  engine.busy = engine.busy + flow.engine_time;
  DmaTransfer& t = book_[flow.transfer];
  const DmaPlan& plan = t.plan;
  if (plan.reads_hbm) counters_.read_bytes += flow.bytes;
  if (plan.writes_hbm) counters_.write_bytes += flow.bytes;
  counters_.bus_busy =
      counters_.bus_busy + Picoseconds(std::llround(static_cast<double>(flow.bytes) *
                                                    flow.hbm_factor * bus_ps_per_byte_));
  // Leave the active list (swap with the last).
  const uint32_t last = active_.back();
  active_[flow.active_at] = last;
  flows_[last].active_at = flow.active_at;
  active_.pop_back();
  changed_ = true;
  const uint32_t hq = hw_queue(t.queue);
  IndexList& q = engine.queues[hq];
  if (engine.draining[hq] == f) {
    engine.draining[hq] = kNone;  // the next part started when this one began to drain
  } else {
    // The next part of its (engine, hardware queue) starts.
    q.head = flow.next;
    if (q.head == kNone) {
      q.tail = kNone;
    } else {
      activate(q.head, now);
    }
  }
  drop_spread(flow);
  free_flows_.push_back(f);
  if (--t.parts_open == 0) {
    Picoseconds tail;
    if (plan.reads_hbm) tail = read_tail_;
    if (plan.writes_hbm) tail = max(tail, write_tail_);
    schedule(now + tail, EventKind::transfer_done, flow.transfer);
  }
}

bool FlowMemoryModel::may_release(uint32_t f) const {
  const Flow& flow = flows_[f];
  const Engine& engine = engines_[flow.engine];
  const uint32_t hq = hw_queue(book_[flow.transfer].queue);
  // (A draining flow is no longer its queue's head.)
  return flow.hbm_factor > 0 && flow.next != kNone && engine.draining[hq] == kNone &&
         engine.queues[hq].head == f;
}

// The engine has cut the whole part into chunks and issued them: at most a window of its bytes
// is left, in flight at HBM. The engine moves on to the next part of the queue (the detailed
// model's engine does so as its outstanding window allows), while these bytes drain at the
// rate HBM and the window give them; the part's engine time has been spent.
void FlowMemoryModel::release(uint32_t f, Picoseconds now) {
  Flow& flow = flows_[f];
  Engine& engine = engines_[flow.engine];
  const uint32_t hq = hw_queue(book_[flow.transfer].queue);
  IndexList& q = engine.queues[hq];
  flow.release = kNever;
  if (flow.own_terms > 0 && flow.own[0].constraint == flow.engine) {
    flow.own[0] = flow.own[1];  // its engine-time term leaves
    --flow.own_terms;
  }
  engine.draining[hq] = f;
  q.head = flow.next;
  activate(q.head, now);
  changed_ = true;
}

void FlowMemoryModel::on_done(uint32_t id, Picoseconds now) {
  book_.data_done(id, now);
}

// Max-min fair rates by progressive filling: every flow not yet fixed rises at one common
// level; when a constraint saturates, its flows keep the level as their rate.
void FlowMemoryModel::recompute(Picoseconds now) {
  changed_ = false;
  // The scratch through raw pointers: a store to state (uint8_t) may alias anything, so the
  // compiler would otherwise load every vector's data pointer again after each store.
  double* const used = used_.data();
  double* const weight = weight_.data();
  double* const levels = level_.data();
  const double* const cap = cap_.data();
  uint32_t* const unfrozen = unfrozen_.data();
  uint8_t* const state = state_.data();
  for (uint32_t j : touched_) {
    used[j] = 0;
    weight[j] = 0;
    unfrozen[j] = 0;
    state[j] = 0;
  }
  touched_.clear();
  open_.clear();
  for (uint32_t f : active_) {
    Flow& flow = flows_[f];
    flow.rate = 0;
    if (flow.remaining <= 0 || !has_terms(flow)) continue;  // nothing to move: done now
    open_.push_back(f);
    for_each_term(flow, [&](const Term& term) {
      const uint32_t j = term.constraint;
      if (state[j] == 0) {
        state[j] = 1;
        touched_.push_back(j);
      }
      weight[j] += term.coefficient;
      ++unfrozen[j];
    });
  }
  while (!open_.empty()) {
    double level = std::numeric_limits<double>::infinity();
    for (uint32_t j : touched_) {
      if (state[j] != 1 || unfrozen[j] == 0) continue;
      levels[j] = std::max(0.0, cap[j] - used[j]) / weight[j];
      level = std::min(level, levels[j]);
    }
    for (uint32_t j : touched_) {
      if (state[j] == 1 && unfrozen[j] > 0 && levels[j] <= level * (1 + 1e-12)) state[j] = 2;
    }
    // The flows a saturated constraint binds keep the level as their rate; the others stay
    // open. Both lists keep active_ order (the order the sums below are taken in). The states
    // do not change in this pass.
    size_t kept = 0;
    fixed_.clear();
    for (const uint32_t f : open_) {
      Flow& flow = flows_[f];
      if (any_term(flow, [&](const Term& term) { return state[term.constraint] == 2; })) {
        flow.rate = level;
        fixed_.push_back(f);
      } else {
        open_[kept++] = f;
      }
    }
    open_.resize(kept);
    // What the fixed flows use counts toward the next round; after the last there is none.
    if (kept == 0) break;
    for (const uint32_t f : fixed_) {
      for_each_term(flows_[f], [&](const Term& term) {
        used[term.constraint] += term.coefficient * level;
        weight[term.constraint] -= term.coefficient;
        --unfrozen[term.constraint];
      });
    }
  }
  next_finish_ = kNever;
  for (uint32_t f : active_) {
    Flow& flow = flows_[f];
    flow.release = kNever;
    if (flow.remaining <= 0 || flow.rate <= 0) {
      flow.finish = now.value;
    } else {
      // The 1e-6 ps keeps an exact quotient from rounding up a whole picosecond.
      const double ps = std::ceil(flow.remaining / flow.rate - 1e-6);
      flow.finish = now.value + std::max<int64_t>(0, static_cast<int64_t>(ps));
      // A flow's remaining bytes are those its engine has not handled yet, with the round
      // trip of the last ones added when it finishes (finish()). But when HBM or the window
      // holds it back, not its engine, the engine runs ahead of HBM by up to its window of
      // chunks: it has issued the last chunk once no more than a window of bytes is left, and
      // moves on then (release()). An engine-bound flow has nothing issued ahead.
      if (state_[flow.engine] != 2 && may_release(f)) {
        const double to_window = std::max(0.0, flow.remaining - window_bytes_);
        flow.release =
            now.value +
            std::max<int64_t>(0, static_cast<int64_t>(std::ceil(to_window / flow.rate - 1e-6)));
      }
    }
    next_finish_ = std::min({next_finish_, flow.finish, flow.release});
  }
}

}  // namespace trnsim::models
