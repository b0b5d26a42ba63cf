// Ctrl-C (SIGINT), SIGTERM and SIGHUP at any moment of a command: the unfinished outputs it
// was writing (OutputFile's temporary files, e.g. trace.json.<pid>.tmp of tens of MB), its
// temporary directories and its child processes (sweep points, the NKI tracer) go with it, it
// says so on stderr in one line, and it ends by that signal, which a shell shows as 128 + the
// signal (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
//
// How: the paths and process ids are recorded in advance, in static storage, and the handler
// itself removes and signals them with async-signal-safe calls only (unlink, rmdir, open,
// getdents64, kill, write, _exit). The other way, a flag that the program checks at safe
// points, does not fit: a run spends its time inside SystemC's sc_start (the engines'
// coroutines), and before it in lowering, validation and the deadlock search, and after it
// writing report.html, each for seconds to minutes with no point that returns to a loop of
// ours; a flag would leave Ctrl-C without effect for that long, or need a check in every one
// of those loops. A record kept in advance costs a copy of a path per output file.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>

#include <cstddef>

namespace trnsim::sim {

// Installs the handlers (SIGINT, SIGTERM, SIGHUP). The command line calls it first thing; a
// library user (the Python module) keeps its own handlers and gets no cleanup.
void install_interrupt_handlers();

// write(2) of n bytes to stderr, retrying on a short write; async-signal-safe (the handlers and
// the progress line use it).
void write_stderr(const char* s, size_t n);

// What the handler removes or signals, each until released. Registration never fails the
// caller: with every slot taken (more than 128 files open at once), the path is simply not
// cleaned up on a signal.
class InterruptCleanup {
 public:
  // A file that is removed if the process is interrupted before release.
  static int add_file(const std::string& path);
  // A directory whose files (one level) and itself are removed.
  static int add_directory(const std::string& path);
  static void release(int slot);
  // A child process, sent the same signal (then reaped) before the files are removed.
  static void add_child(pid_t pid);
  static void release_child(pid_t pid);
};

// Holds SIGINT, SIGTERM and SIGHUP while it lives (delivered when it ends): for the renames that
// put a run's outputs in place, so that an interruption finds all of them or none renamed.
class DeferInterrupts {
 public:
  DeferInterrupts();
  ~DeferInterrupts();
  DeferInterrupts(const DeferInterrupts&) = delete;
  DeferInterrupts& operator=(const DeferInterrupts&) = delete;

 private:
  bool blocked_ = false;
  sigset_t before_{};
};

}  // namespace trnsim::sim
