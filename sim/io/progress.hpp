// A one-line progress indicator on stderr for a run that takes a while: what the run is doing,
// and while it simulates, the instructions done out of the program's, the simulated time
// reached, the rate and an estimate of the time left. Drawn over itself with a carriage return
// and erased when the run ends, succeeds or fails; never in the output files or on stdout.
//
// By default it appears only after about a second and only when stderr is a terminal, so that
// a redirected stderr (a log file, CI, a sweep's or tune's children, whose stderr is a file) and
// short runs get nothing. --progress / --no-progress force it on (from the start) or off.
//
// Cost: the simulation thread stores two numbers per instruction (relaxed atomics, plain moves
// on x86 and ARM); a thread of its own reads them five times a second and draws.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace trnsim::sim {

enum class ProgressMode { automatic, on, off };

class ProgressLine {
 public:
  // Starts drawing (a thread) when `mode` is on, or automatic and stderr is a terminal.
  explicit ProgressLine(ProgressMode mode);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // What the run is doing ("loading", "simulating", "writing outputs"); a string literal.
  void set_phase(const char* phase);
  // The simulation starts: `total` instructions over all cores (0: unknown, no ETA).
  void start_simulation(uint64_t total);
  // From the simulation thread, per instruction: single writer, so a load and a store.
  void instruction_done(int64_t end_ps) {
    instructions_.store(instructions_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    if (end_ps > simulated_ps_.load(std::memory_order_relaxed)) {
      simulated_ps_.store(end_ps, std::memory_order_relaxed);
    }
  }
  // Erases the line (if drawn) and stops the drawing thread; the destructor calls it.
  void stop();
  bool active() const { return thread_.joinable(); }

  // The text of the line for these figures (a test and the drawing thread use it).
  static std::string text(const char* phase, double elapsed_s, uint64_t done, uint64_t total,
                          int64_t simulated_ps, double sim_elapsed_s);

 private:
  void run();
  void draw();

  const bool forced_;
  std::atomic<const char*> phase_{"loading"};
  std::atomic<uint64_t> instructions_{0};
  std::atomic<int64_t> simulated_ps_{0};
  std::atomic<uint64_t> total_{0};
  std::atomic<int64_t> sim_start_ns_{-1};  // steady_clock, since start_
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// Held while a message goes to stderr (the logger does it): the line is erased first and not
// redrawn until the message is out, so a message never lands after a half line.
class ProgressPause {
 public:
  ProgressPause();
  ~ProgressPause();
  ProgressPause(const ProgressPause&) = delete;
  ProgressPause& operator=(const ProgressPause&) = delete;
};

// For the interrupt handler (async-signal-safe): stops any drawing and erases a drawn line.
void erase_progress_line_on_signal();

}  // namespace trnsim::sim
