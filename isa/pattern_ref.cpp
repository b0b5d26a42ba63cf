#include "isa/pattern_ref.hpp"

#include <array>
#include <cstring>

namespace trnsim::isa {

// The patterns built last on this thread, by a hash of their fields: one slot each, the newest
// pattern of its hash replacing the older. A hit shares the slot's copy; the table holds one
// reference to each, released when the thread ends.
struct PatternCache {
  static constexpr size_t kSlots = 1024;
  std::array<PatternRef::Shared*, kSlots> slots{};
  ~PatternCache() {
    for (PatternRef::Shared* s : slots) PatternRef::release(s);
  }
  static size_t slot_of(const AccessPattern& ap) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(static_cast<uint64_t>(ap.memory) | static_cast<uint64_t>(ap.dtype) << 8 |
        static_cast<uint64_t>(ap.ndims) << 16 | static_cast<uint64_t>(ap.start_partition) << 32);
    mix(ap.partitions);
    mix(static_cast<uint64_t>(ap.partition_stride));
    mix(ap.offset);
    for (const Dim& d : ap.dims) {
      mix(static_cast<uint64_t>(d.stride));
      mix(d.count);
    }
    return static_cast<size_t>(h ^ (h >> 29)) % kSlots;
  }
};

PatternRef::PatternRef(const AccessPattern& ap) {
  static const AccessPattern none{};
  if (ap == none) return;  // the absent pattern needs no copy
  thread_local PatternCache cache;
  Shared*& slot = cache.slots[PatternCache::slot_of(ap)];
  if (slot == nullptr || !(slot->ap == ap)) {
    release(slot);
    slot = new Shared{ap};
  }
  retain(slot);
  p_ = slot;
}

AccessPattern& PatternRef::edit() {
  if (p_ == nullptr) {
    p_ = new Shared{};
  } else if (p_->refs.load(std::memory_order_acquire) > 1) {
    Shared* own = new Shared{p_->ap};
    release(p_);
    p_ = own;
  }
  return p_->ap;
}

const AccessPattern& PatternRef::absent() {
  static const AccessPattern none{};
  return none;
}

}  // namespace trnsim::isa
