// report.html: one self-contained page (no network: the script, styles and data are all in it)
// with a zoomable timeline of every lane, the summary metrics, the key_averages and kernel
// tables and a per-engine utilization chart; `trnsim compare` puts several runs in one page,
// on one time scale (docs/report.md).
//
// ReportWriter is an EventSink: during the run it appends a fixed-size record per trace slice
// to a temporary file (memory stays flat however long the run), and close() assembles the page:
// the template (sim/report_template.html, embedded in the binary), the run's block of JSON
// (stats.json's content, the lanes, the names) and the events as base64 of little-endian
// columns, which the page decodes into typed arrays.
#pragma once

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "models/records/records.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/trace_lanes.hpp"

namespace trnsim::sim {

// The format of the run blocks a report embeds; compare refuses other versions.
constexpr const char* kReportFormat = "trnsim-report/1";

// What each event carries in the page, one column per field (little-endian, in this order):
// start and duration in picoseconds and `a` as float64; name, label and `b` as uint32; lane as
// uint16; kind as uint8. `a` and `b` by kind: instruction FLOPs and cycles; transfer bytes and
// DMA engines; semaphore wait: the value awaited in `b`; kernel and host: the kernel in `b`.
enum class ReportEventKind : uint8_t {
  instruction,
  transfer,
  semaphore_wait,
  port_wait,
  kernel,
  host_dispatch,
  host_launch,
  host_queue_full,
  host_synchronize,
  pipeline_wait,  // a producer's results or a semaphore's wake latency
};
constexpr uint32_t kNoLabel = 0xffffffffu;

class ReportWriter : public models::EventSink {
 public:
  ReportWriter(const std::string& path, const isa::Program& program, const config::ArchConfig& arch,
               uint32_t cores);
  ~ReportWriter() override;
  ReportWriter(const ReportWriter&) = delete;
  ReportWriter& operator=(const ReportWriter&) = delete;

  void on_instruction(const models::InstructionRecord& r) override;
  void on_transfer(const models::TransferRecord& r) override;
  void on_kernel(const models::KernelRecord& r) override;
  void on_host(const models::HostRecord& r) override;
  // SPMD over a logical core: core c ran *programs[c] (same queues and tensors as `program`).
  void set_core_programs(std::vector<const isa::Program*> programs) {
    core_programs_ = std::move(programs);
  }

  // Writes the page with stats.json's content and the run's --out directory, and closes the
  // file (throws OutputError); commit() then moves it into place.
  void close(const nlohmann::json& stats, const std::string& out_dir);
  void commit() { file_.commit(); }
  uint64_t events() const { return events_; }

 private:
  // One slice as the run reports it, kept in the temporary file until close().
  struct Record {
    int64_t start;
    int64_t duration;
    uint64_t a;
    uint32_t b;
    uint32_t name;
    uint32_t index;  // the instruction (or the transfer's DMA instruction) in its engine's stream
    uint16_t lane;
    uint8_t kind;
    uint8_t engine;
  };
  static_assert(sizeof(Record) == 40, "records are written to the temporary file as they are");

  void add(const Record& r);
  void spill();
  // The run's distinct labels, numbered in the order they are first asked for, up to
  // kMaxLabelBytes of text: past that a new one gets kNoLabel and cut() says some were left out.
  class LabelTable {
   public:
    uint32_t id(std::string_view label);  // kNoLabel for "" and past the cap
    const std::vector<std::string_view>& labels() const { return labels_; }
    bool cut() const { return cut_; }

   private:
    // The slot that holds `label`'s id, or the empty slot it would take.
    size_t slot(std::string_view label) const;
    // The text of every label one after another (reserved at the cap on first use, so the views
    // into it stay valid: a streamed program's instructions are freed before close()).
    std::string text_;
    std::vector<std::string_view> labels_;  // views into text_, in id order
    // Ids by text: open addressing, at most half full (4 bytes a slot, where a node of
    // std::unordered_map costs about 60 bytes a label, and a long run has hundreds of thousands).
    std::vector<uint32_t> slots_;
    bool cut_ = false;
  };
  LabelTable labels_;
  // An instruction's label id. A streamed program's instructions are gone by close(): their ids
  // are taken as their records arrive, and the records carry them (in `index`).
  uint32_t label_of(const isa::Program& program, const isa::Instruction& in);
  bool streamed() const { return program_.feed != nullptr && core_programs_.empty(); }
  uint32_t name_id(const std::string& name);
  // Reads every record back, in order, calling `f` on each (throws OutputError).
  template <typename F>
  void for_each_record(F&& f);
  // Writes the run's block of JSON (stats.json's content, the lanes, the names, the labels).
  void write_run(const nlohmann::json& stats, const std::string& out_dir);

  const isa::Program& program_of(int core) const {
    return static_cast<size_t>(core) < core_programs_.size() ? *core_programs_[core] : program_;
  }

  OutputFile file_;
  const isa::Program& program_;
  std::vector<const isa::Program*> core_programs_;
  const config::ArchConfig& arch_;
  uint32_t cores_;
  TimelineLanes lanes_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;  // names_ after the opcodes'
  std::vector<uint32_t> opcode_name_;                   // per isa::Opcode
  std::vector<uint32_t> semaphore_name_;                // "wait NAME" per semaphore
  std::vector<uint32_t> kernel_name_;
  std::vector<uint32_t> launch_name_;  // "launch KERNEL" per kernel
  std::vector<uint32_t> op_name_;      // per host op
  uint32_t port_wait_name_ = 0, pipeline_wait_name_ = 0, queue_full_name_ = 0,
           synchronize_name_ = 0;
  // Kernels traced from Python (NKI): device time (instruction durations, picoseconds) and
  // instruction count per source line (Program::sources), per engine and, last, in DMA
  // transfers, for the source view.
  std::vector<std::array<int64_t, kEngineCount + 1>> source_ps_;
  std::vector<uint64_t> source_count_;
  nlohmann::json sources_json() const;
  std::vector<Record> buffer_;
  std::FILE* spill_ = nullptr;  // a temporary file, deleted when closed
  // Calls `f` on the temporary file's records through a window of it mapped at a time (no
  // copy; a bounded window keeps the mapped pages out of the peak memory); false, having called
  // nothing, where the system cannot map the file.
  template <typename F>
  bool for_each_spilled(F&& f);
  std::string write_error_;  // a write that failed during the run, reported by close()
  uint64_t events_ = 0;
};

// One run of a report as `trnsim compare` reads it back: its block of JSON (parsed), and where
// the file is, to copy its events from.
struct ReportRun {
  std::string dir;
  std::string path;  // DIR/report.html
  nlohmann::json block;
};

// Reads DIR/report.html's run block. Throws InputError naming the directory and what is missing
// or wrong (no report.html, a comparison report, another format version).
ReportRun read_report_run(const std::string& dir);

// Writes a comparison report of `runs` (in order, the first is the baseline) to `path`, via a
// temporary file (throws OutputError, or InputError if a report changed while being read).
void write_comparison_report(const std::string& path, const std::vector<ReportRun>& runs);

}  // namespace trnsim::sim
