// The trnsim command line (contract in the design brief and README.md).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "base/gemm.hpp"
#include "sim/io/interrupt.hpp"
#include "sim/io/progress.hpp"
#include "sim/report/compare.hpp"
#include "sim/report/explain.hpp"
#include "sim/run/check.hpp"
#include "sim/run/collective.hpp"
#include "sim/run/nki_kernel.hpp"
#include "sim/run/run.hpp"
#include "sim/run/tools.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/tune/tune.hpp"

namespace {

#ifdef TRNSIM_HAVE_MPI
#define TRNSIM_HAVE_MPI_TEXT \
  "MPI: built in; under mpirun or srun the points are spread over the ranks (docs/sweeps.md)."
#else
#define TRNSIM_HAVE_MPI_TEXT \
  "MPI: not built in (configure with -DTRNSIM_MPI=ON to run sweeps under mpirun or srun)."
#endif

constexpr const char* kUsage =
    "usage: trnsim WORKLOAD.json|PROGRAM.tasm [--arch PRESET|FILE] [--out DIR] [--timing-only]\n"
    "              [--no-report] [--set NAME=VALUE]... [--progress|--no-progress] [-v]\n"
    "              [--trace-format json|perfetto|none] [--trace-filter SPEC] [--stream-from N]\n"
    "       trnsim run KERNEL.py [--kernel NAME] [--input NAME=SHAPE[:DTYPE]|NAME=FILE.npy]...\n"
    "              [--grid G] [--lnc 1|2]  an NKI kernel (docs/nki.md)\n"
    "       trnsim asm PROGRAM.tasm [-o OUT.json]   assemble (adds synchronization)\n"
    "       trnsim disasm PROGRAM.json|PROGRAM.tasm [-o OUT.tasm]\n"
    "       trnsim isa [--markdown]                 list the instruction set\n"
    "       trnsim metrics [--markdown|--json]      list the metrics of stats.json\n"
    "       trnsim check [WORKLOAD] --golden FILE [--update] [--set k=v]\n"
    "       trnsim params [--arch NAME|FILE] [--set k=v] [--json]   list every hardware parameter\n"
    "       trnsim collective OP --ranks N [--chips C] [--sizes 1KiB:1GiB:x4] [--algorithm A]\n"
    "              [--arch PRESET|FILE] [--set k=v] [--json FILE]   time a collective "
    "(docs/chip.md)\n"
    "       trnsim sweep SWEEP.json [-j N] [--out DIR] [--resume]   run a parameter sweep\n"
    "       trnsim compare DIR DIR... [--json] [--report FILE | --no-report]   runs side by side\n"
    "       trnsim explain DIR [--json]             what bounds a finished run, what to change\n"
    "       trnsim tune WORKLOAD [--budget N | --time T] [-j N] [--out DIR] [--resume]\n"
    "              [--fix NAME=VALUE]...     search the kernel's choices (docs/tune.md)\n"
    "       trnsim tune --list KERNEL|WORKLOAD      the space a kernel declares, and its size\n"
    "       trnsim explain --apply WORKLOAD [-j N]  try each suggestion, measure its gain\n"
    "       (trnsim --help, trnsim help COMMAND for more)\n";

// Runs a CLI11 parse; returns -1 to go on, or the exit code to return. A usage error prints
// the usage of the command that was given (its --help), the top-level usage for a run.
int parse(CLI::App& app, std::vector<char*>& args) {
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    spdlog::error("{}", e.what());
    if (app.get_name() == "trnsim") {
      std::fputs(kUsage, stderr);
    } else {
      std::fputs(app.help().c_str(), stderr);
    }
    return trnsim::sim::kBadInput;
  }
  return -1;
}

// An option given as an empty string (--arch '', --out ''): refused at the command line, where
// the message can name the option, instead of read as "not given" (--arch '' ran trn2) or
// failing later without a name (--out '' printed ": cannot create the output directory").
CLI::Validator not_empty(const char* expected) {
  return CLI::Validator(
      [expected](std::string& value) {
        return value.empty() ? std::string("expected ") + expected + ", got an empty string"
                             : std::string();
      },
      "");
}
// A count: digits only (a plain conversion to an unsigned type would take "-5" as 2^64 - 5).
CLI::Validator count_of(const char* what) {
  return CLI::Validator(
      [what](std::string& value) {
        const bool digits = !value.empty() && value.size() <= 19 &&
                            value.find_first_not_of("0123456789") == std::string::npos;
        return digits ? std::string()
                      : std::string("expected a count of ") + what + " (up to 19 digits), got '" +
                            value + "'";
      },
      "");
}
// stderr's logger sink, which erases the progress line before each message and holds it off
// until the message is out (sim/io/progress.hpp).
class StderrBesideProgress : public spdlog::sinks::stderr_color_sink_mt {
 public:
  void log(const spdlog::details::log_msg& msg) override {
    const trnsim::sim::ProgressPause pause;
    spdlog::sinks::stderr_color_sink_mt::log(msg);
  }
};

const char* const kArchExpected = "a preset (trn1, trn2, trn3) or an arch JSON file";
const char* const kDirExpected = "a directory name";

}  // namespace

// Debian's libsystemc.so provides a main() that prints the SystemC banner and calls sc_main();
// this one silences the banner first (the output is trnsim's) and then does the same.
int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  trnsim::base::single_threaded_blas();  // while this is the only thread
  // Functional mode allocates a tile of up to a few MiB per instruction and frees it at once.
  // By default glibc maps such blocks fresh from the kernel and unmaps them on free, so every
  // instruction paid page faults on its tiles (a 2048 x 8192 RMSNorm spent two thirds of its
  // simulation there). Blocks under 32 MiB come from the heap instead, and freed memory stays
  // for the next tile. Peak memory is unchanged: it is the high-water mark either way.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char* argv[]) {
  // Ctrl-C and SIGTERM remove the unfinished outputs and exit 130 / 143 (sim/io/interrupt.hpp).
  trnsim::sim::install_interrupt_handlers();
  auto logger =
      std::make_shared<spdlog::logger>("trnsim", std::make_shared<StderrBesideProgress>());
  spdlog::register_logger(logger);
  logger->set_pattern("trnsim: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);

  std::vector<char*> args(argv, argv + argc);
  // `trnsim help` and `trnsim help COMMAND` are `trnsim --help` and `trnsim COMMAND --help`
  // (help was taken for a workload file named "help").
  static char help_flag[] = "--help";
  if (args.size() > 1 && std::strcmp(args[1], "help") == 0) {
    args.erase(args.begin() + 1);
    if (args.size() > 2) {
      spdlog::error("trnsim help takes one command, got {} words", args.size() - 1);
      std::fputs(kUsage, stderr);
      return trnsim::sim::kBadInput;
    }
    if (args.size() == 2 && std::strcmp(args[1], "run") == 0) args.erase(args.begin() + 1);
    args.push_back(help_flag);
  }
  const std::string command = args.size() > 1 ? args[1] : "";

  if (command == "asm" || command == "disasm") {
    args.erase(args.begin() + 1);
    const bool assemble = command == "asm";
    CLI::App app{assemble ? "Assemble a .tasm program into the JSON program form"
                          : "Print a program as .tasm",
                 "trnsim " + command};
    std::string input, out = "-", arch;
    app.add_option("program", input, assemble ? "a .tasm file" : "a .tasm or JSON program file")
        ->required();
    app.add_option("-o,--out", out, "output file, - for stdout")->capture_default_str();
    app.add_option("--arch", arch,
                   "hardware preset (trn1, trn2, trn3) or arch file (default: the file's .arch, "
                   "else trn2)")
        ->check(not_empty(kArchExpected));
    if (const int rc = parse(app, args); rc >= 0) return rc;
    return assemble ? trnsim::sim::assemble(input, out, arch)
                    : trnsim::sim::disassemble(input, out, arch);
  }
  if (command == "isa") {
    args.erase(args.begin() + 1);
    CLI::App app{"List the instruction set: engines, operands, semantics, cost and source",
                 "trnsim isa"};
    bool markdown = false;
    app.add_flag("--markdown", markdown, "a Markdown table (docs/isa.md embeds it)");
    if (const int rc = parse(app, args); rc >= 0) return rc;
    return trnsim::sim::list_isa(markdown);
  }
  if (command == "metrics") {
    args.erase(args.begin() + 1);
    CLI::App app{"List the metrics of stats.json: key, unit, section and how each is computed",
                 "trnsim metrics"};
    bool markdown = false, json = false;
    app.add_flag("--markdown", markdown, "Markdown tables (docs/metrics.md embeds them)");
    app.add_flag("--json", json, "the table as JSON (what report.html reads)");
    if (const int rc = parse(app, args); rc >= 0) return rc;
    return trnsim::sim::list_metrics(markdown, json);
  }
  if (command == "check") {
    args.erase(args.begin() + 1);
    CLI::App app{"Compare a run's metrics with a golden file (exit 1 on drift)", "trnsim check"};
    trnsim::sim::CheckOptions o;
    app.add_option("workload", o.workload, "workload or program (default: the golden file's)");
    app.add_option("--golden", o.golden, "golden file: workload, arch, summary metrics, tolerance")
        ->required();
    app.add_flag("--update", o.update,
                 "rewrite the golden file from this run and say what changed");
    app.add_option("--arch", o.arch, "hardware preset or arch file (default: the golden file's)")
        ->check(not_empty(kArchExpected));
    app.add_option("--set", o.sets, "override a hardware parameter, name=value (repeatable)");
    app.add_option("--out", o.out, "directory for this run's outputs")
        ->capture_default_str()
        ->check(not_empty(kDirExpected));
    app.add_flag("--full", o.full, "run the functional model and its check too");
    if (const int rc = parse(app, args); rc >= 0) return rc;
    return trnsim::sim::check(o);
  }
  if (command == "params") {
    args.erase(args.begin() + 1);
    CLI::App app{"List every hardware parameter with its value, unit, meaning and source",
                 "trnsim params"};
    std::string arch = "trn2";
    std::vector<std::string> sets;
    bool json = false;
    app.add_option("--arch", arch, "hardware preset (trn1, trn2, trn3) or arch JSON file")
        ->capture_default_str()
        ->check(not_empty(kArchExpected));
    app.add_option("--set", sets, "override a parameter, name=value (repeatable)");
    app.add_flag("--json", json, "print a complete arch file (a start for your own)");
    if (const int rc = parse(app, args); rc >= 0) return rc;
    return trnsim::sim::list_params(arch, sets, json);
  }
  if (command == "collective") {
    args.erase(args.begin() + 1);
    CLI::App app{
        "Time a collective between NeuronCores of one or more chips over a range of sizes, as "
        "nccom-test does (docs/chip.md)",
        "trnsim collective"};
    trnsim::sim::CollectiveOptions o;
    app.add_option("op", o.op, "all_reduce, all_gather, reduce_scatter, all_to_all or permute")
        ->required();
    app.add_option("--ranks", o.ranks, "how many ranks (NeuronCores)")->required();
    app.add_option("--chips", o.chips,
                   "over how many chips, the same number of ranks on each (default: as few as "
                   "hold the ranks)");
    app.add_option("--sizes", o.sizes,
                   "START:END:xFACTOR or a comma list; units B, KB, MB, GB, KiB, MiB, GiB")
        ->capture_default_str();
    app.add_option("--algorithm", o.algorithm,
                   "ring, rdh, mesh or hierarchical (default: chosen by size as the runtime "
                   "does)");
    app.add_option("--arch", o.arch, "hardware preset (trn1, trn2, trn3) or arch JSON file")
        ->capture_default_str()
        ->check(not_empty(kArchExpected));
    app.add_option("--set", o.sets, "override a hardware parameter, name=value (repeatable)");
    app.add_option("--json", o.json, "write the results as JSON to this file too")
        ->check(not_empty("a file name"));
    if (const int rc = parse(app, args); rc >= 0) return rc;
    return trnsim::sim::collective(o);
  }
  if (command == "explain") {
    args.erase(args.begin() + 1);
    CLI::App app{"Diagnose a finished run: the critical path, what bounds it, and what to change",
                 "trnsim explain"};
    trnsim::sim::ExplainOptions o;
    trnsim::sim::ApplyOptions a;
    bool apply = false;
    app.add_option("dir", o.dir,
                   "the --out directory of a run (stats.json, trace.json); with --apply, the "
                   "workload to run")
        ->required();
    app.add_flag("--json", o.json, "print the findings as JSON");
    app.add_flag("--apply", apply,
                 "run the workload, then simulate each suggestion that maps to a parameter "
                 "change and report its measured gain, best first (docs/tune.md)");
    app.add_option("--arch", a.arch, "--apply: hardware preset or arch file (default trn2)");
    app.add_option("--set", a.sets, "--apply: override a hardware parameter, name=value");
    app.add_option("--out", a.out, "--apply: output directory (default trnsim-explain/NAME)");
    app.add_option("-j,--jobs", a.jobs, "--apply: suggestions simulated at once")
        ->capture_default_str();
    app.add_option("--kernel", a.nki.kernel, "--apply on a kernel.py: the nki.jit function");
    app.add_option("--input", a.nki.inputs, "--apply on a kernel.py: an input, NAME=SPEC");
    app.add_option("--grid", a.nki.grid, "--apply on a kernel.py: the launch grid");
    if (const int rc = parse(app, args); rc >= 0) return rc;
    if (apply) {
      a.workload = o.dir;
      a.json = o.json;
      return trnsim::sim::explain_apply(a);
    }
    if (!a.arch.empty() || !a.sets.empty() || !a.out.empty() || !a.nki.kernel.empty() ||
        !a.nki.inputs.empty() || !a.nki.grid.empty()) {
      spdlog::error("--arch, --set, --out, --kernel, --input and --grid go with --apply");
      return trnsim::sim::kBadInput;
    }
    return trnsim::sim::explain(o);
  }
  if (command == "tune") {
    args.erase(args.begin() + 1);
    CLI::App app{
        "Search a workload's declared choices (tile sizes, buffers, engines, strategies, "
        "blocks, fusion) with the simulator as the cost model (docs/tune.md)",
        "trnsim tune"};
    trnsim::sim::TuneOptions o;
    std::string list;
    uint64_t budget = 0;
    app.add_option("workload", o.workload, "workload JSON (kernel or graph form) or NKI kernel.py");
    app.add_option("--list", list,
                   "print the space of a kernel (its example shape) or a workload file, and its "
                   "size");
    app.add_option("--arch", o.arch,
                   "hardware preset (trn1, trn2, trn3) or arch file (default trn2)");
    app.add_option("--set", o.sets, "override a hardware parameter, name=value (repeatable)");
    auto* b = app.add_option("--budget", budget,
                             "evaluations (simulations) at most; default 100, or unbounded "
                             "with --time");
    app.add_option("--time", o.time, "wall-time limit of the search: 600, 90s, 10m, 1h");
    app.add_option("-j,--jobs", o.jobs, "points run at once (on each MPI rank)")
        ->capture_default_str();
    app.add_option("--out", o.out, "output directory (default trnsim-tune/NAME)");
    app.add_flag("--resume", o.resume,
                 "reuse the points an interrupted tune of the same workload finished in --out");
    app.add_option("--fix", o.fixes, "pin a parameter, NAME=VALUE (repeatable): it is not searched")
        ->take_all();
    app.add_option("--seed", o.seed, "the search's random seed")->capture_default_str();
    app.add_option("--batch", o.batch, "points proposed at once (at least -j times the ranks)")
        ->capture_default_str();
    app.add_flag("--exhaustive", o.exhaustive,
                 "every valid point on both models, whatever its size (reference results)");
    app.add_option("--top", o.top, "alternatives listed")->capture_default_str();
    bool no_check = false;
    app.add_flag("--no-check", no_check, "do not re-run the winner functionally");
    app.add_flag("--json", o.json, "print results.json instead of the report");
    app.add_option("--kernel", o.nki.kernel, "kernel.py: the nki.jit function to tune");
    app.add_option("--input", o.nki.inputs,
                   "kernel.py: an input, NAME=SHAPE[:DTYPE] or NAME=FILE.npy (repeatable)");
    app.add_option("--grid", o.nki.grid, "kernel.py: the SPMD launch grid");
    app.footer(TRNSIM_HAVE_MPI_TEXT);
    if (const int rc = parse(app, args); rc >= 0) return rc;
    o.check = !no_check;
    o.budget_given = b->count() > 0;
    if (o.budget_given) o.budget = budget;
    if (!list.empty()) {
      if (!o.workload.empty()) {
        spdlog::error("--list {} and a workload, {}: give one of them", list, o.workload);
        return trnsim::sim::kBadInput;
      }
      return trnsim::sim::list_space(list, o);
    }
    if (o.workload.empty()) {
      spdlog::error("give a workload to tune (or --list KERNEL)");
      std::fputs(kUsage, stderr);
      return trnsim::sim::kBadInput;
    }
    std::unique_ptr<trnsim::sim::SweepComm> comm = trnsim::sim::mpi_comm();
    if (!comm) {
      if (const int n = trnsim::sim::launcher_ranks(); n > 1) {
        spdlog::error(
            "this trnsim was built without MPI but runs as one of {} MPI ranks, which would "
            "each run the whole search; build with -DTRNSIM_MPI=ON (docs/sweeps.md) or run "
            "without mpirun",
            n);
        return trnsim::sim::kBadInput;
      }
      trnsim::sim::SweepComm local;
      return trnsim::sim::tune(o, local);
    }
    return trnsim::sim::tune(o, *comm);
  }
  if (command == "compare") {
    args.erase(args.begin() + 1);
    CLI::App app{"Several finished runs side by side, with each one's top finding",
                 "trnsim compare"};
    trnsim::sim::CompareOptions o;
    app.add_option("dirs", o.dirs, "the --out directories of two or more runs")
        ->required()
        ->expected(1, -1)
        ->check(not_empty(kDirExpected));
    app.add_flag("--json", o.json, "print the comparison as JSON");
    app.add_option("--report", o.report,
                   "write the comparison report (the runs' timelines on one time scale, their "
                   "metrics side by side) here")
        ->capture_default_str()
        ->check(not_empty("a file name"));
    app.add_flag("--no-report", o.no_report,
                 "no comparison report (then the runs need no report.html)");
    if (const int rc = parse(app, args); rc >= 0) return rc;
    if (o.dirs.size() < 2) {
      spdlog::error(
          "compare needs the --out directories of two or more runs, got one ({}); trnsim "
          "explain {} describes one run",
          o.dirs.front(), o.dirs.front());
      std::fputs(app.help().c_str(), stderr);
      return trnsim::sim::kBadInput;
    }
    return trnsim::sim::compare(o);
  }
  if (command == "sweep") {
    args.erase(args.begin() + 1);
    CLI::App app{
        "Run a parameter sweep: each point a trnsim run in a process of its own, results "
        "as CSV, JSON, a table and a plot (docs/sweeps.md)",
        "trnsim sweep"};
    trnsim::sim::SweepOptions o;
    app.add_option("sweep", o.file, "sweep file (docs/sweeps.md)")->required();
    app.add_option("-j,--jobs", o.jobs, "points run at once (on each MPI rank)")
        ->capture_default_str();
    app.add_option("--out", o.out, "output directory (default: trnsim-sweep/NAME)")
        ->check(not_empty(kDirExpected));
    app.add_flag("--resume", o.resume,
                 "reuse the points an earlier run of the same sweep finished in --out");
    app.add_flag("--full", o.full,
                 "run the functional model and its check in every point (default: the file's "
                 "timing_only, true unless it says false)");
    app.add_flag("--timing-only", o.timing_only,
                 "timing only in every point, whatever the file says");
    app.footer(TRNSIM_HAVE_MPI_TEXT);
    if (const int rc = parse(app, args); rc >= 0) return rc;
    std::unique_ptr<trnsim::sim::SweepComm> comm = trnsim::sim::mpi_comm();
    if (!comm) {
      if (const int n = trnsim::sim::launcher_ranks(); n > 1) {
        spdlog::error(
            "this trnsim was built without MPI but runs as one of {} MPI ranks, which would "
            "each run the whole sweep; build with -DTRNSIM_MPI=ON (docs/sweeps.md) or run "
            "without mpirun",
            n);
        return trnsim::sim::kBadInput;
      }
      trnsim::sim::SweepComm local;
      return trnsim::sim::sweep(o, local);
    }
    return trnsim::sim::sweep(o, *comm);
  }
  for (const char* later : {"report"}) {
    if (command == later) {
      spdlog::error("'trnsim {}' is not available in this version", command);
      std::fputs(kUsage, stderr);
      return trnsim::sim::kBadInput;
    }
  }

  // `trnsim run WORKLOAD ...` is the same as `trnsim WORKLOAD ...`.
  if (command == "run") args.erase(args.begin() + 1);
  trnsim::sim::RunOptions o;
  CLI::App app{"trnsim: a cycle-approximate simulator of an AWS Trainium NeuronCore", "trnsim"};
  app.set_version_flag("--version", "trnsim 0.1.0");
  app.footer(kUsage);
  app.add_option("workload", o.workload,
                 "workload JSON (docs/workload-format.md), program (.tasm, docs/isa.md) or NKI "
                 "kernel (.py, docs/nki.md)")
      ->required();
  app.add_option("--arch", o.arch,
                 "hardware preset (trn1, trn2, trn3) or arch JSON file (default trn2, or the "
                 "program's .arch)")
      ->check(not_empty(kArchExpected));
  app.add_option("--out", o.out, "directory for stats.json, trace.json and report.html")
      ->capture_default_str()
      ->check(not_empty(kDirExpected));
  app.add_flag("--timing-only", o.timing_only,
               "skip tensor data and the functional check; same cycle counts");
  app.add_option("--set", o.sets,
                 "override a hardware parameter, name=value (repeatable; "
                 "trnsim params lists them)");
  bool no_report = false;
  app.add_flag("--no-report", no_report,
               "do not write report.html (the browser report: timeline, metrics, tables)");
  app.add_flag("--perf", o.perf,
               "also write perf.json: the simulator's own wall time per phase, peak memory and "
               "events per second (bench/ reads it)");
  app.add_option("--trace-filter", o.trace_filter,
                 "keep only some of trace.json: 'lanes=TensorE,DMA*' (names or patterns with * "
                 "and ?), 'window=100us:250us', or both separated by ';' (repeatable)");
  app.add_option("--trace-format", o.trace_format,
                 "the trace: json (trace.json, Chrome trace events), perfetto (trace.pftrace, "
                 "Perfetto's protobuf trace: smaller and faster to write) or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"json", "perfetto", "none"}));
  app.add_option("--stream-from", o.stream_from,
                 "lower a program of this many instructions or more (the kernel's estimate) "
                 "while it runs, and free it behind the run, so that memory stays flat "
                 "(engine_stream, matmul and mlp on one core; 0: every such program; not bound "
                 "by max_instructions). Same cycle counts, stats and trace either way")
      ->capture_default_str()
      ->check(count_of("instructions"));
  bool progress = false, no_progress = false;
  auto* progress_flag =
      app.add_flag("--progress", progress,
                   "show the progress line on stderr from the start, even when stderr is not a "
                   "terminal (default: after about a second, on a terminal only)");
  app.add_flag("--no-progress", no_progress, "never show the progress line")
      ->excludes(progress_flag);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log what the simulator does");
  trnsim::sim::NkiKernelOptions nki;
  app.add_option("--kernel", nki.kernel,
                 "kernel.py: the nki.jit function to run (default: the file's only one)");
  app.add_option("--input", nki.inputs,
                 "kernel.py: an input, NAME=SHAPE[:DTYPE] (e.g. a=128x512:bfloat16, normal data) "
                 "or NAME=FILE.npy (repeatable; docs/nki.md)");
  app.add_option("--grid", nki.grid, "kernel.py: the SPMD launch grid, e.g. 4 or 2,2");
  app.add_option("--lnc", nki.lnc,
                 "kernel.py: physical cores per logical core, 1 (default) or 2: the grid's "
                 "instances spread over the cores, which share the HBM (docs/nki.md)");
  if (const int rc = parse(app, args); rc >= 0) return rc;
  if (verbose) spdlog::set_level(spdlog::level::debug);
  o.report = !no_report;
  if (progress) o.progress = trnsim::sim::ProgressMode::on;
  if (no_progress) o.progress = trnsim::sim::ProgressMode::off;
  if (trnsim::sim::is_python_kernel(o.workload)) return trnsim::sim::run_nki_kernel(o, nki);
  if (!nki.kernel.empty() || !nki.inputs.empty() || !nki.grid.empty() || !nki.lnc.empty()) {
    spdlog::error(
        "--kernel, --input, --grid and --lnc are for NKI kernels (a .py file); {} is not "
        "one",
        o.workload);
    return trnsim::sim::kBadInput;
  }
  return trnsim::sim::run(o);
}
