#include "sim/io/interrupt.hpp"

#include "sim/io/progress.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace trnsim::sim {

namespace {

// A slot's state moves free -> filling -> armed -> free. Only the main thread registers and
// releases (trnsim's SystemC coroutines share one OS thread), so the states are there for the
// handler: it reads a path only once its slot is armed, and a slot is disarmed before its path
// is overwritten. sig_atomic_t, with compiler fences around the path copy, is what a handler
// may rely on.
enum SlotState : sig_atomic_t { kFree = 0, kFilling = 1, kFile = 2, kDirectory = 3 };

constexpr int kSlots = 128;
struct Slot {
  volatile sig_atomic_t state;
  char path[PATH_MAX];
};
Slot g_slots[kSlots];

constexpr int kChildren = 256;
volatile pid_t g_children[kChildren];

// A C string to stderr; async-signal-safe.
void say(const char* s) {
  write_stderr(s, std::strlen(s));
}

// A small non-negative number as text into `out` (at least 12 bytes); async-signal-safe.
const char* number_text(unsigned v, char* out) {
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && n < 11);
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\0';
  return out;
}

// The files directly in `dir`, then `dir`: the NKI tracer's scratch directory (a program and
// its inputs' .npy). getdents64 rather than readdir, which may allocate.
unsigned remove_directory(const char* dir) {
  unsigned removed = 0;
  const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf + at + 16, sizeof reclen);
      const char* name = buf + at + 19;
      if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0 &&
          ::unlinkat(fd, name, 0) == 0) {
        ++removed;
      }
      at += reclen;
    }
  }
  ::close(fd);
  ::rmdir(dir);
  return removed;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

extern "C" void on_interrupt(int sig) {
  const int saved_errno = errno;
  // The children first, so that none writes on into what is removed next; then reap them
  // (a bounded wait: each got the signal trnsim itself got, and trnsim's own handle it so).
  for (int i = 0; i < kChildren; ++i) {
    if (g_children[i] > 0) ::kill(g_children[i], sig);
  }
  unsigned stopped = 0;
  for (int i = 0; i < kChildren; ++i) {
    if (g_children[i] > 0 && ::waitpid(g_children[i], nullptr, 0) == g_children[i]) ++stopped;
  }
  unsigned removed = 0;
  char count[12];
  for (Slot& s : g_slots) {
    const sig_atomic_t state = s.state;
    std::atomic_signal_fence(std::memory_order_acquire);
    if (state == kFile) {
      removed += ::unlink(s.path) == 0 ? 1 : 0;
    } else if (state == kDirectory) {
      remove_directory(s.path);
    }
  }
  erase_progress_line_on_signal();  // the message starts a line of its own
  say("trnsim: interrupted by ");
  say(signal_name(sig));
  if (stopped > 0) {
    // A sweep's points (each says what it removed in its own stderr.txt), the NKI tracer.
    say("; stopped ");
    say(number_text(stopped, count));
    say(stopped == 1 ? " child process" : " child processes");
  }
  say("; removed ");
  say(number_text(removed, count));
  say(removed == 1 ? " unfinished output file\n" : " unfinished output files\n");
  // Ended by the signal itself rather than exit(128 + sig): a shell shows the same status
  // (130 for SIGINT, 143 for SIGTERM), and a shell loop or make running trnsim learns that
  // the user interrupted and stops too, which it does not for an ordinary exit code.
  ::signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(sig);
  errno = saved_errno;
  ::_exit(128 + sig);  // not reached: the default action of all three ends the process
}

int add(const std::string& path, SlotState kind) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.state != kFree) continue;
    s.state = kFilling;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    std::atomic_signal_fence(std::memory_order_release);
    s.state = kind;
    return i;
  }
  return -1;
}

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

}  // namespace

void install_interrupt_handlers() {
  struct sigaction a {};
  a.sa_handler = on_interrupt;
  sigemptyset(&a.sa_mask);
  // One cleanup at a time: the other signals wait while the handler runs (it ends the process).
  for (int sig : kSignals) sigaddset(&a.sa_mask, sig);
  for (int sig : kSignals) {
    // A signal ignored when trnsim started (nohup, a batch system's SIGHUP) stays ignored.
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &a, nullptr);
  }
}

int InterruptCleanup::add_file(const std::string& path) {
  return add(path, kFile);
}

int InterruptCleanup::add_directory(const std::string& path) {
  return add(path, kDirectory);
}

void InterruptCleanup::release(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  g_slots[slot].state = kFree;
}

void InterruptCleanup::add_child(pid_t pid) {
  for (int i = 0; i < kChildren; ++i) {
    if (g_children[i] == 0) {
      g_children[i] = pid;
      return;
    }
  }
}

void InterruptCleanup::release_child(pid_t pid) {
  for (int i = 0; i < kChildren; ++i) {
    if (g_children[i] == pid) g_children[i] = 0;
  }
}

DeferInterrupts::DeferInterrupts() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kSignals) sigaddset(&set, sig);
  blocked_ = ::sigprocmask(SIG_BLOCK, &set, &before_) == 0;
}

DeferInterrupts::~DeferInterrupts() {
  if (blocked_) ::sigprocmask(SIG_SETMASK, &before_, nullptr);
}

void write_stderr(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace trnsim::sim
