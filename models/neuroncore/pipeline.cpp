#include "models/neuroncore/pipeline.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::models {

Cycles result_latency_cycles(const isa::Instruction& in, const config::ArchConfig& arch) {
  if (isa::is_dma(in.opcode) || in.opcode == isa::Opcode::nop) return Cycles(0);
  return Cycles(arch.result_latency_cycles[index_of(in.engine)]);
}

Picoseconds result_latency(const isa::Instruction& in, const config::ArchConfig& arch) {
  return to_picoseconds(result_latency_cycles(in, arch), arch.mhz(in.engine));
}

int32_t ProducerTracker::next(const isa::Instruction& in) {
  const size_t i = seen_++;
  int32_t producer = -1;
  if (!isa::is_dma(in.opcode) && !isa::is_collective(in.opcode)) {
    // The newest overlapping writer wins: search from the most recent.
    for (size_t back = 1; back <= kProducerWindow && back <= i && producer < 0; ++back) {
      const Written& w = ring_[(i - back) % kProducerWindow];
      bool reads = false;
      isa::for_each_operand(in, [&](const isa::AccessPattern& ap, bool written) {
        if (reads || written || !ap.present() || ap.memory == isa::Memory::hbm) return;
        const isa::Region r = isa::region_of(ap);
        for (int k = 0; k < w.count; ++k) reads = reads || w.regions[k].overlaps(r);
      });
      if (reads) producer = w.index;
    }
  }
  Written& mine = ring_[i % kProducerWindow];
  mine = Written{};
  mine.index = static_cast<int32_t>(i);
  // The queue (or the collective) writes, later: its semaphore orders it.
  if (isa::is_dma(in.opcode) || isa::is_collective(in.opcode)) return producer;
  for (const isa::AccessPattern* ap : {&in.dst.get(), &in.accumulate.get()}) {
    if (ap->present() && ap->memory != isa::Memory::hbm) {
      mine.regions[mine.count++] = isa::region_of(*ap);
    }
  }
  return producer;
}

std::vector<int32_t> same_engine_producers(const isa::InstructionStream& stream) {
  std::vector<int32_t> producer;
  producer.reserve(stream.size());
  ProducerTracker tracker;
  for (const isa::Instruction& in : stream) producer.push_back(tracker.next(in));
  return producer;
}

Picoseconds wake_latency(SemaphoreSource source, const config::ArchConfig& arch) {
  switch (source) {
    case SemaphoreSource::same_engine:
      return from_ns(arch.semaphore_local_ns);
    case SemaphoreSource::other_engine:
      return from_ns(arch.semaphore_cross_engine_ns);
    case SemaphoreSource::dma_queue:
      return from_ns(arch.dma_completion_wake_ns);
  }
  return Picoseconds(0);
}

TensorThrottle::TensorThrottle(const config::ArchConfig& arch)
    : start_(std::clamp(arch.tensor_throttle.start_fraction, 0.01, 1.0)),
      ramp_ps_(arch.tensor_throttle.ramp_ns * 1e3),
      window_ps_(std::max(1.0, arch.tensor_throttle.window_ns * 1e3)),
      threshold_(arch.tensor_throttle.threshold) {}

double TensorThrottle::limit(Picoseconds t) const {
  if (!enabled() || ramp_begin_ == INT64_MIN) return 1.0;
  if (ramp_ps_ <= 0) return 1.0;
  const double f = static_cast<double>(t.value - ramp_begin_) / ramp_ps_;
  return f >= 1.0 ? 1.0 : start_ + (1.0 - start_) * std::max(0.0, f);
}

Picoseconds TensorThrottle::busy_time(Picoseconds start, Picoseconds busy) {
  if (!enabled()) return busy;
  const auto window = static_cast<int64_t>(window_ps_);
  const int64_t from = start.value - window;
  // Occupancy of [start - window, start): drop what ended before, clip what straddles.
  while (!busy_.empty() && busy_.front().second <= from) {
    busy_sum_ -= busy_.front().second - busy_.front().first;
    busy_.pop_front();
  }
  int64_t occupied = busy_sum_;
  if (!busy_.empty() && busy_.front().first < from) occupied -= from - busy_.front().first;
  // Engaged while ramping; once at full rate, a window below the threshold engages it again.
  const bool at_full_rate = ramp_begin_ == INT64_MIN || limit(start) >= 1.0;
  if (at_full_rate && static_cast<double>(occupied) < threshold_ * window_ps_) {
    ramp_begin_ = start.value;
  }
  const double rate = limit(start);
  const Picoseconds throttled(static_cast<int64_t>(std::ceil(busy.value / rate)));
  busy_.emplace_back(start.value, start.value + throttled.value);
  busy_sum_ += throttled.value;
  return throttled;
}

}  // namespace trnsim::models
