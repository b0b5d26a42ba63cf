// The core's hardware semaphores: a value and an event per semaphore. Waiting checks the
// condition first, then waits on the event, in a loop (design brief).
#pragma once

#include <systemc>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "isa/instruction.hpp"
#include "models/systemc/sc_time.hpp"

namespace trnsim::models {

class SemaphoreFile {
 public:
  explicit SemaphoreFile(size_t count)
      : values_(count, 0),
        waiters_(count, 0),
        last_(count),
        events_(std::make_unique<sc_core::sc_event[]>(count)) {}

  // Who applied an update: an engine, or a DMA queue's completion.
  static constexpr int8_t kDmaQueue = -1;

  int64_t value(uint16_t id) const { return values_[id]; }
  // Between kernels: no engine waits, so no event needs to fire.
  void reset() {
    std::fill(values_.begin(), values_.end(), 0);
    std::fill(last_.begin(), last_.end(), LastUpdate{});
  }
  // Blocks the calling thread until semaphore `id` changes (the caller checks its condition
  // again, in a loop).
  void wait_for_change(uint16_t id) {
    ++waiters_[id];
    sc_core::wait(events_[id]);
    --waiters_[id];
  }

  // The update that last changed semaphore `id`: when, the value before it, and who made it.
  struct LastUpdate {
    Picoseconds at;
    int64_t before = 0;
    int8_t updater = kDmaQueue;
  };
  const LastUpdate& last_update(uint16_t id) const { return last_[id]; }

  void apply(const isa::SemaphoreUpdate& u, int8_t updater) {
    last_[u.semaphore] = LastUpdate{now(), values_[u.semaphore], updater};
    values_[u.semaphore] =
        u.kind == isa::SemaphoreUpdateKind::set ? u.value : values_[u.semaphore] + u.value;
    // Delta notification: every waiter sees the new value in the same simulated instant, in an
    // order that does not depend on who was notified first. With no thread waiting there is no
    // one to wake (a thread that checks later reads the value), and no delta cycle to run.
    if (waiters_[u.semaphore] > 0) events_[u.semaphore].notify(sc_core::SC_ZERO_TIME);
  }

 private:
  std::vector<int64_t> values_;
  std::vector<uint32_t> waiters_;  // threads blocked in wait_for_change, per semaphore
  std::vector<LastUpdate> last_;
  std::unique_ptr<sc_core::sc_event[]> events_;
};

}  // namespace trnsim::models
