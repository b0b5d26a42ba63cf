#include "sim/tune/tune.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/names.hpp"
#include "sim/io/exit_codes.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/explain.hpp"
#include "sim/run/load.hpp"
#include "sim/tune/tune_internal.hpp"
#include "workloads/kernels/kernel_table.hpp"
#include "workloads/workload.hpp"

namespace trnsim::sim::tuner {

using nlohmann::json;

json read_json(const std::string& path) {
  const std::string text = read_input_file_if_exists(path);
  if (text.empty()) return json();
  try {
    return json::parse(text);
  } catch (const std::exception&) {
    return json();
  }
}

// A run of `args` (after the executable) into `dir`, with what explain finds in its outputs.
FinalRun final_run(const std::string& exe, std::vector<std::string> args, const std::string& dir) {
  FinalRun f;
  f.dir = dir;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  make_output_directory(dir);
  args.push_back("--out");
  args.push_back(dir);
  const ChildResult r = run_children(exe, {PointRun{dir, args}}, 1).front();
  f.exit_code = r.exit_code;
  f.error = r.error;
  f.stats = read_json(dir + "/stats.json");
  if (f.stats.is_object()) {
    const json trace = read_json(dir + "/trace.json");
    f.findings = diagnose(
        f.stats, trace.is_object() ? critical_path(trace) : decltype(critical_path(trace)){});
    const json& check = f.stats.value("check", json::object());
    f.check = check.value("status", "skipped");
  }
  return f;
}

}  // namespace trnsim::sim::tuner

namespace trnsim::sim {

using namespace tuner;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

// "600", "90s", "10m", "1.5h": seconds.
double parse_time(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used > 0 ? text.substr(used) : "";
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (used == 0 || scale < 0 || !(v > 0) || !std::isfinite(v)) {
    throw InputError(fmt::format(
        "--time {}: expected a positive duration in seconds, or with s, m or h (600, 90s, 10m)",
        text));
  }
  return v * scale;
}

std::string stem_of(const std::string& path) {
  return fs::path(path).stem().string();
}

std::vector<std::string> run_args(const TuneOptions& o, const std::vector<std::string>& first) {
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), first.begin(), first.end());
  if (!o.arch.empty()) {
    args.push_back("--arch");
    args.push_back(o.arch);
  }
  for (const std::string& s : o.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

// An example workload of each library kernel, for `--list KERNEL`.
json example_of(const std::string& kernel) {
  if (kernel == "matmul") return {{"kernel", "matmul"}, {"shape", {4096, 8192, 8192}}};
  if (kernel == "mlp") {
    return {{"kernel", "mlp"}, {"shape", {2048, 2048, 8192}}, {"activation", "gelu"}};
  }
  if (kernel == "attention") return {{"kernel", "attention"}, {"shape", {8, 2048, 128}}};
  if (kernel == "engine_stream") return {{"kernel", "engine_stream"}, {"shape", {128, 64}}};
  return {{"kernel", kernel}, {"shape", {2048, 4096}}};
}

}  // namespace

int list_space(const std::string& what, const TuneOptions& o) {
  try {
    std::error_code ec;
    std::string file = what;
    std::string note;
    json doc;
    if (is_python_kernel(what)) {
      throw InputError(fmt::format("{}: NKI kernels: see --list in docs/tune.md", what));
    }
    if (fs::exists(what, ec)) {
      doc = workloads::parse_json(read_input_file(what), what);
    } else {
      std::vector<std::string> names;
      for (const auto& k : workloads::kernel_table()) names.push_back(k.name);
      if (!workloads::find_kernel(what)) {
        const std::string near = base::closest_name(what, names);
        throw InputError(fmt::format(
            "--list {}: no such file, and no kernel of that name; expected a workload file or one "
            "of: {}{}",
            what, fmt::join(names, ", "),
            near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
      }
      doc = example_of(what);
      file = what + ".json";
      note = fmt::format("(the example shape [{}]; give a workload file for another)\n",
                         fmt::join(doc["shape"].get<std::vector<int64_t>>(), ", "));
    }
    std::vector<Fix> fixes;
    for (const std::string& f : o.fixes) fixes.push_back(parse_fix(f));
    const config::ArchConfig arch = configured_arch(o.arch.empty() ? "trn2" : o.arch, o.sets);
    const TuneSpace space = workload_space(doc, file, arch, fixes);
    if (o.json) {
      std::cout << space_json(space).dump(2) << "\n";
    } else {
      std::cout << space_text(space) << note;
    }
    return kSuccess;
  } catch (const workloads::WorkloadError& e) {
    spdlog::error("{}", e.what());
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
  }
  return kBadInput;
}

int tune(const TuneOptions& o, SweepComm& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rank = comm.rank();
  TuneRecord t;
  t.options = &o;
  std::unique_ptr<Target> target;
  std::string error;
  try {
    if (o.budget_given && o.budget == 0) {
      throw InputError("--budget 0: expected at least 1 evaluation (a simulation)");
    }
    if (o.jobs < 1 || o.jobs > 4096)
      throw InputError(fmt::format("-j {}: expected 1 to 4096", o.jobs));
    if (o.exhaustive && (o.budget_given || !o.time.empty())) {
      throw InputError("--exhaustive runs every point: it takes no --budget or --time");
    }
    t.settings.time_limit = o.time.empty() ? 0 : parse_time(o.time);
    std::vector<Fix> fixes;
    for (const std::string& f : o.fixes) fixes.push_back(parse_fix(f));
    if (fs::path(o.workload).extension() == ".tasm") {
      throw InputError(fmt::format(
          "{}: a program (.tasm) fixes every instruction and declares no choices; {} takes a "
          "workload JSON (kernel or graph form, docs/tune.md)",
          o.workload, "tune"));
    }
    if (is_python_kernel(o.workload)) {
      target = nki_target(o.workload, o.nki, o.arch, o.sets, fixes);
    } else {
      if (!o.nki.kernel.empty() || !o.nki.inputs.empty() || !o.nki.grid.empty()) {
        throw InputError(fmt::format(
            "--kernel, --input and --grid are for NKI kernels (a .py file); {} is not one",
            o.workload));
      }
      target = workload_target(o.workload, o.arch, o.sets, fixes);
    }
    if (target->space().empty()) {
      throw InputError(fmt::format(
          "{}: {} declares no tunable parameters: there is nothing to search (docs/tune.md "
          "lists what each kernel declares)",
          o.workload, target->space().title));
    }
    t.out = o.out.empty() ? "trnsim-tune/" + stem_of(o.workload) : o.out;
    if (rank == 0) {
      make_output_directory(t.out + "/points");
      if (!o.resume) {
        std::error_code ec;
        fs::remove_all(t.out + "/points", ec);
        make_output_directory(t.out + "/points");
      }
    }
  } catch (const workloads::WorkloadError& e) {
    error = e.what();
  } catch (const InputError& e) {
    error = e.what();
  } catch (const OutputError& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = fmt::format("{}: {}", o.workload, e.what());
  }
  // Every rank read the inputs; if any could not, none runs anything.
  if (!every_rank_read_its_inputs(error, comm)) return kBadInput;

  const TuneSpace& space = target->space();
  t.space = &space;
  t.roofline = target->roofline();
  const config::ArchConfig arch = configured_arch(o.arch.empty() ? "trn2" : o.arch, o.sets);
  t.settings.two_fidelities = !arch.dma_flow_model;
  t.model = arch.dma_flow_model ? "flow" : "detailed";
  t.settings.budget = o.budget_given || t.settings.time_limit == 0 ? o.budget : UINT64_MAX;
  t.settings.exhaustive = o.exhaustive;
  t.settings.seed = o.seed;
  t.settings.batch = std::max<size_t>(o.batch, static_cast<size_t>(o.jobs) * comm.size());
  RunSettings rs;
  rs.exe = self_executable();
  rs.arch_arg = o.arch;
  rs.sets = o.sets;
  rs.jobs = o.jobs;
  rs.out = t.out;
  rs.resume = o.resume;
  rs.quiet = o.json;
  ProcessEvaluator ev(*target, rs, comm);
  if (rank == 0 && !o.json) {
    const uint64_t size = space.size();
    std::fprintf(
        stderr, "tune: %s: %s points%s, %s, -j %d%s, outputs in %s%s\n", space.title.c_str(),
        size == UINT64_MAX ? "more than 2^64" : fmt::format("{}", size).c_str(),
        space.branches.size() > 1 ? fmt::format(" in {} branches", space.branches.size()).c_str()
                                  : "",
        o.exhaustive ? "every point on both fidelities"
        : t.settings.budget == UINT64_MAX
            ? fmt::format("until {:.0f} s", t.settings.time_limit).c_str()
            : fmt::format("budget {} evaluations", t.settings.budget).c_str(),
        o.jobs, comm.size() > 1 ? fmt::format(" on {} MPI ranks", comm.size()).c_str() : "",
        t.out.c_str(), o.resume ? " (resuming)" : "");
  }
  int code = kSuccess;
  try {
    t.result = run_search(space, ev, t.settings);
  } catch (const std::exception& e) {
    if (rank == 0) spdlog::error("{}", e.what());
    return kBadInput;
  }
  t.search_seconds = ev.elapsed();
  if (rank == 0 && !o.json && ::isatty(STDERR_FILENO)) std::fprintf(stderr, "\n");
  if (rank != 0) return comm.broadcast(0);

  try {
    const SearchResult& r = t.result;
    if (!r.default_valid) {
      throw InputError(
          fmt::format("{}: the workload as given cannot run: {}", o.workload, r.default_error));
    }
    if (r.checked > 0 && r.invalid == r.checked) {
      std::string why;
      for (const auto& [a, reason] : r.invalid_examples) {
        why += fmt::format("\n  {}: {}", label(space, a), reason);
      }
      throw InputError(fmt::format(
          "{}: every point of the space {} is invalid ({} checked{}); e.g.:{}", o.workload,
          space.title, r.checked, r.exhaustive ? ", all of them" : "", why));
    }
    // The default and the winner, run once more with their traces for the diagnosis side by
    // side; the winner functionally, and it must pass its check (else the next best).
    const Point def;
    make_output_directory(t.out + "/default.in");
    std::vector<std::string> dargs = run_args(o, target->arguments(def, t.out + "/default.in"));
    dargs.push_back("--timing-only");
    dargs.push_back("--no-report");
    t.default_run = final_run(rs.exe, dargs, t.out + "/default");
    std::vector<Point> order;
    for (const Evaluation* e : ranked(r, Fidelity::detailed)) order.push_back(e->point);
    if (order.empty()) order.push_back(def);
    for (size_t i = 0; i < order.size() && i < 3; ++i) {
      const Point& p = order[i];
      const std::string runnable = t.out + "/best.json";
      target->write_runnable(p, runnable);
      std::vector<std::string> bargs = run_args(o, {runnable});
      if (!o.check) bargs.push_back("--timing-only");
      t.best_run = final_run(rs.exe, bargs, t.out + "/best");
      t.winner = p;
      t.runnable = runnable;
      const std::string check = t.best_run.check;
      if (t.best_run.exit_code == 1 || check == "fail") {
        t.failed_checks.emplace_back(
            label(space, assignment(space, p)),
            t.best_run.error.empty() ? "its outputs do not match the reference" : t.best_run.error);
        continue;
      }
      if (t.best_run.exit_code != 0) {
        t.best_run.check = fmt::format("not checked: {}", t.best_run.error);
        // A functional run too large for host memory: the timing-only run stands.
        if (o.check) {
          std::vector<std::string> targs = run_args(o, {runnable});
          targs.push_back("--timing-only");
          const std::string why = t.best_run.error;
          t.best_run = final_run(rs.exe, targs, t.out + "/best");
          t.best_run.check = fmt::format("not checked: {}", why);
        }
      } else if (!o.check) {
        t.best_run.check = "not checked (--no-check)";
      }
      break;
    }
    const json& bs = t.best_run.stats;
    t.winner_ns = bs.is_object() ? total_time_ns(bs) : r.best_ns;
    if (!t.failed_checks.empty() && t.best_run.check == "fail") code = kCheckFailed;
    t.plot_note = convergence_plot(t);
    t.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const json results = results_json(t);
    OutputFile csv(t.out + "/results.csv");
    csv.write(results_csv(t));
    csv.commit();
    if (!t.result.points.empty()) {
      OutputFile ex(t.out + "/exhaustive.json");
      ex.write(exhaustive_json(t).dump() + "\n");
      ex.commit();
    }
    OutputFile js(t.out + "/results.json");
    js.write(results.dump(2) + "\n");
    js.commit();
    if (o.json) {
      std::cout << results.dump(2) << "\n";
    } else {
      std::cout << report_text(t) << std::flush;
    }
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    code = kBadInput;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    code = kBadInput;
  }
  return comm.broadcast(code);
}

}  // namespace trnsim::sim
