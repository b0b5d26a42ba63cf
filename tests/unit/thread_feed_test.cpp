// workloads::ThreadFeed, a streamed lowering: the body runs only when a reader asks, stops a
// bounded distance past what was asked, and its errors reach the reader.
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>

#include "isa/program.hpp"
#include "isa/validate.hpp"
#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/thread_feed.hpp"

using trnsim::Engine;
using trnsim::isa::Instruction;
using trnsim::isa::Program;
using trnsim::workloads::ThreadFeed;

namespace {

Instruction on(Engine e) {
  Instruction in;
  in.engine = e;
  return in;
}

// A program whose lowering appends `n` instructions to VectorE, then one to SyncE.
Program streamed(size_t n, bool say_ends = false) {
  Program p;
  p.feed = std::make_shared<ThreadFeed>([n, say_ends](ThreadFeed& feed) {
    if (say_ends) {
      for (Engine e : {Engine::tensor, Engine::scalar, Engine::gpsimd}) feed.end_of(e);
    }
    for (size_t i = 0; i < n; ++i) feed.append(on(Engine::vector));
    if (say_ends) feed.end_of(Engine::vector);
    feed.append(on(Engine::sync));
  });
  return p;
}

}  // namespace

TEST_CASE("a streamed lowering runs only as far as its readers ask and a block more") {
  const size_t n = 10 * ThreadFeed::kAhead;
  Program p = streamed(n);
  CHECK(p.stream(Engine::vector).empty());  // nothing lowered before a reader asks
  REQUIRE(p.has(Engine::vector, 0));
  CHECK(p.stream(Engine::vector).size() <= 1 + ThreadFeed::kAhead);
  REQUIRE(p.has(Engine::vector, 3 * ThreadFeed::kAhead));
  CHECK(p.stream(Engine::vector).size() <= 3 * ThreadFeed::kAhead + 1 + ThreadFeed::kAhead);
  CHECK_FALSE(p.feed->ended());
  // Past the end of a stream: the body runs to its end to know.
  CHECK_FALSE(p.has(Engine::vector, n));
  CHECK(p.feed->ended());
  CHECK(p.stream(Engine::vector).size() == n);
  CHECK(p.has(Engine::sync, 0));
}

TEST_CASE("a streamed lowering that says an engine is done answers for it at once") {
  const size_t n = 10 * ThreadFeed::kAhead;
  Program p = streamed(n, true);
  REQUIRE(p.has(Engine::vector, 0));
  CHECK_FALSE(p.has(Engine::tensor, 0));  // said done: no need to lower the rest to know
  CHECK(p.stream(Engine::vector).size() <= 1 + ThreadFeed::kAhead);
  CHECK_FALSE(p.feed->ended());
}

TEST_CASE("a streamed program frees what its readers have passed") {
  const size_t n = 3 * trnsim::isa::InstructionStream::kBlock;
  Program p = streamed(n, true);
  REQUIRE(p.has(Engine::vector, n - 1));
  p.passed(Engine::vector, 2 * trnsim::isa::InstructionStream::kBlock);
  CHECK(p.stream(Engine::vector).released() == 2 * trnsim::isa::InstructionStream::kBlock);
  CHECK(p.has(Engine::vector, n - 1));
}

TEST_CASE("a streamed lowering left part way is stopped when its program goes") {
  auto p = std::make_unique<Program>(streamed(100 * ThreadFeed::kAhead));
  REQUIRE(p->has(Engine::vector, 10));
  p.reset();  // the body waits for its turn part way: it must be unwound, not waited for
  SUCCEED("the body stopped");
}

TEST_CASE("a streamed lowering's error ends the streams and reaches the reader") {
  Program p;
  p.feed = std::make_shared<ThreadFeed>([](ThreadFeed& feed) {
    feed.append(on(Engine::vector));
    throw trnsim::workloads::WorkloadError("w.json", "/shape", "too large");
  });
  CHECK(p.has(Engine::vector, 0));
  CHECK_FALSE(p.has(Engine::vector, 1));
  CHECK(p.feed->ended());
  CHECK_THROWS_AS(p.feed->rethrow_error(), trnsim::workloads::WorkloadError);
}

TEST_CASE("a streamed lowering checks each instruction as it is appended") {
  Program p = streamed(100);
  p.feed->check = [](const Instruction&, size_t index) {
    if (index == 50) throw trnsim::isa::ValidationError("VectorE instruction 50: bad");
  };
  CHECK(p.has(Engine::vector, 49));
  CHECK_FALSE(p.has(Engine::vector, 50));  // not appended
  CHECK_THROWS_WITH(p.feed->rethrow_error(), "VectorE instruction 50: bad");
}
