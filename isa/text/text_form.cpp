#include "isa/text/text_form.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

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
const std::vector<std::string>& collective_references() {
  static const std::vector<std::string> names = {
      "all_reduce_add",     "all_reduce_max",     "all_reduce_min",
      "all_gather",         "reduce_scatter_add", "reduce_scatter_max",
      "reduce_scatter_min", "all_to_all",         "permute"};
  return names;
}
}  // namespace

bool is_collective_reference(const std::string& name) {
  const auto& c = collective_references();
  return std::find(c.begin(), c.end(), name) != c.end();
}

bool known_reference(const std::string& name) {
  return name == "rmsnorm" || name == "matmul" || name == "copy" || name == "recv" ||
         is_collective_reference(name);
}

std::string reference_names() {
  return fmt::format("rmsnorm, matmul, copy, {}, recv", fmt::join(collective_references(), ", "));
}

namespace text_form {

std::optional<Engine> parse_assembler_engine(std::string_view s) {
  for (Engine e : kAllEngines) {
    if (s == assembler_name_of(e) || s == key_of(e)) return e;
  }
  return std::nullopt;
}

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
      return kOp0 | kOperand0 | kOp1 | kOperand1 | kReverse;
    case Opcode::scalar_tensor_tensor:
      return kOp0 | kOperand0 | kOp1 | kReverse;
    case Opcode::tensor_scalar_reduce:
      return kOp0 | kOperand0 | kOp1 | kAccumulate;
    case Opcode::tensor_tensor_scan:
      return kOp0 | kOperand0 | kOp1 | kReverse;
    case Opcode::tensor_scalar_cumulative:
      return kOp0 | kOperand0 | kOp1;
    case Opcode::match_replace8:
      return kOperand0;
    case Opcode::range_select:
      return kOp0 | kOperand0 | kOp1 | kOperand1 | kBase | kFill | kAccumulate;
    case Opcode::copy_predicated:
      return kReverse;
    case Opcode::local_gather:
      return kGather;
    case Opcode::tensor_reduce:
      return kOp0 | kReduceDims | kNegate;
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
    case Opcode::collective:
      return kCollective | kOp0;
    default:
      return 0;
  }
}

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
    case Opcode::tensor_tensor_scan:
    case Opcode::find_index8:
    case Opcode::match_replace8:
    case Opcode::copy_predicated:
    case Opcode::local_gather:
    case Opcode::gather:
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
  if (e.scale != 1.0 && e.function != "recv") fail("scale= is for recv(x, peer=+K, scale=S)");
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
  } else if (e.function == "recv") {
    // What core c received from its partner c + peer: that core's x.
    if (in.size() != 1) fail("recv(x, peer=+K) takes one input: the partner core's x");
    if (e.peer == 0) fail("recv(x, peer=+K) needs its partner, relative: peer=+K or peer=-K");
    if (in[0]->dtype != out->dtype || in[0]->elements() != out->elements())
      fail("recv: input and output hold the same dtype and number of elements");
  } else if (is_collective_reference(e.function)) {
    // The sizes depend on the number of cores: lowering checks them.
    if (in.size() != 1) fail(fmt::format("{}(x) takes one input: each core's x", e.function));
    if (in[0]->dtype != out->dtype)
      fail(fmt::format("{}: input and output dtypes differ", e.function));
  } else {
    fail(fmt::format("unknown reference \"{}\"; expected {}", e.function, reference_names()));
  }
}

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

}  // namespace text_form

}  // namespace trnsim::isa
