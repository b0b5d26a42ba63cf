// A shared, immutable access pattern: what an Instruction holds for each operand. A program
// repeats a handful of patterns over and over (the same tiles, read and written by instruction
// after instruction), so an instruction holds a pointer to one shared copy of each pattern (8
// bytes) instead of the pattern itself (96 bytes; an Instruction holds nine). Equal patterns
// built one after another on a thread are found in a small per-thread table and shared.
//
// It reads like a const AccessPattern: `ref->offset`, `ref.present()`, and it converts to
// `const AccessPattern&`. Assigning an AccessPattern replaces it; `edit()` gives a pattern of
// this reference's own to change (copy on write: the others sharing it do not see the change).
#pragma once

#include <atomic>
#include <cstdint>

#include "isa/access_pattern.hpp"

namespace trnsim::isa {

class PatternRef {
 public:
  PatternRef() = default;
  PatternRef(const AccessPattern& ap);  // NOLINT: a pattern converts to its shared form
  PatternRef(const PatternRef& o) noexcept : p_(o.p_) { retain(p_); }
  PatternRef(PatternRef&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  PatternRef& operator=(const PatternRef& o) noexcept {
    retain(o.p_);
    release(p_);
    p_ = o.p_;
    return *this;
  }
  PatternRef& operator=(PatternRef&& o) noexcept {
    if (this != &o) {
      release(p_);
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  PatternRef& operator=(const AccessPattern& ap) { return *this = PatternRef(ap); }
  ~PatternRef() { release(p_); }

  // The pattern (a default, absent one when none was given).
  const AccessPattern& get() const { return p_ != nullptr ? p_->ap : absent(); }
  operator const AccessPattern&() const { return get(); }  // NOLINT: reads as a pattern
  const AccessPattern* operator->() const { return &get(); }
  bool present() const { return get().present(); }
  // This reference's own copy of the pattern, to change in place.
  AccessPattern& edit();

 private:
  struct Shared {
    AccessPattern ap;
    std::atomic<uint32_t> refs{1};
  };
  static void retain(Shared* p) noexcept {
    if (p != nullptr) p->refs.fetch_add(1, std::memory_order_relaxed);
  }
  static void release(Shared* p) noexcept {
    if (p != nullptr && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
  }
  static const AccessPattern& absent();
  friend struct PatternCache;

  Shared* p_ = nullptr;
};

inline bool operator==(const PatternRef& a, const PatternRef& b) {
  return a.get() == b.get();
}
inline bool operator!=(const PatternRef& a, const PatternRef& b) {
  return !(a == b);
}

}  // namespace trnsim::isa
