#include "workloads/kernels/thread_feed.hpp"

#include <utility>

namespace trnsim::workloads {

ThreadFeed::ThreadFeed(std::function<void(ThreadFeed&)> body)
    : body_(std::move(body)), thread_([this] { run(); }) {}

ThreadFeed::~ThreadFeed() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ended_) {
      stop_ = true;
      body_turn_ = true;
      turn_changed_.notify_all();
      turn_changed_.wait(lock, [this] { return ended_; });
    }
  }
  thread_.join();
}

void ThreadFeed::run() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    turn_changed_.wait(lock, [this] { return body_turn_; });
    if (stop_) {
      ended_ = true;
      body_turn_ = false;
      turn_changed_.notify_all();
      return;
    }
  }
  try {
    body_(*this);
  } catch (const Stop&) {  // NOLINT: the feed is being destroyed
  } catch (...) {
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  body_turn_ = false;
  turn_changed_.notify_all();
}

bool ThreadFeed::fill(isa::Program& program, Engine e, size_t i) {
  const isa::InstructionStream& s = program.stream(e);
  if (i < s.size()) return true;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ended_ && !ended_engine_[static_cast<size_t>(index_of(e))]) {
      program_ = &program;
      want_engine_ = index_of(e);
      want_size_ = i + 1;
      since_resumed_ = 0;
      body_turn_ = true;
      turn_changed_.notify_all();
      turn_changed_.wait(lock, [this] { return !body_turn_; });
    }
  }
  return i < s.size();
}

void ThreadFeed::append(isa::Instruction in) {
  isa::InstructionStream& s = program_->stream(in.engine);
  if (check) check(in, s.size());
  s.push_back(std::move(in));
  // Only the body runs now: the reader waits in fill() for its turn.
  ++since_resumed_;
  const auto want = static_cast<Engine>(want_engine_);
  if (since_resumed_ >= kAhead && (program_->stream(want).size() >= want_size_ ||
                                   ended_engine_[static_cast<size_t>(want_engine_)])) {
    hand_back();
  }
}

void ThreadFeed::end_of(Engine e) {
  ended_engine_[static_cast<size_t>(index_of(e))] = true;
}

void ThreadFeed::hand_back() {
  std::unique_lock<std::mutex> lock(mutex_);
  body_turn_ = false;
  turn_changed_.notify_all();
  turn_changed_.wait(lock, [this] { return body_turn_; });
  if (stop_) throw Stop{};
}

bool ThreadFeed::ended() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ended_;
}

void ThreadFeed::rethrow_error() const {
  if (error_) std::rethrow_exception(error_);
}

}  // namespace trnsim::workloads
