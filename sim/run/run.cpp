#include "sim/run/run.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "sim/io/interrupt.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/explain.hpp"
#include "sim/report/profile.hpp"
#include "sim/report/report_html.hpp"
#include "sim/report/stats.hpp"
#include "sim/report/summary.hpp"
#include "sim/report/trace_writer.hpp"
#include "sim/run/load.hpp"
#include "workloads/graph/npy.hpp"
#include "workloads/lowering.hpp"

namespace trnsim::sim {

namespace {

// Forwards every record to the statistics, the profile and the trace.
class Fanout : public models::EventSink {
 public:
  explicit Fanout(std::vector<models::EventSink*> sinks) : sinks_(std::move(sinks)) {}
  void on_instruction(const models::InstructionRecord& r) override {
    for (auto* s : sinks_) s->on_instruction(r);
  }
  void on_transfer(const models::TransferRecord& r) override {
    for (auto* s : sinks_) s->on_transfer(r);
  }
  void on_kernel(const models::KernelRecord& r) override {
    for (auto* s : sinks_) s->on_kernel(r);
  }
  void on_host(const models::HostRecord& r) override {
    for (auto* s : sinks_) s->on_host(r);
  }
  void on_collective(const models::CollectiveRecord& r) override {
    for (auto* s : sinks_) s->on_collective(r);
  }
  void on_collective_transfer(const models::CollectiveTransferRecord& r) override {
    for (auto* s : sinks_) s->on_collective_transfer(r);
  }

 private:
  std::vector<models::EventSink*> sinks_;
};

// A multi-line report (one line per blocked engine) as one line, for the one-line error.
std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n') {
      out += s[i];
      continue;
    }
    out += " | ";
    while (i + 1 < s.size() && s[i + 1] == ' ') ++i;
  }
  size_t start = out.find_first_not_of(' ');
  return start == std::string::npos ? out : out.substr(start);
}

}  // namespace

int run(const RunOptions& o) {
  const RunOutcome r = execute(o);
  if (r.exit_code != kBadInput) std::cout << r.summary << std::flush;
  return r.exit_code;
}

namespace {

// The simulator's own cost, for bench/: wall seconds since `from`, and the peak resident set.
double seconds_since(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}
// CPU time (user + system) of this process: on a shared machine, what the run itself used.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

// Counts what the simulation processed: records of instructions, transfers and kernels; and
// tells the progress line (two relaxed stores per instruction).
class EventCounter : public models::EventSink {
 public:
  explicit EventCounter(ProgressLine& progress) : progress_(progress) {}
  void on_instruction(const models::InstructionRecord& r) override {
    ++instructions;
    progress_.instruction_done(r.end.value);
  }
  void on_transfer(const models::TransferRecord&) override { ++transfers; }
  void on_kernel(const models::KernelRecord&) override { ++other; }
  void on_host(const models::HostRecord&) override { ++other; }
  uint64_t instructions = 0, transfers = 0, other = 0;

 private:
  ProgressLine& progress_;
};

}  // namespace

namespace {
RunOutcome execute_run(const RunOptions& o, LoadedWorkload* given, const HostData& data);

// Removes the directory when asked, if the run made it and it is still empty.
struct OutputDirectoryGuard {
  explicit OutputDirectoryGuard(std::string d) : dir(std::move(d)) {
    std::error_code ec;
    existed = std::filesystem::exists(dir, ec);
  }
  ~OutputDirectoryGuard() {
    std::error_code ec;
    if (remove_if_empty && !existed) std::filesystem::remove(dir, ec);  // fails if not empty
  }
  OutputDirectoryGuard(const OutputDirectoryGuard&) = delete;
  OutputDirectoryGuard& operator=(const OutputDirectoryGuard&) = delete;
  std::string dir;
  bool existed = false;
  bool remove_if_empty = false;
};
}  // namespace

RunOutcome execute(const RunOptions& o) {
  return execute_run(o, nullptr, {});
}

RunOutcome execute(const RunOptions& o, LoadedWorkload loaded, const HostData& data) {
  return execute_run(o, &loaded, data);
}

namespace {

// Writes each input's bytes over its HBM tensor.
void write_host_inputs(const isa::Program& program, const HostData& data, isa::MemoryImage& m) {
  for (const auto& [name, bytes] : data.inputs) {
    const isa::DramTensor* t = program.find_dram_tensor(name);
    if (t == nullptr || bytes.size() != t->bytes()) {
      throw InputError(fmt::format("input {}: no HBM tensor of {} bytes", name, bytes.size()));
    }
    std::memcpy(m.hbm.data() + t->address, bytes.data(), bytes.size());
  }
}

RunOutcome execute_run(const RunOptions& o, LoadedWorkload* given, const HostData& data) {
  RunOutcome out;
  out.exit_code = kBadInput;
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  // Erased when this returns, before the caller prints the summary or an error.
  ProgressLine progress(o.progress);
  progress.set_phase("loading and lowering");
  try {
    const TraceFilter trace_filter = parse_trace_filter(o.trace_filter);
    LoadedWorkload in =
        given != nullptr ? std::move(*given)
                         : load_workload_file(
                               o.workload, o.arch, o.sets, !o.timing_only,
                               o.core_programs.empty() ? o.stream_from : workloads::kNeverStreamed);
    for (const std::string& path : o.core_programs) {
      in.core_programs.push_back(load_workload_file(path, o.arch, o.sets, false).kernel.program);
    }
    const workloads::Workload& w = in.workload;
    const workloads::LoweredKernel& k = in.kernel;
    const config::ArchConfig& arch = in.arch;
    const double load_seconds = seconds_since(t0);
    const double load_cpu = cpu_seconds() - cpu0;
    // -v: what was loaded and what each phase took, on stderr (the summary stays on stdout).
    if (spdlog::should_log(spdlog::level::info)) {
      std::string streams;
      for (Engine e : kAllEngines) {
        streams += fmt::format("{}{} {}", streams.empty() ? "" : ", ", name_of(e),
                               k.program.stream(e).size());
      }
      spdlog::info(
          "{}: loaded and lowered in {:.3f} s: {} kernel(s), {} instructions ({}), {} DMA "
          "queue(s), {} semaphore(s); arch {}, {} core(s), {}",
          o.workload, load_seconds, k.program.kernel_count(),
          k.program.feed != nullptr ? k.program.feed->expected_instructions
                                    : k.program.instruction_count(),
          k.program.feed != nullptr
              ? fmt::format("streamed: lowered as the run reads them, --stream-from {}",
                            o.stream_from)
              : streams,
          k.program.queues.size(), k.program.semaphores.size(), arch.name, w.cores,
          o.timing_only ? "timing only" : "functional (tensor data and the check)");
    }
    // SPMD over a logical core: core c runs programs[c]; empty: every core runs k.program.
    std::vector<const isa::Program*> programs;
    if (!in.core_programs.empty()) {
      programs.push_back(&k.program);
      for (const isa::Program& p : in.core_programs) programs.push_back(&p);
    }
    const auto cores = programs.empty() ? w.cores : static_cast<uint32_t>(programs.size());
    if (!programs.empty() && cores > arch.chip_cores) {
      spdlog::error(
          "{}: {} programs (one per physical core of the logical core) but a {} chip has "
          "{} NeuronCores",
          o.workload, cores, arch.name, arch.chip_cores);
      return out;
    }
    for (size_t c = 0; c < std::max<size_t>(1, programs.size()); ++c) {
      const isa::Program& p = programs.empty() ? k.program : *programs[c];
      const std::string who =
          programs.empty() ? o.workload : fmt::format("{} (core {})", o.workload, c);
      if (p.queues.size() != k.program.queues.size() ||
          p.dram_tensors.size() != k.program.dram_tensors.size()) {
        spdlog::error(
            "{}: the core's program has other DMA queues or HBM tensors than core 0's; "
            "the cores of a logical core share them",
            who);
        return out;
      }
      try {
        isa::validate(p, arch);
        isa::validate_collectives(p, cores, programs.empty() ? -1 : static_cast<int>(c));
      } catch (const isa::ValidationError& e) {
        spdlog::error("{}: the program is invalid: {}", who, e.what());
        return out;
      }
      const std::string deadlock = compiler::find_deadlock(p, arch);
      if (!deadlock.empty()) {
        spdlog::error("{}: the program can deadlock; it would stop with: {}", who,
                      one_line(deadlock));
        return out;
      }
    }

    if (k.program.feed != nullptr) {
      // A streamed program: each instruction is checked as it is lowered (a bad one stops the
      // run, with no outputs); a deadlock shows in the run itself, with what each engine waits
      // for, instead of before it.
      const isa::Program& p = k.program;
      const uint64_t dram_bytes = p.dram_bytes();
      k.program.feed->check = [&p, &arch, dram_bytes](const isa::Instruction& in, size_t index) {
        isa::validate_instruction(p, arch, in.engine, index, in, dram_bytes);
      };
      spdlog::info("{}: the program is streamed: each instruction is checked as it is lowered",
                   o.workload);
    } else {
      spdlog::info("{}: the program is valid for {} and cannot deadlock", o.workload, arch.name);
    }
    check_trace_filter(trace_filter, TraceWriter::lane_names(k.program, arch));
    progress.set_phase("preparing");

    // One functional state per core: each core runs the kernel on its own tensors; the cores
    // of a logical core (SPMD) share core 0's HBM and have their own SBUF and PSUM.
    std::vector<std::unique_ptr<isa::MemoryImage>> memories;
    std::vector<isa::MemoryImage*> memory_ptrs;
    for (uint32_t c = 0; c < cores; ++c) {
      if (!o.timing_only && !programs.empty() && in.shared_hbm && c > 0) {
        memories.push_back(std::make_unique<isa::MemoryImage>(arch, 0));
        memories.back()->share_hbm(*memories[0]);
      } else if (!o.timing_only) {
        memories.push_back(std::make_unique<isa::MemoryImage>(arch, k.program.dram_bytes()));
        workloads::load_inputs(k, *memories.back(), c);
        write_host_inputs(k.program, data, *memories.back());
      }
      memory_ptrs.push_back(o.timing_only ? nullptr : memories.back().get());
    }

    // A run that stops without results (ranks that disagree, a deadlock) leaves no output
    // directory it made: declared before the writers, so it goes after their temporary files.
    OutputDirectoryGuard fresh_out(o.out);
    make_output_directory(o.out);
    StatsCollector stats(k.program, arch, cores);
    if (!programs.empty()) stats.set_core_programs(programs);
    // The trace: trace.json, or Perfetto's protobuf trace.pftrace, or none (--trace-format).
    std::unique_ptr<TraceWriter> trace;
    std::string trace_file;
    if (o.trace_format != "none") {
      const bool perfetto = o.trace_format == "perfetto";
      trace_file = perfetto ? "trace.pftrace" : "trace.json";
      trace = std::make_unique<TraceWriter>(o.out + "/" + trace_file, k.program, arch, cores,
                                            trace_filter,
                                            perfetto ? TraceFormat::perfetto : TraceFormat::json);
      if (!programs.empty()) trace->set_core_programs(programs);
    }
    ProfileCollector profile(k.program, arch);
    EventCounter counter(progress);
    std::vector<models::EventSink*> sinks = {&stats, &profile};
    if (trace) sinks.push_back(trace.get());
    sinks.push_back(&counter);
    // The report keeps a compact record per slice in a temporary file until the run ends.
    std::unique_ptr<ReportWriter> report_page;
    if (o.report) {
      report_page = std::make_unique<ReportWriter>(o.out + "/report.html", k.program, arch, cores);
      if (!programs.empty()) report_page->set_core_programs(programs);
      sinks.push_back(report_page.get());
    }
    Fanout sink(sinks);
    const auto t_sim = std::chrono::steady_clock::now();
    const double cpu_sim = cpu_seconds();
    uint64_t instructions = k.program.feed != nullptr ? k.program.feed->expected_instructions
                                                      : k.program.instruction_count() * cores;
    if (!programs.empty()) {
      instructions = 0;
      for (const isa::Program* p : programs) instructions += p->instruction_count();
    }
    progress.start_simulation(instructions);
    const models::SimulationResult result =
        programs.empty() ? models::simulate(k.program, arch, memory_ptrs, sink, w.chips)
                         : models::simulate(programs, arch, memory_ptrs, sink, w.chips);
    if (k.program.feed != nullptr) {
      // A streamed program's lowering failed part way (a bad instruction): no outputs.
      try {
        k.program.feed->rethrow_error();
      } catch (...) {
        fresh_out.remove_if_empty = true;
        throw;
      }
    }
    const double sim_seconds = seconds_since(t_sim);
    const double sim_cpu = cpu_seconds() - cpu_sim;
    progress.set_phase("checking and writing outputs");
    spdlog::info("{}: simulated {:.3f} us in {:.3f} s: {} instructions, {} DMA transfers",
                 o.workload, result.end_time.us(), sim_seconds, counter.instructions,
                 counter.transfers);
    const double before_sim_seconds = std::chrono::duration<double>(t_sim - t0).count();
    if (!result.error.empty()) {
      spdlog::error("{}: the run stopped at {:.3f} us: {}", o.workload, result.end_time.us(),
                    result.error);
      fresh_out.remove_if_empty = true;
      return out;
    }
    if (!result.completed) {
      spdlog::error("{}: the program deadlocked at {:.3f} us; engines still waiting: {}",
                    o.workload, result.end_time.us(), one_line(result.deadlock));
      fresh_out.remove_if_empty = true;
      return out;
    }

    RunReport report{w,  arch,  k,  stats,    profile,   result, result.end_time, o.timing_only,
                     {}, o.out, {}, o.report, trace_file};
    report.lnc = programs.empty() || !in.shared_hbm ? 1 : cores;
    // The cores of a logical core share one HBM: core 0's image holds the outputs. A program
    // set's cores each have their own.
    const size_t checked =
        programs.empty() || !in.shared_hbm ? memories.size() : std::min<size_t>(1, memories.size());
    for (size_t c = 0; c < checked && !k.expected.empty(); ++c) {
      // The worst core's result stands for the run: a failure, else the largest error.
      const workloads::CheckResult r =
          workloads::check_outputs(k, *memories[c], static_cast<uint32_t>(c));
      const bool worse = r.status == workloads::CheckResult::Status::fail
                             ? report.check.status != workloads::CheckResult::Status::fail ||
                                   r.max_abs_error > report.check.max_abs_error
                             : report.check.status != workloads::CheckResult::Status::fail &&
                                   r.max_abs_error >= report.check.max_abs_error;
      if (c == 0 || worse) report.check = r;
    }
    OutputFile stats_file(o.out + "/stats.json");
    out.stats = stats_json(report);
    stats_file.write(out.stats.dump(2) + "\n");
    // Graph outputs as .npy, from core 0's HBM (functional runs).
    std::vector<std::unique_ptr<OutputFile>> arrays;
    if (k.write_npy && !memories.empty()) {
      for (const workloads::HostTensor& t : k.expected) {
        arrays.push_back(std::make_unique<OutputFile>(o.out + "/" + t.name + ".npy"));
        arrays.back()->write(
            workloads::npy_bytes(t.shape, workloads::read_tensor(k, *memories[0], t.name)));
        report.npy_files.push_back(t.name + ".npy");
      }
    }
    if (!memories.empty()) {
      for (const std::string& name : in.npy_outputs) {
        arrays.push_back(std::make_unique<OutputFile>(o.out + "/" + name + ".npy"));
        const isa::DramTensor* t = k.program.find_dram_tensor(name);
        arrays.back()->write(
            workloads::npy_bytes(t->shape, workloads::read_tensor(k, *memories[0], name)));
        report.npy_files.push_back(name + ".npy");
      }
      for (const std::string& name : data.fetch) {
        const isa::DramTensor* t = k.program.find_dram_tensor(name);
        if (t == nullptr) throw InputError(fmt::format("no HBM tensor {} to return", name));
        out.tensors.emplace_back(
            name, std::string(reinterpret_cast<const char*>(memories[0]->hbm.data() + t->address),
                              t->bytes()));
      }
    }
    if (trace) trace->close();  // writes the last counter samples (perf.json counts them)
    std::unique_ptr<OutputFile> perf;
    if (o.perf) {
      perf = std::make_unique<OutputFile>(o.out + "/perf.json");
      const uint64_t events = counter.instructions + counter.transfers + counter.other;
      const nlohmann::json p = {
          {"workload", w.name},
          {"mode", o.timing_only ? "timing-only" : "full"},
          {"simulated_instructions", counter.instructions},
          {"simulated_transfers", counter.transfers},
          {"events", events},
          {"memory_system_events", result.memory_system_events},
          {"trace_events", trace ? trace->events_written() : 0},
          {"simulated_time_ns", result.end_time.ns()},
          {"wall_seconds_load_and_lower", load_seconds},
          // validate, deadlock search, functional memory and inputs, opening the outputs
          {"wall_seconds_prepare", before_sim_seconds - load_seconds},
          {"wall_seconds_simulate", sim_seconds},
          {"wall_seconds_total", seconds_since(t0)},
          {"cpu_seconds_load_and_lower", load_cpu},
          {"cpu_seconds_simulate", sim_cpu},
          {"cpu_seconds_total", cpu_seconds() - cpu0},
          {"instructions_per_second", sim_seconds > 0 ? counter.instructions / sim_seconds : 0.0},
          {"events_per_second", sim_seconds > 0 ? events / sim_seconds : 0.0},
          {"simulated_ns_per_second", sim_seconds > 0 ? result.end_time.ns() / sim_seconds : 0.0},
          {"instructions_per_cpu_second", sim_cpu > 0 ? counter.instructions / sim_cpu : 0.0},
          {"peak_rss_bytes", peak_rss_bytes()}};
      perf->write(p.dump(2) + "\n");
      perf->close();
    }
    // All complete on disk before any takes its name: a full disk leaves none.
    stats_file.close();
    for (auto& a : arrays) a->close();
    if (report_page) report_page->close(out.stats, o.out);
    {
      // The renames go through together: an interruption finds all outputs or none in place.
      const DeferInterrupts defer;
      if (trace) trace->commit();
      stats_file.commit();
      for (auto& a : arrays) a->commit();
      if (report_page) report_page->commit();
      if (perf) perf->commit();
    }
    spdlog::info("{}: wrote {}/{{stats.json{}{}{}}} ({} trace events)", o.workload, o.out,
                 trace_file.empty() ? "" : "," + trace_file, report_page ? ",report.html" : "",
                 perf ? ",perf.json" : "", trace ? trace->events_written() : 0);
    out.summary = summary_text(report);
    const std::vector<Finding> findings = diagnose(out.stats);
    if (!findings.empty()) {
      out.summary += fmt::format("diagnosis (trnsim explain {} for the critical path):\n{}", o.out,
                                 findings_text(findings, 2));
    }
    out.exit_code =
        report.check.status == workloads::CheckResult::Status::fail ? kCheckFailed : kSuccess;
    return out;
  } catch (const isa::ValidationError& e) {  // a streamed program's instruction
    spdlog::error("{}: the program is invalid: {}", o.workload, e.what());
  } catch (const workloads::WorkloadError& e) {
    spdlog::error("{}", e.what());
  } catch (const isa::AssemblyError& e) {
    spdlog::error("{}", e.what());
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
  } catch (const OutputError& e) {
    spdlog::error("{}", e.what());
  } catch (const std::bad_alloc&) {
    spdlog::error("{}: out of host memory{}", o.workload,
                  o.timing_only ? "" : "; try --timing-only, which keeps no tensor data");
  } catch (const std::exception& e) {
    spdlog::error("{}: {}", o.workload, e.what());
  }
  return out;
}

}  // namespace

}  // namespace trnsim::sim
