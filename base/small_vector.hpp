// A vector that keeps its first N elements inside itself: an Instruction's semaphore waits and
// updates (usually none or one) cost no heap allocation, and the Instruction stays as small as
// with std::vector (24 bytes for N = 1 of a 16-byte element). Only for trivially copyable
// elements; the interface is the part of std::vector the code uses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace trnsim::base {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable types");
  static_assert(N >= 1, "SmallVector needs room for one element");

 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> items) { assign(items.begin(), items.end()); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      clear();
      assign(o.begin(), o.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return on_heap() ? u_.heap : inline_data(); }
  const T* data() const { return on_heap() ? u_.heap : inline_data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data()[i];
  }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data()[i];
  }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ == capacity_) grow(size_t{capacity_} * 2);
    data()[size_++] = v;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  iterator erase(const_iterator pos) {
    T* p = begin() + (pos - begin());
    std::copy(p + 1, end(), p);
    --size_;
    return p;
  }

  // Interoperability with code that wants a std::vector.
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }

 private:
  bool on_heap() const { return capacity_ > N; }
  T* inline_data() { return reinterpret_cast<T*>(u_.storage); }
  const T* inline_data() const { return reinterpret_cast<const T*>(u_.storage); }

  template <typename It>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(last - first);
    reserve(n);
    std::copy(first, last, data());
    size_ = static_cast<uint32_t>(n);
  }
  void grow(size_t n) {
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T)));
    if (size_ > 0) std::memcpy(static_cast<void*>(fresh), data(), size_ * sizeof(T));
    release();
    u_.heap = fresh;
    capacity_ = static_cast<uint32_t>(n);
  }
  void release() {
    if (on_heap()) ::operator delete(u_.heap);
    capacity_ = N;
  }
  void take(SmallVector& o) {
    if (o.on_heap()) {
      u_.heap = o.u_.heap;
      capacity_ = o.capacity_;
      o.capacity_ = N;
    } else if (o.size_ > 0) {
      std::memcpy(u_.storage, o.u_.storage, o.size_ * sizeof(T));
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  union Storage {
    T* heap;
    alignas(T) unsigned char storage[N * sizeof(T)];
  } u_{};
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
};

}  // namespace trnsim::base
