// The trace writer's output buffer: appends without the checks and calls of std::string's
// out-of-line append, since the writer formats every instruction and transfer of a run.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

// The appends are forced inline: they are short, called several times per traced record, and
// GCC keeps append() out of line otherwise (a call per literal; callgrind: 41 instructions each).
#if defined(__GNUC__)
#define TRNSIM_TRACE_INLINE inline __attribute__((always_inline))
#else
#define TRNSIM_TRACE_INLINE inline
#endif

namespace trnsim::sim {

class TraceText {
 public:
  explicit TraceText(size_t capacity = 4096) { grow(capacity); }
  template <size_t N>
  TRNSIM_TRACE_INLINE TraceText& operator+=(const char (&literal)[N]) {
    append(literal, N - 1);
    return *this;
  }
  TRNSIM_TRACE_INLINE TraceText& operator+=(std::string_view s) {
    append(s.data(), s.size());
    return *this;
  }
  TraceText& operator+=(const std::string& s) {
    append(s.data(), s.size());
    return *this;
  }
  TRNSIM_TRACE_INLINE TraceText& operator+=(char c) {
    reserve(1);
    *end_++ = c;
    return *this;
  }
  TRNSIM_TRACE_INLINE void append(const char* p, size_t n) {
    reserve(n);
    std::memcpy(end_, p, n);
    end_ += n;
  }
  // Room for `n` more bytes: write them at the pointer returned, then commit(the new end).
  TRNSIM_TRACE_INLINE char* room(size_t n) {
    reserve(n);
    return end_;
  }
  void commit(char* end) { end_ = end; }
  size_t size() const { return static_cast<size_t>(end_ - data_.get()); }
  std::string_view view() const { return {data_.get(), size()}; }
  void clear() { end_ = data_.get(); }

 private:
  TRNSIM_TRACE_INLINE void reserve(size_t n) {
    if (static_cast<size_t>(capacity_end_ - end_) < n) grow(n);
  }
  void grow(size_t n) {
    const size_t used = data_ ? size() : 0;
    size_t capacity = data_ ? static_cast<size_t>(capacity_end_ - data_.get()) : 0;
    while (capacity - used < n) capacity = capacity == 0 ? n : 2 * capacity;
    std::unique_ptr<char[]> bigger(new char[capacity]);
    if (used > 0) std::memcpy(bigger.get(), data_.get(), used);
    data_ = std::move(bigger);
    end_ = data_.get() + used;
    capacity_end_ = data_.get() + capacity;
  }

  std::unique_ptr<char[]> data_;
  char* end_ = nullptr;
  char* capacity_end_ = nullptr;
};

}  // namespace trnsim::sim
