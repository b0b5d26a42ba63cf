#include "isa/text/assembly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "isa/text/text_form.hpp"
#include "isa/validate.hpp"

namespace trnsim::isa {

using namespace text_form;  // NOLINT: the text forms' shared vocabulary

namespace {

// Text as an error message can quote it: control bytes as \xNN (a terminal would act on them,
// and a NUL would end the message there); UTF-8 stays as it is.
std::string printable(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

struct Names {
  const Program& program;
  const std::vector<OnChipBuffer>& buffers;

  const DramTensor* tensor(const std::string& n) const { return program.find_dram_tensor(n); }
  const OnChipBuffer* buffer(const std::string& n) const {
    for (const auto& b : buffers) {
      if (b.name == n) return &b;
    }
    return nullptr;
  }
  std::optional<uint16_t> semaphore(const std::string& n) const {
    for (size_t i = 0; i < program.semaphores.size(); ++i) {
      if (program.semaphores[i].name == n) return static_cast<uint16_t>(i);
    }
    return std::nullopt;
  }
  std::optional<uint16_t> queue(const std::string& n) const {
    for (size_t i = 0; i < program.queues.size(); ++i) {
      if (program.queues[i].name == n) return static_cast<uint16_t>(i);
    }
    return std::nullopt;
  }
  bool taken(const std::string& n) const {
    return tensor(n) || buffer(n) || semaphore(n) || n == "sbuf" || n == "psum";
  }
};

class LineParser {
 public:
  LineParser(const std::string& file, int line, std::string_view text)
      : file_(file), line_(line), text_(text) {}

  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(size_t pos, const std::string& what) const {
    throw AssemblyError(file_, line_, static_cast<int>(pos) + 1, what);
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) == token) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  void expect(std::string_view token, std::string_view what) {
    if (!accept(token)) fail(fmt::format("expected {}{}", what, found()));
  }
  std::string found() {
    if (at_end()) return ", found the end of the line";
    size_t end = pos_;
    while (end < text_.size() && !std::isspace(static_cast<unsigned char>(text_[end])) &&
           end - pos_ < 16) {
      ++end;
    }
    return fmt::format(", found \"{}\"", printable(text_.substr(pos_, end - pos_)));
  }
  size_t pos() {
    skip_space();
    return pos_;
  }
  void set_pos(size_t p) { pos_ = p; }

  bool peek_identifier() {
    const char c = peek();
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  }
  std::string identifier(std::string_view what) {
    if (!peek_identifier()) fail(fmt::format("expected {}{}", what, found()));
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string quoted() {
    expect("\"", "'\"'");
    std::string s;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;  // \" and \\ escape
      s += text_[pos_++];
    }
    if (pos_ >= text_.size()) fail("unterminated string: expected a closing '\"'");
    ++pos_;
    return s;
  }
  double number(std::string_view what) {
    skip_space();
    const char* begin = text_.data() + pos_;
    char* end = nullptr;
    const std::string copy(text_.substr(pos_));
    const double v = std::strtod(copy.c_str(), &end);
    const size_t used = static_cast<size_t>(end - copy.c_str());
    if (used == 0 || !(std::isdigit(static_cast<unsigned char>(*begin)) || *begin == '-' ||
                       *begin == '+' || *begin == '.')) {
      fail(fmt::format("expected {}{}", what, found()));
    }
    pos_ += used;
    return v;
  }
  int64_t integer(std::string_view what) {
    const size_t start = pos();
    const double v = number(what);
    if (v != std::floor(v) || std::fabs(v) > 9.0e15) {
      fail_at(start, fmt::format("expected {} (an integer), found {}", what, number_text(v)));
    }
    return static_cast<int64_t>(v);
  }

 private:
  const std::string& file_;
  int line_;
  std::string_view text_;
  size_t pos_ = 0;
};

struct Slice {
  int64_t start = 0;
  int64_t stop = -1;  // -1: to the end
  int64_t step = 1;
  bool index = false;  // a single index: the dimension is dropped
};

class Assembler {
 public:
  Assembler(const std::string& file, const config::ArchConfig& arch) : arch_(arch) {
    out_.file = file;
  }

  Assembly run(const std::string& text) {
    // A NUL byte is not text (a binary file, or a file saved as UTF-16): say so at its place
    // rather than print the line up to it, which would cut the message there.
    if (const size_t nul = text.find('\0'); nul != std::string::npos) {
      const size_t line_start = text.rfind('\n', nul);
      const size_t column = line_start == std::string::npos ? nul : nul - line_start - 1;
      const auto line_no =
          1 + std::count(text.begin(), text.begin() + static_cast<long>(nul), '\n');
      throw AssemblyError(out_.file, static_cast<int>(line_no), static_cast<int>(column) + 1,
                          "a NUL byte (\\x00): a .tasm program is text (is this a binary file?)");
    }
    int line_no = 0;
    size_t from = 0;
    while (from <= text.size()) {
      size_t nl = text.find('\n', from);
      if (nl == std::string::npos) nl = text.size();
      ++line_no;
      line(line_no, std::string_view(text).substr(from, nl - from));
      from = nl + 1;
    }
    for (const auto& e : out_.expectations) check_expectation(out_.program, out_.file, e, "");
    return std::move(out_);
  }

 private:
  Names names() const { return Names{out_.program, out_.buffers}; }

  void line(int line_no, std::string_view raw) {
    // Strip a comment (a '#' outside quotes).
    bool in_quotes = false;
    size_t cut = raw.size();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (in_quotes && raw[i] == '\\') {
        ++i;  // an escaped character inside a label
        continue;
      }
      if (raw[i] == '"') in_quotes = !in_quotes;
      if (raw[i] == '#' && !in_quotes) {
        cut = i;
        break;
      }
    }
    LineParser p(out_.file, line_no, raw.substr(0, cut));
    if (p.at_end()) return;
    std::string label;
    if (p.peek() == '"') {
      label = p.quoted();
      p.expect(":", "':' after the label");
    } else if (p.peek_identifier()) {
      const size_t save = p.pos();
      std::string word = p.identifier("a label or an engine");
      if (p.accept(":")) {
        label = word;
      } else {
        p.set_pos(save);
      }
    }
    if (p.at_end()) p.fail("a label must be followed by an instruction on the same line");
    if (p.peek() == '.') {
      if (!label.empty()) p.fail("a directive cannot have a label");
      directive(p, line_no);
    } else if (is_barrier(p)) {
      barrier(line_no, label);
    } else {
      instruction(p, line_no, label);
    }
    if (!p.at_end()) p.fail(fmt::format("expected the end of the line{}", p.found()));
  }

  bool is_barrier(LineParser& p) {
    const size_t save = p.pos();
    if (p.peek_identifier() && p.identifier("") == "barrier" && p.at_end()) return true;
    p.set_pos(save);
    return false;
  }

  // `barrier`: every engine reaches it before any goes on. Expanded into two nops per engine
  // on a semaphore of its own: each raises it, then waits until all five have. DMA transfers
  // already triggered are not waited for (wait on their queue for that).
  void barrier(int line_no, const std::string& label) {
    if (barrier_semaphore_ < 0) {
      std::string name = "barrier";
      while (names().taken(name) || names().queue(name)) name += "_";
      barrier_semaphore_ = out_.program.add_semaphore(name);
    }
    ++barriers_;
    const auto sem = static_cast<uint16_t>(barrier_semaphore_);
    const std::string text = label.empty() ? fmt::format("barrier {}", barriers_) : label;
    for (Engine e : kAllEngines) {
      Instruction arrive;
      arrive.opcode = Opcode::nop;
      arrive.engine = e;
      arrive.label = text + " arrive";
      arrive.updates.push_back(SemaphoreUpdate{sem, SemaphoreUpdateKind::add, 1});
      out_.sequence.push_back(arrive);
      out_.sequence_lines.push_back(line_no);
    }
    for (Engine e : kAllEngines) {
      Instruction leave;
      leave.opcode = Opcode::nop;
      leave.engine = e;
      leave.label = text;
      leave.waits.push_back(SemaphoreWait{sem, static_cast<int64_t>(kEngineCount) * barriers_});
      out_.sequence.push_back(leave);
      out_.sequence_lines.push_back(line_no);
    }
  }

  void check_name_free(LineParser& p, size_t at, const std::string& n) {
    if (names().taken(n) || names().queue(n))
      p.fail_at(at, fmt::format("\"{}\" is already declared", n));
  }

  std::vector<int64_t> shape(LineParser& p) {
    p.expect("[", "a shape like [128, 512]");
    std::vector<int64_t> dims;
    do {
      const size_t at = p.pos();
      const int64_t d = p.integer("a dimension");
      if (d <= 0) p.fail_at(at, "dimensions must be positive");
      dims.push_back(d);
    } while (p.accept(","));
    p.expect("]", "',' or ']'");
    return dims;
  }

  DType dtype(LineParser& p) {
    const size_t at = p.pos();
    const std::string n = p.identifier("a dtype");
    const auto t = parse_dtype(n);
    if (!t)
      p.fail_at(at, fmt::format("unknown dtype \"{}\"; expected one of {}", n, dtype_names()));
    return *t;
  }

  void directive(LineParser& p, int line_no) {
    p.expect(".", "'.'");
    const size_t at = p.pos();
    const std::string d = p.identifier("a directive");
    if (d == "arch") {
      const size_t name_at = p.pos();
      out_.arch = p.identifier("an arch preset name");
      if (!config::preset(out_.arch)) {
        p.fail_at(name_at, fmt::format("unknown arch \"{}\"; expected one of {}", out_.arch,
                                       config::preset_names()));
      }
    } else if (d == "sync") {
      const size_t mode_at = p.pos();
      const std::string mode = p.identifier("auto or manual");
      if (mode != "auto" && mode != "manual") {
        p.fail_at(mode_at, fmt::format("expected auto or manual, found \"{}\"", mode));
      }
      if (!out_.sequence.empty()) p.fail_at(at, ".sync must come before the first instruction");
      out_.auto_sync = mode == "auto";
    } else if (d == "cores") {
      const size_t n_at = p.pos();
      const int64_t n = p.integer("a number of NeuronCores");
      const int64_t most =
          int64_t{arch_.chip_cores} * std::max<uint32_t>(1, arch_.instance.chips());
      if (n < 1 || n > most) {
        p.fail_at(n_at, fmt::format("{} cores; {} has 1 to {} ({} per chip)", n, arch_.name, most,
                                    arch_.chip_cores));
      }
      if (!out_.sequence.empty()) p.fail_at(at, ".cores must come before the first instruction");
      out_.cores = static_cast<uint32_t>(n);
    } else if (d == "chips") {
      const size_t n_at = p.pos();
      const int64_t n = p.integer("a number of chips");
      if (n < 1 || n > std::max<uint32_t>(1, arch_.instance.chips())) {
        p.fail_at(n_at, fmt::format("{} chips; a {} instance has 1 to {}", n, arch_.name,
                                    arch_.instance.chips()));
      }
      if (!out_.sequence.empty()) p.fail_at(at, ".chips must come before the first instruction");
      out_.chips = static_cast<uint32_t>(n);
    } else if (d == "tensor") {
      const size_t name_at = p.pos();
      const std::string n = p.identifier("a tensor name");
      check_name_free(p, name_at, n);
      const DType t = dtype(p);
      const auto dims = shape(p);
      uint64_t bytes = size_of(t);
      bool overflow = false;
      for (int64_t x : dims)
        overflow |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(x), &bytes);
      if (overflow || bytes + out_.program.dram_bytes() > arch_.hbm_capacity_bytes) {
        p.fail_at(name_at, fmt::format("tensor {} does not fit the core's {} bytes of HBM", n,
                                       arch_.hbm_capacity_bytes));
      }
      out_.program.add_dram_tensor(n, t, dims);
      if (p.accept("init")) {
        p.expect("=", "'='");
        out_.inits.emplace_back(n, init(p));
      }
    } else if (d == "buffer") {
      const size_t name_at = p.pos();
      const std::string n = p.identifier("a buffer name");
      check_name_free(p, name_at, n);
      const size_t mem_at = p.pos();
      const std::string m = p.identifier("sbuf or psum");
      if (m != "sbuf" && m != "psum")
        p.fail_at(mem_at, fmt::format("expected sbuf or psum, found \"{}\"", m));
      OnChipBuffer b;
      b.name = n;
      b.memory = m == "sbuf" ? Memory::sbuf : Memory::psum;
      b.dtype = dtype(p);
      const size_t shape_at = p.pos();
      b.shape = shape(p);
      if (b.shape.size() < 2 || b.shape.size() > 1 + kMaxFreeDims) {
        p.fail_at(shape_at, "a buffer's shape is [partitions, 1 to 4 free dimensions]");
      }
      if (b.shape[0] > arch_.partitions) {
        p.fail_at(shape_at,
                  fmt::format("{} partitions; the core has {}", b.shape[0], arch_.partitions));
      }
      const uint64_t capacity =
          b.memory == Memory::sbuf ? arch_.sbuf_partition_bytes : arch_.psum_partition_bytes;
      uint64_t& next = b.memory == Memory::sbuf ? next_sbuf_ : next_psum_;
      // PSUM buffers start on a bank so an accumulation group fits one; SBUF rows on 64 bytes.
      const uint64_t align =
          b.memory == Memory::psum ? arch_.psum_partition_bytes / arch_.psum_banks : 64;
      b.offset = (next + align - 1) / align * align;
      if (b.offset + b.partition_bytes() > capacity) {
        p.fail_at(name_at,
                  fmt::format("buffer {} needs {} bytes per partition at offset {}; {} has "
                              "{} bytes per partition",
                              n, b.partition_bytes(), b.offset, name_of(b.memory), capacity));
      }
      next = b.offset + b.partition_bytes();
      out_.buffers.push_back(b);
    } else if (d == "semaphore") {
      const size_t name_at = p.pos();
      const std::string n = p.identifier("a semaphore name");
      check_name_free(p, name_at, n);
      out_.program.add_semaphore(n);
    } else if (d == "queue") {
      const size_t name_at = p.pos();
      const std::string n = p.identifier("a DMA queue name");
      check_name_free(p, name_at, n);
      out_.program.add_queue(n);
    } else if (d == "source") {
      // A source location ("kernel.py:12") of instructions traced from Python; src=N names the
      // N-th .source line.
      out_.program.sources.push_back(p.quoted());
    } else if (d == "expect") {
      Expectation e;
      e.line = line_no;
      const size_t out_at = p.pos();
      e.output = p.identifier("an output tensor");
      if (!names().tensor(e.output)) p.fail_at(out_at, fmt::format("no tensor \"{}\"", e.output));
      p.expect("=", "'='");
      const size_t fn_at = p.pos();
      e.function = p.identifier("a reference function");
      if (!known_reference(e.function)) {
        p.fail_at(fn_at, fmt::format("unknown reference \"{}\"; expected {}", e.function,
                                     reference_names()));
      }
      p.expect("(", "'('");
      do {
        if (p.accept("eps")) {
          p.expect("=", "'='");
          e.eps = p.number("a number");
          continue;
        }
        if (p.accept("group")) {
          p.expect("=", "'='");
          const size_t g_at = p.pos();
          const int64_t g = p.integer("cores per group");
          if (g < 1 || g > 255) p.fail_at(g_at, "group is 1 to 255 cores");
          e.group = static_cast<uint32_t>(g);
          continue;
        }
        if (p.accept("peer")) {
          // recv's partner: relative, as an SPMD program names it (peer=+1, peer=-1).
          p.expect("=", "'='");
          const size_t k_at = p.pos();
          if (p.peek() != '+' && p.peek() != '-')
            p.fail_at(k_at, "expected a relative core, peer=+K or peer=-K");
          const int64_t k = p.integer("a relative core");
          if (k < -32767 || k > 32767) p.fail_at(k_at, "peer is -32767 to +32767");
          e.peer = static_cast<int32_t>(k);
          continue;
        }
        if (p.accept("scale")) {
          p.expect("=", "'='");
          e.scale = p.number("a number");
          continue;
        }
        const size_t in_at = p.pos();
        const std::string in = p.identifier("an input tensor");
        if (!names().tensor(in)) p.fail_at(in_at, fmt::format("no tensor \"{}\"", in));
        e.inputs.push_back(in);
      } while (p.accept(","));
      p.expect(")", "',' or ')'");
      out_.expectations.push_back(e);
    } else {
      p.fail_at(
          at, fmt::format("unknown directive .{}; expected .arch, .sync, .cores, .chips, .tensor, "
                          ".buffer, .semaphore, .queue, .source or .expect",
                          d));
    }
  }

  TensorInit init(LineParser& p) {
    TensorInit i;
    const size_t at = p.pos();
    const std::string kind = p.identifier("zeros, normal(...) or uniform(...)");
    if (kind == "zeros") return i;
    if (kind != "normal" && kind != "uniform") {
      p.fail_at(at, fmt::format("unknown init \"{}\"; expected zeros, normal(mean, stddev, seed=N) "
                                "or uniform(low, high, seed=N)",
                                kind));
    }
    i.kind = kind == "normal" ? TensorInit::Kind::normal : TensorInit::Kind::uniform;
    p.expect("(", "'('");
    i.a = p.number("a number");
    p.expect(",", "','");
    i.b = p.number("a number");
    if (p.accept(",")) {
      p.expect("seed", "seed=N");
      p.expect("=", "'='");
      const size_t seed_at = p.pos();
      const int64_t s = p.integer("a seed");
      if (s < 0) p.fail_at(seed_at, "a seed is a non-negative integer");
      i.seed = static_cast<uint64_t>(s);
    }
    p.expect(")", "')'");
    return i;
  }

  Slice slice(LineParser& p) {
    Slice s;
    if (p.accept(":")) {
      if (p.peek() == ':') {
        p.accept(":");
        s.step = p.integer("a step");
      }
      return s;
    }
    s.start = p.integer("an index or a slice a:b");
    if (!p.accept(":")) {
      s.index = true;
      s.stop = s.start + 1;
      return s;
    }
    if (p.peek() != ',' && p.peek() != ']' && p.peek() != ':')
      s.stop = p.integer("the end of the slice");
    if (p.accept(":")) s.step = p.integer("a step");
    return s;
  }

  // Applies a slice to a dimension of `extent`: returns (first, count), checking bounds.
  std::pair<int64_t, uint32_t> resolve(LineParser& p, size_t at, const Slice& s, int64_t extent,
                                       int dim) {
    const int64_t stop = s.stop < 0 ? extent : s.stop;
    if (s.step <= 0) p.fail_at(at, fmt::format("dimension {}: the step must be positive", dim));
    if (s.start < 0 || stop > extent || s.start >= stop) {
      p.fail_at(at, fmt::format("dimension {}: slice {}:{} is outside [0, {})", dim, s.start, stop,
                                extent));
    }
    return {s.start, static_cast<uint32_t>((stop - s.start + s.step - 1) / s.step)};
  }

  AccessPattern access_pattern(LineParser& p) {
    const size_t at = p.pos();
    const std::string n = p.identifier("an access pattern");
    std::optional<DType> view;
    if (p.accept(".")) view = dtype(p);
    const Names nm = names();
    const DramTensor* t = nm.tensor(n);
    const OnChipBuffer* b = nm.buffer(n);
    const bool raw = n == "sbuf" || n == "psum";
    if (!t && !b && !raw) p.fail_at(at, fmt::format("no tensor or buffer named \"{}\"", n));
    AccessPattern ap;
    ap.memory = t ? Memory::hbm : b ? b->memory : (n == "sbuf" ? Memory::sbuf : Memory::psum);
    if (raw && !view) p.fail_at(at, fmt::format("{} needs a dtype: {}.bf16{{...}}", n, n));
    ap.dtype = view ? *view : t ? t->dtype : b->dtype;
    const int64_t es = size_of(ap.dtype);
    const uint64_t base = t ? t->address : b ? b->offset : 0;

    if (p.accept("{")) {  // explicit: {a:b[*S], +BYTES, [stride,count], ...}
      const int64_t first = p.integer("the first partition");
      p.expect(":", "':'");
      const int64_t last = p.integer("the end of the partition range");
      if (first < 0 || last <= first)
        p.fail_at(at, fmt::format("empty partition range {}:{}", first, last));
      int64_t pstride = 0;
      if (p.accept("*")) {
        if (!t) p.fail_at(at, "a partition stride (*S) applies to HBM tensors only");
        pstride = p.integer("a partition stride in elements");
      }
      p.expect(",", "',' then +BYTE_OFFSET");
      p.expect("+", "'+' and a byte offset");
      const size_t off_at = p.pos();
      const int64_t off = p.integer("a byte offset");
      if (off < 0) p.fail_at(off_at, "the byte offset must not be negative");
      ap.partitions = static_cast<uint32_t>(last - first);
      if (t) {
        ap.partition_stride = pstride;
        const int64_t o = static_cast<int64_t>(base) + off + first * pstride * es;
        if (o < 0) p.fail_at(at, "the pattern starts before the tensor");
        ap.offset = static_cast<uint64_t>(o);
      } else {
        ap.start_partition = static_cast<uint32_t>(first);
        ap.offset = base + static_cast<uint64_t>(off);
      }
      while (p.accept(",")) {
        if (ap.ndims == kMaxFreeDims)
          p.fail(fmt::format("at most {} free dimensions", kMaxFreeDims));
        p.expect("[", "'[stride, count]'");
        const int64_t stride = p.integer("a stride in elements");
        p.expect(",", "','");
        const size_t count_at = p.pos();
        const int64_t count = p.integer("a count");
        if (count <= 0 || count > 65535) p.fail_at(count_at, "a count is 1 to 65535");
        p.expect("]", "']'");
        ap.dims[ap.ndims++] = Dim{stride, static_cast<uint32_t>(count)};
      }
      p.expect("}", "',' or '}'");
      return ap;
    }

    p.expect("[", "'[' slices ']' or '{' explicit pattern '}'");
    if (raw)
      p.fail_at(
          at,
          fmt::format(
              "{} has no shape: use the explicit form {}.dtype{{a:b, +offset, [stride, count]}}", n,
              n));
    if (view) p.fail_at(at, "a dtype view needs the explicit form {...}");
    std::vector<int64_t> dims = t ? t->shape : b->shape;
    std::vector<Slice> slices;
    std::vector<size_t> slice_at;
    do {
      slice_at.push_back(p.pos());
      slices.push_back(slice(p));
    } while (p.accept(","));
    p.expect("]", "',' or ']'");
    if (slices.size() > dims.size()) {
      p.fail_at(at,
                fmt::format("{} slices for {} dimensions of {}", slices.size(), dims.size(), n));
    }
    while (slices.size() < dims.size()) {
      slices.push_back(Slice{});
      slice_at.push_back(at);
    }
    // Row-major strides of the free dims (every dim after the first).
    std::vector<int64_t> stride(dims.size(), 1);
    for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
      stride[i] = stride[i + 1] * dims[i + 1];
    const auto [p0, pc] = resolve(p, slice_at[0], slices[0], dims[0], 0);
    int64_t offset_elements = 0;
    if (t) {
      ap.partitions = pc;
      ap.partition_stride = stride[0] * slices[0].step;
      offset_elements += p0 * stride[0];
    } else {
      if (slices[0].step != 1) p.fail_at(slice_at[0], "partitions cannot be strided");
      ap.start_partition = static_cast<uint32_t>(p0);
      ap.partitions = pc;
    }
    for (size_t i = 1; i < dims.size(); ++i) {
      const auto [f, c] = resolve(p, slice_at[i], slices[i], dims[i], static_cast<int>(i));
      offset_elements += f * stride[i];
      if (slices[i].index) continue;
      if (ap.ndims == kMaxFreeDims)
        p.fail_at(at, fmt::format("at most {} free dimensions", kMaxFreeDims));
      ap.dims[ap.ndims++] = Dim{stride[i] * slices[i].step, c};
    }
    if (ap.ndims == 0) ap.dims[ap.ndims++] = Dim{1, 1};
    ap.offset = base + static_cast<uint64_t>(offset_elements * es);
    return ap;
  }

  bool looks_like_access_pattern(LineParser& p) {
    const size_t save = p.pos();
    if (!p.peek_identifier()) return false;
    p.identifier("");
    if (p.accept(".")) {
      if (p.peek_identifier()) p.identifier("");
    }
    const char c = p.peek();
    p.set_pos(save);
    return c == '[' || c == '{';
  }

  ScalarOperand scalar_operand(LineParser& p) {
    if (looks_like_access_pattern(p)) return ScalarOperand::from(access_pattern(p));
    return ScalarOperand::immediate(
        static_cast<float>(p.number("a number or a [P, 1] access pattern")));
  }

  template <typename T>
  T enum_value(LineParser& p, std::optional<T> (*parse)(std::string_view), std::string_view what) {
    const size_t at = p.pos();
    const std::string n = p.identifier(what);
    const auto v = parse(n);
    if (!v) p.fail_at(at, fmt::format("unknown {} \"{}\"", what, n));
    return *v;
  }

  uint16_t semaphore_ref(LineParser& p) {
    const size_t at = p.pos();
    const std::string n = p.identifier("a semaphore or queue name");
    const auto s = names().semaphore(n);
    if (!s)
      p.fail_at(
          at, fmt::format(
                  "no semaphore or queue named \"{}\" (declare it with .semaphore or .queue)", n));
    return *s;
  }

  void instruction(LineParser& p, int line_no, const std::string& label) {
    const size_t start = p.pos();
    const std::string eng = p.identifier("an engine (pe, dve, act, pool, sp)");
    const auto engine = parse_assembler_engine(eng);
    if (!engine) {
      p.fail_at(start, fmt::format("unknown engine \"{}\"; expected pe, dve, act, pool or sp (or "
                                   "tensor, vector, scalar, gpsimd, sync)",
                                   eng));
    }
    p.expect(".", "'.' and an opcode after the engine");
    const size_t op_at = p.pos();
    const std::string opname = p.identifier("an opcode");
    const auto op = parse_opcode(opname);
    if (!op) p.fail_at(op_at, fmt::format("unknown opcode \"{}\" (trnsim isa lists them)", opname));
    if (!runs_on(*op, *engine)) {
      p.fail_at(op_at, fmt::format("{} does not run on {}", opname, name_of(*engine)));
    }
    Instruction in;
    in.opcode = *op;
    in.engine = *engine;
    in.label = label;
    in.accumulate_start = false;
    in.accumulate_stop = false;
    const uint32_t fields = fields_of(*op);
    const int want = positional_operands(*op);
    int have = 0;
    bool first = true;
    while (!p.at_end()) {
      if (!first) p.expect(",", "',' between operands");
      first = false;
      const size_t item_at = p.pos();
      if (looks_like_access_pattern(p)) {
        if (have >= want)
          p.fail_at(item_at, fmt::format("{} takes {} access patterns", opname, want));
        const AccessPattern ap = access_pattern(p);
        if (have == 0) {
          in.dst = ap;
        } else {
          in.src[have - 1] = ap;
        }
        ++have;
        continue;
      }
      const std::string key = p.identifier("an access pattern or an option key=value");
      auto needs = [&](uint32_t f) {
        if (!(fields & f))
          p.fail_at(item_at, fmt::format("{} takes no option \"{}\"", opname, key));
      };
      if (key == "dge") {
        needs(kQueue);
        in.dma_dge = true;  // hardware descriptor generation (v3): D2's ~600 ns instruction
        continue;
      }
      if (key == "negate") {
        needs(kNegate);
        in.negate = true;
        continue;
      }
      if (key == "start" || key == "stop") {
        needs(kStartStop);
        (key == "start" ? in.accumulate_start : in.accumulate_stop) = true;
        continue;
      }
      p.expect("=", fmt::format("'=' after {}", key));
      if (key == "wait") {
        const uint16_t s = semaphore_ref(p);
        p.expect(">=", "'>=' (a wait is SEMAPHORE>=VALUE)");
        in.waits.push_back(SemaphoreWait{s, p.integer("a semaphore value")});
      } else if (key == "update") {
        const uint16_t s = semaphore_ref(p);
        if (p.accept("+=")) {
          in.updates.push_back(
              SemaphoreUpdate{s, SemaphoreUpdateKind::add, p.integer("an increment")});
        } else {
          p.expect("=", "'+=' or '=' (an update is SEMAPHORE+=N or SEMAPHORE=N)");
          in.updates.push_back(SemaphoreUpdate{s, SemaphoreUpdateKind::set, p.integer("a value")});
        }
      } else if (key == "func") {
        needs(kFunction);
        in.function =
            enum_value<ActivationFunction>(p, parse_activation_function, "activation function");
      } else if (key == "scale") {
        needs(kScale);
        in.scale = scalar_operand(p);
      } else if (key == "bias") {
        needs(kBias);
        in.bias = scalar_operand(p);
      } else if (key == "accumulate") {
        needs(kAccumulate);
        in.accumulate = access_pattern(p);
      } else if (key == "op0" || key == "op") {
        needs(kOp0);
        in.op0 = enum_value<AluOp>(p, parse_alu_op, "ALU op");
      } else if (key == "cc") {
        needs(kCollective);
        in.collective_op = enum_value<CollectiveOp>(p, parse_collective_op, "collective");
      } else if (key == "group") {
        needs(kCollective);
        const size_t at = p.pos();
        const int64_t v = p.integer("cores per group");
        if (v < 1 || v > 255) p.fail_at(at, "group is 1 to 255 cores");
        in.collective_group = static_cast<uint8_t>(v);
      } else if (key == "peer") {
        // send/recv's partner: an absolute core (peer=2), or relative to the core running the
        // instruction (peer=+1, peer=-1; modulo the run's cores).
        needs(kCollective);
        const size_t at = p.pos();
        const bool relative = p.peek() == '+' || p.peek() == '-';
        const int64_t v = p.integer("a core (peer=P, or peer=+K / peer=-K relative)");
        if (v < -32767 || v > 32767 || (!relative && v < 0))
          p.fail_at(at, "peer is a core 0 to 32767, or +K / -K with K at most 32767");
        in.peer_kind = relative ? PeerKind::relative : PeerKind::absolute;
        in.peer = static_cast<int16_t>(v);
      } else if (key == "op1") {
        needs(kOp1);
        in.op1 = enum_value<AluOp>(p, parse_alu_op, "ALU op");
      } else if (key == "operand0" || key == "value") {
        needs(kOperand0);
        in.operand0 = scalar_operand(p);
      } else if (key == "operand1") {
        needs(kOperand1);
        in.operand1 = scalar_operand(p);
      } else if (key == "reduce_dims") {
        needs(kReduceDims);
        const size_t at = p.pos();
        const int64_t d = p.integer("a number of dimensions");
        if (d < 1 || d > kMaxFreeDims) p.fail_at(at, "reduce_dims is 1 to 4");
        in.reduce_dims = static_cast<uint8_t>(d);
      } else if (key == "queue") {
        needs(kQueue);
        const size_t at = p.pos();
        const std::string q = p.identifier("a DMA queue name");
        const auto id = names().queue(q);
        if (!id)
          p.fail_at(at, fmt::format("no DMA queue named \"{}\" (declare it with .queue)", q));
        in.dma_queue = *id;
        has_queue_ = true;
      } else if (key == "base") {
        if (!(fields & kBase)) needs(kAffine);
        in.extra.edit().index_base = static_cast<int32_t>(p.integer("an integer"));
      } else if (key == "reverse") {
        needs(kReverse);
        const size_t at = p.pos();
        const int64_t v = p.integer("0 to 3");
        if (v < 0 || v > 3) p.fail_at(at, "reverse is 0 to 3 (bit 0: op0, bit 1: op1)");
        in.reverse = static_cast<uint8_t>(v);
      } else if (key == "elements") {
        needs(kGather);
        const size_t at = p.pos();
        const int64_t v = p.integer("elements per index");
        if (v < 1 || v > 32) p.fail_at(at, "elements is 1 to 32");
        in.gather_elements = static_cast<uint8_t>(v);
      } else if (key == "indices") {
        needs(kGather);
        const size_t at = p.pos();
        const int64_t v = p.integer("a number of indices");
        if (v < 1 || v > 65536) p.fail_at(at, "indices is 1 to 65536");
        in.gather_indices = static_cast<uint32_t>(v);
      } else if (key == "src") {
        const size_t at = p.pos();
        const int64_t v = p.integer("a .source number");
        if (v < 1 || static_cast<size_t>(v) > out_.program.sources.size()) {
          p.fail_at(at, fmt::format("src={} names no .source line (there are {})", v,
                                    out_.program.sources.size()));
        }
        in.source = static_cast<uint32_t>(v);
      } else if (key == "pstep") {
        needs(kAffine);
        in.extra.edit().partition_step = static_cast<int32_t>(p.integer("an integer"));
      } else if (key == "steps") {
        needs(kAffine);
        p.expect("[", "'[' and one step per free dimension");
        int k = 0;
        do {
          if (k == kMaxFreeDims) p.fail(fmt::format("at most {} steps", kMaxFreeDims));
          in.extra.edit().index_steps[k++] = static_cast<int32_t>(p.integer("a step"));
        } while (p.accept(","));
        p.expect("]", "',' or ']'");
      } else if (key == "fill") {
        needs(kFill);
        in.extra.edit().fill = static_cast<float>(p.number("a number"));
      } else if (key == "mask") {
        needs(kMask);
        p.expect("[", "'[' and 32 source lanes");
        int k = 0;
        do {
          if (k == 32) p.fail("a shuffle mask has 32 entries");
          const size_t at = p.pos();
          const int64_t v = p.integer("a lane 0-31");
          if (v < 0 || v > 31) p.fail_at(at, "a lane is 0 to 31");
          in.extra.edit().shuffle_mask[k++] = static_cast<uint8_t>(v);
        } while (p.accept(","));
        p.expect("]", "',' or ']'");
        if (k != 32) p.fail(fmt::format("a shuffle mask has 32 entries, found {}", k));
      } else {
        p.fail_at(item_at, fmt::format("unknown option \"{}\"", key));
      }
    }
    if (*op == Opcode::collective && is_point_to_point(in.collective_op)) {
      // send names only what it sends, recv only where it receives.
      const bool send = in.collective_op == CollectiveOp::send;
      if (have != 1) {
        p.fail(fmt::format("cc={} takes one access pattern ({}), found {}",
                           name_of(in.collective_op),
                           send ? "src, what it sends" : "dst, where it receives", have));
      }
      if (send) std::swap(in.src[0], in.dst);
    } else if (have != want) {
      p.fail(fmt::format("{} takes {} access patterns ({}), found {}", opname, want,
                         info(*op).operands, have));
    }
    if (is_dma(*op) && !has_queue_for(in)) p.fail("a DMA instruction needs queue=NAME");
    if (*op == Opcode::matmul && !in.accumulate_start && !in.accumulate_stop) {
      // Neither flag: the middle of an accumulation group. Allowed.
    }
    const std::string err = check_instruction(out_.program, arch_, in);
    if (!err.empty()) p.fail_at(start, err);
    out_.sequence.push_back(in);
    out_.sequence_lines.push_back(line_no);
    has_queue_ = false;
  }

  bool has_queue_for(const Instruction&) const { return has_queue_; }

  const config::ArchConfig& arch_;
  Assembly out_;
  uint64_t next_sbuf_ = 0;
  uint64_t next_psum_ = 0;
  bool has_queue_ = false;
  int32_t barrier_semaphore_ = -1;
  int64_t barriers_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Printing

}  // namespace

Assembly parse_assembly(const std::string& text, const std::string& file,
                        const config::ArchConfig& arch) {
  return Assembler(file, arch).run(text);
}

}  // namespace trnsim::isa
