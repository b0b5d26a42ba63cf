// A streamed lowering (isa::StreamFeed): the kernel's lowering body runs on a thread of its
// own, but never at the same time as the run. A reader that needs an instruction not yet
// lowered hands over to the body, which appends until that instruction and a block more are
// there, then hands back. So the body is written as a plain loop (no generator), and nothing
// is shared between two running threads: each hand-over goes through one mutex.
#pragma once

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "isa/program.hpp"

namespace trnsim::workloads {

class ThreadFeed : public isa::StreamFeed {
 public:
  // How far past the instruction asked for the body runs before it hands back: fewer
  // hand-overs, at the cost of that many instructions more in memory.
  static constexpr size_t kAhead = 4096;

  // `body` appends the program's instructions through append(); it starts at the first fill().
  explicit ThreadFeed(std::function<void(ThreadFeed&)> body);
  // Stops the body where it is (a run that ended early) and joins its thread.
  ~ThreadFeed() override;
  ThreadFeed(const ThreadFeed&) = delete;
  ThreadFeed& operator=(const ThreadFeed&) = delete;

  bool fill(isa::Program& program, Engine e, size_t i) override;
  bool ended() const override;

  // For the body: appends `in` to its engine's stream, and hands back to the reader once
  // what it asked for is there and kAhead more instructions have been lowered.
  void append(isa::Instruction in);
  // For the body: engine e gets no more instructions. A reader asking for one past the end of
  // a stream otherwise makes the body run on to its end (the stream may still grow), which
  // holds everything lowered after it: a lowering that knows an engine is done says so.
  void end_of(Engine e);
  void rethrow_error() const override;

 private:
  struct Stop {};    // thrown into the body to unwind it when the feed is destroyed
  void hand_back();  // body thread: the reader's turn, and wait for the next
  void run();

  isa::Program* program_ = nullptr;  // the one fill() was last called for
  std::function<void(ThreadFeed&)> body_;
  mutable std::mutex mutex_;
  std::condition_variable turn_changed_;
  bool body_turn_ = false;
  bool ended_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  int want_engine_ = 0;
  size_t want_size_ = 0;      // the reader's engine holds what it asked for at this size
  size_t since_resumed_ = 0;  // instructions appended since the body last took its turn
  std::array<bool, kEngineCount> ended_engine_{};
  std::thread thread_;
};

}  // namespace trnsim::workloads
