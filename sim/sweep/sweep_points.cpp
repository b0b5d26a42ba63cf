// `trnsim sweep`: running the points, each a `trnsim run` in a child process of its own, at
// most -j at once; a point's row from its stats.json and exit status; progress on stderr.
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/host_threads.hpp"
#include "config/parameters.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/interrupt.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/metrics.hpp"
#include "sim/sweep/sweep_internal.hpp"

namespace trnsim::sim::sweep_internal {

namespace {

namespace fs = std::filesystem;

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw OutputError("cannot find the trnsim executable (/proc/self/exe)");
  buf[n] = '\0';
  return buf;
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return {};
  try {
    return read_input_file(path);
  } catch (const std::exception&) {
    return {};
  }
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Metric `id` of a stats.json as written, or null: read through the metric table, where an
// undeclared id throws.
json number_or_null(const json& stats, const std::string& id) {
  const json* v = metric_json(stats, id);
  return v != nullptr ? *v : json();
}

// The row of a finished point (its stats.json and exit status).
json make_row(const SweepSpec& s, const Point& p, int exit_code, const std::string& error,
              const json& stats) {
  json row = json::object();
  row["point"] = p.id;
  row["workload"] = s.workloads[p.workload];
  json params = json::object();
  config::ArchConfig c = s.base.config;
  for (const std::string& set : p.sets) config::set_parameter(c, set);
  for (size_t k = 0; k < s.varied.size(); ++k) {
    const std::string& name = s.varied[k];
    if (is_key_axis(name)) {
      params[name] = std::stoull(p.values[k]);
      continue;
    }
    const config::Parameter& t = *config::find_parameter(name);
    const double v = t.get(c);
    switch (t.kind) {
      case config::Parameter::Kind::flag:
        params[name] = v != 0;
        break;
      case config::Parameter::Kind::integer:
        params[name] = static_cast<uint64_t>(v);
        break;
      case config::Parameter::Kind::real:
        params[name] = v;
        break;
    }
  }
  row["parameters"] = params;
  row["base"] = p.base;
  const bool has_stats = stats.is_object() && stats.contains("summary");
  row["status"] = exit_code == 0 ? "ok" : exit_code == 1 && has_stats ? "check failed" : "failed";
  row["exit_code"] = exit_code;
  row["error"] = error;
  if (has_stats) {
    row["kernel"] = stats["workload"].value("name", std::string());
    const json* ps = metric_json(stats, "total_time_ps");
    row["total_time_us"] = (ps != nullptr ? ps->get<int64_t>() : int64_t{0}) / 1e6;
    row["neuroncore_cycle_count"] = number_or_null(stats, "neuroncore_cycle_count");
    json metrics = json::object();
    std::string busiest;
    double most = -1;
    for (const std::string& m : kRowMetrics) metrics[m] = number_or_null(stats, m);
    for (const auto& [m, name] : kBusyNames) {
      if (metrics[m].is_number() && metrics[m].get<double>() > most) {
        most = metrics[m].get<double>();
        busiest = name;
      }
    }
    row["busiest"] = busiest;
    row["metrics"] = metrics;
  } else {
    row["kernel"] = "";
    row["total_time_us"] = nullptr;
    row["neuroncore_cycle_count"] = nullptr;
    row["busiest"] = "";
    json metrics = json::object();
    for (const std::string& m : kRowMetrics) metrics[m] = nullptr;
    row["metrics"] = metrics;
  }
  return row;
}

// The point's workload: the file with its varied keys replaced, named as the file is (the
// copy's name would otherwise be "workload"), written in the point's directory.
std::string write_point_workload(const SweepSpec& s, const Point& p, const std::string& dir) {
  const std::string& path = s.workload_paths[p.workload];
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(read_input_file(path));
  if (!doc.contains("name")) doc["name"] = stem_of(path);
  for (const auto& [key, value] : p.workload_sets) doc[key] = std::stoull(value);
  const std::string out = dir + "/workload.json";
  write_file(out, doc.dump(2) + "\n");
  return out;
}

struct PointFiles {
  std::string dir, definition, result, stats, out, err;
};

PointFiles files_of(const std::string& out_dir, const Point& p) {
  const std::string d = out_dir + "/points/" + p.id;
  return {d,
          d + "/point.json",
          d + "/result.json",
          d + "/stats.json",
          d + "/stdout.txt",
          d + "/stderr.txt"};
}

// A finished point's row from an earlier run, when it is this very point and it ran.
std::optional<json> reusable(const PointFiles& f, const Point& p) {
  const std::string text = read_text(f.result);
  if (text.empty() || !fs::exists(f.stats)) return std::nullopt;
  try {
    const json r = json::parse(text);
    if (r.at("point") != p.definition) return std::nullopt;
    const json& row = r.at("row");
    if (row.at("status") == "failed") return std::nullopt;
    return row;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

void write_file(const std::string& path, const std::string& text) {
  OutputFile f(path);
  f.write(text);
  f.commit();
}

namespace {

class Progress {
 public:
  Progress(size_t total, int rank, int ranks)
      : total_(total),
        rank_(rank),
        ranks_(ranks),
        tty_(::isatty(STDERR_FILENO) != 0),
        start_(std::chrono::steady_clock::now()) {}

  void started() {
    ++running_;
    show();
  }
  void reused(size_t n) {
    reused_ += n;
    done_ += n;
    show();
  }
  void finished(const std::string& id, const std::string& label, const json& row) {
    --running_;
    ++done_;
    const bool failed = row["status"] != "ok";
    if (failed) ++failed_;
    std::string line;
    if (failed) {
      line = fmt::format("{}point {} ({}) {}: {}", prefix(), id, label,
                         row["status"].get<std::string>(), row["error"].get<std::string>());
    } else if (!tty_) {
      line = fmt::format("{}[{}/{}] {} {}: {:.3f} us", prefix(), done_, total_, id, label,
                         row["total_time_us"].get<double>());
    }
    if (!line.empty()) {
      clear();
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    show();
  }
  void end() {
    if (tty_ && shown_) {
      clear();
    }
    std::fprintf(stderr, "%s%s\n", prefix().c_str(), status().c_str());
    std::fflush(stderr);
  }

 private:
  std::string prefix() const {
    return ranks_ > 1 ? fmt::format("sweep: rank {} of {}: ", rank_, ranks_) : "sweep: ";
  }
  std::string status() const {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return fmt::format("{}/{} points done ({} running, {} failed, {} reused), {:.1f} s", done_,
                       total_, running_, failed_, reused_, s);
  }
  void clear() {
    if (tty_ && shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }
  void show() {
    if (!tty_) return;
    clear();
    std::fprintf(stderr, "%s%s", prefix().c_str(), status().c_str());
    std::fflush(stderr);
    shown_ = true;
  }

  size_t total_, done_ = 0, running_ = 0, failed_ = 0, reused_ = 0;
  int rank_, ranks_;
  bool tty_, shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

// The running points' process ids go to the interrupt handler (sim/io/interrupt.hpp): an
// interrupted sweep (Ctrl-C, a batch system's SIGTERM, mpirun forwarding one to its ranks)
// stops its points too, so that none runs on unattended; --resume redoes them.
void track(pid_t pid, bool running) {
  if (running) {
    InterruptCleanup::add_child(pid);
  } else {
    InterruptCleanup::release_child(pid);
  }
}

std::string label_of(const SweepSpec& s, const Point& p) {
  std::string l = fs::path(s.workloads[p.workload]).filename().string();
  for (size_t k = 0; k < s.varied.size(); ++k) l += fmt::format(" {}={}", s.varied[k], p.values[k]);
  return l;
}

}  // namespace

// Runs `mine` (indices into points), at most `jobs` child processes at once. Returns the rows.
std::map<size_t, json> run_points(const SweepSpec& s, const std::vector<Point>& points,
                                  const std::vector<size_t>& mine, const SweepOptions& o,
                                  bool timing_only, const std::string& out_dir, int rank,
                                  int ranks) {
  std::map<size_t, json> rows;
  share_host_threads(o.jobs);
  Progress progress(mine.size(), rank, ranks);
  std::vector<size_t> todo;
  size_t reused = 0;
  for (size_t i : mine) {
    const PointFiles f = files_of(out_dir, points[i]);
    if (o.resume) {
      if (auto row = reusable(f, points[i])) {
        rows[i] = *row;
        ++reused;
        continue;
      }
    }
    todo.push_back(i);
  }
  if (reused) progress.reused(reused);

  const std::string exe = self_executable();
  std::map<pid_t, size_t> running;
  size_t next = 0;
  auto start = [&](size_t i) {
    const Point& p = points[i];
    const PointFiles f = files_of(out_dir, p);
    std::error_code ec;
    fs::remove_all(f.dir, ec);
    make_output_directory(f.dir);
    write_file(f.definition, p.definition.dump(2) + "\n");
    std::string workload = s.workload_paths[p.workload];
    if (!p.workload_sets.empty()) workload = write_point_workload(s, p, f.dir);
    std::vector<std::string> args = {
        exe, "run", workload, "--arch", s.arch_arg, "--out", f.dir,
        // A point's results are its row; a page per point would only cost time and disk.
        "--no-report"};
    if (timing_only) args.push_back("--timing-only");
    if (s.python[p.workload]) {
      // An NKI kernel: the sweep file's "kernel" object, with this point's --lnc and --grid.
      std::string lnc = s.kernel.lnc, grid = s.kernel.grid;
      for (const auto& [key, value] : p.kernel_sets) (key == "lnc" ? lnc : grid) = value;
      args.insert(args.end(), {"--kernel", s.kernel.name});
      for (const std::string& in : s.kernel.inputs) args.insert(args.end(), {"--input", in});
      if (!grid.empty()) args.insert(args.end(), {"--grid", grid});
      if (!lnc.empty()) args.insert(args.end(), {"--lnc", lnc});
    }
    for (const std::string& set : p.sets) {
      args.push_back("--set");
      args.push_back(set);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0)
      throw OutputError(fmt::format("cannot start a point: fork: {}", std::strerror(errno)));
    if (pid == 0) {
      // The child: only async-signal-safe calls until exec. The parent's interrupt handler is
      // not the child's (it would stop the parent's other points and remove its files).
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(f.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(f.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) ::_exit(126);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::execv(exe.c_str(), argv.data());
      static const char msg[] = "trnsim: error: cannot execute the trnsim binary\n";
      (void)!::write(2, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    running[pid] = i;
    track(pid, true);
    progress.started();
  };
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && static_cast<int>(running.size()) < o.jobs) start(todo[next++]);
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw OutputError(fmt::format("waiting for the points: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second;
    running.erase(it);
    track(pid, false);
    const Point& p = points[i];
    const PointFiles f = files_of(out_dir, p);
    int code = 2;
    std::string error;
    if (WIFEXITED(status)) {
      code = WEXITSTATUS(status);
      if (code != 0) error = child_error_line(read_text(f.err));
      if (code == 126 || code == 127) {
        error = error.empty() ? "the trnsim binary could not be started" : error;
      }
    } else if (WIFSIGNALED(status)) {
      code = 128 + WTERMSIG(status);
      error =
          fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    json stats;
    if (code == 0 || code == 1) {
      try {
        stats = json::parse(read_text(f.stats));
      } catch (const std::exception&) {
        code = 2;
        error = "the run left no readable stats.json";
      }
    }
    if (code != 0 && code != 1 && error.empty()) error = fmt::format("exit code {}", code);
    // Paths as the sweep file wrote them, so that results do not depend on where it lies.
    replace_all(error, s.workload_paths[p.workload], s.workloads[p.workload]);
    if (s.arch_arg != s.arch) replace_all(error, s.arch_arg, s.arch);
    const json row = make_row(s, p, code, error, stats);
    write_file(f.result, json{{"point", p.definition}, {"row", row}}.dump(2) + "\n");
    rows[i] = row;
    progress.finished(p.id, label_of(s, p), row);
  }
  progress.end();
  return rows;
}

}  // namespace trnsim::sim::sweep_internal

namespace trnsim::sim {

void share_host_threads(int jobs) {
  if (jobs <= 1) return;
  if (const char* v = std::getenv("TRNSIM_THREADS"); v != nullptr && *v != '\0') return;
  const unsigned share = std::max(1u, base::host_threads() / static_cast<unsigned>(jobs));
  ::setenv("TRNSIM_THREADS", std::to_string(share).c_str(), 1);
}

std::string child_error_line(const std::string& err) {
  std::string out;
  size_t from = 0;
  while (from < err.size()) {
    size_t nl = err.find('\n', from);
    if (nl == std::string::npos) nl = err.size();
    std::string line = err.substr(from, nl - from);
    from = nl + 1;
    for (const char* prefix : {"trnsim: error: ", "trnsim: warning: "}) {
      if (line.rfind(prefix, 0) == 0) line = line.substr(std::strlen(prefix));
    }
    if (line.empty() || line.rfind("usage:", 0) == 0 || line.rfind("       ", 0) == 0) continue;
    out += (out.empty() ? "" : " | ") + line;
  }
  if (out.size() > 600) out = out.substr(0, 597) + "...";
  return out;
}

}  // namespace trnsim::sim
