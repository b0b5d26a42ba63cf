#include "isa/pattern_ref.hpp"

#include <array>

namespace trnsim::isa {

namespace {

// The slot of a pattern in the per-thread table: a hash of its fields.
constexpr size_t kSlots = 1024;
size_t slot_of(const AccessPattern& ap) {
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

}  // namespace

// The table holds the patterns built last on this thread, one per slot, the newest of a slot
// replacing the older; a pattern equal to a slot's shares the slot's copy. It holds a reference
// to each (released when the thread ends), so a pattern in it is always shared and edit() on an
// instruction's copy never changes it.
PatternRef::PatternRef(const AccessPattern& ap) {
  static const AccessPattern none{};
  if (ap == none) return;  // the absent pattern needs no copy
  thread_local std::array<base::SharedValue<AccessPattern>, kSlots> table;
  base::SharedValue<AccessPattern>& slot = table[slot_of(ap)];
  if (!(slot.get() == ap)) slot = base::SharedValue<AccessPattern>(ap);
  base::SharedValue<AccessPattern>::operator=(slot);
}

}  // namespace trnsim::isa
