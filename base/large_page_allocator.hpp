// An allocator for the program's instruction streams (hundreds of MB for a long program): an
// allocation of at least kLargePageThreshold bytes is its own anonymous mapping, marked
// MADV_HUGEPAGE, so that where transparent huge pages are "madvise" (Debian's default) the
// kernel backs it with 2 MiB pages: a 1M-instruction program is written with 1/512 of the page
// faults (docs/performance.md measures it). Smaller allocations, and systems without
// madvise/THP, behave as std::allocator.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace trnsim::base {

constexpr size_t kLargePageBytes = size_t{2} << 20;
// Allocations of at least this many bytes get their own mapping...
constexpr size_t kLargePageMinBytes = size_t{4} << 20;
// ... except under AddressSanitizer, where every allocation stays on the heap that ASan watches.
#if defined(__SANITIZE_ADDRESS__)
#define TRNSIM_LARGE_PAGES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRNSIM_LARGE_PAGES 0
#endif
#endif
#ifndef TRNSIM_LARGE_PAGES
#define TRNSIM_LARGE_PAGES 1
#endif
constexpr size_t kLargePageThreshold = TRNSIM_LARGE_PAGES ? kLargePageMinBytes : SIZE_MAX;

template <typename T>
struct LargePageAllocator {
  using value_type = T;
  LargePageAllocator() = default;
  template <typename U>
  LargePageAllocator(const LargePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kLargePageThreshold) return std::allocator<T>().allocate(n);
    void* p = mmap(nullptr, mapped_bytes(bytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p, mapped_bytes(bytes), MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kLargePageThreshold) {
      std::allocator<T>().deallocate(p, n);
    } else {
      munmap(p, mapped_bytes(bytes));
    }
  }
  template <typename U>
  bool operator==(const LargePageAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const LargePageAllocator<U>&) const noexcept {
    return false;
  }

 private:
  static size_t mapped_bytes(size_t bytes) {
    return (bytes + kLargePageBytes - 1) / kLargePageBytes * kLargePageBytes;
  }
};

// An allocator for vectors that start as zeros and are sized once (the functional run's memory
// image: SBUF, PSUM and HBM). Its memory comes from the system already zero: a fresh mapping
// with huge-page advice for large vectors (LargePageAllocator's), calloc for small ones. So
// sizing the vector writes nothing (its elements are default-initialized, not zeroed again):
// the kernel zeroes a page when it is first touched (a 2 MiB one where huge pages are on), and a
// page never touched costs nothing.
// A vector shrunk and then grown again would keep its old values where std::vector zeroes
// them: size these vectors once.
template <typename T>
struct ZeroedAllocator {
  static_assert(std::is_trivially_default_constructible_v<T>, "zero bytes must be a T");
  using value_type = T;
  ZeroedAllocator() = default;
  template <typename U>
  ZeroedAllocator(const ZeroedAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n * sizeof(T) >= kLargePageThreshold) return LargePageAllocator<T>().allocate(n);
    void* p = std::calloc(n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) >= kLargePageThreshold) {
      LargePageAllocator<T>().deallocate(p, n);
    } else {
      std::free(p);
    }
  }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // the memory is zero already
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const ZeroedAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const ZeroedAllocator<U>&) const noexcept {
    return false;
  }
};

// For a std::vector of plain values that will be large (the functional run's HBM image, the
// reference's tensors, the inputs): reserves room for n values and, before any of it is
// touched, asks for transparent huge pages over the 2 MiB-aligned part of it, as
// LargePageAllocator does for its own mappings. The vector keeps std::allocator, so its type is
// unchanged. glibc mostly serves allocations this large with a mapping of their own; where it
// takes one from its heap instead, the advice covers heap pages too, which is harmless. Where
// THP is off (or under AddressSanitizer) it only reserves. A decoder layer's functional run
// faults in several GB of such vectors (docs/performance.md).
template <typename T>
void reserve_large(std::vector<T>& v, size_t n) {
  v.reserve(n);
  const size_t bytes = v.capacity() * sizeof(T);
  if (bytes < kLargePageThreshold || !v.empty()) return;
#ifdef MADV_HUGEPAGE
  const auto begin = reinterpret_cast<uintptr_t>(v.data());
  const uintptr_t first = (begin + kLargePageBytes - 1) / kLargePageBytes * kLargePageBytes;
  const uintptr_t last = (begin + bytes) / kLargePageBytes * kLargePageBytes;
  if (last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // advice only
  }
#endif
}

// A vector of n value-initialized (zero) values, large ones on huge pages (reserve_large).
template <typename T>
std::vector<T> large_vector(size_t n) {
  std::vector<T> v;
  reserve_large(v, n);
  v.resize(n);
  return v;
}

}  // namespace trnsim::base
