#include "models/dma/flow_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::models {

FlowMemorySystem::FlowMemorySystem(const isa::ArchConfig& arch, uint32_t cores,
                                   size_t max_transfers, const HbmModel& hbm)
    : arch_(arch),
      cores_(cores == 0 ? 1 : cores),
      cores_per_stack_(std::max(1u, arch.hbm.cores_per_stack)),
      stack_peak_(hbm.stack_peak_bytes_per_ns() / 1000.0),
      window_bytes_(static_cast<double>(std::max(1u, arch.dma_engine_outstanding_chunks)) *
                    std::max(1u, arch.dma_chunk_bytes)),
      read_tail_(from_ns(arch.hbm_latency_ns + arch.hbm.t_cl)),
      write_tail_(from_ns(arch.hbm_latency_ns + arch.hbm.t_cwl)) {
  // One pseudo-channel's share of the stack peak, bytes per ps.
  const double channel = stack_peak_ / std::max(1u, arch.hbm.pseudo_channels);
  bus_ps_per_byte_ = channel > 0 ? 1.0 / channel : 0.0;
  const double unit_ps = static_cast<double>(arch.hbm.interleave_bytes) * bus_ps_per_byte_;
  read_round_trip_ = static_cast<double>(read_tail_.value) + unit_ps;
  write_round_trip_ = static_cast<double>(write_tail_.value) + unit_ps;

  const size_t engines = static_cast<size_t>(cores_) * arch.dma_engines;
  engines_.resize(engines);
  for (auto& e : engines_) e.queues.resize(std::max(1u, arch.dma_queues_per_engine));
  queue_order_.resize(static_cast<size_t>(cores_) * std::max(arch.dma_queues, 1u));
  const size_t reserve = std::min<size_t>(max_transfers, 4096);
  transfers_.reserve(reserve);
  completions_.reserve(reserve);
  flows_.reserve(reserve);
  events_.reserve(1024);
  const size_t stacks = hbm.stacks();
  const size_t constraints = 2 * engines + stacks;
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
  for (size_t s = 0; s < stacks; ++s) cap_[2 * engines + s] = stack_peak_;
}

void FlowMemorySystem::schedule(Picoseconds t, EventKind kind, uint32_t id) {
  events_.push_back(Event{t.value, seq_++, kind, id});
  std::push_heap(events_.begin(), events_.end(), std::greater<Event>());
}

Picoseconds FlowMemorySystem::next_event_time() const {
  const int64_t heap = events_.empty() ? kNever : events_.front().time;
  // A pending rate computation happens at the time of the change that asked for it, which
  // run_until has already reached: it is never later than last_.
  const int64_t pending = changed_ ? last_.value : kNever;
  return Picoseconds(std::min({heap, next_finish_, pending}));
}

void FlowMemorySystem::consume_completions() {
  free_transfers_.insert(free_transfers_.end(), completions_.begin(), completions_.end());
  completions_.clear();
}

uint32_t FlowMemorySystem::submit(uint32_t core, const isa::Instruction& dma, const DmaPlan& plan,
                                  uint32_t index, Picoseconds issued) {
  uint32_t id = static_cast<uint32_t>(transfers_.size());
  if (!free_transfers_.empty()) {
    id = free_transfers_.back();
    free_transfers_.pop_back();
  }
  ++submitted_;
  DmaTransfer t;
  t.instruction = &dma;
  t.plan = &plan;
  t.core = core;
  t.queue = dma.dma_queue;
  t.index = index;
  t.issued = issued;
  if (id == transfers_.size()) {
    transfers_.push_back(t);
  } else {
    transfers_[id] = t;
  }
  QueueOrder& order = queue_order_[core * std::max(arch_.dma_queues, 1u) + dma.dma_queue];
  if (order.tail == kNone) {
    order.head = id;
  } else {
    transfers_[order.tail].next_in_queue = id;
  }
  order.tail = id;
  schedule(issued + from_ns(arch_.dma_start_latency_ns), EventKind::transfer_ready, id);
  return id;
}

void FlowMemorySystem::run_until(Picoseconds horizon) {
  for (;;) {
    const int64_t heap = events_.empty() ? kNever : events_.front().time;
    int64_t t = std::min(heap, next_finish_);
    if (changed_) t = std::min(t, last_.value);
    if (t == kNever || t >= horizon.value) return;
    const Picoseconds now(t);
    advance(now);
    while (!events_.empty() && events_.front().time == t) {
      std::pop_heap(events_.begin(), events_.end(), std::greater<Event>());
      const Event e = events_.back();
      events_.pop_back();
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
        if (flows_[f].finish <= t) finishing_.push_back(f);
      }
      // In flow-id order, so that the order does not depend on the active list's history.
      std::sort(finishing_.begin(), finishing_.end());
      for (uint32_t f : finishing_) finish(f, now);
      next_finish_ = kNever;
      for (uint32_t f : active_) next_finish_ = std::min(next_finish_, flows_[f].finish);
    }
    if (changed_) {
      ++events_processed_;
      recompute(now);
    }
  }
}

void FlowMemorySystem::advance(Picoseconds now) {
  const double dt = static_cast<double>(now.value - last_.value);
  last_ = now;
  if (dt <= 0) return;
  for (uint32_t f : active_) {
    Flow& flow = flows_[f];
    flow.remaining = std::max(0.0, flow.remaining - flow.rate * dt);
  }
}

void FlowMemorySystem::on_ready(uint32_t id, Picoseconds now) {
  const DmaTransfer& t = transfers_[id];
  const DmaPlan& plan = *t.plan;
  const uint32_t hw_queue = t.queue % std::max(1u, arch_.dma_queues_per_engine);
  const bool reads = plan.reads_hbm, writes = plan.writes_hbm;
  const uint32_t stack = t.core / cores_per_stack_;
  const double per_descriptor_ns = arch_.dma_descriptor_overhead_ns +
                                   static_cast<double>(plan.run_bytes) / plan.engine_bytes_per_ns;
  const double round_trip = !reads && !writes ? 0.0
                                              : std::max(reads ? read_round_trip_ : 0.0,
                                                         writes ? write_round_trip_ : 0.0);
  uint32_t parts = 0;
  for (uint32_t i = 0; i < plan.engines; ++i) {
    const uint32_t first = i * plan.partitions_per_engine;
    if (first >= plan.partitions) break;
    const uint32_t count = std::min(plan.partitions_per_engine, plan.partitions - first);
    Flow flow;
    flow.transfer = id;
    flow.engine = t.core * arch_.dma_engines + (plan.first_engine + i) % arch_.dma_engines;
    flow.stack = stack;
    flow.bytes = static_cast<uint64_t>(count) * plan.runs_per_partition * plan.run_bytes;
    // As plan_transfer computes the most loaded engine's time.
    flow.engine_time =
        from_ns(per_descriptor_ns * static_cast<double>(plan.runs_per_partition) * count);
    flow.remaining = static_cast<double>(flow.bytes);
    flow.engine_per_byte = flow.bytes > 0 ? static_cast<double>(flow.engine_time.value) /
                                                static_cast<double>(flow.bytes)
                                          : 0.0;
    flow.hbm_factor = (reads ? 1.0 : 0.0) + (writes ? 1.0 : 0.0);
    flow.round_trip = round_trip;
    uint32_t fid = static_cast<uint32_t>(flows_.size());
    if (free_flows_.empty()) {
      flows_.push_back(flow);
    } else {
      fid = free_flows_.back();
      free_flows_.pop_back();
      flows_[fid] = flow;
    }
    EngineQueue& q = engines_[flow.engine].queues[hw_queue];
    ++parts;
    if (q.tail == kNone) {
      q.head = q.tail = fid;
      activate(fid, now);
    } else {
      flows_[q.tail].next = fid;
      q.tail = fid;
    }
  }
  transfers_[id].parts_open = parts;
  if (parts == 0) schedule(now, EventKind::transfer_done, id);
}

void FlowMemorySystem::activate(uint32_t f, Picoseconds now) {
  Flow& flow = flows_[f];
  flow.active_at = static_cast<uint32_t>(active_.size());
  flow.rate = 0;
  flow.finish = kNever;
  active_.push_back(f);
  changed_ = true;
  DmaTransfer& t = transfers_[flow.transfer];
  if (t.start.value == kNever) t.start = now;
}

void FlowMemorySystem::finish(uint32_t f, Picoseconds now) {
  Flow& flow = flows_[f];
  Engine& engine = engines_[flow.engine];
  engine.busy = engine.busy + flow.engine_time;
  DmaTransfer& t = transfers_[flow.transfer];
  const DmaPlan& plan = *t.plan;
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
  // The next part of its (engine, hardware queue) starts.
  EngineQueue& q = engine.queues[t.queue % std::max(1u, arch_.dma_queues_per_engine)];
  q.head = flow.next;
  if (q.head == kNone) {
    q.tail = kNone;
  } else {
    activate(q.head, now);
  }
  free_flows_.push_back(f);
  if (--t.parts_open == 0) {
    Picoseconds tail;
    if (plan.reads_hbm) tail = read_tail_;
    if (plan.writes_hbm) tail = max(tail, write_tail_);
    schedule(now + tail, EventKind::transfer_done, flow.transfer);
  }
}

void FlowMemorySystem::on_done(uint32_t id, Picoseconds now) {
  DmaTransfer& t = transfers_[id];
  t.data_done = true;
  // In-order completion: release this queue's finished transfers from the head.
  QueueOrder& order = queue_order_[t.core * std::max(arch_.dma_queues, 1u) + t.queue];
  while (order.head != kNone && transfers_[order.head].data_done) {
    DmaTransfer& done = transfers_[order.head];
    done.completed = true;
    done.end = now;
    completions_.push_back(order.head);
    ++completed_;
    order.head = done.next_in_queue;
  }
  if (order.head == kNone) order.tail = kNone;
}

// Max-min fair rates by progressive filling: every flow not yet fixed rises at one common
// level; when a constraint saturates, its flows keep the level as their rate.
void FlowMemorySystem::recompute(Picoseconds now) {
  changed_ = false;
  const uint32_t engines = static_cast<uint32_t>(engines_.size());
  for (uint32_t j : touched_) {
    used_[j] = 0;
    weight_[j] = 0;
    unfrozen_[j] = 0;
    state_[j] = 0;
  }
  touched_.clear();
  auto touch = [this](uint32_t j, double w) {
    if (state_[j] == 0) {
      state_[j] = 1;
      touched_.push_back(j);
    }
    weight_[j] += w;
    ++unfrozen_[j];
  };
  size_t open = 0;
  for (uint32_t f : active_) {
    Flow& flow = flows_[f];
    flow.rate = 0;
    if (flow.remaining <= 0 || flow.engine_per_byte <= 0) {
      flow.frozen = true;  // nothing to move: done now
      continue;
    }
    flow.frozen = false;
    ++open;
    touch(flow.engine, flow.engine_per_byte);
    if (flow.hbm_factor > 0) {
      if (flow.round_trip > 0) touch(engines + flow.engine, flow.round_trip);
      touch(2 * engines + flow.stack, flow.hbm_factor);
    }
  }
  auto coefficient = [&](const Flow& flow, uint32_t j) {
    if (j < engines) return flow.engine_per_byte;
    if (j < 2 * engines) return flow.round_trip;
    return flow.hbm_factor;
  };
  while (open > 0) {
    double level = std::numeric_limits<double>::infinity();
    for (uint32_t j : touched_) {
      if (state_[j] != 1 || unfrozen_[j] == 0) continue;
      level_[j] = std::max(0.0, cap_[j] - used_[j]) / weight_[j];
      level = std::min(level, level_[j]);
    }
    for (uint32_t j : touched_) {
      if (state_[j] == 1 && unfrozen_[j] > 0 && level_[j] <= level * (1 + 1e-12)) state_[j] = 2;
    }
    for (uint32_t f : active_) {
      Flow& flow = flows_[f];
      if (flow.frozen) continue;
      const uint32_t js[3] = {
          flow.engine, flow.hbm_factor > 0 && flow.round_trip > 0 ? engines + flow.engine : kNone,
          flow.hbm_factor > 0 ? 2 * engines + flow.stack : kNone};
      bool bound = false;
      for (uint32_t j : js) bound = bound || (j != kNone && state_[j] == 2);
      if (!bound) continue;
      flow.frozen = true;
      flow.rate = level;
      --open;
      for (uint32_t j : js) {
        if (j == kNone) continue;
        const double a = coefficient(flow, j);
        used_[j] += a * level;
        weight_[j] -= a;
        --unfrozen_[j];
      }
    }
  }
  next_finish_ = kNever;
  for (uint32_t f : active_) {
    Flow& flow = flows_[f];
    if (flow.remaining <= 0 || flow.rate <= 0) {
      flow.finish = now.value;
    } else {
      // The 1e-6 ps keeps an exact quotient from rounding up a whole picosecond.
      const double ps = std::ceil(flow.remaining / flow.rate - 1e-6);
      flow.finish = now.value + std::max<int64_t>(0, static_cast<int64_t>(ps));
    }
    next_finish_ = std::min(next_finish_, flow.finish);
  }
}

}  // namespace trnsim::models
