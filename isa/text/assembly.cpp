#include "isa/text/assembly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "isa/validate.hpp"

namespace trnsim::isa {

AssemblyError::AssemblyError(const std::string& file, int line_, int column_,
                             const std::string& what)
    : std::runtime_error(line_ > 0 ? fmt::format("{}:{}:{}: {}", file, line_, column_, what)
                                   : fmt::format("{}: {}", file, what)),
      line(line_),
      column(column_) {}

uint64_t OnChipBuffer::partition_bytes() const {
  uint64_t n = size_of(dtype);
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<uint64_t>(shape[i]);
  return n;
}

namespace {

std::optional<Engine> parse_assembler_engine(std::string_view s) {
  for (Engine e : kAllEngines) {
    if (s == assembler_name_of(e) || s == key_of(e)) return e;
  }
  return std::nullopt;
}

// Which options an opcode takes; the printer and the JSON form write exactly these.
enum Field : uint32_t {
  kFunction = 1 << 0,
  kScale = 1 << 1,
  kBias = 1 << 2,
  kAccumulate = 1 << 3,
  kOp0 = 1 << 4,
  kOp1 = 1 << 5,
  kOperand0 = 1 << 6,
  kOperand1 = 1 << 7,
  kReduceDims = 1 << 8,
  kStartStop = 1 << 9,
  kQueue = 1 << 10,
  kAffine = 1 << 11,
  kFill = 1 << 12,
  kMask = 1 << 13,
};

uint32_t fields_of(Opcode op) {
  switch (op) {
    case Opcode::dma_copy:
    case Opcode::dma_transpose:
      return kQueue;
    case Opcode::matmul:
      return kStartStop;
    case Opcode::activation:
      return kFunction | kScale | kBias | kAccumulate;
    case Opcode::tensor_tensor:
      return kOp0;
    case Opcode::tensor_scalar:
      return kOp0 | kOperand0 | kOp1 | kOperand1;
    case Opcode::scalar_tensor_tensor:
      return kOp0 | kOperand0 | kOp1;
    case Opcode::tensor_reduce:
      return kOp0 | kReduceDims;
    case Opcode::memset:
      return kOperand0;
    case Opcode::iota:
      return kAffine;
    case Opcode::affine_select:
      return kAffine | kOp0 | kFill;
    case Opcode::partition_reduce:
    case Opcode::partition_all_reduce:
      return kOp0;
    case Opcode::shuffle:
      return kMask;
    default:
      return 0;
  }
}

// Access patterns written positionally: dst first, then the sources.
int positional_operands(Opcode op) {
  switch (op) {
    case Opcode::nop:
      return 0;
    case Opcode::memset:
    case Opcode::iota:
      return 1;
    case Opcode::matmul:
    case Opcode::tensor_tensor:
    case Opcode::scalar_tensor_tensor:
      return 3;
    case Opcode::select:
      return 4;
    default:
      return 2;
  }
}

std::string number_text(double v) {
  return fmt::format("{}", v);
}

// ---------------------------------------------------------------------------------------------
// Parsing

// An expectation's tensors exist and fit its reference function (what lowering computes);
// else AssemblyError at its line, or at `where` (a JSON path) in the JSON form.
void check_expectation(const Program& program, const std::string& file, const Expectation& e,
                       const std::string& where) {
  auto fail = [&](const std::string& what) {
    throw AssemblyError(file, e.line, 1, where.empty() ? what : where + ": " + what);
  };
  const DramTensor* out = program.find_dram_tensor(e.output);
  if (out == nullptr) fail(fmt::format("no tensor \"{}\"", e.output));
  std::vector<const DramTensor*> in;
  for (const auto& n : e.inputs) {
    in.push_back(program.find_dram_tensor(n));
    if (in.back() == nullptr) fail(fmt::format("no tensor \"{}\"", n));
  }
  if (e.function == "copy") {
    if (in.size() != 1) fail("copy(x) takes one input");
    if (in[0]->elements() != out->elements()) fail("copy: input and output sizes differ");
  } else if (e.function == "rmsnorm") {
    if (in.size() != 2) fail("rmsnorm(x, gamma) takes two inputs");
    if (in[0]->shape.size() != 2 || in[0]->shape != out->shape ||
        in[1]->elements() != static_cast<uint64_t>(in[0]->shape[1])) {
      fail("rmsnorm: x and the output must be [rows, hidden] and gamma [hidden]");
    }
  } else if (e.function == "matmul") {
    if (in.size() != 2) fail("matmul(a_transposed, b) takes two inputs");
    const auto& a = in[0]->shape;
    const auto& b = in[1]->shape;
    if (a.size() != 2 || b.size() != 2 || out->shape.size() != 2 || a[0] != b[0] ||
        out->shape[0] != a[1] || out->shape[1] != b[1]) {
      fail("matmul: inputs are a_transposed [K, M] and b [K, N], the output [M, N]");
    }
  } else {
    fail(fmt::format("unknown reference \"{}\"; expected rmsnorm, matmul or copy", e.function));
  }
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
    return fmt::format(", found \"{}\"", text_.substr(pos_, end - pos_));
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
    } else if (d == "expect") {
      Expectation e;
      e.line = line_no;
      const size_t out_at = p.pos();
      e.output = p.identifier("an output tensor");
      if (!names().tensor(e.output)) p.fail_at(out_at, fmt::format("no tensor \"{}\"", e.output));
      p.expect("=", "'='");
      const size_t fn_at = p.pos();
      e.function = p.identifier("rmsnorm, matmul or copy");
      if (e.function != "rmsnorm" && e.function != "matmul" && e.function != "copy") {
        p.fail_at(fn_at, fmt::format("unknown reference \"{}\"; expected rmsnorm, matmul or copy",
                                     e.function));
      }
      p.expect("(", "'('");
      do {
        if (p.accept("eps")) {
          p.expect("=", "'='");
          e.eps = p.number("a number");
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
      p.fail_at(at, fmt::format("unknown directive .{}; expected .arch, .sync, .tensor, .buffer, "
                                ".semaphore, .queue or .expect",
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
        needs(kAffine);
        in.index_base = static_cast<int32_t>(p.integer("an integer"));
      } else if (key == "pstep") {
        needs(kAffine);
        in.partition_step = static_cast<int32_t>(p.integer("an integer"));
      } else if (key == "steps") {
        needs(kAffine);
        p.expect("[", "'[' and one step per free dimension");
        int k = 0;
        do {
          if (k == kMaxFreeDims) p.fail(fmt::format("at most {} steps", kMaxFreeDims));
          in.index_steps[k++] = static_cast<int32_t>(p.integer("a step"));
        } while (p.accept(","));
        p.expect("]", "',' or ']'");
      } else if (key == "fill") {
        needs(kFill);
        in.fill = static_cast<float>(p.number("a number"));
      } else if (key == "mask") {
        needs(kMask);
        p.expect("[", "'[' and 32 source lanes");
        int k = 0;
        do {
          if (k == 32) p.fail("a shuffle mask has 32 entries");
          const size_t at = p.pos();
          const int64_t v = p.integer("a lane 0-31");
          if (v < 0 || v > 31) p.fail_at(at, "a lane is 0 to 31");
          in.shuffle_mask[k++] = static_cast<uint8_t>(v);
        } while (p.accept(","));
        p.expect("]", "',' or ']'");
        if (k != 32) p.fail(fmt::format("a shuffle mask has 32 entries, found {}", k));
      } else {
        p.fail_at(item_at, fmt::format("unknown option \"{}\"", key));
      }
    }
    if (have != want) {
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

struct Printer {
  const Program& program;
  const std::vector<OnChipBuffer>& buffers;

  std::string access_pattern(const AccessPattern& ap) const {
    const int64_t es = size_of(ap.dtype);
    std::string name;
    std::optional<DType> declared;
    uint64_t base = 0;
    std::string range;
    if (ap.memory == Memory::hbm) {
      const DramTensor* t = nullptr;
      for (const auto& d : program.dram_tensors) {
        if (d.address <= ap.offset) t = &d;
      }
      if (t == nullptr) t = &program.dram_tensors.front();
      name = t->name;
      declared = t->dtype;
      base = t->address;
      range = fmt::format("0:{}*{}", ap.partitions, ap.partition_stride);
    } else {
      for (const auto& b : buffers) {
        if (b.memory == ap.memory && b.offset <= ap.offset &&
            ap.offset < b.offset + b.partition_bytes()) {
          name = b.name;
          declared = b.dtype;
          base = b.offset;
        }
      }
      if (name.empty()) name = ap.memory == Memory::sbuf ? "sbuf" : "psum";
      range = fmt::format("{}:{}", ap.start_partition, ap.start_partition + ap.partitions);
    }
    (void)es;
    std::string s = name;
    if (!declared || *declared != ap.dtype) s += fmt::format(".{}", name_of(ap.dtype));
    s += fmt::format("{{{}, +{}", range, ap.offset - base);
    for (int i = 0; i < ap.ndims; ++i)
      s += fmt::format(", [{},{}]", ap.dims[i].stride, ap.dims[i].count);
    return s + "}";
  }

  std::string scalar(const ScalarOperand& s) const {
    return s.per_partition.present() ? access_pattern(s.per_partition) : number_text(s.imm);
  }

  static std::string escaped(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  }

  static bool identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
  }

  std::string instruction(const Instruction& in) const {
    std::string s;
    if (!in.label.empty())
      s += identifier(in.label) ? in.label + ": " : fmt::format("\"{}\": ", escaped(in.label));
    s += fmt::format("{}.{}", assembler_name_of(in.engine), name_of(in.opcode));
    std::vector<std::string> items;
    const int n = positional_operands(in.opcode);
    if (n > 0) items.push_back(access_pattern(in.dst));
    for (int i = 1; i < n; ++i) items.push_back(access_pattern(in.src[i - 1]));
    const uint32_t f = fields_of(in.opcode);
    if (f & kQueue) items.push_back("queue=" + program.queues[in.dma_queue].name);
    if ((f & kQueue) && in.dma_dge) items.push_back("dge");
    if (f & kStartStop) {
      if (in.accumulate_start) items.push_back("start");
      if (in.accumulate_stop) items.push_back("stop");
    }
    if (f & kFunction) items.push_back(fmt::format("func={}", name_of(in.function)));
    if (f & kScale) items.push_back("scale=" + scalar(in.scale));
    if (f & kBias) items.push_back("bias=" + scalar(in.bias));
    if ((f & kAccumulate) && in.accumulate.present())
      items.push_back("accumulate=" + access_pattern(in.accumulate));
    if (f & kOp0) items.push_back(fmt::format("op0={}", name_of(in.op0)));
    if (f & kOperand0) items.push_back("operand0=" + scalar(in.operand0));
    if (f & kOp1) items.push_back(fmt::format("op1={}", name_of(in.op1)));
    if (f & kOperand1) items.push_back("operand1=" + scalar(in.operand1));
    if (f & kReduceDims) items.push_back(fmt::format("reduce_dims={}", in.reduce_dims));
    if (f & kAffine) {
      items.push_back(fmt::format("base={}", in.index_base));
      items.push_back(fmt::format("pstep={}", in.partition_step));
      items.push_back(fmt::format("steps=[{}]", fmt::join(in.index_steps, ", ")));
    }
    if (f & kFill) items.push_back("fill=" + number_text(in.fill));
    if (f & kMask) items.push_back(fmt::format("mask=[{}]", fmt::join(in.shuffle_mask, ",")));
    for (const auto& w : in.waits) {
      items.push_back(fmt::format("wait={}>={}", program.semaphores[w.semaphore].name, w.value));
    }
    for (const auto& u : in.updates) {
      items.push_back(fmt::format("update={}{}{}", program.semaphores[u.semaphore].name,
                                  u.kind == SemaphoreUpdateKind::add ? "+=" : "=", u.value));
    }
    if (!items.empty()) s += " " + fmt::format("{}", fmt::join(items, ", "));
    return s;
  }
};

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string init_text(const TensorInit& i) {
  switch (i.kind) {
    case TensorInit::Kind::zeros:
      return "zeros";
    case TensorInit::Kind::normal:
      return fmt::format("normal({}, {}, seed={})", number_text(i.a), number_text(i.b), i.seed);
    case TensorInit::Kind::uniform:
      return fmt::format("uniform({}, {}, seed={})", number_text(i.a), number_text(i.b), i.seed);
  }
  return "zeros";
}

}  // namespace

Assembly parse_assembly(const std::string& text, const std::string& file,
                        const config::ArchConfig& arch) {
  return Assembler(file, arch).run(text);
}

std::string print_assembly(const Program& program, const std::vector<OnChipBuffer>& buffers,
                           const std::vector<std::pair<std::string, TensorInit>>& inits,
                           const std::vector<Expectation>& expectations) {
  std::string s = "# trnsim assembly; per-engine streams with their semaphores\n.sync manual\n";
  for (const auto& t : program.dram_tensors) {
    s += fmt::format(".tensor {} {} {}", t.name, name_of(t.dtype), shape_text(t.shape));
    for (const auto& [n, i] : inits) {
      if (n == t.name) s += " init=" + init_text(i);
    }
    s += "\n";
  }
  for (const auto& b : buffers) {
    s += fmt::format(".buffer {} {} {} {}\n", b.name, b.memory == Memory::sbuf ? "sbuf" : "psum",
                     name_of(b.dtype), shape_text(b.shape));
  }
  // Queues first: each declares its own semaphore, which keeps the semaphore numbering.
  std::vector<bool> queue_semaphore(program.semaphores.size(), false);
  for (const auto& q : program.queues) queue_semaphore[q.semaphore] = true;
  size_t next_queue = 0;
  for (size_t i = 0; i < program.semaphores.size(); ++i) {
    if (queue_semaphore[i]) {
      s += fmt::format(".queue {}\n", program.queues[next_queue++].name);
    } else {
      s += fmt::format(".semaphore {}\n", program.semaphores[i].name);
    }
  }
  for (const auto& e : expectations) {
    s += fmt::format(".expect {} = {}({}{})\n", e.output, e.function, fmt::join(e.inputs, ", "),
                     e.function == "rmsnorm" ? fmt::format(", eps={}", number_text(e.eps)) : "");
  }
  const Printer printer{program, buffers};
  for (Engine e : kAllEngines) {
    if (program.stream(e).empty()) continue;
    s += fmt::format("\n# {}\n", name_of(e));
    for (const auto& in : program.stream(e)) s += printer.instruction(in) + "\n";
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// JSON form

namespace {

nlohmann::json ap_json(const AccessPattern& ap) {
  nlohmann::json dims = nlohmann::json::array();
  for (int i = 0; i < ap.ndims; ++i) dims.push_back({ap.dims[i].stride, ap.dims[i].count});
  return {{"memory", std::string(name_of(ap.memory))},
          {"dtype", std::string(name_of(ap.dtype))},
          {"start_partition", ap.start_partition},
          {"partitions", ap.partitions},
          {"partition_stride", ap.partition_stride},
          {"offset", ap.offset},
          {"dims", dims}};
}

nlohmann::json scalar_json(const ScalarOperand& s) {
  return s.per_partition.present() ? ap_json(s.per_partition) : nlohmann::json(s.imm);
}

struct JsonReader {
  const std::string& file;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw AssemblyError(file, 0, 0, fmt::format("{}: {}", where, what));
  }
  const nlohmann::json& at(const nlohmann::json& j, const std::string& key,
                           const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where, fmt::format("missing \"{}\"", key));
    return j.at(key);
  }
  // `j` itself, when it is an array.
  const nlohmann::json& array(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_array()) fail(where, fmt::format("expected an array, got {}", j.type_name()));
    return j;
  }
  bool boolean(const nlohmann::json& j, const char* key, bool otherwise,
               const std::string& where) const {
    if (!j.contains(key)) return otherwise;
    if (!j[key].is_boolean())
      fail(where + "/" + key, fmt::format("expected true or false, got {}", j[key].dump()));
    return j[key].get<bool>();
  }
  int64_t integer(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_number_integer()) fail(where, fmt::format("expected an integer, got {}", j.dump()));
    return j.get<int64_t>();
  }
  std::string string(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_string()) fail(where, fmt::format("expected a string, got {}", j.dump()));
    return j.get<std::string>();
  }
  template <typename T>
  T named(const nlohmann::json& j, std::optional<T> (*parse)(std::string_view),
          const std::string& where) const {
    const std::string s = string(j, where);
    const auto v = parse(s);
    if (!v) fail(where, fmt::format("unknown value \"{}\"", s));
    return *v;
  }
  AccessPattern ap(const nlohmann::json& j, const std::string& w) const {
    AccessPattern a;
    const std::string m = string(at(j, "memory", w), w + "/memory");
    a.memory = m == "HBM"    ? Memory::hbm
               : m == "SBUF" ? Memory::sbuf
               : m == "PSUM" ? Memory::psum
                             : (fail(w + "/memory", "expected HBM, SBUF or PSUM"), Memory::hbm);
    a.dtype = named<DType>(at(j, "dtype", w), parse_dtype, w + "/dtype");
    const int64_t sp = integer(at(j, "start_partition", w), w + "/start_partition");
    const int64_t parts = integer(at(j, "partitions", w), w + "/partitions");
    if (sp < 0 || sp > 4096 || parts <= 0 || parts > 1 << 30)
      fail(w, "partition range out of bounds");
    a.start_partition = static_cast<uint32_t>(sp);
    a.partitions = static_cast<uint32_t>(parts);
    a.partition_stride = integer(at(j, "partition_stride", w), w + "/partition_stride");
    const int64_t off = integer(at(j, "offset", w), w + "/offset");
    if (off < 0) fail(w + "/offset", "must not be negative");
    a.offset = static_cast<uint64_t>(off);
    const auto& dims = at(j, "dims", w);
    if (!dims.is_array() || dims.size() > kMaxFreeDims)
      fail(w + "/dims", "expected up to 4 [stride, count] pairs");
    for (size_t i = 0; i < dims.size(); ++i) {
      const std::string dw = fmt::format("{}/dims/{}", w, i);
      if (!dims[i].is_array() || dims[i].size() != 2) fail(dw, "expected [stride, count]");
      const int64_t count = integer(dims[i][1], dw + "/1");
      if (count <= 0 || count > 65535) fail(dw + "/1", "a count is 1 to 65535");
      a.dims[a.ndims++] = Dim{integer(dims[i][0], dw + "/0"), static_cast<uint32_t>(count)};
    }
    return a;
  }
  ScalarOperand scalar(const nlohmann::json& j, const std::string& w) const {
    if (j.is_number()) return ScalarOperand::immediate(j.get<float>());
    return ScalarOperand::from(ap(j, w));
  }
};

}  // namespace

nlohmann::json to_json(const Program& program, const std::vector<OnChipBuffer>& buffers,
                       const std::vector<std::pair<std::string, TensorInit>>& inits,
                       const std::vector<Expectation>& expectations) {
  using nlohmann::json;
  json tensors = json::array();
  for (const auto& t : program.dram_tensors) {
    json o = {{"name", t.name},
              {"dtype", std::string(name_of(t.dtype))},
              {"shape", t.shape},
              {"address", t.address}};
    for (const auto& [n, i] : inits) {
      if (n == t.name) o["init"] = init_text(i);
    }
    tensors.push_back(o);
  }
  json bufs = json::array();
  for (const auto& b : buffers) {
    bufs.push_back({{"name", b.name},
                    {"memory", std::string(name_of(b.memory))},
                    {"dtype", std::string(name_of(b.dtype))},
                    {"shape", b.shape},
                    {"offset", b.offset}});
  }
  json sems = json::array();
  for (const auto& s : program.semaphores) sems.push_back(s.name);
  json queues = json::array();
  for (const auto& q : program.queues)
    queues.push_back({{"name", q.name}, {"semaphore", q.semaphore}});
  json streams = json::object();
  for (Engine e : kAllEngines) {
    json list = json::array();
    for (const auto& in : program.stream(e)) {
      json o = {{"opcode", std::string(name_of(in.opcode))}};
      if (!in.label.empty()) o["label"] = in.label;
      const int n = positional_operands(in.opcode);
      if (n > 0) o["dst"] = ap_json(in.dst);
      json src = json::array();
      for (int i = 1; i < n; ++i) src.push_back(ap_json(in.src[i - 1]));
      if (n > 1) o["src"] = src;
      const uint32_t f = fields_of(in.opcode);
      if (f & kQueue) o["queue"] = in.dma_queue;
      if ((f & kQueue) && in.dma_dge) o["dge"] = true;
      if (f & kStartStop) {
        o["start"] = in.accumulate_start;
        o["stop"] = in.accumulate_stop;
      }
      if (f & kFunction) o["function"] = std::string(name_of(in.function));
      if (f & kScale) o["scale"] = scalar_json(in.scale);
      if (f & kBias) o["bias"] = scalar_json(in.bias);
      if ((f & kAccumulate) && in.accumulate.present()) o["accumulate"] = ap_json(in.accumulate);
      if (f & kOp0) o["op0"] = std::string(name_of(in.op0));
      if (f & kOperand0) o["operand0"] = scalar_json(in.operand0);
      if (f & kOp1) o["op1"] = std::string(name_of(in.op1));
      if (f & kOperand1) o["operand1"] = scalar_json(in.operand1);
      if (f & kReduceDims) o["reduce_dims"] = in.reduce_dims;
      if (f & kAffine) {
        o["index_base"] = in.index_base;
        o["partition_step"] = in.partition_step;
        o["index_steps"] = in.index_steps;
      }
      if (f & kFill) o["fill"] = in.fill;
      if (f & kMask) o["shuffle_mask"] = in.shuffle_mask;
      json waits = json::array();
      for (const auto& w : in.waits)
        waits.push_back({{"semaphore", w.semaphore}, {"value", w.value}});
      json updates = json::array();
      for (const auto& u : in.updates) {
        updates.push_back({{"semaphore", u.semaphore},
                           {u.kind == SemaphoreUpdateKind::add ? "add" : "set", u.value}});
      }
      if (!waits.empty()) o["wait"] = waits;
      if (!updates.empty()) o["update"] = updates;
      list.push_back(o);
    }
    streams[std::string(assembler_name_of(e))] = list;
  }
  json expect = json::array();
  for (const auto& e : expectations) {
    expect.push_back(
        {{"output", e.output}, {"function", e.function}, {"inputs", e.inputs}, {"eps", e.eps}});
  }
  return {{"format", "trnsim-program"}, {"version", 1},       {"name", program.name},
          {"tensors", tensors},         {"buffers", bufs},    {"semaphores", sems},
          {"queues", queues},           {"streams", streams}, {"expect", expect}};
}

Assembly from_json(const nlohmann::json& j, const std::string& file) {
  const JsonReader r{file};
  if (!j.is_object() || !j.contains("format") || j["format"] != "trnsim-program") {
    r.fail("/format", "expected \"trnsim-program\"");
  }
  Assembly a;
  a.file = file;
  a.auto_sync = false;
  Program& p = a.program;
  if (j.contains("name")) p.name = r.string(j["name"], "/name");
  if (j.contains("arch")) {
    a.arch = r.string(j["arch"], "/arch");
    if (!config::preset(a.arch))
      r.fail("/arch", fmt::format("unknown preset; expected one of {}", config::preset_names()));
  }
  const auto& tensors = r.at(j, "tensors", "");
  if (!tensors.is_array()) r.fail("/tensors", "expected an array");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string w = fmt::format("/tensors/{}", i);
    const auto& t = tensors[i];
    DramTensor d;
    d.name = r.string(r.at(t, "name", w), w + "/name");
    d.dtype = r.named<DType>(r.at(t, "dtype", w), parse_dtype, w + "/dtype");
    const auto& shape = r.at(t, "shape", w);
    if (!shape.is_array() || shape.empty())
      r.fail(w + "/shape", "expected an array of positive integers");
    for (size_t k = 0; k < shape.size(); ++k) {
      const int64_t v = r.integer(shape[k], fmt::format("{}/shape/{}", w, k));
      if (v <= 0 || v > (int64_t(1) << 40))
        r.fail(fmt::format("{}/shape/{}", w, k), "out of range");
      d.shape.push_back(v);
    }
    uint64_t bytes = size_of(d.dtype);
    for (int64_t v : d.shape) {
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(v), &bytes) ||
          bytes > (uint64_t(1) << 44)) {
        r.fail(w + "/shape", "the tensor is larger than any HBM");
      }
    }
    const int64_t addr = r.integer(r.at(t, "address", w), w + "/address");
    if (addr < 0 || addr > (int64_t(1) << 44)) r.fail(w + "/address", "out of range");
    d.address = static_cast<uint64_t>(addr);
    p.dram_tensors.push_back(d);
    if (t.contains("init")) {
      const std::string text = ".tensor _ fp32 [1] init=" + r.string(t["init"], w + "/init");
      try {
        const Assembly one = parse_assembly(text, file, config::trn2());
        a.inits.emplace_back(d.name, one.inits.at(0).second);
      } catch (const AssemblyError&) {
        r.fail(w + "/init",
               "expected zeros, normal(mean, stddev, seed=N) or uniform(low, high, seed=N)");
      }
    }
  }
  if (j.contains("buffers")) {
    const auto& buffers = r.array(j["buffers"], "/buffers");
    for (size_t i = 0; i < buffers.size(); ++i) {
      const std::string w = fmt::format("/buffers/{}", i);
      const auto& b = buffers[i];
      OnChipBuffer ob;
      ob.name = r.string(r.at(b, "name", w), w + "/name");
      ob.memory =
          r.string(r.at(b, "memory", w), w + "/memory") == "PSUM" ? Memory::psum : Memory::sbuf;
      ob.dtype = r.named<DType>(r.at(b, "dtype", w), parse_dtype, w + "/dtype");
      for (const auto& v : r.array(r.at(b, "shape", w), w + "/shape"))
        ob.shape.push_back(r.integer(v, w + "/shape"));
      ob.offset = static_cast<uint64_t>(r.integer(r.at(b, "offset", w), w + "/offset"));
      a.buffers.push_back(ob);
    }
  }
  const auto& sems = r.array(r.at(j, "semaphores", ""), "/semaphores");
  for (size_t i = 0; i < sems.size(); ++i)
    p.semaphores.push_back(Semaphore{r.string(sems[i], fmt::format("/semaphores/{}", i))});
  const auto& queues = r.array(r.at(j, "queues", ""), "/queues");
  for (size_t i = 0; i < queues.size(); ++i) {
    const std::string w = fmt::format("/queues/{}", i);
    const int64_t s = r.integer(r.at(queues[i], "semaphore", w), w + "/semaphore");
    if (s < 0 || static_cast<size_t>(s) >= p.semaphores.size())
      r.fail(w + "/semaphore", "no such semaphore");
    p.queues.push_back(
        DmaQueue{r.string(r.at(queues[i], "name", w), w + "/name"), static_cast<uint16_t>(s)});
  }
  const auto& streams = r.at(j, "streams", "");
  if (!streams.is_object()) r.fail("/streams", "expected an object of per-engine streams");
  for (Engine e : kAllEngines) {
    const std::string ename(assembler_name_of(e));
    if (!streams.contains(ename)) continue;
    const auto& list = r.array(streams[ename], "/streams/" + ename);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string w = fmt::format("/streams/{}/{}", ename, i);
      const auto& o = list[i];
      Instruction in;
      in.engine = e;
      in.opcode = r.named<Opcode>(r.at(o, "opcode", w), parse_opcode, w + "/opcode");
      if (!runs_on(in.opcode, e))
        r.fail(w + "/opcode", fmt::format("{} does not run on {}", name_of(in.opcode), name_of(e)));
      if (o.contains("label")) in.label = r.string(o["label"], w + "/label");
      const int n = positional_operands(in.opcode);
      if (n > 0) in.dst = r.ap(r.at(o, "dst", w), w + "/dst");
      if (n > 1) {
        const auto& src = r.at(o, "src", w);
        if (!src.is_array() || static_cast<int>(src.size()) != n - 1)
          r.fail(w + "/src", fmt::format("expected {} access patterns", n - 1));
        for (int k = 0; k + 1 < n; ++k) in.src[k] = r.ap(src[k], fmt::format("{}/src/{}", w, k));
      }
      const uint32_t f = fields_of(in.opcode);
      if (f & kQueue) {
        const int64_t q = r.integer(r.at(o, "queue", w), w + "/queue");
        if (q < 0 || static_cast<size_t>(q) >= p.queues.size())
          r.fail(w + "/queue", "no such queue");
        in.dma_queue = static_cast<uint16_t>(q);
        in.dma_dge = r.boolean(o, "dge", false, w);
      }
      if (f & kStartStop) {
        in.accumulate_start = r.boolean(o, "start", true, w);
        in.accumulate_stop = r.boolean(o, "stop", true, w);
      }
      if ((f & kFunction) && o.contains("function"))
        in.function =
            r.named<ActivationFunction>(o["function"], parse_activation_function, w + "/function");
      if ((f & kScale) && o.contains("scale")) in.scale = r.scalar(o["scale"], w + "/scale");
      if ((f & kBias) && o.contains("bias")) in.bias = r.scalar(o["bias"], w + "/bias");
      if ((f & kAccumulate) && o.contains("accumulate"))
        in.accumulate = r.ap(o["accumulate"], w + "/accumulate");
      if ((f & kOp0) && o.contains("op0"))
        in.op0 = r.named<AluOp>(o["op0"], parse_alu_op, w + "/op0");
      if ((f & kOp1) && o.contains("op1"))
        in.op1 = r.named<AluOp>(o["op1"], parse_alu_op, w + "/op1");
      if ((f & kOperand0) && o.contains("operand0"))
        in.operand0 = r.scalar(o["operand0"], w + "/operand0");
      if ((f & kOperand1) && o.contains("operand1"))
        in.operand1 = r.scalar(o["operand1"], w + "/operand1");
      if ((f & kReduceDims) && o.contains("reduce_dims")) {
        const int64_t d = r.integer(o["reduce_dims"], w + "/reduce_dims");
        if (d < 1 || d > kMaxFreeDims) r.fail(w + "/reduce_dims", "is 1 to 4");
        in.reduce_dims = static_cast<uint8_t>(d);
      }
      if (f & kAffine) {
        in.index_base = static_cast<int32_t>(
            r.integer(o.value("index_base", nlohmann::json(0)), w + "/index_base"));
        in.partition_step = static_cast<int32_t>(
            r.integer(o.value("partition_step", nlohmann::json(0)), w + "/partition_step"));
        if (o.contains("index_steps")) {
          const auto& st = o["index_steps"];
          if (!st.is_array() || st.size() > kMaxFreeDims)
            r.fail(w + "/index_steps", "expected up to 4 integers");
          for (size_t k = 0; k < st.size(); ++k)
            in.index_steps[k] = static_cast<int32_t>(r.integer(st[k], w + "/index_steps"));
        }
      }
      if ((f & kFill) && o.contains("fill")) {
        if (!o["fill"].is_number()) r.fail(w + "/fill", "expected a number");
        in.fill = o["fill"].get<float>();
      }
      if ((f & kMask) && o.contains("shuffle_mask")) {
        const auto& m = o["shuffle_mask"];
        if (!m.is_array() || m.size() != 32) r.fail(w + "/shuffle_mask", "expected 32 lanes");
        for (size_t k = 0; k < 32; ++k) {
          const int64_t v = r.integer(m[k], w + "/shuffle_mask");
          if (v < 0 || v > 31) r.fail(w + "/shuffle_mask", "a lane is 0 to 31");
          in.shuffle_mask[k] = static_cast<uint8_t>(v);
        }
      }
      auto sem = [&](const nlohmann::json& s, const std::string& sw) {
        const int64_t id = r.integer(s, sw);
        if (id < 0 || static_cast<size_t>(id) >= p.semaphores.size())
          r.fail(sw, "no such semaphore");
        return static_cast<uint16_t>(id);
      };
      if (o.contains("wait")) {
        const auto& waits = r.array(o["wait"], w + "/wait");
        for (size_t k = 0; k < waits.size(); ++k) {
          const std::string ww = fmt::format("{}/wait/{}", w, k);
          const auto& x = waits[k];
          in.waits.push_back(SemaphoreWait{sem(r.at(x, "semaphore", ww), ww + "/semaphore"),
                                           r.integer(r.at(x, "value", ww), ww + "/value")});
        }
      }
      if (o.contains("update")) {
        const auto& updates = r.array(o["update"], w + "/update");
        for (size_t k = 0; k < updates.size(); ++k) {
          const std::string uw = fmt::format("{}/update/{}", w, k);
          const auto& x = updates[k];
          const uint16_t s = sem(r.at(x, "semaphore", uw), uw + "/semaphore");
          if (x.contains("add")) {
            in.updates.push_back(
                SemaphoreUpdate{s, SemaphoreUpdateKind::add, r.integer(x["add"], uw + "/add")});
          } else {
            in.updates.push_back(SemaphoreUpdate{s, SemaphoreUpdateKind::set,
                                                 r.integer(r.at(x, "set", uw), uw + "/set")});
          }
        }
      }
      p.stream(e).push_back(in);
    }
  }
  if (j.contains("expect")) {
    const auto& expect = r.array(j["expect"], "/expect");
    for (size_t i = 0; i < expect.size(); ++i) {
      const std::string w = fmt::format("/expect/{}", i);
      const auto& x = expect[i];
      Expectation e;
      e.output = r.string(r.at(x, "output", w), w + "/output");
      e.function = r.string(r.at(x, "function", w), w + "/function");
      for (const auto& in : r.array(r.at(x, "inputs", w), w + "/inputs"))
        e.inputs.push_back(r.string(in, w + "/inputs"));
      if (x.contains("eps") && x["eps"].is_number()) e.eps = x["eps"].get<double>();
      check_expectation(p, file, e, w);
      a.expectations.push_back(e);
    }
  }
  return a;
}

}  // namespace trnsim::isa
