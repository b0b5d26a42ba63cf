#include "sim/io/progress.hpp"

#include "sim/io/interrupt.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <csignal>

namespace trnsim::sim {

namespace {

// One drawer at a time: the drawing thread, a message through ProgressPause, the final erase.
std::mutex g_draw_mutex;
// Whether a line is on the terminal now, and whether a signal ended the drawing; read by the
// interrupt handler, hence sig_atomic_t.
volatile sig_atomic_t g_drawn = 0;
volatile sig_atomic_t g_signalled = 0;

constexpr char kErase[] = "\r\033[K";

// 1234 -> "1234", 123456 -> "123 k", 2700000 -> "2.70 M": the line stays short.
std::string count_text(double n) {
  if (n < 10000) return fmt::format("{}", static_cast<uint64_t>(n));
  if (n < 1e5) return fmt::format("{:.1f} k", n / 1e3);
  if (n < 1e6) return fmt::format("{:.0f} k", n / 1e3);
  if (n < 1e9) return fmt::format("{:.{}f} M", n / 1e6, n < 1e7 ? 2 : n < 1e8 ? 1 : 0);
  return fmt::format("{:.2f} G", n / 1e9);
}

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f} s", std::max(1.0, std::ceil(s)));
  const auto whole = static_cast<uint64_t>(std::ceil(s));
  if (whole < 3600) return fmt::format("{} min {} s", whole / 60, whole % 60);
  return fmt::format("{} h {} min", whole / 3600, whole % 3600 / 60);
}

std::string simulated_text(int64_t ps) {
  const double us = static_cast<double>(ps) / 1e6;
  if (us < 1000) return fmt::format("{:.1f} us", us);
  if (us < 1e6) return fmt::format("{:.3f} ms", us / 1e3);
  return fmt::format("{:.3f} s", us / 1e6);
}

}  // namespace

ProgressLine::ProgressLine(ProgressMode mode)
    : forced_(mode == ProgressMode::on), start_(std::chrono::steady_clock::now()) {
  if (mode == ProgressMode::off) return;
  if (mode == ProgressMode::automatic && ::isatty(STDERR_FILENO) != 1) return;
  // Forced on, the line is there from the start, however short the run.
  if (forced_) draw();
  thread_ = std::thread([this] { run(); });
}

ProgressLine::~ProgressLine() {
  stop();
}

void ProgressLine::set_phase(const char* phase) {
  phase_.store(phase, std::memory_order_relaxed);
  // Forced on, each phase is drawn as it starts: a short run (a test) still shows each.
  if (forced_ && active()) draw();
}

void ProgressLine::start_simulation(uint64_t total) {
  total_.store(total, std::memory_order_relaxed);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start_)
                      .count();
  sim_start_ns_.store(ns, std::memory_order_relaxed);
  set_phase("simulating");
}

std::string ProgressLine::text(const char* phase, double elapsed_s, uint64_t done, uint64_t total,
                               int64_t simulated_ps, double sim_elapsed_s) {
  if (sim_elapsed_s < 0) return fmt::format("trnsim: {} ({:.1f} s)", phase, elapsed_s);
  std::string line = fmt::format("trnsim: {}: {} ", phase, count_text(static_cast<double>(done)));
  if (total > 0) {
    line += fmt::format("of {} instructions ({:.0f}%)", count_text(static_cast<double>(total)),
                        std::min(100.0, 100.0 * static_cast<double>(done) / total));
  } else {
    line += "instructions";
  }
  line += fmt::format(", {} simulated", simulated_text(simulated_ps));
  if (sim_elapsed_s > 0 && done > 0) {
    const double rate = static_cast<double>(done) / sim_elapsed_s;
    line += fmt::format(", {} instr/s", count_text(rate));
    // The rate so far stands for the rest: a kernel's instructions are alike enough that
    // this is the estimate a user can act on; none before half a second of data.
    if (total > done && sim_elapsed_s >= 0.5) {
      line +=
          fmt::format(", about {} left", duration_text(static_cast<double>(total - done) / rate));
    }
  }
  return line;
}

void ProgressLine::run() {
  // Signals go to the main thread, whose handler erases the line (sim/io/interrupt.cpp).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; });
    if (stopping_) return;
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    // Runs shorter than about a second show nothing unless asked to.
    if (!forced_ && elapsed < std::chrono::seconds(1)) continue;
    draw();
  }
}

void ProgressLine::draw() {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const int64_t sim_start = sim_start_ns_.load(std::memory_order_relaxed);
  const double sim_elapsed = sim_start < 0 ? -1.0 : elapsed - static_cast<double>(sim_start) / 1e9;
  std::string line =
      text(phase_.load(std::memory_order_relaxed), elapsed,
           instructions_.load(std::memory_order_relaxed), total_.load(std::memory_order_relaxed),
           simulated_ps_.load(std::memory_order_relaxed), sim_elapsed);
  // A line longer than the terminal would wrap, and the carriage return would then redraw
  // only its last row: cut it to the width.
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && line.size() >= ws.ws_col) {
    line.resize(ws.ws_col - 1);
  }
  line = "\r" + line + "\033[K";
  const std::lock_guard<std::mutex> draw_lock(g_draw_mutex);
  if (g_signalled) return;
  write_stderr(line.data(), line.size());
  g_drawn = 1;
}

void ProgressLine::stop() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  const std::lock_guard<std::mutex> draw_lock(g_draw_mutex);
  if (g_drawn && !g_signalled) write_stderr(kErase, sizeof kErase - 1);
  g_drawn = 0;
}

ProgressPause::ProgressPause() {
  g_draw_mutex.lock();
  if (g_drawn) {
    write_stderr(kErase, sizeof kErase - 1);
    g_drawn = 0;
  }
}

ProgressPause::~ProgressPause() {
  g_draw_mutex.unlock();
}

void erase_progress_line_on_signal() {
  g_signalled = 1;
  if (g_drawn) {
    // write(2) only: async-signal-safe. The drawing thread may be inside a write of its own;
    // it draws nothing once g_signalled is set, so at most that one line precedes this erase.
    (void)!::write(STDERR_FILENO, kErase, sizeof kErase - 1);
    g_drawn = 0;
  }
}

}  // namespace trnsim::sim
