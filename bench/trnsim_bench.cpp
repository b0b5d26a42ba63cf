// trnsim_bench: the simulator-speed benchmark (issue 9). Runs every case of bench/suite.json
// as its own trnsim process (SystemC simulates once per process), one after another on one
// core, and writes one JSON file of results so that runs can be compared.
//
// Per case: simulated ISA instructions, transfers, simulated time, wall and CPU time (whole
// process and the simulation phase), simulated instructions and nanoseconds per wall second,
// events processed, and peak resident memory. For functional cases it also times the same
// arithmetic done directly with Eigen in this process, as the yardstick of the functional model.
//
//   trnsim_bench --trnsim build/trnsim --suite bench/suite.json [--quick | --scaling | --all]
//                [--only NAME]... [--out FILE] [--keep] [--timeout SECONDS]
//   trnsim_bench --compare OLD.json NEW.json
//
// scripts/bench builds what is needed and runs this; see README.md, "Benchmark".
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

using nlohmann::json;

namespace {

struct Options {
  std::string trnsim = "build/trnsim";
  std::string suite = "bench/suite.json";
  std::string out;
  std::string work;  // scratch directory for the runs' outputs
  std::string group = "full";
  std::vector<std::string> only;
  bool keep = false;
  unsigned timeout = 0;
  bool eigen = true;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::cerr << "trnsim_bench: " << why << "\n"
            << "usage: trnsim_bench [--trnsim PATH] [--suite FILE] [--quick | --scaling | --all]\n"
            << "                    [--only NAME]... [--out FILE] [--work DIR] [--keep]\n"
            << "                    [--timeout SECONDS] [--no-eigen]\n"
            << "       trnsim_bench --compare OLD.json NEW.json\n";
  std::exit(2);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The first line a shell command prints ("" when it fails).
std::string command_line_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    if (fgets(buf, sizeof buf, p) != nullptr) out = buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string proc_field(const std::string& file, const std::string& key) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, key.size(), key) == 0) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      size_t start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

json machine_info(const std::string& source_dir) {
  utsname u{};
  uname(&u);
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  json m = {{"cpu", proc_field("/proc/cpuinfo", "model name")},
            {"online_cpus", sysconf(_SC_NPROCESSORS_ONLN)},
            {"memory", proc_field("/proc/meminfo", "MemTotal")},
            {"kernel", std::string(u.sysname) + " " + u.release},
            {"hostname", u.nodename},
            {"load_average_at_start", {load[0], load[1], load[2]}}};
  const std::string git = "git -C '" + source_dir + "' ";
  m["git_commit"] = command_line_output(git + "rev-parse HEAD 2>/dev/null");
  m["git_branch"] = command_line_output(git + "rev-parse --abbrev-ref HEAD 2>/dev/null");
  m["git_dirty"] = !command_line_output(git + "status --porcelain -uno 2>/dev/null").empty();
  return m;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
}

struct ChildResult {
  int exit_code = -1;
  int signal = 0;
  double wall_seconds = 0;
  double user_seconds = 0;
  double system_seconds = 0;
  uint64_t max_rss_bytes = 0;
  std::string stderr_text;
};

// Runs argv with stdout discarded and stderr kept; wait4() gives its CPU time and peak RSS.
ChildResult run_child(const std::vector<std::string>& argv, const std::string& stderr_path,
                      unsigned timeout) {
  ChildResult r;
  std::cout.flush();  // or the child would inherit and print the buffered lines again
  std::fflush(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    r.stderr_text = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen(stderr_path.c_str(), "w", stderr))
      _exit(127);
    if (timeout > 0) alarm(timeout);  // survives exec: SIGALRM ends a runaway case
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.user_seconds = seconds(ru.ru_utime);
  r.system_seconds = seconds(ru.ru_stime);
  r.max_rss_bytes = static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // Linux: KiB
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.stderr_text = slurp(stderr_path);
  return r;
}

// ---- The same arithmetic with Eigen (fp32, this process, one core) ----

// Keeps the compiler from dropping or merging computations whose results are not used.
template <typename T>
void keep(const T& v) {
  asm volatile("" : : "g"(&v) : "memory");
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Array = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// CPU seconds Eigen takes for the kernel's arithmetic at this shape, or a negative number when
// there is no yardstick for the kernel.
double eigen_seconds(const json& workload) {
  const std::string kernel = workload.value("kernel", "");
  const std::vector<int64_t> shape = workload.value("shape", std::vector<int64_t>{});
  // CPU seconds of this process: on a shared machine, what the arithmetic itself took.
  auto timed = [](auto&& fn) {
    const double t0 = process_cpu_seconds();
    fn();
    return process_cpu_seconds() - t0;
  };
  if (kernel == "rmsnorm" && shape.size() == 2) {
    const Array x = Array::Random(shape[0], shape[1]);
    const Eigen::Array<float, 1, Eigen::Dynamic> gamma = Eigen::ArrayXf::Random(shape[1]);
    // Written before the clock starts: time the arithmetic, not page faults (a zero fill may
    // become calloc and touch nothing).
    Array y = Array::Constant(shape[0], shape[1], 1.0f);
    return timed([&] {
      for (int64_t r = 0; r < shape[0]; ++r) {
        const float inv_rms = 1.0f / std::sqrt(x.row(r).square().sum() / shape[1] + 1e-6f);
        y.row(r) = x.row(r) * inv_rms * gamma;
      }
      keep(y);
    });
  }
  if (kernel == "matmul" && shape.size() == 3) {
    const Matrix a = Matrix::Random(shape[0], shape[1]);
    const Matrix b = Matrix::Random(shape[1], shape[2]);
    Matrix c = Matrix::Constant(shape[0], shape[2], 1.0f);
    return timed([&] {
      c.noalias() = a * b;
      keep(c);
    });
  }
  if (kernel == "attention" && shape.size() == 3) {
    // Per head, per block of 128 queries: scores against every key, softmax, times V.
    const int64_t heads = shape[0], seq = shape[1], d = shape[2];
    const bool causal = workload.value("causal", false);
    const Matrix q = Matrix::Random(seq, d), k = Matrix::Random(seq, d), v = Matrix::Random(seq, d);
    Matrix o = Matrix::Constant(seq, d, 1.0f);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    return timed([&] {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t r = 0; r < seq; r += 128) {
          const int64_t rows = std::min<int64_t>(128, seq - r);
          const int64_t keys = causal ? r + rows : seq;
          Matrix s = (q.middleRows(r, rows) * k.topRows(keys).transpose()) * scale;
          for (int64_t i = 0; i < rows; ++i) {
            auto row = s.row(i).array();
            if (causal) row.tail(keys - (r + i + 1)) = -INFINITY;
            row = (row - row.maxCoeff()).exp();
            row /= row.sum();
          }
          o.middleRows(r, rows).noalias() = s * v.topRows(keys);
        }
        keep(o);
      }
    });
  }
  if (kernel == "engine_stream" && shape.size() == 2) {
    const Array x = Array::Random(shape[0], shape[1]);
    Array y = Array::Constant(shape[0], shape[1], 1.0f);
    const int64_t n = workload.value("instructions", int64_t{1000});
    return timed([&] {
      for (int64_t i = 0; i < n; ++i) {
        y = x * 2.0f - 1.0f;
        keep(y);
      }
    });
  }
  return -1;
}

// ---- Cases ----

struct Case {
  std::string name;
  std::string workload;  // path, relative to the suite file
  std::string mode;      // "timing-only" or "functional"
  std::vector<std::string> groups;
  std::vector<std::string> sets;  // --set overrides
  std::string note;
};

std::vector<Case> read_suite(const std::string& path) {
  const std::string text = slurp(path);
  if (text.empty()) usage_error("cannot read the suite " + path);
  const json doc = json::parse(text);
  std::vector<Case> cases;
  for (const json& c : doc.at("cases")) {
    Case k;
    k.name = c.at("name").get<std::string>();
    k.workload = dir_of(path) + "/" + c.at("workload").get<std::string>();
    k.mode = c.value("mode", "timing-only");
    k.groups = c.value("groups", std::vector<std::string>{"full"});
    k.sets = c.value("set", std::vector<std::string>{});
    k.note = c.value("note", "");
    cases.push_back(k);
  }
  return cases;
}

bool in_group(const Case& c, const Options& o) {
  if (!o.only.empty()) {
    for (const auto& n : o.only) {
      if (c.name == n) return true;
    }
    return false;
  }
  if (o.group == "all") return true;
  for (const auto& g : c.groups) {
    if (g == o.group) return true;
  }
  return false;
}

double number(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

// A run's output directory (the files trnsim writes there) and its captured stderr.
void remove_outputs(const std::string& dir, const std::string& stderr_file) {
  for (const char* f : {"perf.json", "stats.json", "trace.json", "report.html"}) {
    std::remove((dir + "/" + f).c_str());
  }
  // A functional graph run also writes its outputs as <name>.npy (32 MiB for the decoder layer).
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".npy") std::filesystem::remove(e.path(), ec);
  }
  ::rmdir(dir.c_str());
  std::remove(stderr_file.c_str());
}

json run_case(const Case& c, const Options& o) {
  json r = {{"name", c.name}, {"workload", c.workload}, {"mode", c.mode}};
  if (!c.sets.empty()) r["set"] = c.sets;
  if (!c.note.empty()) r["note"] = c.note;
  const std::string out = o.work + "/" + c.name;
  // The case's command, writing to `dir`.
  auto command = [&](const std::string& dir, bool timing_only) {
    std::vector<std::string> args = {o.trnsim, c.workload, "--perf", "--out", dir};
    if (timing_only) args.push_back("--timing-only");
    for (const auto& s : c.sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    return args;
  };
  const std::vector<std::string> argv = command(out, c.mode == "timing-only");
  std::string cmd = "trnsim";
  for (size_t i = 1; i < argv.size(); ++i) cmd += " " + argv[i];
  r["command"] = cmd;
  const ChildResult child = run_child(argv, o.work + "/" + c.name + ".stderr", o.timeout);
  r["process"] = {{"exit_code", child.exit_code},
                  {"wall_seconds", child.wall_seconds},
                  {"user_seconds", child.user_seconds},
                  {"system_seconds", child.system_seconds},
                  {"peak_rss_bytes", child.max_rss_bytes}};
  if (child.signal != 0) {
    r["status"] = "failed";
    r["reason"] = fmt::format("killed by signal {}{}", child.signal,
                              child.signal == SIGALRM ? " (timeout)" : "");
    return r;
  }
  // A kernel that has not landed yet is skipped, not a failure.
  if (child.exit_code == 2 && child.stderr_text.find("unknown kernel") != std::string::npos) {
    std::string kernel = "?";
    try {
      kernel = json::parse(slurp(c.workload)).value("kernel", "?");
    } catch (const std::exception&) {
    }
    r["status"] = "skipped";
    r["reason"] = "kernel " + kernel + " is not in this build";
    return r;
  }
  if (child.exit_code != 0 && child.exit_code != 1) {
    r["status"] = "failed";
    std::string err = child.stderr_text;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    r["reason"] = err.empty() ? fmt::format("exit code {}", child.exit_code) : err;
    return r;
  }
  json perf, stats;
  try {
    perf = json::parse(slurp(out + "/perf.json"));
    stats = json::parse(slurp(out + "/stats.json"));
  } catch (const std::exception& e) {
    r["status"] = "failed";
    r["reason"] = std::string("cannot read perf.json/stats.json: ") + e.what();
    return r;
  }
  struct stat st {};
  const uint64_t trace_bytes =
      stat((out + "/trace.json").c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  r["status"] = "ok";
  r["check"] = stats.contains("check") ? stats["check"].value("status", "") : "";
  if (child.exit_code == 1) r["status"] = "check failed";
  const double sim = number(perf, "wall_seconds_simulate");
  const double sim_cpu = number(perf, "cpu_seconds_simulate");
  const double instructions = number(perf, "simulated_instructions");
  const double sim_ns = number(perf, "simulated_time_ns");
  r["simulated_instructions"] = perf.value("simulated_instructions", uint64_t{0});
  r["simulated_transfers"] = perf.value("simulated_transfers", uint64_t{0});
  r["simulated_time_ns"] = sim_ns;
  r["events"] = perf.value("events", uint64_t{0});
  r["memory_system_events"] = perf.value("memory_system_events", uint64_t{0});
  r["trace_events"] = perf.value("trace_events", uint64_t{0});
  r["wall_seconds"] = child.wall_seconds;
  r["wall_seconds_load_and_lower"] = number(perf, "wall_seconds_load_and_lower");
  r["wall_seconds_prepare"] = number(perf, "wall_seconds_prepare");
  r["wall_seconds_simulate"] = sim;
  r["cpu_seconds"] = child.user_seconds + child.system_seconds;
  r["cpu_seconds_simulate"] = sim_cpu;
  r["instructions_per_second"] = sim > 0 ? instructions / sim : 0.0;
  r["instructions_per_cpu_second"] = sim_cpu > 0 ? instructions / sim_cpu : 0.0;
  r["simulated_ns_per_second"] = sim > 0 ? sim_ns / sim : 0.0;
  const double events = number(perf, "events") + number(perf, "memory_system_events");
  r["events_per_second"] = sim > 0 ? events / sim : 0.0;
  r["peak_rss_bytes"] = child.max_rss_bytes;
  r["trace_bytes"] = trace_bytes;
  if (c.mode == "functional" && o.eigen) {
    try {
      const double e = eigen_seconds(json::parse(slurp(c.workload)));
      if (e >= 0) {
        r["eigen_cpu_seconds"] = e;
        // CPU time against CPU time: both are one core's work whatever else the machine runs.
        r["functional_vs_eigen"] = e > 0 ? sim_cpu / e : 0.0;
        // The simulation phase of a functional run also runs the timing model. The same case
        // timing-only says how much of it is the data path (the arithmetic and the copies),
        // which is what Eigen's time measures the arithmetic against.
        std::vector<std::string> timing_argv = command(out + "-timing", true);
        timing_argv.push_back("--no-report");
        const ChildResult timing =
            run_child(timing_argv, o.work + "/" + c.name + "-timing.stderr", o.timeout);
        if (timing.signal == 0 && (timing.exit_code == 0 || timing.exit_code == 1)) {
          const json tp = json::parse(slurp(out + "-timing/perf.json"));
          const double timing_cpu = number(tp, "cpu_seconds_simulate");
          const double data_cpu = std::max(0.0, sim_cpu - timing_cpu);
          r["timing_only_cpu_seconds_simulate"] = timing_cpu;
          r["functional_data_cpu_seconds"] = data_cpu;
          r["functional_data_vs_eigen"] = e > 0 ? data_cpu / e : 0.0;
        }
        if (!o.keep) remove_outputs(out + "-timing", o.work + "/" + c.name + "-timing.stderr");
      }
    } catch (const std::exception& ex) {
      r["eigen_error"] = ex.what();
    }
  }
  if (!o.keep) remove_outputs(out, o.work + "/" + c.name + ".stderr");
  return r;
}

const json* find_case(const json& results, const std::string& name) {
  for (const json& c : results["cases"]) {
    if (c["name"] == name && c["status"] != "skipped" && c["status"] != "failed") return &c;
  }
  return nullptr;
}

// The targets, from the cases that ran.
json targets(const json& results) {
  json t = json::array();
  // matmul_s1 with the default (detailed) memory model and with the flow-level one
  // (dma_flow_model=true, lower fidelity: docs/validation.md).
  for (const char* name : {"matmul_s1", "matmul_s1_flow", "engine_stream_1m"}) {
    const bool flow = std::string(name) == "matmul_s1_flow";
    json row = {
        {"target", fmt::format("{}: >= 1,000,000 simulated instructions per second of "
                               "one core (simulation CPU time), timing-only{}",
                               name, flow ? ", flow memory model (dma_flow_model=true)" : "")},
        {"case", name}};
    if (const json* c = find_case(results, name)) {
      // Judged on the simulation's CPU time (one core's work); the wall-clock rate is beside
      // it, and equal to it on an idle machine.
      row["value"] = (*c)["instructions_per_cpu_second"];
      row["value_wall"] = (*c)["instructions_per_second"];
      // Loading, lowering and validating included: what a user waits for. Not judged (the
      // issue's rate is the simulator's), but shown so that nobody reads the target as this.
      const double cpu = (*c)["cpu_seconds"].get<double>();
      row["value_end_to_end_per_cpu_second"] =
          cpu > 0 ? (*c)["simulated_instructions"].get<double>() / cpu : 0.0;
      row["met"] = (*c)["instructions_per_cpu_second"].get<double>() >= 1e6;
    } else {
      row["met"] = nullptr;
      row["why"] = "case not run or skipped";
    }
    t.push_back(row);
  }
  // Twice the simulated time (a halved clock), the same instructions: no more wall time.
  {
    json row = {{"target",
                 "a workload that idles twice as long costs no more to simulate "
                 "(CPU seconds of the simulation, 2x over 1x, at most 1.1)"}};
    const json* a = find_case(results, "idle_1x");
    const json* b = find_case(results, "idle_2x");
    if (a && b && (*a)["cpu_seconds_simulate"].get<double>() > 0) {
      const double ratio =
          (*b)["cpu_seconds_simulate"].get<double>() / (*a)["cpu_seconds_simulate"].get<double>();
      row["simulated_time_ratio"] =
          (*b)["simulated_time_ns"].get<double>() / (*a)["simulated_time_ns"].get<double>();
      row["value"] = ratio;
      row["met"] = ratio <= 1.1;
    } else {
      row["met"] = nullptr;
      row["why"] = "idle_1x / idle_2x not run";
    }
    t.push_back(row);
  }
  // A trace of a million events written with the process under 200 MB.
  {
    json row = {{"target",
                 "a trace of at least 1,000,000 events written with peak RSS under 200 MB "
                 "(trace_1m_events)"},
                {"case", "trace_1m_events"}};
    if (const json* c = find_case(results, "trace_1m_events")) {
      row["value"] = (*c)["peak_rss_bytes"];
      row["trace_events"] = (*c)["trace_events"];
      row["met"] = (*c)["trace_events"].get<double>() >= 1e6 &&
                   (*c)["peak_rss_bytes"].get<double>() < 200.0 * (1 << 20);
    } else {
      row["met"] = nullptr;
      row["why"] = "case not run or skipped";
    }
    t.push_back(row);
  }
  // Programs of millions of instructions with the process under 500 MB: streamed programs.
  const auto rss_row = [&](const std::string& target, const std::string& name) {
    json row = {{"target", target}, {"case", name}};
    if (const json* c = find_case(results, name)) {
      row["value"] = (*c)["peak_rss_bytes"];
      row["met"] = (*c)["peak_rss_bytes"].get<double>() < 500e6;
    } else {
      row["met"] = nullptr;
      row["why"] = "case not run, skipped or failed (bench --scaling runs it)";
    }
    t.push_back(row);
  };
  rss_row(
      "engine_stream of 10,000,000 instructions with peak RSS under 500 MB "
      "(engine_stream_10m; 1m and 4m beside it show the flatness)",
      "engine_stream_10m");
  rss_row(
      "a matmul of 1,581,056 instructions (streamed by default) with peak RSS under 500 MB "
      "(matmul_s1_stream_1_6m; held whole it takes about 460 MB without its trace and report)",
      "matmul_s1_stream_1_6m");
  // Functional mode within 2x of Eigen.
  for (const json& c : results["cases"]) {
    if (!c.contains("functional_vs_eigen")) continue;
    t.push_back({{"target", c["name"].get<std::string>() +
                                ": functional simulation within 2x of Eigen's time for the "
                                "same arithmetic (CPU seconds)"},
                 {"case", c["name"]},
                 {"value", c["functional_vs_eigen"]},
                 {"met", c["functional_vs_eigen"].get<double>() <= 2.0}});
    if (c.contains("functional_data_vs_eigen")) {
      // Not the criterion (above): where the functional run's time goes.
      t.back()["data_path_vs_eigen"] = c["functional_data_vs_eigen"];
      t.back()["why"] = fmt::format(
          "of {:.2f} CPU s, the timing model takes {:.2f} s (the same case timing-only); the data "
          "path {:.2f} s is {:.1f}x Eigen's",
          c["cpu_seconds_simulate"].get<double>(),
          c["timing_only_cpu_seconds_simulate"].get<double>(),
          c["functional_data_cpu_seconds"].get<double>(),
          c["functional_data_vs_eigen"].get<double>());
    }
  }
  return t;
}

std::string human_bytes(double b) {
  if (b >= 1 << 30) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (b >= 1 << 20) return fmt::format("{:.0f} MiB", b / (1 << 20));
  return fmt::format("{:.0f} KiB", b / 1024);
}

std::string human_rate(double r) {
  if (r >= 1e6) return fmt::format("{:.2f} M", r / 1e6);
  if (r >= 1e3) return fmt::format("{:.1f} k", r / 1e3);
  return fmt::format("{:.0f}", r);
}

void print_row(const json& c) {
  const std::string name = c["name"].get<std::string>();
  if (c["status"] == "skipped" || c["status"] == "failed") {
    std::cout << fmt::format("{:<26} {:<11} {}: {}\n", name, c["mode"].get<std::string>(),
                             c["status"].get<std::string>(), c.value("reason", ""));
    return;
  }
  std::string extra;
  if (c.contains("functional_vs_eigen")) {
    extra = fmt::format("  eigen {:.2f} s ({:.1f}x)", c["eigen_cpu_seconds"].get<double>(),
                        c["functional_vs_eigen"].get<double>());
    if (c.contains("functional_data_vs_eigen")) {
      extra += fmt::format("; data path {:.2f} s ({:.1f}x)",
                           c["functional_data_cpu_seconds"].get<double>(),
                           c["functional_data_vs_eigen"].get<double>());
    }
  }
  if (c["status"] != "ok") extra += "  " + c["status"].get<std::string>();
  std::cout << fmt::format(
      "{:<26} {:<11} {:>9} {:>10.3f} ms {:>8.2f} s {:>8.2f} s {:>8.2f} s {:>9}/s {:>9}/s {:>9}/s "
      "{:>9}{}\n",
      name, c["mode"].get<std::string>(), c["simulated_instructions"].get<uint64_t>(),
      c["simulated_time_ns"].get<double>() / 1e6, c["wall_seconds"].get<double>(),
      c["wall_seconds_simulate"].get<double>(), c["cpu_seconds_simulate"].get<double>(),
      human_rate(c["instructions_per_second"].get<double>()),
      human_rate(c["instructions_per_cpu_second"].get<double>()),
      human_rate(c["simulated_ns_per_second"].get<double>()),
      human_bytes(c["peak_rss_bytes"].get<double>()), extra);
}

void print_header() {
  std::cout << fmt::format(
      "{:<26} {:<11} {:>9} {:>13} {:>10} {:>10} {:>10} {:>11} {:>11} {:>11} {:>9}\n", "case",
      "mode", "instr", "simulated", "wall", "sim wall", "sim cpu", "instr/s", "instr/cpu-s",
      "sim ns/s", "peak RSS");
}

int compare(const std::string& a_path, const std::string& b_path) {
  const json a = json::parse(slurp(a_path));
  const json b = json::parse(slurp(b_path));
  std::cout << fmt::format("old: {} {} {}\nnew: {} {} {}\n", a_path,
                           a["machine"].value("git_commit", ""), a.value("date", ""), b_path,
                           b["machine"].value("git_commit", ""), b.value("date", ""));
  std::cout << fmt::format("{:<24} {:<11} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8}\n", "case",
                           "mode", "old sim s", "new sim s", "speedup", "old RSS", "new RSS",
                           "ratio");
  for (const json& nb : b["cases"]) {
    if (nb["status"] != "ok") continue;
    for (const json& na : a["cases"]) {
      if (na["name"] != nb["name"] || na["mode"] != nb["mode"] || na["status"] != "ok") continue;
      const double sa = na["wall_seconds_simulate"], sb = nb["wall_seconds_simulate"];
      const double ra = na["peak_rss_bytes"], rb = nb["peak_rss_bytes"];
      std::cout << fmt::format(
          "{:<24} {:<11} {:>12.3f} {:>12.3f} {:>7.2f}x {:>12} {:>12} {:>7.2f}x\n",
          nb["name"].get<std::string>(), nb["mode"].get<std::string>(), sa, sb,
          sb > 0 ? sa / sb : 0.0, human_bytes(ra), human_bytes(rb), ra > 0 ? rb / ra : 0.0);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) usage_error(a + " needs a value");
      return args[++i];
    };
    if (a == "--compare") {
      if (i + 2 >= args.size()) usage_error("--compare needs two result files");
      return compare(args[i + 1], args[i + 2]);
    } else if (a == "--trnsim") {
      o.trnsim = value();
    } else if (a == "--suite") {
      o.suite = value();
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--work") {
      o.work = value();
    } else if (a == "--only") {
      o.only.push_back(value());
    } else if (a == "--quick") {
      o.group = "quick";
    } else if (a == "--scaling") {
      o.group = "scaling";
    } else if (a == "--all") {
      o.group = "all";
    } else if (a == "--keep") {
      o.keep = true;
    } else if (a == "--no-eigen") {
      o.eigen = false;
    } else if (a == "--timeout") {
      o.timeout = static_cast<unsigned>(std::stoul(value()));
    } else if (a == "-h" || a == "--help") {
      usage_error("the simulator-speed benchmark");
    } else {
      usage_error("unknown argument " + a);
    }
  }
  if (access(o.trnsim.c_str(), X_OK) != 0) usage_error("no trnsim binary at " + o.trnsim);
  if (o.work.empty()) o.work = dir_of(o.out.empty() ? o.trnsim : o.out) + "/bench-work";
  if (o.out.empty()) o.out = dir_of(o.trnsim) + "/bench-results.json";
  ::mkdir(o.work.c_str(), 0755);

  const std::vector<Case> cases = read_suite(o.suite);
  const std::string source_dir = dir_of(o.suite) + "/..";
  json results = {{"benchmark", "trnsim simulator speed (issue 9)"},
                  {"date", utc_now()},
                  {"group", o.only.empty() ? o.group : "only"},
                  {"machine", machine_info(source_dir)},
                  {"trnsim", o.trnsim},
                  {"trnsim_version", command_line_output("'" + o.trnsim + "' --version 2>&1")},
                  {"cases", json::array()}};
  std::cout << fmt::format("trnsim_bench: {} on {} ({} cpus), commit {}\n", o.group,
                           results["machine"]["cpu"].get<std::string>(),
                           results["machine"]["online_cpus"].get<long>(),
                           results["machine"]["git_commit"].get<std::string>().substr(0, 12));
  print_header();
  for (const Case& c : cases) {
    if (!in_group(c, o)) continue;
    const json r = run_case(c, o);
    print_row(r);
    results["cases"].push_back(r);
    // Written after every case: an interrupted run keeps what it measured.
    results["targets"] = targets(results);
    std::ofstream(o.out) << results.dump(2) << "\n";
  }
  results["targets"] = targets(results);
  std::ofstream(o.out) << results.dump(2) << "\n";
  std::cout << "targets:\n";
  for (const json& t : results["targets"]) {
    const std::string met = t["met"].is_null() ? "n/a" : (t["met"].get<bool>() ? "MET" : "NOT MET");
    std::cout << fmt::format(
        "  {:<8} {}{}{}\n", met, t["target"].get<std::string>(),
        t.contains("value") ? fmt::format(": {:.4g}", t["value"].get<double>()) : "",
        t.contains("value_end_to_end_per_cpu_second")
            ? fmt::format(" (end to end, loading and lowering included: {:.4g})",
                          t["value_end_to_end_per_cpu_second"].get<double>())
            : "");
    if (t.contains("why")) std::cout << "           " << t["why"].get<std::string>() << "\n";
  }
  std::cout << "results: " << o.out << "\n";
  int failed = 0;
  for (const json& c : results["cases"]) failed += c["status"] == "failed";
  return failed > 0 ? 1 : 0;
}
