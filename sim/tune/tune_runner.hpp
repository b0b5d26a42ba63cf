// How `trnsim tune` runs a point: checked in this process (a workload's point is lowered and
// validated here, so an invalid one is never simulated; its lower bound comes from the
// model's own per-instruction costs), then simulated as `trnsim run ...` in a child process of
// its own (SystemC runs one simulation per process), at most -j at once, over MPI ranks when
// there are several. Every finished point leaves its result in <out>/points/<id>/, so that an
// interrupted tune resumes (--resume) without running a finished point again.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "sim/run/nki_kernel.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/tune/search.hpp"
#include "sim/tune/tune_space.hpp"

namespace trnsim::sim::tuner {

// The bound no configuration of the problem can beat: its model FLOPs at the engines' peak
// (TensorE's for a kernel with matmuls, else VectorE, ScalarE and GpSimdE together, one
// element per lane per cycle), and its HBM inputs and outputs moved once at the peak of HBM and
// the DMA engines.
struct Roofline {
  double compute_ns = 0, memory_ns = 0;
  std::string compute_what, memory_what;
  double bound_ns() const { return std::max(compute_ns, memory_ns); }
  const char* binds() const { return compute_ns >= memory_ns ? "compute" : "memory"; }
};

// Whether the workload document `doc` (read from `file`) lowers and validates on `arch`: the
// check of a point (Target::check) and of a suggestion's change (explain --apply).
Check check_workload(const nlohmann::json& doc, const std::string& file,
                     const config::ArchConfig& arch);

// What is tuned: a workload file's document, or a Python NKI kernel.
class Target {
 public:
  virtual ~Target() = default;
  virtual const TuneSpace& space() const = 0;
  // Valid or why not, the key of its program, its lower bound.
  virtual Check check(const Point& p) = 0;
  // The arguments after `trnsim run` that run point p, writing what it needs into `dir`.
  virtual std::vector<std::string> arguments(const Point& p, const std::string& dir) = 0;
  // Writes the point as a file the user can run (and keep as a golden); returns what to run.
  virtual std::string write_runnable(const Point& p, const std::string& path) = 0;
  virtual Roofline roofline() const = 0;
  // "rmsnorm.json", for messages.
  virtual std::string name() const = 0;
};

// A workload file: its document with each point's options and params.
std::unique_ptr<Target> workload_target(const std::string& file, const std::string& arch_arg,
                                        const std::vector<std::string>& sets,
                                        const std::vector<Fix>& fixes);

// A Python NKI kernel (trnsim run kernel.py): the parameters it declares with nki.tunable,
// passed as --param NAME=VALUE; a point whose trace fails (an SBUF overflow, a broken rule) is
// invalid, rejected before it is simulated.
std::unique_ptr<Target> nki_target(const std::string& file, const NkiKernelOptions& kernel,
                                   const std::string& arch_arg,
                                   const std::vector<std::string>& sets,
                                   const std::vector<Fix>& fixes);

struct RunSettings {
  std::string exe;       // the trnsim binary (this one)
  std::string arch_arg;  // --arch for the children ("" for the workload's own)
  std::vector<std::string> sets;
  int jobs = 1;
  std::string out;  // <out>/points/<id>/
  bool resume = false;
  bool quiet = false;  // no progress on stderr
};

// The child run of one point at a fidelity: its directory, its arguments.
struct PointRun {
  std::string dir;
  std::vector<std::string> args;
};

// Runs points as child processes (the Evaluator of the real search).
class ProcessEvaluator : public Evaluator {
 public:
  ProcessEvaluator(Target& target, RunSettings settings, SweepComm& comm);
  Check check(const Point& p) override;
  std::vector<Outcome> run(const std::vector<Point>& points, Fidelity f) override;
  double elapsed() const override;
  void progress(const std::string& line) override;
  // The directory a point's run at `f` has (or would have).
  std::string dir_of(const Point& p, Fidelity f);

 private:
  Target& target_;
  RunSettings s_;
  SweepComm& comm_;
  const Check& checked(const Point& p);
  std::chrono::steady_clock::time_point start_;
  bool tty_ = false;
  std::map<Point, Check> checks_;
};

// Runs `runs` as `trnsim ...` child processes, at most `jobs` at once; per run its exit code
// and its error output as one line. An interrupt (SIGINT, SIGTERM, SIGHUP) stops the children
// too, so none runs on unattended.
struct ChildResult {
  int exit_code = 0;
  std::string error;
};
std::vector<ChildResult> run_children(const std::string& exe, const std::vector<PointRun>& runs,
                                      int jobs);

// The trnsim executable this process is.
std::string self_executable();

// total_time of a run's stats.json in nanoseconds, or a negative number when it has none.
double total_time_ns(const nlohmann::json& stats);

}  // namespace trnsim::sim::tuner
