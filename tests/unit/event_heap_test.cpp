// models::EventHeap, the memory models' event queue: events leave earliest first, and events at
// the same time in the order they were scheduled. Every run's cycle counts rest on that order,
// so it is checked here against a plain sort, over pushes and pops interleaved as a model does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "models/dma/transfer_book.hpp"

using trnsim::Picoseconds;
using trnsim::models::EventHeap;

namespace {
enum class Kind : uint8_t { a, b };
}  // namespace

TEST_CASE("EventHeap: earliest first, and at equal times in the order scheduled") {
  EventHeap<Kind> heap;
  CHECK(heap.empty());
  CHECK(heap.next_time() == trnsim::models::kNever);
  heap.push(Picoseconds(30), Kind::a, 1);
  heap.push(Picoseconds(10), Kind::b, 2);
  heap.push(Picoseconds(30), Kind::b, 3);
  heap.push(Picoseconds(10), Kind::a, 4);
  heap.push(Picoseconds(20), Kind::a, 5);
  CHECK(heap.next_time() == 10);
  std::vector<uint32_t> ids;
  while (!heap.empty()) ids.push_back(heap.pop().id);
  CHECK(ids == std::vector<uint32_t>{2, 4, 5, 1, 3});
}

TEST_CASE(
    "EventHeap: the same order as a sort by (time, scheduling order), pushes and pops mixed") {
  // Times drawn from a few values so that many events tie; at most a few hundred pending, as in
  // a run. The reference is the pending set sorted by (time, sequence of scheduling).
  std::mt19937_64 rng(20261205);
  EventHeap<Kind> heap;
  struct Ref {
    int64_t time;
    uint64_t seq;
    uint32_t id;
  };
  std::vector<Ref> pending;
  uint64_t seq = 0;
  int64_t now = 0;
  size_t popped = 0;
  for (int step = 0; step < 200000; ++step) {
    const bool push = pending.empty() || (pending.size() < 300 && rng() % 100 < 52);
    if (push) {
      const int64_t t = now + static_cast<int64_t>(rng() % 8) * 1000;  // ties are common
      const auto id = static_cast<uint32_t>(step);
      heap.push(Picoseconds(t), rng() % 2 ? Kind::a : Kind::b, id);
      pending.push_back(Ref{t, seq++, id});
    } else {
      const auto first = std::min_element(pending.begin(), pending.end(), [](auto& x, auto& y) {
        return x.time != y.time ? x.time < y.time : x.seq < y.seq;
      });
      REQUIRE(heap.next_time() == first->time);
      const auto e = heap.pop();
      REQUIRE(e.id == first->id);
      REQUIRE(e.time == first->time);
      now = e.time;  // a model schedules at or after the event it handles
      pending.erase(first);
      ++popped;
    }
  }
  CHECK(popped > 90000);
  while (!pending.empty()) {
    const auto first = std::min_element(pending.begin(), pending.end(), [](auto& x, auto& y) {
      return x.time != y.time ? x.time < y.time : x.seq < y.seq;
    });
    REQUIRE(heap.pop().id == first->id);
    pending.erase(first);
  }
  CHECK(heap.empty());
}
