// Item 2 of issue 18: a run or a sweep interrupted by Ctrl-C (SIGINT) or SIGTERM while it writes
// its outputs leaves no trace.json.<pid>.tmp or report.html.<pid>.tmp behind, says so on stderr
// in one line, and ends by the signal (a shell shows 130 or 143). sim/io/interrupt.hpp.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "cli_support.hpp"

using namespace trnsim_test;
namespace fs = std::filesystem;

namespace {

// An 8192 x 8192 x 8192 bf16 matmul, timing only: seconds of simulation writing a trace of tens
// of MB, long enough to be interrupted in the middle (it is interrupted within a second).
const char* kLongWorkload =
    R"({"mode": "eager", "dtype": "bf16",
        "inputs": {"a": {"shape": [8192, 8192]}, "b": {"shape": [8192, 8192]}},
        "ops": [{"op": "matmul", "args": ["a", "b"], "out": "y"}], "outputs": ["y"]})";

// Starts `trnsim ARGS...` with stdout and stderr into DIR/stdout.txt and DIR/stderr.txt.
pid_t start(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<char*> argv;
  std::string program = TRNSIM_BINARY;
  argv.push_back(program.data());
  std::vector<std::string> copies = args;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = dir + "/stdout.txt";
  const std::string err = dir + "/stderr.txt";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    // The test runner may have blocked or ignored them; trnsim gets them as a user's shell
    // gives them.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// The temporary files under `dir` (at any depth).
std::vector<std::string> temporary_files(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".tmp") found.push_back(it->path().string());
  }
  return found;
}

// Waits until a trace.json.<pid>.tmp under `dir` holds at least 1 MB: the engines are running
// and writing the trace. False if the process ended first (it was not interrupted at all).
bool wait_for_trace_in_progress(pid_t pid, const std::string& dir) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const std::string& f : temporary_files(dir)) {
      std::error_code ec;
      if (fs::path(f).filename().string().rfind("trace.json.", 0) == 0 &&
          fs::file_size(f, ec) >= 1000000 && !ec) {
        return true;
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

struct Ended {
  bool by_signal = false;
  int signal = 0;
  int shell_status = -1;  // what $? shows in a shell
  std::string err;
};

Ended interrupt(pid_t pid, int sig, const std::string& dir) {
  ::kill(pid, sig);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  Ended e;
  e.by_signal = WIFSIGNALED(status);
  e.signal = e.by_signal ? WTERMSIG(status) : 0;
  e.shell_status = e.by_signal ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  e.err = slurp(dir + "/stderr.txt");
  return e;
}

}  // namespace

TEST_CASE("interrupt: SIGINT or SIGTERM during a run removes its unfinished outputs") {
  for (const auto& [sig, name, shell] : std::vector<std::tuple<int, std::string, int>>{
           {SIGINT, "SIGINT", 130}, {SIGTERM, "SIGTERM", 143}}) {
    DYNAMIC_SECTION(name) {
      const std::string dir = fresh_dir("interrupt_run_" + name);
      const std::string w = write_file(dir, "long.json", kLongWorkload);
      const std::string out = dir + "/out";
      const pid_t pid = start({w, "--timing-only", "--out", out}, dir);
      REQUIRE(pid > 0);
      const bool running = wait_for_trace_in_progress(pid, dir);
      if (!running) ::kill(pid, SIGKILL);
      REQUIRE(running);
      // trace.json and report.html are open (the report is written as the engines run).
      CHECK(temporary_files(out).size() == 2);
      const Ended e = interrupt(pid, sig, dir);
      INFO(e.err);
      CHECK(e.by_signal);
      CHECK(e.signal == sig);
      CHECK(e.shell_status == shell);
      CHECK(e.err == "trnsim: interrupted by " + name + "; removed 2 unfinished output files\n");
      CHECK(temporary_files(out).empty());
      CHECK(fs::is_empty(out));  // nor a stats.json or trace.json of a run that did not end
    }
  }
}

TEST_CASE("interrupt: the progress line is erased before the message (issue 20, item 5)") {
  const std::string dir = fresh_dir("interrupt_progress");
  const std::string w = write_file(dir, "long.json", kLongWorkload);
  const std::string out = dir + "/out";
  const pid_t pid = start({w, "--timing-only", "--progress", "--out", out}, dir);
  REQUIRE(pid > 0);
  const bool running = wait_for_trace_in_progress(pid, dir);
  if (!running) ::kill(pid, SIGKILL);
  REQUIRE(running);
  const Ended e = interrupt(pid, SIGINT, dir);
  INFO(e.err);
  CHECK(e.shell_status == 130);
  // Lines drawn over each other, then erased, then the message on a line of its own.
  const std::string message =
      "\r\033[Ktrnsim: interrupted by SIGINT; removed 2 unfinished output files\n";
  REQUIRE(e.err.size() > message.size());
  CHECK(e.err.substr(e.err.size() - message.size()) == message);
  CHECK(e.err.find("\rtrnsim: simulating: ") != std::string::npos);
}

TEST_CASE("interrupt: SIGTERM to a sweep stops its points and leaves no temporary file") {
  const std::string dir = fresh_dir("interrupt_sweep");
  write_file(dir, "long.json", kLongWorkload);
  const std::string s = write_file(
      dir, "s.json",
      R"({"workloads": ["long.json"], "arch": "trn2", "grid": {"hbm_latency_ns": [35, 140]}})");
  const std::string out = dir + "/out";
  const pid_t pid = start({"sweep", s, "-j", "2", "--out", out}, dir);
  REQUIRE(pid > 0);
  const bool running = wait_for_trace_in_progress(pid, dir);
  if (!running) ::kill(pid, SIGKILL);
  REQUIRE(running);
  const Ended e = interrupt(pid, SIGTERM, dir);
  INFO(e.err);
  CHECK(e.by_signal);
  CHECK(e.shell_status == 143);
  CHECK(e.err.find("trnsim: interrupted by SIGTERM; stopped 2 child processes; removed 0 "
                   "unfinished output files\n") != std::string::npos);
  // The points got the signal and were waited for before the sweep ended: no point is left to
  // write on, and none left a temporary file.
  CHECK(temporary_files(dir).empty());
  CHECK_FALSE(fs::exists(out + "/results.json"));
}
