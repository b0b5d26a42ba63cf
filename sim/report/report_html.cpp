#include "sim/report/report_html.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

#include "models/neuroncore/cost.hpp"
#include "sim/io/input_file.hpp"
#include "sim/report/metrics.hpp"

namespace trnsim::sim {

// The page template (sim/report_template.html), embedded by cmake/embed_text.cmake.
std::string_view report_template();

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the page reads the event columns as little-endian typed arrays");

using nlohmann::json;

// Where the run blocks go in the template, and the page's title.
constexpr std::string_view kDataMark = "<!--trnsim:data-->";
constexpr std::string_view kTitleMark = "<!--trnsim:title-->";
// A run block: these lines exactly, so that compare can find them again.
constexpr std::string_view kRunOpen = R"(<script type="application/json" class="trnsim-run">)";
constexpr std::string_view kEventsOpen =
    R"(<script type="application/octet-stream" class="trnsim-events">)";
constexpr std::string_view kClose = "</script>";
constexpr std::string_view kMetricsOpen = R"(<script type="application/json" id="trnsim-metrics">)";

constexpr size_t kRecordsPerChunk = (64 << 10) / 40;  // 64 KiB of records between writes
constexpr size_t kFlushBytes = 64 << 10;
constexpr size_t kBase64Line = 16384;  // characters per line of the events block
// Labels are per instruction ("load x tile 7"); past this many bytes of distinct labels the
// rest are left out, and the page says so.
constexpr size_t kMaxLabelBytes = 8 << 20;

// JSON that can sit in a <script> element: every '<' escaped, so no "</script>" or "<!--".
std::string script_json(const json& j) {
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// Writes a run block's "labels" as the JSON text nlohmann::json would write for the array,
// one label at a time: a json value per label costs about 80 bytes, and the copies a block's
// text goes through multiply it, where a long run has hundreds of thousands of labels.
void write_labels(OutputFile& out, const std::vector<std::string_view>& labels) {
  out.write("[");
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i != 0) out.write(",");
    out.write(script_json(json(labels[i])));
  }
  out.write("]");
}

std::string html_text(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Base64 (RFC 4648, padded) of a byte stream, in lines of kBase64Line characters.
class Base64Writer {
 public:
  explicit Base64Writer(OutputFile& out) : out_(out) {}
  void put(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      pending_[pending_size_++] = p[i];
      if (pending_size_ == 3) emit(3);
    }
  }
  void finish() {
    if (pending_size_ > 0) emit(pending_size_);
    if (line_ > 0) text_ += '\n';
    out_.write(text_);
    text_.clear();
  }

 private:
  void emit(int n) {
    static constexpr char kDigits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const uint32_t v = (uint32_t{pending_[0]} << 16) | (n > 1 ? uint32_t{pending_[1]} << 8 : 0) |
                       (n > 2 ? uint32_t{pending_[2]} : 0);
    text_ += kDigits[(v >> 18) & 63];
    text_ += kDigits[(v >> 12) & 63];
    text_ += n > 1 ? kDigits[(v >> 6) & 63] : '=';
    text_ += n > 2 ? kDigits[v & 63] : '=';
    pending_size_ = 0;
    line_ += 4;
    if (line_ >= kBase64Line) {
      text_ += '\n';
      line_ = 0;
    }
    if (text_.size() >= kFlushBytes) {
      out_.write(text_);
      text_.clear();
    }
  }
  OutputFile& out_;
  std::string text_;
  unsigned char pending_[3] = {0, 0, 0};
  int pending_size_ = 0;
  size_t line_ = 0;
};

// zlib (deflate) of a byte stream, handed on as base64: the page inflates it with the browser's
// DecompressionStream. Event columns are regular (starts rise, durations and names repeat), so
// a million events take about a tenth of their 39 MB.
class DeflateBase64 {
 public:
  explicit DeflateBase64(OutputFile& out) : b64_(out), staged_(kFlushBytes), chunk_(kFlushBytes) {
    // Level 1: nearly the ratio of the default level (3.8 against 3.7 MB for a million events)
    // in about a third of the time.
    if (deflateInit(&z_, 1) != Z_OK) throw OutputError("cannot start zlib to compress the events");
  }
  ~DeflateBase64() { deflateEnd(&z_); }
  DeflateBase64(const DeflateBase64&) = delete;
  DeflateBase64& operator=(const DeflateBase64&) = delete;
  // Values are gathered into 64 KiB before zlib sees them: a call per value would cost more
  // than the compression.
  template <typename T>
  void put(const T& v) {
    if (staged_bytes_ + sizeof v > kFlushBytes) deflate_staged(Z_NO_FLUSH);
    std::memcpy(staged_.data() + staged_bytes_, &v, sizeof v);
    staged_bytes_ += sizeof v;
  }
  void finish() {
    deflate_staged(Z_FINISH);
    b64_.finish();
  }

 private:
  void deflate_staged(int flush) {
    z_.next_in = staged_.data();
    z_.avail_in = static_cast<uInt>(staged_bytes_);
    run(flush);
    staged_bytes_ = 0;
  }
  void run(int flush) {
    int rc = Z_OK;
    do {
      z_.next_out = chunk_.data();
      z_.avail_out = static_cast<uInt>(chunk_.size());
      rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) throw OutputError("zlib failed to compress the events");
      b64_.put(chunk_.data(), chunk_.size() - z_.avail_out);
    } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  }
  Base64Writer b64_;
  std::vector<unsigned char> staged_;  // kFlushBytes, of which staged_bytes_ are in use
  size_t staged_bytes_ = 0;
  std::vector<unsigned char> chunk_;
  z_stream z_{};
};

// The page around the run blocks: `write_runs` writes them where the template says.
template <typename F>
void write_page(OutputFile& out, std::string_view title, F&& write_runs) {
  const std::string_view page = report_template();
  const size_t data = page.find(kDataMark);
  const size_t title_at = page.find(kTitleMark);
  if (data == std::string_view::npos || title_at == std::string_view::npos || title_at > data) {
    throw OutputError("the embedded report template has no title or data mark (a build error)");
  }
  out.write(page.substr(0, title_at));
  out.write(html_text(title));
  out.write(page.substr(title_at + kTitleMark.size(), data - title_at - kTitleMark.size()));
  // The metric table, which the page's metrics and utilization chart read (their units,
  // sections, labels and meanings): this binary's, for every run in the page.
  out.write(fmt::format("{}\n{}\n{}\n", kMetricsOpen, script_json(metric_table_json()), kClose));
  write_runs();
  out.write(page.substr(data + kDataMark.size()));
}

void write_run_open(OutputFile& out, const std::string& block) {
  out.write(fmt::format("{}\n{}\n{}\n{}\n", kRunOpen, block, kClose, kEventsOpen));
}

// The same, with `labels` written in place of the block's `length` characters at `at`.
void write_run_open(OutputFile& out, std::string_view block, size_t at, size_t length,
                    const std::vector<std::string_view>& labels) {
  out.write(fmt::format("{}\n", kRunOpen));
  out.write(block.substr(0, at));
  write_labels(out, labels);
  out.write(block.substr(at + length));
  out.write(fmt::format("\n{}\n{}\n", kClose, kEventsOpen));
}

}  // namespace

ReportWriter::ReportWriter(const std::string& path, const isa::Program& program,
                           const config::ArchConfig& arch, uint32_t cores)
    : file_(path), program_(program), arch_(arch), cores_(cores), lanes_(program, cores) {
  buffer_.reserve(kRecordsPerChunk);
  if (lanes_.count() > 0xffff) {
    throw OutputError(
        fmt::format("{}: {} timeline lanes; a report holds at most 65535", path, lanes_.count()));
  }
  // Names 0 .. kOpcodeCount-1 are the opcodes' profiler names (in opcode order: the page shows
  // the opcode of name i as opcodes[i]); the rest are distinct strings.
  for (const isa::OpcodeInfo& o : isa::opcode_table()) {
    opcode_name_.push_back(static_cast<uint32_t>(names_.size()));
    names_.emplace_back(o.profiler_name);
  }
  for (const isa::Semaphore& s : program.semaphores) {
    semaphore_name_.push_back(name_id("wait " + s.name));
  }
  for (size_t k = 0; k < program.kernel_count(); ++k) {
    const std::string& name = program.kernels.empty() ? program.name : program.kernels[k].name;
    kernel_name_.push_back(name_id(name));
    launch_name_.push_back(name_id("launch " + name));
  }
  for (const isa::HostOp& op : program.host_ops) op_name_.push_back(name_id(op.name));
  port_wait_name_ = name_id("port wait");
  pipeline_wait_name_ = name_id("pipeline wait");
  queue_full_name_ =
      name_id(fmt::format("queue full: {} kernels in flight", arch.host.max_inflight));
  synchronize_name_ = name_id("synchronize");
}

ReportWriter::~ReportWriter() {
  if (spill_ != nullptr) std::fclose(spill_);
}

template <typename F>
bool ReportWriter::for_each_spilled(F&& f) {
  if (std::fflush(spill_) != 0) throw OutputError(file_.path() + ": cannot read its events back");
  const long end = std::ftell(spill_);  // written from the start, and left at its end
  const auto bytes = static_cast<size_t>(std::max(end, 0L));
  if (end <= 0 || bytes % sizeof(Record) != 0) return false;
  // A window is whole pages and whole records: 25 times 40 KiB (1,024,000 bytes).
  constexpr size_t kWindow = 25 * 40960;
  static_assert(kWindow % sizeof(Record) == 0 && kWindow % 4096 == 0);
  for (size_t at = 0; at < bytes; at += kWindow) {
    const size_t len = std::min(kWindow, bytes - at);
    void* p = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fileno(spill_),
                   static_cast<off_t>(at));
    if (p == MAP_FAILED) {
      if (at == 0) return false;
      throw OutputError(file_.path() + ": cannot read its events back from a temporary file");
    }
    const auto* records = static_cast<const Record*>(p);
    for (size_t i = 0; i < len / sizeof(Record); ++i) f(records[i]);
    munmap(p, len);
  }
  return true;
}

uint32_t ReportWriter::name_id(const std::string& name) {
  const auto [it, fresh] = name_ids_.emplace(name, static_cast<uint32_t>(names_.size()));
  if (fresh) names_.push_back(name);
  return it->second;
}

void ReportWriter::add(const Record& r) {
  ++events_;
  buffer_.push_back(r);
  if (buffer_.size() >= kRecordsPerChunk) spill();
}

void ReportWriter::spill() {
  if (spill_ == nullptr) spill_ = std::tmpfile();
  // No temporary file (no writable tmp directory): the records stay in memory.
  if (spill_ == nullptr) return;
  if (std::fwrite(buffer_.data(), sizeof(Record), buffer_.size(), spill_) != buffer_.size() &&
      write_error_.empty()) {
    write_error_ = "cannot write the report's events to a temporary file";
  }
  buffer_.clear();
}

template <typename F>
void ReportWriter::for_each_record(F&& f) {
  if (spill_ != nullptr && !for_each_spilled(f)) {
    if (std::fflush(spill_) != 0) throw OutputError(file_.path() + ": cannot read its events back");
    std::rewind(spill_);
    std::vector<Record> chunk(kRecordsPerChunk);
    size_t n = 0;
    while ((n = std::fread(chunk.data(), sizeof(Record), chunk.size(), spill_)) > 0) {
      for (size_t i = 0; i < n; ++i) f(chunk[i]);
    }
    if (std::ferror(spill_)) {
      throw OutputError(file_.path() + ": cannot read its events back from a temporary file");
    }
    std::fseek(spill_, 0, SEEK_END);
  }
  for (const Record& r : buffer_) f(r);
}

void ReportWriter::on_instruction(const models::InstructionRecord& r) {
  const isa::Instruction& in = program_of(r.core).stream(r.engine)[r.index];
  const auto lane = static_cast<uint16_t>(lanes_.engine(static_cast<uint32_t>(r.core), r.engine));
  const auto engine = static_cast<uint8_t>(index_of(r.engine));
  const Picoseconds port_from = r.start - r.port_wait;
  const Picoseconds semaphores_met = port_from - r.pipeline_wait;
  // The same slices as trace.json: the semaphore wait, the pipeline wait, the port wait, the
  // instruction.
  if (semaphores_met > r.ready && r.blocked_on != models::kNoSemaphore) {
    int64_t value = 0;
    for (const auto& w : in.waits) {
      if (w.semaphore == r.blocked_on) value = w.value;
    }
    add({r.ready.value, (semaphores_met - r.ready).value, static_cast<uint64_t>(value), 0,
         core_programs_.empty()
             ? semaphore_name_[static_cast<size_t>(r.blocked_on)]
             : name_id("wait " + program_of(r.core).semaphores[r.blocked_on].name),
         r.index, lane, static_cast<uint8_t>(ReportEventKind::semaphore_wait), engine});
  }
  if (r.pipeline_wait.value > 0) {
    add({semaphores_met.value, r.pipeline_wait.value, 0, 0, pipeline_wait_name_, r.index, lane,
         static_cast<uint8_t>(ReportEventKind::pipeline_wait), engine});
  }
  if (r.port_wait.value > 0) {
    add({port_from.value, r.port_wait.value, 0, 0, port_wait_name_, r.index, lane,
         static_cast<uint8_t>(ReportEventKind::port_wait), engine});
  }
  add({r.start.value, (r.end - r.start).value, models::instruction_flops(in),
       static_cast<uint32_t>(r.cycles.value), opcode_name_[static_cast<size_t>(in.opcode)],
       streamed() ? label_of(program_of(r.core), in) : r.index, lane,
       static_cast<uint8_t>(ReportEventKind::instruction), engine});
  if (in.source != 0 && in.source <= program_.sources.size()) {
    if (source_ps_.empty()) {
      source_ps_.assign(program_.sources.size(), {});
      source_count_.assign(program_.sources.size(), 0);
    }
    source_ps_[in.source - 1][engine] += (r.end - r.start).value;
    ++source_count_[in.source - 1];
  }
}

// The source view of a kernel traced from Python: each file's text, and per line its device
// time per engine and its instruction count (what Neuron Explorer's source view shows).
json ReportWriter::sources_json() const {
  constexpr size_t kMaxFileBytes = 1 << 20;
  json files = json::array();
  std::unordered_map<std::string, size_t> file_index;
  json lines = json::array();
  for (size_t i = 0; i < source_ps_.size(); ++i) {
    const std::string& where = program_.sources[i];
    const auto colon = where.find_last_of(':');
    if (colon == std::string::npos) continue;
    const std::string path = where.substr(0, colon);
    const int line = std::atoi(where.c_str() + colon + 1);
    auto it = file_index.find(path);
    if (it == file_index.end()) {
      json text = json::array();
      std::ifstream in(path, std::ios::binary);
      std::string l;
      size_t bytes = 0;
      while (in && std::getline(in, l) && (bytes += l.size()) < kMaxFileBytes) text.push_back(l);
      it = file_index.emplace(path, files.size()).first;
      files.push_back({{"path", path}, {"text", text}});
    }
    json ps = json::array();
    for (int64_t v : source_ps_[i]) ps.push_back(v);
    lines.push_back({{"at", where},
                     {"file", it->second},
                     {"line", line},
                     {"count", source_count_[i]},
                     {"ps", ps}});
  }
  return {{"files", files}, {"lines", lines}};
}

void ReportWriter::on_transfer(const models::TransferRecord& r) {
  const isa::Instruction& in = program_of(r.core).stream(r.issuer)[r.index];
  add({r.start.value, (r.end - r.start).value, r.bytes, r.engines,
       opcode_name_[static_cast<size_t>(in.opcode)],
       streamed() ? label_of(program_of(r.core), in) : r.index,
       static_cast<uint16_t>(lanes_.queue(static_cast<uint32_t>(r.core), r.queue)),
       static_cast<uint8_t>(ReportEventKind::transfer), static_cast<uint8_t>(index_of(r.issuer))});
  if (in.source != 0 && in.source <= program_.sources.size()) {
    if (source_ps_.empty()) {
      source_ps_.assign(program_.sources.size(), {});
      source_count_.assign(program_.sources.size(), 0);
    }
    source_ps_[in.source - 1][kEngineCount] += (r.end - r.start).value;
  }
}

void ReportWriter::on_kernel(const models::KernelRecord& r) {
  add({r.start.value, (r.end - r.start).value, 0, r.kernel, kernel_name_[r.kernel], 0,
       static_cast<uint16_t>(lanes_.kernels(static_cast<uint32_t>(r.core))),
       static_cast<uint8_t>(ReportEventKind::kernel), 0});
}

void ReportWriter::on_host(const models::HostRecord& r) {
  uint32_t name = synchronize_name_;
  ReportEventKind kind = ReportEventKind::host_synchronize;
  switch (r.activity) {
    case models::HostActivity::dispatch:
      name = op_name_[r.op];
      kind = ReportEventKind::host_dispatch;
      break;
    case models::HostActivity::launch:
      name = launch_name_[static_cast<size_t>(r.kernel)];
      kind = ReportEventKind::host_launch;
      break;
    case models::HostActivity::queue_full:
      name = queue_full_name_;
      kind = ReportEventKind::host_queue_full;
      break;
    case models::HostActivity::synchronize:
      break;
    case models::HostActivity::to_host:
    case models::HostActivity::to_device: {
      const isa::HostOp& op = program_.host_ops[r.op];
      name = r.activity == models::HostActivity::to_host
                 ? name_id("copy " + op.to_host[r.copy].tensor + " to host")
                 : name_id("copy " + op.to_device[r.copy].tensor + " to device");
      kind = ReportEventKind::host_launch;
      break;
    }
    case models::HostActivity::host_compute:
      name = name_id(program_.host_ops[r.op].name + " on host");
      kind = ReportEventKind::host_dispatch;
      break;
  }
  add({r.start.value, (r.end - r.start).value, r.op, static_cast<uint32_t>(r.kernel), name, 0,
       static_cast<uint16_t>(r.lane == models::HostLane::framework ? lanes_.framework()
                                                                   : lanes_.runtime()),
       static_cast<uint8_t>(kind), 0});
}

namespace {
std::string directory_name(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "out/" is "out"
  const std::string name = p.filename().string();
  return name.empty() || name == "." ? dir : name;
}
}  // namespace

void ReportWriter::write_run(const json& stats, const std::string& out_dir) {
  json lanes = json::array();
  for (const TraceLane& l : trace_lanes(program_, arch_, cores_)) {
    lanes.push_back({{"pid", l.pid}, {"tid", l.tid}, {"process", l.process}, {"name", l.name}});
  }
  json opcodes = json::array();
  for (const isa::OpcodeInfo& o : isa::opcode_table()) opcodes.push_back(o.name);
  // The labels go into the text where this placeholder is (a control character no label of
  // this block can hold unescaped, so its first match as the top-level key's value is it).
  const std::string placeholder = std::string(1, '\0') + "trnsim labels";
  json engines = json::array();
  for (Engine e : kAllEngines) {
    engines.push_back({{"name", name_of(e)}, {"key", key_of(e)}});
  }
  json block = {
      {"format", kReportFormat},
      // The directory's own name, not its path: the page sits in it, and a page passed around
      // should not carry the absolute path of the machine that wrote it (/home/NAME/...).
      {"dir", directory_name(out_dir)},
      {"title", stats.value("workload", json::object()).value("name", program_.name)},
      {"events", events_},
      {"encoding", "deflate"},
      {"lanes", lanes},
      {"engines", engines},
      {"names", names_},
      {"opcodes", opcodes},
      {"labels", placeholder},
      {"labels_cut", labels_.cut()},
      {"stats", stats}};
  if (!source_ps_.empty()) block["sources"] = sources_json();
  const std::string text = script_json(block);
  const std::string name = "\"labels\":";
  const std::string value = json(placeholder).dump();
  const size_t at = text.find(name + value);
  if (at == std::string::npos) throw std::logic_error("report: no place for the labels");
  write_run_open(file_, text, at + name.size(), value.size(), labels_.labels());
}

size_t ReportWriter::LabelTable::slot(std::string_view label) const {
  const size_t mask = slots_.size() - 1;
  size_t i = std::hash<std::string_view>{}(label)&mask;
  while (slots_[i] != kNoLabel && labels_[slots_[i]] != label) i = (i + 1) & mask;
  return i;
}

uint32_t ReportWriter::LabelTable::id(std::string_view label) {
  if (label.empty()) return kNoLabel;
  if (slots_.empty()) slots_.assign(1024, kNoLabel);
  const size_t i = slot(label);
  if (slots_[i] != kNoLabel) return slots_[i];
  if (text_.size() + label.size() > kMaxLabelBytes) {
    cut_ = true;
    return kNoLabel;
  }
  if (text_.capacity() < kMaxLabelBytes) text_.reserve(kMaxLabelBytes);  // pages used as filled
  const size_t at = text_.size();
  text_ += label;
  const auto id = static_cast<uint32_t>(labels_.size());
  labels_.emplace_back(text_.data() + at, label.size());
  slots_[i] = id;
  if (2 * labels_.size() > slots_.size()) {  // more than half full: twice the slots
    slots_.assign(2 * slots_.size(), kNoLabel);
    for (uint32_t j = 0; j < labels_.size(); ++j) slots_[slot(labels_[j])] = j;
  }
  return id;
}

uint32_t ReportWriter::label_of(const isa::Program& program, const isa::Instruction& in) {
  // An instruction traced from Python shows its file:line where it has no label.
  return labels_.id(in.label.empty() ? program.source_of(in) : in.label);
}

void ReportWriter::close(const json& stats, const std::string& out_dir) {
  if (!write_error_.empty()) throw OutputError(file_.path() + ": " + write_error_);
  // A label id per stream position: labels are the program's (a run executes every
  // instruction of its program, on every core). With one program per core (SPMD), a label id
  // per core and stream position. A streamed program's ids were taken during the run.
  const size_t programs = std::max<size_t>(1, core_programs_.size());
  std::vector<std::array<std::vector<uint32_t>, kEngineCount>> label_ids(programs);
  for (size_t c = 0; c < programs && !streamed(); ++c) {
    const isa::Program& program = program_of(static_cast<int>(c));
    for (Engine e : kAllEngines) {
      const auto& stream = program.stream(e);
      auto& ids = label_ids[c][static_cast<size_t>(index_of(e))];
      ids.resize(stream.size());
      for (size_t i = 0; i < stream.size(); ++i) ids[i] = label_of(program, stream[i]);
    }
  }
  const std::string title =
      "trnsim report: " + stats.value("workload", json::object()).value("name", program_.name);
  write_page(file_, title, [&] {
    write_run(stats, out_dir);
    DeflateBase64 b64(file_);
    // One pass over the records per column.
    auto put = [&](const auto& v) { b64.put(v); };
    for_each_record([&](const Record& r) { put(static_cast<double>(r.start)); });
    for_each_record([&](const Record& r) { put(static_cast<double>(r.duration)); });
    for_each_record([&](const Record& r) { put(static_cast<double>(r.a)); });
    for_each_record([&](const Record& r) { put(r.name); });
    for_each_record([&](const Record& r) {
      uint32_t label = kNoLabel;
      if (r.kind == static_cast<uint8_t>(ReportEventKind::instruction) ||
          r.kind == static_cast<uint8_t>(ReportEventKind::transfer)) {
        size_t core = 0;
        while (programs > 1 && core + 1 < programs && r.lane >= lanes_.kernels(core + 1)) ++core;
        label = streamed() ? r.index : label_ids[core][r.engine][r.index];
      }
      put(label);
    });
    for_each_record([&](const Record& r) { put(r.b); });
    for_each_record([&](const Record& r) { put(r.lane); });
    for_each_record([&](const Record& r) { put(r.kind); });
    b64.finish();
    file_.write(std::string(kClose) + "\n");
  });
  file_.close();
  if (spill_ != nullptr) {
    std::fclose(spill_);
    spill_ = nullptr;
  }
}

ReportRun read_report_run(const std::string& dir) {
  ReportRun run;
  run.dir = dir;
  run.path = dir + "/report.html";
  std::ifstream in(run.path, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format(
        "{}: no report.html here (a run made with --no-report, or by a trnsim without reports); "
        "run it again to compare its timeline, or use trnsim compare --no-report",
        dir));
  }
  std::string line;
  int blocks = 0;
  while (std::getline(in, line)) {
    if (line != kRunOpen) continue;
    ++blocks;
    std::string text;
    if (!std::getline(in, text)) break;
    try {
      run.block = json::parse(text);
    } catch (const json::exception& e) {
      throw InputError(
          fmt::format("{}: the run's data block is not JSON ({})", run.path, e.what()));
    }
  }
  if (blocks == 0) {
    throw InputError(fmt::format("{}: not a trnsim report (no run data in it)", run.path));
  }
  if (blocks > 1) {
    throw InputError(
        fmt::format("{}: a comparison report ({} runs); give the --out directories of the runs",
                    run.path, blocks));
  }
  const std::string format = run.block.is_object() ? run.block.value("format", "") : "";
  if (format != kReportFormat || !run.block.contains("stats")) {
    throw InputError(fmt::format(
        "{}: written by another trnsim version (report format '{}', expected '{}'); run it again",
        run.path, format, kReportFormat));
  }
  run.block["dir"] = dir;  // as given to compare (the run may have been given a relative --out)
  return run;
}

void write_comparison_report(const std::string& path, const std::vector<ReportRun>& runs) {
  OutputFile out(path);
  std::string title = "trnsim compare:";
  for (const ReportRun& r : runs) title += " " + r.block.value("title", r.dir);
  write_page(out, title, [&] {
    for (const ReportRun& r : runs) {
      write_run_open(out, script_json(r.block));
      // The events are copied as they are, a line at a time: the page decodes them.
      std::ifstream in(r.path, std::ios::binary);
      std::string line;
      bool inside = false, done = false;
      while (!done && std::getline(in, line)) {
        if (!inside) {
          inside = line == kEventsOpen;
          continue;
        }
        if (line == kClose) {
          done = true;
          break;
        }
        out.write(line);
        out.write("\n");
      }
      if (!done) {
        throw InputError(
            fmt::format("{}: its events block is missing or cut short; run it again", r.path));
      }
      out.write(std::string(kClose) + "\n");
    }
  });
  out.commit();
}

}  // namespace trnsim::sim
