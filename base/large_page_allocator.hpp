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
#include <memory>
#include <new>

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

}  // namespace trnsim::base
