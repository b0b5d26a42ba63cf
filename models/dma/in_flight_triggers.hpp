// The DMA triggers of a streamed program whose transfers are in flight, per engine (see
// isa::StreamFeed): a transfer reads its instruction until it is delivered, so the engine's
// stream must keep it until then. Triggers are issued in stream order; they may be delivered
// in any order (different queues).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

#include "config/engine.hpp"

namespace trnsim::models {

class InFlightTriggers {
 public:
  void issued(Engine e, uint32_t index) { of(e).push_back({index, false}); }
  void delivered(Engine e, uint32_t index) {
    auto& q = of(e);
    auto it = std::lower_bound(q.begin(), q.end(), index,
                               [](const auto& t, uint32_t i) { return t.first < i; });
    if (it != q.end() && it->first == index) it->second = true;
    while (!q.empty() && q.front().second) q.pop_front();
  }
  // The oldest trigger of `e` still in flight, or `otherwise`.
  size_t oldest(Engine e, size_t otherwise) const {
    const auto& q = triggers_[static_cast<size_t>(index_of(e))];
    return q.empty() ? otherwise : std::min<size_t>(otherwise, q.front().first);
  }

 private:
  std::deque<std::pair<uint32_t, bool>>& of(Engine e) {
    return triggers_[static_cast<size_t>(index_of(e))];
  }
  std::array<std::deque<std::pair<uint32_t, bool>>, kEngineCount> triggers_;
};

}  // namespace trnsim::models
