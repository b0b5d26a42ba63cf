// One engine's instructions in order, held in fixed blocks that never move: a reference to an
// instruction stays valid while more are appended (a streamed lowering appends while the run
// reads), and the blocks below a point can be freed once every reader has passed it
// (release_below), so that a long program need not be held whole. Indices stay those of the
// whole stream: instruction i is stream[i] whether or not earlier ones were released.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/large_page_allocator.hpp"
#include "isa/instruction.hpp"

namespace trnsim::isa {

class InstructionStream {
 public:
  // The first 65,536 instructions are in blocks that double from 64 (64, 64, 128, ..., 32,768),
  // so that a short stream costs little; then every block holds 65,536 (12 MiB, huge pages
  // where the system allows, as the streams always had), so that a streamed program can free
  // what every reader has passed without keeping half the stream.
  static constexpr size_t kFirstShift = 6;   // the first block: 64
  static constexpr size_t kBlockShift = 16;  // the fixed blocks: 65,536
  static constexpr size_t kBlock = size_t{1} << kBlockShift;
  static constexpr size_t kGrowingBlocks = kBlockShift - kFirstShift;  // 10 after the first

  template <typename Stream, typename Value>
  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Instruction;
    using difference_type = std::ptrdiff_t;
    using pointer = Value*;
    using reference = Value&;
    Iterator() = default;
    Iterator(Stream* s, size_t i) : s_(s), i_(i) {}
    template <typename S, typename V, typename W = Value,
              typename = std::enable_if_t<std::is_const_v<W>>>
    Iterator(const Iterator<S, V>& o) : s_(o.stream()), i_(o.index()) {}  // NOLINT: to const
    reference operator*() const { return (*s_)[i_]; }
    pointer operator->() const { return &(*s_)[i_]; }
    reference operator[](difference_type n) const { return (*s_)[i_ + n]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator t = *this;
      ++i_;
      return t;
    }
    Iterator& operator--() {
      --i_;
      return *this;
    }
    Iterator operator--(int) {
      Iterator t = *this;
      --i_;
      return t;
    }
    Iterator& operator+=(difference_type n) {
      i_ = static_cast<size_t>(static_cast<difference_type>(i_) + n);
      return *this;
    }
    Iterator& operator-=(difference_type n) { return *this += -n; }
    friend Iterator operator+(Iterator a, difference_type n) { return a += n; }
    friend Iterator operator+(difference_type n, Iterator a) { return a += n; }
    friend Iterator operator-(Iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.i_ == b.i_; }
    friend bool operator!=(const Iterator& a, const Iterator& b) { return a.i_ != b.i_; }
    friend bool operator<(const Iterator& a, const Iterator& b) { return a.i_ < b.i_; }
    friend bool operator>(const Iterator& a, const Iterator& b) { return a.i_ > b.i_; }
    friend bool operator<=(const Iterator& a, const Iterator& b) { return a.i_ <= b.i_; }
    friend bool operator>=(const Iterator& a, const Iterator& b) { return a.i_ >= b.i_; }
    Stream* stream() const { return s_; }
    size_t index() const { return i_; }

   private:
    Stream* s_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iterator<InstructionStream, Instruction>;
  using const_iterator = Iterator<const InstructionStream, const Instruction>;
  using value_type = Instruction;
  using size_type = size_t;

  InstructionStream() = default;
  // A copy of a stream whose start was freed has the same indices and the same start freed.
  InstructionStream(const InstructionStream& o) {
    blocks_.assign(block_of(o.released_), nullptr);
    size_ = released_ = o.released_;
    append(o.begin(), o.end());
  }
  InstructionStream(InstructionStream&& o) noexcept { swap(o); }
  InstructionStream& operator=(const InstructionStream& o) {
    if (this != &o) {
      InstructionStream copy(o);
      swap(copy);
    }
    return *this;
  }
  InstructionStream& operator=(InstructionStream&& o) noexcept {
    if (this != &o) {
      InstructionStream moved(std::move(o));
      swap(moved);
    }
    return *this;
  }
  ~InstructionStream() { clear(); }

  void swap(InstructionStream& o) noexcept {
    blocks_.swap(o.blocks_);
    std::swap(size_, o.size_);
    std::swap(released_, o.released_);
    std::swap(spare_, o.spare_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Instructions [0, released()) were freed (release_below); reading them is an error.
  size_t released() const { return released_; }

  Instruction& operator[](size_t i) { return *slot(i); }
  const Instruction& operator[](size_t i) const { return *slot(i); }
  Instruction& at(size_t i) { return *slot(checked(i)); }
  const Instruction& at(size_t i) const { return *slot(checked(i)); }
  Instruction& front() { return (*this)[0]; }
  const Instruction& front() const { return (*this)[0]; }
  Instruction& back() { return (*this)[size_ - 1]; }
  const Instruction& back() const { return (*this)[size_ - 1]; }

  // From the first instruction not freed (0 unless a streamed program freed its start).
  iterator begin() { return {this, released_}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, released_}; }
  const_iterator end() const { return {this, size_}; }
  const_iterator cbegin() const { return begin(); }
  const_iterator cend() const { return end(); }

  template <typename... Args>
  Instruction& emplace_back(Args&&... args) {
    const size_t b = block_of(size_);
    if (b == blocks_.size()) blocks_.push_back(nullptr);  // room first: a failure leaks no block
    if (blocks_[b] == nullptr) blocks_[b] = allocate_block(b);
    Instruction* at = &blocks_[b][offset_of(size_)];
    new (at) Instruction(std::forward<Args>(args)...);
    ++size_;
    return *at;
  }
  void push_back(const Instruction& in) { emplace_back(in); }
  void push_back(Instruction&& in) { emplace_back(std::move(in)); }
  template <typename It>
  void append(It first, It last) {
    for (; first != last; ++first) emplace_back(*first);
  }
  template <typename It>
  void assign(It first, It last) {
    clear();
    append(first, last);
  }
  // Blocks never move, so there is nothing to make room for: kept so that callers that hint a
  // length (EngineStreams::reserve) need not know.
  void reserve(size_t /*n*/) {}

  // Frees the instructions below `i`: the blocks wholly below it.
  void release_below(size_t i) {
    if (i > size_) i = size_;
    size_t b = block_of(released_);
    while (b < blocks_.size() && first_of(b + 1) <= i) {
      release_block(b, size_of_block(b));
      released_ = first_of(++b);
    }
  }

  void clear() {
    for (size_t b = 0; b < blocks_.size(); ++b) {
      if (blocks_[b] == nullptr) continue;
      const size_t end = std::min(size_, first_of(b + 1));
      release_block(b, end - first_of(b));
    }
    blocks_.clear();
    size_ = 0;
    released_ = 0;
    free_spare();
  }

 private:
  // Block b holds instructions [first_of(b), first_of(b + 1)).
  static size_t block_of(size_t i) {
    if (i >= kBlock) return (i >> kBlockShift) + kGrowingBlocks;
    if (i < (size_t{1} << kFirstShift)) return 0;
    return static_cast<size_t>(63 - __builtin_clzll(i)) - kFirstShift + 1;
  }
  static size_t first_of(size_t b) {
    if (b == 0) return 0;
    if (b <= kGrowingBlocks + 1) return size_t{1} << (b - 1 + kFirstShift);
    return (b - kGrowingBlocks) << kBlockShift;
  }
  static size_t offset_of(size_t i) { return i - first_of(block_of(i)); }
  size_t checked(size_t i) const {
    if (i >= size_) throw std::out_of_range("InstructionStream::at: past the end");
    if (i < released_) throw std::out_of_range("InstructionStream::at: freed (streamed program)");
    return i;
  }
  Instruction* slot(size_t i) const {
    if (i >= kBlock) return blocks_[(i >> kBlockShift) + kGrowingBlocks] + (i & (kBlock - 1));
    if (i < (size_t{1} << kFirstShift)) return blocks_[0] + i;
    const auto k = static_cast<size_t>(63 - __builtin_clzll(i));  // i in [2^k, 2^(k+1))
    return blocks_[k - kFirstShift + 1] + (i - (size_t{1} << k));
  }
  static size_t size_of_block(size_t b) { return first_of(b + 1) - first_of(b); }

  using Allocator = base::LargePageAllocator<Instruction>;
  Instruction* allocate_block(size_t b) {
    if (spare_ != nullptr && b > kGrowingBlocks) {  // a fixed block freed before: its pages are
      Instruction* block = spare_;                  // written already, no fault to take again
      spare_ = nullptr;
      return block;
    }
    return Allocator().allocate(size_of_block(b));
  }
  void release_block(size_t b, size_t count) {
    Instruction* block = blocks_[b];
    if (block == nullptr) return;
    for (size_t k = 0; k < count; ++k) block[k].~Instruction();
    blocks_[b] = nullptr;
    if (b > kGrowingBlocks && spare_ == nullptr) {
      spare_ = block;
    } else {
      Allocator().deallocate(block, size_of_block(b));
    }
  }
  void free_spare() {
    if (spare_ != nullptr) Allocator().deallocate(spare_, kBlock);
    spare_ = nullptr;
  }

  std::vector<Instruction*> blocks_;
  size_t size_ = 0;
  size_t released_ = 0;
  Instruction* spare_ = nullptr;  // one freed fixed block, kept for the next
};

}  // namespace trnsim::isa
