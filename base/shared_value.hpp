// A value held by many owners and stored once: copies of a SharedValue share one
// reference-counted copy of the value (8 bytes each), and the owner that changes it through
// edit() gets a copy of its own first (copy on write), so no other owner sees the change. An
// empty SharedValue reads as a value-initialized T. isa::Instruction holds its operands
// (isa/pattern_ref.hpp) and its rarely used fields this way: a long program is mostly the same
// few values over and over.
#pragma once

#include <atomic>
#include <cstdint>

namespace trnsim::base {

template <typename T>
class SharedValue {
 public:
  SharedValue() = default;
  explicit SharedValue(const T& v) : p_(new Node{v}) {}
  SharedValue(const SharedValue& o) noexcept : p_(o.p_) { retain(p_); }
  SharedValue(SharedValue&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  SharedValue& operator=(const SharedValue& o) noexcept {
    retain(o.p_);
    release(p_);
    p_ = o.p_;
    return *this;
  }
  SharedValue& operator=(SharedValue&& o) noexcept {
    if (this != &o) {
      release(p_);
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  ~SharedValue() { release(p_); }

  // The value (a value-initialized T when there is none).
  const T& get() const { return p_ != nullptr ? p_->value : none(); }
  const T* operator->() const { return &get(); }
  // Whether both share one stored copy.
  bool shares_with(const SharedValue& o) const { return p_ == o.p_; }
  // This owner's own copy of the value, to change in place.
  T& edit() {
    if (p_ == nullptr) {
      p_ = new Node{};
    } else if (p_->refs.load(std::memory_order_acquire) > 1) {
      Node* own = new Node{p_->value};
      release(p_);
      p_ = own;
    }
    return p_->value;
  }

 private:
  struct Node {
    T value{};
    std::atomic<uint32_t> refs{1};
  };
  static void retain(Node* p) noexcept {
    if (p != nullptr) p->refs.fetch_add(1, std::memory_order_relaxed);
  }
  static void release(Node* p) noexcept {
    if (p != nullptr && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
  }
  static const T& none() {
    static const T value{};
    return value;
  }

  Node* p_ = nullptr;
};

}  // namespace trnsim::base
