// A shared, immutable access pattern: what an Instruction holds for each operand. A program
// repeats a handful of patterns over and over (the same tiles, read and written by instruction
// after instruction), so an instruction holds a pointer to one shared copy of each pattern (8
// bytes) instead of the pattern itself (96 bytes; an Instruction holds nine). Equal patterns
// built one after another on a thread are found in a small per-thread table and shared.
//
// It reads like a const AccessPattern: `ref->offset`, `ref.present()`, and it converts to
// `const AccessPattern&`. Assigning an AccessPattern replaces it; `edit()` gives a pattern of
// this reference's own to change (copy on write: the others sharing it do not see the change).
// The table is the thread's own (thread_local): do not build a PatternRef from a pattern in a
// destructor that runs after the thread's thread_local objects are gone.
#pragma once

#include "base/shared_value.hpp"
#include "isa/access_pattern.hpp"

namespace trnsim::isa {

class PatternRef : public base::SharedValue<AccessPattern> {
 public:
  PatternRef() = default;
  PatternRef(const AccessPattern& ap);  // NOLINT: a pattern converts to its shared form
  PatternRef& operator=(const AccessPattern& ap) { return *this = PatternRef(ap); }

  operator const AccessPattern&() const { return get(); }  // NOLINT: reads as a pattern
  bool present() const { return get().present(); }
};

inline bool operator==(const PatternRef& a, const PatternRef& b) {
  return a.get() == b.get();
}
inline bool operator!=(const PatternRef& a, const PatternRef& b) {
  return !(a == b);
}

}  // namespace trnsim::isa
