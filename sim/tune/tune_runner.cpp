#include "sim/tune/tune_runner.hpp"

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "config/parameters.hpp"
#include "isa/validate.hpp"
#include "models/estimate/estimate.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/metrics.hpp"
#include "sim/run/load.hpp"
#include "workloads/lowering.hpp"
#include "workloads/workload.hpp"

namespace trnsim::sim::tuner {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string hex64(uint64_t v) {
  return fmt::format("{:016x}", v);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
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

void write_text(const std::string& path, const std::string& text) {
  OutputFile f(path);
  f.write(text);
  f.commit();
}

// "file: /params/bufs: expected ..." without the file: the reason a point is invalid.
std::string without_file(const std::string& what, const std::string& file) {
  const std::string prefix = file + ": ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

// A lower bound of a program's run: no engine finishes before the sum of its instructions'
// issue intervals (one instruction at a time; models/estimate gives the model's own cost,
// back to back), and no run moves its DMA bytes faster than all DMA engines at once, nor its
// HBM bytes faster than the HBM stacks its cores use.
double lower_bound_ns(const isa::Program& p, const config::ArchConfig& arch, uint32_t cores) {
  double busiest = 0, dma_bytes = 0, hbm_bytes = 0;
  for (Engine e : kAllEngines) {
    double sum = 0;
    for (const isa::Instruction& in : p.stream(e)) {
      sum += models::estimate::instruction_ns(in, arch);
      if (!isa::is_dma(in.opcode)) continue;
      const double bytes = static_cast<double>(in.src[0]->bytes());
      dma_bytes += bytes;
      if (in.src[0]->memory == isa::Memory::hbm) hbm_bytes += bytes;
      if (in.dst->memory == isa::Memory::hbm) hbm_bytes += bytes;
    }
    busiest = std::max(busiest, sum);
  }
  const double dma_peak = arch.dma_peak_bytes_per_ns();
  const double per_stack = std::max<uint32_t>(1, arch.hbm.cores_per_stack);
  const double stacks = std::ceil(cores / per_stack);
  const double hbm_peak = arch.hbm.stack_bytes_per_ns * stacks;
  double bound = busiest;
  if (dma_peak > 0) bound = std::max(bound, dma_bytes / dma_peak);
  if (hbm_peak > 0) bound = std::max(bound, hbm_bytes * cores / hbm_peak);
  return bound;
}

// Names a lowered program: points with the same key run the same instructions. The choices the
// lowering reports, the instruction counts per engine and the lower bound's sums.
std::string program_key(const workloads::LoweredKernel& k, double bound) {
  std::string s = k.choices.dump();
  for (Engine e : kAllEngines) s += fmt::format(" {}", k.program.stream(e).size());
  s += fmt::format(" {} {:.6f}", k.program.dram_bytes(), bound);
  return hex64(fnv1a(s));
}

}  // namespace

Check check_workload(const json& doc, const std::string& file, const config::ArchConfig& arch) {
  Check c;
  try {
    const workloads::Workload w = workloads::parse_workload(doc.dump(), file);
    const workloads::LoweredKernel k = workloads::lower(w, arch, false);
    isa::validate(k.program, arch);
    c.bound_ns = lower_bound_ns(k.program, arch, w.cores);
    c.key = program_key(k, c.bound_ns);
    c.valid = true;
  } catch (const workloads::WorkloadError& e) {
    c.reason = without_file(e.what(), file);
  } catch (const isa::ValidationError& e) {
    c.reason = fmt::format("the program breaks a rule: {}", e.what());
  } catch (const std::exception& e) {
    c.reason = e.what();
  }
  return c;
}

namespace {

class WorkloadTarget : public Target {
 public:
  WorkloadTarget(std::string file, const std::string& arch_arg,
                 const std::vector<std::string>& sets, const std::vector<Fix>& fixes)
      : file_(std::move(file)) {
    const std::string text = read_input_file(file_);
    doc_ = workloads::parse_json(text, file_);
    // The workload's own checks first (its name, kernel, shape), then its space on this arch.
    const workloads::Workload w = workloads::parse_workload(text, file_);
    // Every point's file keeps the workload's name (stats.json and the summary name it).
    if (doc_.is_object() && !doc_.contains("name")) doc_["name"] = w.name;
    arch_ = configured_arch(arch_arg.empty() ? "trn2" : arch_arg, sets);
    space_ = workload_space(doc_, file_, arch_, fixes);
    const std::string dir = fs::path(file_).parent_path().string();
    dir_ = fs::absolute(dir.empty() ? "." : dir).lexically_normal().string();
    roofline_ = roofline_of(w);
  }
  const TuneSpace& space() const override { return space_; }
  std::string name() const override { return file_; }
  Roofline roofline() const override { return roofline_; }

  Check check(const Point& p) override {
    return check_workload(workload_of(doc_, space_, p), file_, arch_);
  }

  std::vector<std::string> arguments(const Point& p, const std::string& dir) override {
    const std::string path = dir + "/workload.json";
    write_text(path, runnable(p).dump(2) + "\n");
    return {path};
  }

  std::string write_runnable(const Point& p, const std::string& path) override {
    write_text(path, runnable(p).dump(2) + "\n");
    return path;
  }

 private:
  // The point's document where it can run from any directory: a graph's .npy inputs by
  // absolute path.
  json runnable(const Point& p) const {
    json d = workload_of(doc_, space_, p);
    if (d.contains("inputs") && d["inputs"].is_object()) {
      for (auto& item : d["inputs"].items()) {
        json& in = item.value();
        if (in.is_object() && in.contains("npy") && in["npy"].is_string()) {
          const fs::path npy = in["npy"].get<std::string>();
          if (npy.is_relative()) in["npy"] = (fs::path(dir_) / npy).lexically_normal().string();
        }
      }
    }
    return d;
  }

  Roofline roofline_of(const workloads::Workload& w) const {
    Roofline r;
    workloads::LoweredKernel k;
    try {
      k = workloads::lower(w, arch_, false);
    } catch (const std::exception&) {
      return r;  // the default does not lower: the search reports it
    }
    bool matmuls = false;
    for (const isa::Instruction& in : k.program.stream(Engine::tensor)) {
      matmuls = matmuls || in.opcode == isa::Opcode::matmul;
    }
    const double cores = w.cores;
    if (matmuls) {
      double peak = arch_.tensor_peak_flops_bf16() / 1e9;  // per ns
      if (w.dtype == isa::DType::fp32) peak /= std::max<uint32_t>(1, arch_.matmul_fp32_factor);
      if (isa::is_fp8(w.dtype)) peak *= std::max<uint32_t>(1, arch_.matmul_fp8_rate);
      r.compute_ns = static_cast<double>(k.model_flops) / (peak * cores);
      r.compute_what = fmt::format("{:.3g} model FLOPs at TensorE's {} peak of {:.3g} TFLOP/s",
                                   static_cast<double>(k.model_flops) * cores,
                                   isa::name_of(w.dtype), peak * cores / 1e3);
    } else {
      // The elementwise engines at their best (an assumption, docs/tune.md): VectorE in its
      // fastest mode (4 elements per lane per cycle for 16-bit data where it has the modes),
      // ScalarE two FLOPs per element (an activation's scale with its bias or accumulate),
      // GpSimdE one.
      const double vector = arch_.vector_perf_modes && isa::size_of(w.dtype) == 2 ? 4.0 : 1.0;
      const double per_ns = arch_.partitions *
                            (vector * arch_.mhz(Engine::vector) + 2.0 * arch_.mhz(Engine::scalar) +
                             arch_.mhz(Engine::gpsimd)) /
                            1e3;
      r.compute_ns = static_cast<double>(k.model_flops) / (per_ns * cores);
      r.compute_what = fmt::format(
          "{:.3g} model FLOPs at {:.3g} GFLOP/s: VectorE {} FLOP{} per lane per cycle, ScalarE 2, "
          "GpSimdE 1",
          static_cast<double>(k.model_flops) * cores, per_ns * cores, vector,
          vector == 1 ? "" : "s");
    }
    const double intermediates =
        k.choices.is_object() && k.choices.contains("hbm_intermediate_bytes")
            ? k.choices["hbm_intermediate_bytes"].get<double>()
            : 0.0;
    const double bytes = (static_cast<double>(k.program.dram_bytes()) - intermediates) * cores;
    const double per_stack = std::max<uint32_t>(1, arch_.hbm.cores_per_stack);
    const double hbm = arch_.hbm.stack_bytes_per_ns * std::ceil(cores / per_stack);
    const double dma = arch_.dma_peak_bytes_per_ns() * cores;
    const double bw = std::min(hbm, dma);
    r.memory_ns = bw > 0 ? bytes / bw : 0;
    r.memory_what =
        fmt::format("{:.3g} MiB of HBM inputs and outputs moved once at {:.0f} GB/s ({})",
                    bytes / 1048576.0, bw, hbm <= dma ? "HBM's peak" : "the DMA engines' peak");
    return r;
  }

  std::string file_, dir_;
  json doc_;
  config::ArchConfig arch_;
  TuneSpace space_;
  Roofline roofline_;
};

// ---- child processes ----

constexpr int kMaxChildren = 4096;
volatile pid_t g_children[kMaxChildren] = {};

extern "C" void forward_tune_signal(int sig) {
  for (int i = 0; i < kMaxChildren; ++i) {
    if (g_children[i] > 0) ::kill(g_children[i], sig);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void track(pid_t pid, bool running) {
  for (int i = 0; i < kMaxChildren; ++i) {
    if (running ? g_children[i] == 0 : g_children[i] == pid) {
      g_children[i] = running ? pid : 0;
      return;
    }
  }
}

}  // namespace

std::unique_ptr<Target> workload_target(const std::string& file, const std::string& arch_arg,
                                        const std::vector<std::string>& sets,
                                        const std::vector<Fix>& fixes) {
  return std::make_unique<WorkloadTarget>(file, arch_arg, sets, fixes);
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw OutputError("cannot find the trnsim executable (/proc/self/exe)");
  buf[n] = '\0';
  return buf;
}

double total_time_ns(const json& stats) {
  const json* ps = metric_json(stats, "total_time_ps");
  return ps != nullptr && ps->is_number() ? ps->get<double>() / 1e3 : -1;
}

std::vector<ChildResult> run_children(const std::string& exe, const std::vector<PointRun>& runs,
                                      int jobs) {
  std::vector<ChildResult> results(runs.size());
  share_host_threads(jobs);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, forward_tune_signal);
  std::map<pid_t, size_t> running;
  size_t next = 0;
  auto start = [&](size_t i) {
    const PointRun& r = runs[i];
    std::vector<std::string> args = r.args;
    args.insert(args.begin(), exe);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = r.dir + "/stdout.txt", err = r.dir + "/stderr.txt";
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0)
      throw OutputError(fmt::format("cannot start a run: fork: {}", std::strerror(errno)));
    if (pid == 0) {
      // The child: only async-signal-safe calls until exec.
      const int in = ::open("/dev/null", O_RDONLY);
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || o < 0 || e < 0) ::_exit(126);
      ::dup2(in, 0);
      ::dup2(o, 1);
      ::dup2(e, 2);
      ::execv(exe.c_str(), argv.data());
      static const char msg[] = "trnsim: error: cannot execute the trnsim binary\n";
      (void)!::write(2, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    running[pid] = i;
    track(pid, true);
  };
  while (next < runs.size() || !running.empty()) {
    while (next < runs.size() && static_cast<int>(running.size()) < jobs) start(next++);
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw OutputError(fmt::format("waiting for the runs: {}", std::strerror(errno)));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second;
    running.erase(it);
    track(pid, false);
    ChildResult& r = results[i];
    if (WIFEXITED(status)) {
      r.exit_code = WEXITSTATUS(status);
      if (r.exit_code != 0) r.error = child_error_line(read_text(runs[i].dir + "/stderr.txt"));
      if ((r.exit_code == 126 || r.exit_code == 127) && r.error.empty()) {
        r.error = "the trnsim binary could not be started";
      }
    } else if (WIFSIGNALED(status)) {
      r.exit_code = 128 + WTERMSIG(status);
      r.error =
          fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    if (r.exit_code != 0 && r.error.empty()) r.error = fmt::format("exit code {}", r.exit_code);
  }
  return results;
}

ProcessEvaluator::ProcessEvaluator(Target& target, RunSettings settings, SweepComm& comm)
    : target_(target),
      s_(std::move(settings)),
      comm_(comm),
      start_(std::chrono::steady_clock::now()),
      tty_(::isatty(STDERR_FILENO) != 0) {}

Check ProcessEvaluator::check(const Point& p) {
  return checked(p);
}

const Check& ProcessEvaluator::checked(const Point& p) {
  const auto it = checks_.find(p);
  if (it != checks_.end()) return it->second;
  return checks_.emplace(p, target_.check(p)).first->second;
}

double ProcessEvaluator::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProcessEvaluator::progress(const std::string& line) {
  if (s_.quiet || comm_.rank() != 0) return;
  if (tty_) {
    std::fprintf(stderr, "\r\033[Ktune: %s, %.1f s", line.c_str(), elapsed());
  } else {
    std::fprintf(stderr, "tune: %s, %.1f s\n", line.c_str(), elapsed());
  }
  std::fflush(stderr);
}

std::string ProcessEvaluator::dir_of(const Point& p, Fidelity f) {
  const Check& c = checked(p);
  return fmt::format("{}/points/{}-{}", s_.out, name_of(f), c.key.empty() ? "invalid" : c.key);
}

std::vector<Outcome> ProcessEvaluator::run(const std::vector<Point>& points, Fidelity f) {
  const int rank = comm_.rank(), ranks = comm_.size();
  // Each rank runs the points i with i mod ranks == rank; every rank knows every point.
  std::vector<size_t> mine;
  std::vector<PointRun> runs;
  std::vector<json> definitions;
  std::map<size_t, Outcome> outcomes;
  for (size_t i = 0; i < points.size(); ++i) {
    if (static_cast<int>(i % ranks) != rank) continue;
    const Check& c = checked(points[i]);
    const std::string dir = fmt::format("{}/points/{}-{}", s_.out, name_of(f), c.key);
    const json definition = {{"key", c.key}, {"fidelity", name_of(f)}};
    if (s_.resume) {
      const std::string text = read_text(dir + "/result.json");
      if (!text.empty()) {
        try {
          const json r = json::parse(text);
          if (r.at("point") == definition &&
              (r.at("ok").get<bool>() || r.at("exit_code") == 1 || r.at("exit_code") == 2)) {
            Outcome o;
            o.ok = r.at("ok").get<bool>();
            o.time_ns = r.at("time_ns").get<double>();
            o.error = r.at("error").get<std::string>();
            o.reused = true;
            outcomes[i] = o;
            continue;
          }
        } catch (const std::exception&) {
        }
      }
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    make_output_directory(dir);
    PointRun r;
    r.dir = dir;
    r.args = {"run"};
    for (const std::string& a : target_.arguments(points[i], dir)) r.args.push_back(a);
    if (!s_.arch_arg.empty()) {
      r.args.push_back("--arch");
      r.args.push_back(s_.arch_arg);
    }
    for (const std::string& set : s_.sets) {
      r.args.push_back("--set");
      r.args.push_back(set);
    }
    // The cheap fidelity: the flow memory model; the detailed one is the arch as given.
    if (f == Fidelity::cheap) {
      r.args.push_back("--set");
      r.args.push_back("dma_flow_model=true");
    }
    // A point's result is its time: no report page, and a trace.json of nothing.
    for (const char* a :
         {"--timing-only", "--no-report", "--trace-filter", "window=0us:0us", "--out"}) {
      r.args.push_back(a);
    }
    r.args.push_back(dir);
    write_text(dir + "/point.json", json{{"point", definition},
                                         {"assignment", assignment(target_.space(), points[i])},
                                         {"args", r.args}}
                                            .dump(2) +
                                        "\n");
    mine.push_back(i);
    runs.push_back(std::move(r));
    definitions.push_back(definition);
  }
  const std::vector<ChildResult> done = run_children(s_.exe, runs, s_.jobs);
  for (size_t j = 0; j < runs.size(); ++j) {
    Outcome o;
    o.error = done[j].error;
    if (done[j].exit_code == 0) {
      try {
        const double t = total_time_ns(json::parse(read_text(runs[j].dir + "/stats.json")));
        o.ok = t >= 0;
        o.time_ns = t;
        if (!o.ok) o.error = "stats.json has no total_time";
      } catch (const std::exception&) {
        o.error = "the run left no readable stats.json";
      }
    }
    write_text(runs[j].dir + "/result.json", json{{"point", definitions[j]},
                                                  {"ok", o.ok},
                                                  {"time_ns", o.time_ns},
                                                  {"exit_code", done[j].exit_code},
                                                  {"error", o.error}}
                                                     .dump(2) +
                                                 "\n");
    outcomes[mine[j]] = o;
  }
  if (ranks == 1) {
    std::vector<Outcome> out;
    for (size_t i = 0; i < points.size(); ++i) out.push_back(outcomes[i]);
    return out;
  }
  // Every rank's outcomes to rank 0, and all of them back to every rank: the search goes on
  // in step on each.
  json part = json::array();
  for (const auto& [i, o] : outcomes) {
    part.push_back({{"i", i}, {"ok", o.ok}, {"t", o.time_ns}, {"e", o.error}, {"r", o.reused}});
  }
  const std::vector<std::string> parts = comm_.gather(part.dump());
  json all = json::array();
  for (const std::string& p : parts) {
    for (const json& e : json::parse(p)) all.push_back(e);
  }
  const json merged = json::parse(comm_.broadcast_text(all.dump()));
  std::vector<Outcome> out(points.size());
  for (const json& e : merged) {
    Outcome& o = out.at(e["i"].get<size_t>());
    o.ok = e["ok"].get<bool>();
    o.time_ns = e["t"].get<double>();
    o.error = e["e"].get<std::string>();
    o.reused = e["r"].get<bool>();
  }
  return out;
}

}  // namespace trnsim::sim::tuner
