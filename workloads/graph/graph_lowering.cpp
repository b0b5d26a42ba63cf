// Lowering of graph workloads: eager (one kernel per op) and compile (a fusion pass). Row-local
// ops (elementwise, reductions along the last dimension) become kernels of a generic row
// kernel generator; matmul, transpose, softmax, rms_norm and layer_norm become kernels of the
// kernel library. Every kernel is appended to one program whose HBM tensors are the graph's
// materialized tensors; the host ops launch them.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/large_page_allocator.hpp"
#include "compiler/synchronize.hpp"
#include "models/estimate/estimate.hpp"
#include "workloads/graph/graph.hpp"
#include "workloads/graph/graph_lowering.hpp"
#include "workloads/graph/npy.hpp"
#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/kernel_table.hpp"
#include "workloads/kernels/rmsnorm.hpp"
#include "workloads/kernels/row_tiles.hpp"

namespace trnsim::workloads {

using isa::AccessPattern;
using isa::ActivationFunction;
using isa::AluOp;
using isa::DType;
using isa::Instruction;
using isa::ScalarOperand;

namespace {

// How a tensor maps onto a row kernel's tiles, relative to the kernel's row space S
// ([..., H], rows = product of the leading dimensions): full [rows, H], one value per row
// (row), one row broadcast to all rows (col), or one value (scalar).
// A periodic tensor repeats along the leading rows: its rows are the kernel's trailing ones
// ([S, H] against [B, S, H]: row r of the kernel reads its row r mod S), as RoPE's cos and sin
// tables and an attention mask broadcast over batches and heads.
enum class Cls { full, row, col, scalar, periodic, none };

Cls classify(const std::vector<int64_t>& t, const std::vector<int64_t>& s) {
  if (t.size() > s.size()) return Cls::none;
  std::vector<int64_t> a(s.size() - t.size(), 1);
  a.insert(a.end(), t.begin(), t.end());
  if (a == s) return Cls::full;
  const bool lead_eq = std::equal(a.begin(), a.end() - 1, s.begin());
  const bool lead_one = std::all_of(a.begin(), a.end() - 1, [](int64_t d) { return d == 1; });
  if (lead_eq && a.back() == 1) return Cls::row;
  if (lead_one && a.back() == s.back()) return Cls::col;
  if (lead_one && a.back() == 1) return Cls::scalar;
  // Leading ones, then the kernel's own trailing dimensions.
  size_t j = 0;
  while (j + 1 < a.size() && a[j] == 1) ++j;
  if (std::equal(a.begin() + static_cast<std::ptrdiff_t>(j), a.end(),
                 s.begin() + static_cast<std::ptrdiff_t>(j))) {
    return Cls::periodic;
  }
  return Cls::none;
}

// Values held per tile, a row of H elements per partition.
bool wide(Cls c) {
  return c == Cls::full || c == Cls::periodic;
}

bool row_local(const GraphOp& op) {
  return op.kind == OpKind::unary || op.kind == OpKind::binary || op.kind == OpKind::reduction;
}

// The layout of op's output in a row kernel of space s. A reduction's result is one value per
// row whether or not it keeps the reduced dimension.
Cls out_class(const GraphOp& op, const std::vector<int64_t>& s) {
  if (op.kind == OpKind::reduction) {
    const std::vector<int64_t> lead(s.begin(), s.end() - 1);
    if (op.out.shape == lead || (lead.empty() && op.out.shape == std::vector<int64_t>{1})) {
      return Cls::row;
    }
  }
  return classify(op.out.shape, s);
}

// The row space an op defines when it starts a kernel.
std::vector<int64_t> natural_space(const Graph& g, const GraphOp& op) {
  if (op.kind == OpKind::reduction) return g.find(op.args[0].tensor)->shape;
  return op.out.shape;
}

struct PlannedKernel {
  bool row = true;
  std::vector<size_t> ops;
  std::vector<int64_t> space;
  std::string name;
};

// Whether op fits a row kernel of space `s` whose values so far have the classes `inside`.
bool fits(const Graph& g, const GraphOp& op, const std::vector<int64_t>& s,
          const std::map<std::string, Cls>& inside) {
  // A view of a value computed in this kernel reads it from HBM: the value must be stored by
  // a kernel that ends first.
  for (const GraphArg& a : op.args) {
    if (a.is_tensor() && g.base_of(a.tensor) != a.tensor && inside.count(g.base_of(a.tensor))) {
      return false;
    }
  }
  auto cls = [&](const std::string& name) {
    const Cls c = classify(g.find(name)->shape, s);
    const auto it = inside.find(name);
    // A value computed in this kernel has the layout it was computed in.
    if (it != inside.end() && it->second != c) return Cls::none;
    return c;
  };
  const Cls out = out_class(op, s);
  if (out != Cls::full && out != Cls::row) return false;
  if (op.kind == OpKind::reduction) {
    return cls(op.args[0].tensor) == Cls::full && out == Cls::row;
  }
  if (op.kind == OpKind::unary) return cls(op.args[0].tensor) == out;
  for (const GraphArg& a : op.args) {
    if (!a.is_tensor()) continue;
    const Cls c = cls(a.tensor);
    if (c == Cls::none) return false;
    if (out == Cls::row && c != Cls::row && c != Cls::scalar) return false;
  }
  return true;
}

std::string kernel_name(const Graph& g, const std::vector<size_t>& ops) {
  if (ops.size() == 1) return fmt::format("{}({})", g.ops[ops[0]].op, g.ops[ops[0]].out.name);
  std::string n = "fused";
  for (size_t i : ops) n += "_" + g.ops[i].op;
  return n;
}

// ---- the row kernel generator ----

struct Value {
  Cls cls = Cls::full;
  DType dtype = DType::fp32;  // on chip
  bool hbm_in = false;        // loaded per tile (full, row) or once (col, scalar)
  bool hbm_out = false;       // stored per tile
  int producer = -1;          // position in the kernel's op list; -1 for inputs
  int last_use = -1;          // last position that reads it (ops.size() when stored)
  uint64_t offset = 0;        // per buffer (full, row) or shared (col, scalar)
  int slot = -1;
};

struct RowKernelResult {
  isa::Program program;
  uint32_t bufs = 0;
  uint32_t tile_rows = 0;
  uint64_t sbuf_bytes = 0;  // per partition
  std::string problem;      // why it cannot be lowered, else ""
  // Values the kernel holds in their op's dtype (rounded as they are produced), for the
  // reference to round the same way.
  std::vector<std::string> rounded;
};

// The row kernels' choices (the graph's params, graph_space).
struct RowChoices {
  bool compile = false;
  uint32_t bufs = 0;      // tiles in flight; 0: the most of max_bufs that fit SBUF
  uint32_t max_bufs = 2;  // 3 in compile mode
  bool balance = true;    // compile: each op on the engine with the lower estimated busy time
  bool fold = true;       // compile: an activation feeding a sum becomes one with accumulate
};

class RowKernel {
 public:
  RowKernel(const Graph& g, const PlannedKernel& k, const std::set<std::string>& materialized,
            const config::ArchConfig& arch, const RowChoices& choices)
      : g_(g),
        k_(k),
        materialized_(materialized),
        arch_(arch),
        compile_(choices.compile),
        choices_(choices) {}

  RowKernelResult lower();

 private:
  void collect();
  bool layout(uint32_t bufs);
  AccessPattern ap(const std::string& name, uint32_t parts, uint32_t buf,
                   uint32_t first_partition = 0) const;
  void emit_op(size_t pos, uint32_t parts, uint32_t buf, std::vector<Instruction>& seq);
  Engine pick(const Instruction& on_vector, const Instruction& on_scalar);
  // Whether the activation at `pos` is emitted by the reduction it feeds (with accumulate).
  bool folded_for(size_t pos) const {
    for (const auto& [r, a] : folded_) {
      if (a == pos) return true;
    }
    return false;
  }

  const Graph& g_;
  const PlannedKernel& k_;
  const std::set<std::string>& materialized_;
  const config::ArchConfig& arch_;
  bool compile_;
  RowChoices choices_;
  int64_t rows_ = 0, hidden_ = 0;
  std::map<std::string, Value> values_;
  std::vector<std::string> order_;  // values in first-seen order
  uint64_t full_slot_bytes_ = 0, per_buffer_ = 0, shared_ = 0;
  // Accumulate rewrites: position of a reduction folded into the activation that feeds it.
  std::map<size_t, size_t> folded_;        // reduction position -> activation position
  std::map<size_t, Instruction> emitted_;  // per tile: activation instructions by position
  Picoseconds est_vector_, est_scalar_;
};

void RowKernel::collect() {
  const std::vector<int64_t>& s = k_.space;
  rows_ = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) rows_ *= s[i];
  hidden_ = s.back();
  auto touch = [&](const std::string& name) -> Value& {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    Value v;
    v.cls = classify(g_.find(name)->shape, s);
    v.dtype = g_.find(name)->dtype;
    v.hbm_in = true;
    order_.push_back(name);
    return values_[name] = v;
  };
  for (size_t pos = 0; pos < k_.ops.size(); ++pos) {
    const GraphOp& op = g_.ops[k_.ops[pos]];
    for (const GraphArg& a : op.args) {
      // A value the kernel also stores stays until the store (last_use: ops.size()).
      if (a.is_tensor()) {
        Value& v = touch(a.tensor);
        v.last_use = std::max(v.last_use, static_cast<int>(pos));
      }
    }
    Value v;
    v.cls = out_class(op, s);
    v.hbm_out = materialized_.count(op.out.name) > 0;
    // Values are computed in their op's dtype, as PyTorch defines the op; per-row values
    // kept on chip (reduction results and what follows from them) stay fp32, as the
    // accumulators that produce them are.
    v.dtype = v.cls == Cls::row && !v.hbm_out && compile_ ? DType::fp32 : op.out.dtype;
    v.producer = static_cast<int>(pos);
    v.last_use = v.hbm_out ? static_cast<int>(k_.ops.size()) : static_cast<int>(pos);
    order_.push_back(op.out.name);
    values_[op.out.name] = v;
  }
  // Square-and-sum (or any ScalarE activation feeding a sum or mean) as one activation with
  // an accumulate, when the activation's output is used by nothing else, the reduction's
  // result stays fp32 on chip, and both are in this kernel (compile mode).
  if (!compile_ || !choices_.fold) return;
  for (size_t pos = 0; pos < k_.ops.size(); ++pos) {
    const GraphOp& op = g_.ops[k_.ops[pos]];
    if (op.kind != OpKind::reduction || op.op == "max") continue;
    const Value& in = values_[op.args[0].tensor];
    const Value& out = values_[op.out.name];
    if (in.producer < 0 || in.hbm_out || out.dtype != DType::fp32) continue;
    const GraphOp& prod = g_.ops[k_.ops[in.producer]];
    const bool activation =
        prod.kind == OpKind::unary ||
        (prod.op == "pow" &&
         (prod.args[1].number == 2 || prod.args[1].number == 0.5 || prod.args[1].number == -0.5));
    if (!activation || in.last_use != static_cast<int>(pos)) continue;
    folded_[pos] = static_cast<size_t>(in.producer);
  }
}

bool RowKernel::layout(uint32_t bufs) {
  // Full values share slots of H elements of the widest dtype, reused once a value's last reader is
  // done; row values take 64-byte slots; col and scalar inputs are loaded once, shared by buffers.
  uint64_t widest = 1;
  for (const auto& [n, v] : values_) {
    if (wide(v.cls)) widest = std::max<uint64_t>(widest, isa::size_of(v.dtype));
  }
  full_slot_bytes_ = (static_cast<uint64_t>(hidden_) * widest + 63) / 64 * 64;
  shared_ = 0;
  for (const std::string& n : order_) {
    Value& v = values_[n];
    if (v.cls == Cls::col || v.cls == Cls::scalar) {
      v.offset = shared_;
      shared_ += ((v.cls == Cls::col ? hidden_ : 1) * isa::size_of(v.dtype) + 63) / 64 * 64;
    }
  }
  std::vector<int> free_full;  // slot numbers
  int full_slots = 0;
  uint64_t row_bytes = 0;
  std::vector<std::pair<int, int>> live;  // (last_use, slot)
  auto take_full = [&] {
    if (!free_full.empty()) {
      const int s = free_full.back();
      free_full.pop_back();
      return s;
    }
    return full_slots++;
  };
  auto release_until = [&](int pos) {
    for (auto it = live.begin(); it != live.end();) {
      if (it->first < pos) {
        free_full.push_back(it->second);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  };
  // Inputs first (loaded before the ops run), then each op's output.
  for (const std::string& n : order_) {
    Value& v = values_[n];
    if (v.producer >= 0 || v.cls == Cls::col || v.cls == Cls::scalar) continue;
    if (wide(v.cls)) {
      v.slot = take_full();
      live.emplace_back(v.last_use, v.slot);
    } else {
      v.offset = row_bytes;
      v.slot = -2;
      row_bytes += 64;
    }
  }
  for (size_t pos = 0; pos < k_.ops.size(); ++pos) {
    // An elementwise op may write over an input it reads last (in place).
    release_until(static_cast<int>(pos) + (g_.ops[k_.ops[pos]].kind == OpKind::reduction ? 0 : 1));
    Value& v = values_[g_.ops[k_.ops[pos]].out.name];
    if (v.cls == Cls::full) {
      v.slot = take_full();
      live.emplace_back(std::max(v.last_use, static_cast<int>(pos)), v.slot);
    } else {
      v.offset = row_bytes;
      row_bytes += 64;
    }
  }
  for (auto& [n, v] : values_) {
    if (wide(v.cls)) v.offset = row_bytes + static_cast<uint64_t>(v.slot) * full_slot_bytes_;
  }
  per_buffer_ = row_bytes + static_cast<uint64_t>(full_slots) * full_slot_bytes_;
  return shared_ + bufs * per_buffer_ <= arch_.sbuf_partition_bytes;
}

AccessPattern RowKernel::ap(const std::string& name, uint32_t parts, uint32_t buf,
                            uint32_t first_partition) const {
  const Value& v = values_.at(name);
  const bool shared = v.cls == Cls::col || v.cls == Cls::scalar;
  const uint64_t base = shared ? v.offset : shared_ + buf * per_buffer_ + v.offset;
  const uint32_t n = wide(v.cls) || v.cls == Cls::col ? static_cast<uint32_t>(hidden_) : 1;
  return isa::sbuf_ap(v.dtype, first_partition, parts, base, {{1, n}});
}

// Eager kernels use VectorE for arithmetic, as a generic op library does. The compile mode
// puts an op that either engine can run where the kernel's estimated busy time is lower,
// using the simulator's own cost functions.
Engine RowKernel::pick(const Instruction& on_vector, const Instruction& on_scalar) {
  if (!compile_ || !choices_.balance) return Engine::vector;
  const Picoseconds v = models::estimate::instruction_time(on_vector, arch_);
  const Picoseconds s = models::estimate::instruction_time(on_scalar, arch_);
  return est_scalar_ + s < est_vector_ + v ? Engine::scalar : Engine::vector;
}

void RowKernel::emit_op(size_t pos, uint32_t parts, uint32_t buf, std::vector<Instruction>& seq) {
  const GraphOp& op = g_.ops[k_.ops[pos]];
  const std::string label = fmt::format("{} {}", op.op, op.out.name);
  const AccessPattern dst = ap(op.out.name, parts, buf);
  auto activation = [&](ActivationFunction f, const AccessPattern& src) {
    return workloads::activation(Engine::scalar, f, dst, src, 1.0f, 0.0f, label);
  };
  auto push = [&](Instruction in) {
    if (in.engine == Engine::scalar) {
      est_scalar_ = est_scalar_ + models::estimate::instruction_time(in, arch_);
    } else {
      est_vector_ = est_vector_ + models::estimate::instruction_time(in, arch_);
    }
    seq.push_back(std::move(in));
  };
  if (op.kind == OpKind::unary) {
    const AccessPattern src = ap(op.args[0].tensor, parts, buf);
    const std::map<std::string, ActivationFunction> fns = {
        {"exp", ActivationFunction::exp},
        {"log", ActivationFunction::log},
        {"sqrt", ActivationFunction::sqrt},
        {"rsqrt", ActivationFunction::rsqrt},
        {"reciprocal", ActivationFunction::reciprocal},
        {"abs", ActivationFunction::abs},
        {"tanh", ActivationFunction::tanh},
        {"sigmoid", ActivationFunction::sigmoid},
        {"relu", ActivationFunction::relu},
        {"silu", ActivationFunction::silu},
        {"neg", ActivationFunction::identity},
        {"to", ActivationFunction::copy}};
    ActivationFunction f =
        op.op == "gelu"
            ? (op.approximate == "tanh" ? ActivationFunction::gelu_tanh : ActivationFunction::gelu)
            : fns.at(op.op);
    Instruction in = activation(f, src);
    if (op.op == "neg") in.scale = ScalarOperand::immediate(-1.0f);
    emitted_[pos] = in;
    if (!folded_for(pos)) push(in);
    return;
  }
  if (op.kind == OpKind::reduction) {
    const auto f = folded_.find(pos);
    if (f != folded_.end()) {
      // The producing activation sums its outputs into this row value; a mean scales it.
      Instruction act = emitted_.at(f->second);
      AccessPattern acc = dst;
      act.accumulate = acc;
      act.label += " + " + op.op;
      const GraphOp& prod = g_.ops[k_.ops[f->second]];
      const bool square = prod.op == "pow" && prod.args[1].number == 2;
      if (op.op == "mean" && square) {
        // square(x / sqrt(H)) sums to mean(x^2).
        act.scale = ScalarOperand::immediate(
            static_cast<float>(1.0 / std::sqrt(static_cast<double>(hidden_))));
        push(act);
      } else {
        push(act);
        if (op.op == "mean") {
          push(tensor_scalar(Engine::vector, dst, dst, AluOp::multiply,
                             static_cast<float>(1.0 / hidden_), label + " scale"));
        }
      }
      return;
    }
    push(tensor_reduce(Engine::vector, dst,
                       op.op == "max"   ? AluOp::max
                       : op.op == "sum" ? AluOp::add
                                        : AluOp::mean,
                       ap(op.args[0].tensor, parts, buf), label));
    return;
  }
  // Binary.
  if (op.op == "pow") {
    const double e = op.args[1].number;
    const AccessPattern src = ap(op.args[0].tensor, parts, buf);
    const std::map<double, ActivationFunction> fns = {{2.0, ActivationFunction::square},
                                                      {0.5, ActivationFunction::sqrt},
                                                      {-0.5, ActivationFunction::rsqrt},
                                                      {-1.0, ActivationFunction::reciprocal},
                                                      {1.0, ActivationFunction::copy}};
    const auto it = fns.find(e);
    if (it != fns.end()) {
      emitted_[pos] = activation(it->second, src);
      if (!folded_for(pos)) push(emitted_[pos]);
      return;
    }
    push(tensor_scalar(Engine::vector, dst, src, AluOp::pow, static_cast<float>(e), label));
    return;
  }
  const Cls out = values_.at(op.out.name).cls;
  auto cls_of = [&](const GraphArg& a) {
    return a.is_tensor() ? values_.at(a.tensor).cls : Cls::scalar;
  };
  const Cls c0 = cls_of(op.args[0]), c1 = cls_of(op.args[1]);
  const bool wide0 = c0 == out || (out == Cls::full && (c0 == Cls::col || c0 == Cls::periodic));
  const bool wide1 = c1 == out || (out == Cls::full && (c1 == Cls::col || c1 == Cls::periodic));
  const AluOp alu = binary_alu_op(op.op);
  if (wide0 && wide1 && op.args[0].is_tensor() && op.args[1].is_tensor()) {
    push(tensor_tensor(Engine::vector, dst, ap(op.args[0].tensor, parts, buf), alu,
                       ap(op.args[1].tensor, parts, buf), label));
    return;
  }
  // One wide tensor and one per-row value or number: x op s, or s op x.
  const bool x_first = wide0 && op.args[0].is_tensor();
  const GraphArg& x = x_first ? op.args[0] : op.args[1];
  const GraphArg& s = x_first ? op.args[1] : op.args[0];
  const ScalarOperand sv = s.is_tensor() ? ScalarOperand::from(ap(s.tensor, parts, buf))
                                         : ScalarOperand::immediate(static_cast<float>(s.number));
  const AccessPattern src = ap(x.tensor, parts, buf);
  Instruction v;
  if (x_first || alu == AluOp::add || alu == AluOp::multiply || alu == AluOp::max ||
      alu == AluOp::min) {
    v = tensor_scalar(Engine::vector, dst, src, alu, sv, label);
  } else if (alu == AluOp::subtract) {  // s - x = x * -1 + s
    v = tensor_scalar(Engine::vector, dst, src, AluOp::multiply, -1.0f, AluOp::add, sv, label);
  } else {  // s / x = (1 / x) * s: a reciprocal on ScalarE, then the multiply
    push(activation(ActivationFunction::reciprocal, src));
    v = tensor_scalar(Engine::vector, dst, dst, AluOp::multiply, sv, label);
  }
  // ScalarE can do x * s (scale), x + s (bias) and x - n, x / n for a number n.
  bool scalar_ok = x_first || alu == AluOp::add || alu == AluOp::multiply;
  Instruction a = activation(ActivationFunction::identity, src);
  if (alu == AluOp::multiply) {
    a.scale = sv;
  } else if (alu == AluOp::add) {
    a.bias = sv;
  } else if (alu == AluOp::subtract && x_first && !s.is_tensor()) {
    a.bias = ScalarOperand::immediate(static_cast<float>(-s.number));
  } else if (alu == AluOp::divide && x_first && !s.is_tensor() && s.number != 0) {
    a.scale = ScalarOperand::immediate(static_cast<float>(1.0 / s.number));
  } else {
    scalar_ok = false;
  }
  if (scalar_ok && v.src[0]->offset == src.offset && pick(v, a) == Engine::scalar) {
    push(a);
  } else {
    push(v);
  }
}

RowKernelResult RowKernel::lower() {
  RowKernelResult r;
  collect();
  for (const auto& [n, v] : values_) {
    if (v.cls == Cls::none) {
      r.problem = fmt::format("tensor {} does not broadcast along the rows of {}", n,
                              fmt::format("[{}]", fmt::join(k_.space, ", ")));
      return r;
    }
  }
  if (static_cast<uint64_t>(hidden_) > arch_.sbuf_free_elements_max) {
    r.problem = fmt::format(
        "the last dimension, {}, exceeds the {} elements per partition an "
        "engine instruction reads",
        hidden_, arch_.sbuf_free_elements_max);
    return r;
  }
  const RowTiles tiles(rows_, hidden_, arch_.partitions);
  const uint32_t bufs = row_buffers(choices_.bufs, choices_.max_bufs, tiles.count,
                                    [&](uint32_t n) { return layout(n); });
  if (!layout(bufs)) {
    r.problem = fmt::format("one tile of {} rows needs {} bytes per partition of SBUF; {} has {}",
                            arch_.partitions, shared_ + per_buffer_, arch_.name,
                            arch_.sbuf_partition_bytes);
    return r;
  }
  if (static_cast<uint64_t>(tiles.count) * (k_.ops.size() + 4) > arch_.max_instructions) {
    r.problem = fmt::format("{} tiles of {} ops exceed the {} instructions a kernel holds",
                            tiles.count, k_.ops.size(), arch_.max_instructions);
    return r;
  }
  isa::Program p;
  p.name = k_.name;
  for (const std::string& n : order_) {
    const Value& v = values_[n];
    if (v.hbm_in || v.hbm_out) {
      const GraphTensor& t = *g_.find(n);
      p.add_dram_tensor(n, t.dtype, t.shape);
    }
  }
  const uint16_t q_load = p.add_queue("qLoad");
  const uint16_t q_store = p.add_queue("qStore");
  std::vector<Instruction> seq;
  auto hbm = [&](const std::string& n, int64_t row0, uint32_t parts) {
    const Value& v = values_[n];
    const uint64_t es = isa::size_of(v.dtype);
    const uint64_t base = p.find_dram_tensor(n)->address;
    if (v.cls == Cls::col)
      return isa::hbm_ap(v.dtype, base, parts, 0, {{1, static_cast<uint32_t>(hidden_)}});
    if (v.cls == Cls::scalar) return isa::hbm_ap(v.dtype, base, parts, 0, {{1, 1}});
    const int64_t width = v.cls == Cls::full ? hidden_ : 1;
    return isa::hbm_ap(v.dtype, base + row0 * width * es, parts, width,
                       {{1, static_cast<uint32_t>(width)}});
  };
  const uint32_t first_parts = tiles.parts(0);
  for (const std::string& n : order_) {
    const Value& v = values_[n];
    if (v.hbm_in && (v.cls == Cls::col || v.cls == Cls::scalar)) {
      seq.push_back(dma_copy(q_load, ap(n, first_parts, 0), hbm(n, 0, first_parts), "load " + n));
    }
  }
  auto loads = [&](int64_t t) {
    for (const std::string& n : order_) {
      const Value& v = values_[n];
      if (!v.hbm_in || v.cls == Cls::col || v.cls == Cls::scalar) continue;
      const auto buf = static_cast<uint32_t>(t % bufs);
      if (v.cls != Cls::periodic) {
        seq.push_back(dma_copy(q_load, ap(n, tiles.parts(t), buf),
                               hbm(n, t * arch_.partitions, tiles.parts(t)),
                               fmt::format("load {} tile {}", n, t)));
        continue;
      }
      // Row r of the tile is row (r0 + r) mod R of the tensor: one transfer per run of its rows.
      const auto period = static_cast<int64_t>(g_.find(n)->elements() / hidden_);
      const uint64_t es = isa::size_of(v.dtype);
      const uint64_t base = p.find_dram_tensor(n)->address;
      int64_t row = (t * arch_.partitions) % period;
      for (uint32_t part = 0; part < tiles.parts(t);) {
        const auto run =
            static_cast<uint32_t>(std::min<int64_t>(tiles.parts(t) - part, period - row));
        seq.push_back(
            dma_copy(q_load, ap(n, run, buf, part),
                     isa::hbm_ap(v.dtype, base + row * hidden_ * es, run, hidden_,
                                 {{1, static_cast<uint32_t>(hidden_)}}),
                     fmt::format("load {} tile {} rows {}..{}", n, t, row, row + run - 1)));
        part += run;
        row = (row + run) % period;
      }
    }
  };
  for (int64_t t = 0; t < std::min<int64_t>(bufs, tiles.count); ++t) loads(t);
  for (int64_t t = 0; t < tiles.count; ++t) {
    const uint32_t parts = tiles.parts(t);
    const uint32_t buf = static_cast<uint32_t>(t % bufs);
    for (size_t pos = 0; pos < k_.ops.size(); ++pos) emit_op(pos, parts, buf, seq);
    for (const std::string& n : order_) {
      if (!values_[n].hbm_out) continue;
      seq.push_back(dma_copy(q_store, hbm(n, t * arch_.partitions, parts), ap(n, parts, buf),
                             fmt::format("store {} tile {}", n, t)));
    }
    if (t + bufs < tiles.count) loads(t + bufs);
  }
  for (const auto& [n, v] : values_) {
    if (v.producer >= 0 && v.dtype == g_.find(n)->dtype) r.rounded.push_back(n);
  }
  r.program = compiler::synchronize(seq, std::move(p), arch_);
  r.program.name = k_.name;
  r.bufs = bufs;
  r.tile_rows = first_parts;
  r.sbuf_bytes = shared_ + bufs * per_buffer_;
  return r;
}

}  // namespace

namespace {
Workload library_workload(const Workload& w, const Graph& g, const GraphOp& op);
}  // namespace

GraphPlan plan_graph(const Graph& g, const std::string& file) {
  GraphPlan plan;
  std::map<std::string, Cls> inside;  // values computed in the open kernel, with their layout
  bool open_compiles = false;         // the open row kernel fuses (compile mode)
  auto close = [&] { inside.clear(); };
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const GraphOp& op = g.ops[i];
    if (op.kind == OpKind::view) continue;  // no kernel: a reader of it gets the base's data
    if (op.kind == OpKind::host) {
      close();
      continue;
    }
    if (!row_local(op)) {
      close();
      plan.kernels.push_back({fmt::format("{}({})", op.op, op.out.name), {i}, false, {}});
      continue;
    }
    const bool compile = g.mode_of(op) == "compile";
    const bool join = compile && open_compiles && !plan.kernels.empty() &&
                      plan.kernels.back().row && !inside.empty() &&
                      fits(g, op, plan.kernels.back().space, inside);
    if (!join) {
      close();
      const std::vector<int64_t> space = natural_space(g, op);
      if (!fits(g, op, space, inside)) {
        throw WorkloadError(file, op.where,
                            fmt::format("{} of shapes that broadcast across rows is not "
                                        "supported: operands must be the full tensor, one value "
                                        "per row ([..., 1]), one row ([H]), one value, or the "
                                        "trailing rows repeated ([S, H] against [B, S, H])",
                                        op.op));
      }
      plan.kernels.push_back({"", {}, true, space});
      open_compiles = compile;
    }
    plan.kernels.back().ops.push_back(i);
    inside[op.out.name] = out_class(op, plan.kernels.back().space);
  }
  for (auto& k : plan.kernels) {
    if (k.row) k.name = kernel_name(g, k.ops);
  }
  return plan;
}

ParamSpace graph_space(const Workload& w, const config::ArchConfig& arch) {
  const Graph& g = *w.graph;
  ParamSpace s;
  s.kernel = fmt::format("graph ({} mode)", g.mode);
  s.unknown = fmt::format("unknown parameter of a graph in {} mode", g.mode);
  s.choice("mode", {"eager", "compile"}, "eager",
           "eager: a kernel per op, each dispatched and launched by the host; compile: runs of "
           "row-local ops fused into one kernel each, one host call")
      .as_option()
      .with_role(ParamRole::fusion);
  const bool compile = g.mode == "compile";
  if (std::any_of(g.ops.begin(), g.ops.end(), row_local)) {
    ParamDecl& bufs = s.integer("bufs", 1, 8, nullptr, "tiles in flight in the row kernels");
    bufs.default_note = compile ? "the most of 3 that fit SBUF" : "the most of 2 that fit SBUF";
    bufs.role = ParamRole::buffers;
    bufs.tried = integer_values({1, 2, 3, 4}, 1, 8);
    if (compile) {
      s.choice("engines", {"balance", "vector"}, "balance",
               "the fused kernels' arithmetic: each op on VectorE or ScalarE, where the kernel's "
               "estimated busy time is lower (balance), or all on VectorE")
          .with_role(ParamRole::engine);
      s.flag("fold_reductions", true,
             "an activation that feeds a sum or mean becomes one ScalarE activation that "
             "accumulates it");
    }
  }
  // The library kernels' params, "<kernel>.<param>", declared by the first op of each kernel.
  std::set<std::string> seen;
  for (const GraphOp& op : g.ops) {
    // Only the library kernels have params: not the row-local ops, a transpose, a reshape or
    // view, a DMA copy or an op that runs on the host.
    if (op.kind != OpKind::kernel || row_local(op) || op.op == "transpose") continue;
    const Workload sub = library_workload(w, g, op);
    if (!seen.insert(sub.kernel).second) continue;
    const KernelEntry* entry = find_kernel(sub.kernel);
    if (entry == nullptr || entry->space == nullptr) continue;
    for (ParamDecl d : entry->space(sub, arch).params) {
      if (d.option) continue;  // the op's own attributes (a matmul's strategy)
      d.name = sub.kernel + "." + d.name;
      d.meaning = fmt::format("{} ({} ops): {}", sub.kernel, op.op, d.meaning);
      s.params.push_back(std::move(d));
    }
  }
  s.constraints = {"each row kernel's tiles fit SBUF",
                   "each library kernel's own constraints (its buffers fit SBUF, ...)"};
  return s;
}

namespace {

// A kernel of the library for op, as a program of its own, and how its tensors bind to the
// graph's.
struct LibraryKernel {
  isa::Program program;
  std::vector<std::pair<std::string, std::string>> binding;
  nlohmann::json choices;
};

isa::Program transpose_kernel(const GraphTensor& x, const GraphTensor& y,
                              const config::ArchConfig& arch) {
  // A plain kernel: 128-row blocks of x into SBUF, stored to y with one element per DMA run.
  isa::Program p;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  const uint64_t es = isa::size_of(x.dtype);
  const uint64_t xa = p.add_dram_tensor("x", x.dtype, x.shape).address;
  const uint64_t ya = p.add_dram_tensor("y", y.dtype, y.shape).address;
  const uint16_t q_load = p.add_queue("qLoad");
  const uint16_t q_store = p.add_queue("qStore");
  const int64_t chunk =
      std::min<int64_t>(cols, std::min<uint64_t>(arch.sbuf_partition_bytes / (2 * es), 16384));
  std::vector<Instruction> seq;
  int64_t n = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += arch.partitions) {
    const auto parts = static_cast<uint32_t>(std::min<int64_t>(arch.partitions, rows - r0));
    for (int64_t c0 = 0; c0 < cols; c0 += chunk, ++n) {
      const auto w = static_cast<uint32_t>(std::min(chunk, cols - c0));
      const uint64_t off = static_cast<uint64_t>(n % 2) * chunk * es;
      const AccessPattern tile = isa::sbuf_ap(x.dtype, 0, parts, off, {{1, w}});
      seq.push_back(dma_copy(
          q_load, tile, isa::hbm_ap(x.dtype, xa + (r0 * cols + c0) * es, parts, cols, {{1, w}}),
          fmt::format("load x rows {} cols {}", r0, c0)));
      seq.push_back(
          dma_copy(q_store, isa::hbm_ap(x.dtype, ya + (c0 * rows + r0) * es, parts, 1, {{rows, w}}),
                   tile, fmt::format("store y cols {} rows {}", r0, c0)));
    }
  }
  return compiler::synchronize(seq, std::move(p), arch);
}

// One strided copy between HBM tensors: element i of `shape` (row-major) moves from
// src_offset + sum(index * src_stride) to dst_offset + sum(index * dst_stride), in elements.
struct StridedCopy {
  std::vector<int64_t> shape, src_stride, dst_stride;
  int64_t src_offset = 0, dst_offset = 0;
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

// The copies of a data-movement op: permute reads its input through permuted strides, slice
// through a start and a step, cat writes each input into its part of the output, clone copies.
std::vector<StridedCopy> copies_of(const Graph& g, const GraphOp& op) {
  const GraphTensor& x = *g.find(op.args[0].tensor);
  const std::vector<int64_t> in = contiguous_strides(x.shape);
  const std::vector<int64_t> out = contiguous_strides(op.out.shape);
  const auto dim = static_cast<size_t>(op.dim);
  if (op.op == "permute") {
    StridedCopy c{op.out.shape, {}, out};
    for (int64_t d : op.dims) c.src_stride.push_back(in[static_cast<size_t>(d)]);
    return {c};
  }
  if (op.op == "slice") {
    StridedCopy c{op.out.shape, in, out};
    c.src_offset = op.start * in[dim];
    c.src_stride[dim] *= op.step;
    return {c};
  }
  if (op.op == "cat") {
    std::vector<StridedCopy> copies;
    int64_t at = 0;
    for (const GraphArg& a : op.args) {
      const GraphTensor& t = *g.find(a.tensor);
      StridedCopy c{t.shape, contiguous_strides(t.shape), out};
      c.dst_offset = at * out[dim];
      at += t.shape[dim];
      copies.push_back(c);
    }
    return copies;
  }
  return {StridedCopy{x.shape, in, out}};  // clone
}

// A data-movement kernel: every copy is one DMA from HBM to HBM (SyncE triggers it), its
// access patterns the copy's strides after merging the dimensions that are contiguous on both
// sides (longer runs, fewer descriptors): the widest remaining dimension but the innermost
// spread over the partitions (so over the DMA engines, D1), the others free dimensions.
isa::Program copy_kernel(const Graph& g, const GraphOp& op, const config::ArchConfig& arch,
                         const std::string& file) {
  isa::Program p;
  std::vector<std::string> sources;
  for (const GraphArg& a : op.args) {
    if (std::find(sources.begin(), sources.end(), a.tensor) != sources.end()) continue;
    sources.push_back(a.tensor);
    const GraphTensor& t = *g.find(a.tensor);
    p.add_dram_tensor(a.tensor, t.dtype, t.shape);
  }
  const uint64_t y = p.add_dram_tensor(op.out.name, op.out.dtype, op.out.shape).address;
  const uint16_t q = p.add_queue("qCopy");
  const DType dt = op.out.dtype;
  const uint64_t es = isa::size_of(dt);
  std::vector<Instruction> seq;
  const std::vector<StridedCopy> copies = copies_of(g, op);
  for (size_t ci = 0; ci < copies.size(); ++ci) {
    const StridedCopy& c = copies[ci];
    const uint64_t x =
        p.find_dram_tensor(op.op == "cat" ? op.args[ci].tensor : op.args[0].tensor)->address;
    // Dimensions of size > 1, innermost last, merged where contiguous on both sides.
    std::vector<int64_t> n, ss, ds;
    for (size_t d = 0; d < c.shape.size(); ++d) {
      if (c.shape[d] == 1) continue;
      if (!n.empty() && ss.back() == c.src_stride[d] * c.shape[d] &&
          ds.back() == c.dst_stride[d] * c.shape[d]) {
        n.back() *= c.shape[d];
        ss.back() = c.src_stride[d];
        ds.back() = c.dst_stride[d];
        continue;
      }
      n.push_back(c.shape[d]);
      ss.push_back(c.src_stride[d]);
      ds.push_back(c.dst_stride[d]);
    }
    if (n.empty()) {
      n = {1};
      ss = {1};
      ds = {1};
    }
    // The partition dimension: the largest but the innermost (the innermost alone for rank 1).
    size_t part = n.size() - 1;
    for (size_t d = 0; d + 1 < n.size(); ++d) {
      if (part == n.size() - 1 || n[d] > n[part]) part = d;
    }
    std::vector<size_t> free;
    for (size_t d = 0; d < n.size(); ++d) {
      if (d != part || n.size() == 1) free.push_back(d);
    }
    if (free.size() > isa::kMaxFreeDims) {
      throw WorkloadError(file, op.where,
                          fmt::format("{} needs a copy of {} strided dimensions; a DMA has {}",
                                      op.op, free.size(), isa::kMaxFreeDims));
    }
    const int64_t parts_total = n.size() == 1 ? 1 : n[part];
    // Counts of at most 65535 per free dimension and 2^20 partitions per transfer: the outermost
    // free dimension (or the partitions) in pieces when larger.
    constexpr int64_t kCount = 65535, kParts = int64_t{1} << 20;
    for (size_t f : free) {
      if (f != free.front() && n[f] > kCount) {
        throw WorkloadError(file, op.where,
                            fmt::format("{}: a copy's inner dimension of {} elements exceeds the "
                                        "{} a DMA access pattern counts",
                                        op.op, n[f], kCount));
      }
    }
    const size_t outer = free.front();
    const int64_t outer_step = std::min<int64_t>(n[outer], kCount);
    const int64_t part_step = std::min<int64_t>(parts_total, kParts);
    for (int64_t p0 = 0; p0 < parts_total; p0 += part_step) {
      for (int64_t o0 = 0; o0 < n[outer]; o0 += outer_step) {
        const auto parts = static_cast<uint32_t>(std::min(part_step, parts_total - p0));
        std::vector<std::pair<int64_t, uint32_t>> sd, dd;
        for (size_t f : free) {
          const int64_t count = f == outer ? std::min(outer_step, n[outer] - o0) : n[f];
          sd.emplace_back(ss[f], static_cast<uint32_t>(count));
          dd.emplace_back(ds[f], static_cast<uint32_t>(count));
        }
        const int64_t pstride_s = n.size() == 1 ? 0 : ss[part];
        const int64_t pstride_d = n.size() == 1 ? 0 : ds[part];
        const int64_t src_at = c.src_offset + p0 * pstride_s + o0 * ss[outer];
        const int64_t dst_at = c.dst_offset + p0 * pstride_d + o0 * ds[outer];
        isa::AccessPattern src =
            isa::hbm_ap(dt, x + static_cast<uint64_t>(src_at) * es, parts, pstride_s, {});
        isa::AccessPattern dst =
            isa::hbm_ap(dt, y + static_cast<uint64_t>(dst_at) * es, parts, pstride_d, {});
        for (size_t i = 0; i < sd.size(); ++i) {
          src.dims[src.ndims++] = isa::Dim{sd[i].first, sd[i].second};
          dst.dims[dst.ndims++] = isa::Dim{dd[i].first, dd[i].second};
        }
        seq.push_back(
            dma_copy(q, dst, src, fmt::format("{} {} part {}", op.op, op.out.name, seq.size())));
      }
    }
  }
  if (seq.size() > arch.max_instructions) {
    throw WorkloadError(file, op.where,
                        fmt::format("{} needs {} DMA instructions; a kernel holds at most {}",
                                    op.op, seq.size(), arch.max_instructions));
  }
  return compiler::synchronize(seq, std::move(p), arch);
}

// The kernel form of a library op (rms_norm, layer_norm, softmax, matmul,
// scaled_dot_product_attention): what its kernel of
// the library lowers.
Workload library_workload(const Workload& w, const Graph& g, const GraphOp& op) {
  const GraphTensor& x = *g.find(op.args[0].tensor);
  Workload sub;
  sub.file = w.file;
  sub.name = op.out.name;
  sub.dtype = x.dtype;
  sub.seed = w.seed;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < x.shape.size(); ++i) rows *= x.shape[i];
  const std::map<std::string, std::string> library = {
      {"rms_norm", "rmsnorm"},
      {"layer_norm", "layernorm"},
      {"softmax", "softmax"},
      {"matmul", "matmul"},
      {"scaled_dot_product_attention", "attention"}};
  sub.kernel = library.at(op.op);
  if (op.op == "matmul") {
    // [..., M, K] @ [..., K, N] (or [..., N, K]): the batches one after another in one kernel.
    const GraphTensor& b = *g.find(op.args[1].tensor);
    const int64_t m = x.shape[x.shape.size() - 2];
    sub.shape = {m, x.shape.back(), op.out.shape.back()};
    sub.options = {{"strategy", op.strategy}, {"a_layout", "mk"}};
    const int64_t batch = rows / m;
    if (batch > 1) {
      sub.options["batch"] = batch;
      sub.options["b_batched"] = b.shape.size() > 2;
    }
    if (op.transpose_b) sub.options["b_layout"] = "nk";
  } else if (op.op == "scaled_dot_product_attention") {
    const int64_t seq = x.shape[x.shape.size() - 2];
    sub.shape = {rows / seq, seq, x.shape.back()};
    sub.options = {{"causal", op.causal}};
  } else {
    sub.shape = {rows, x.shape.back()};
    sub.eps = op.eps;
  }
  return sub;
}

// A collective op's kernel: SyncE triggers one collective instruction from the argument into
// the result (each seen whole and flattened, so dimension 0 is the one split or joined) and
// waits for its semaphore update, as the collective library kernel does. One rank (a graph on
// one core): the same instruction, which copies x (as torch.distributed's collectives on a
// world of one leave the tensor as it is).
isa::Program collective_kernel(const Graph& g, const GraphOp& op) {
  const GraphTensor& xt = *g.find(op.args[0].tensor);
  isa::Program p;
  const isa::DramTensor x = p.add_dram_tensor(xt.name, xt.dtype, xt.shape);
  const isa::DramTensor y = p.add_dram_tensor(op.out.name, op.out.dtype, op.out.shape);
  const uint16_t done = p.add_semaphore("collective_done");
  // Rows of the widest count a free dimension takes (at most 65535) that divides the tensor.
  auto whole = [](const isa::DramTensor& t) {
    uint64_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
    uint64_t cols = std::min<uint64_t>(elements, 65535);
    while (elements % cols != 0) --cols;
    return isa::hbm_ap(t.dtype, t.address, static_cast<uint32_t>(elements / cols),
                       static_cast<uint32_t>(cols), {{1, static_cast<uint32_t>(cols)}});
  };
  Instruction cc;
  cc.opcode = isa::Opcode::collective;
  cc.engine = Engine::sync;
  cc.collective_op = *isa::parse_collective_op(op.op);
  if (op.op == "all_reduce" || op.op == "reduce_scatter") {
    cc.op0 = op.reduce_op == "max" ? AluOp::max : op.reduce_op == "min" ? AluOp::min : AluOp::add;
  }
  if (op.ranks != g.cores) cc.collective_group = static_cast<uint8_t>(op.ranks);
  cc.src[0] = whole(x);
  cc.dst = whole(y);
  cc.label = fmt::format("{} {}", op.op, op.out.name);
  cc.updates.push_back(isa::SemaphoreUpdate{done, isa::SemaphoreUpdateKind::add, 1});
  Instruction fence;
  fence.opcode = isa::Opcode::nop;
  fence.engine = Engine::sync;
  fence.waits.push_back(isa::SemaphoreWait{done, 1});
  p.stream(Engine::sync).push_back(cc);
  p.stream(Engine::sync).push_back(fence);
  return p;
}

LibraryKernel library_kernel(const Workload& w, const Graph& g, const GraphOp& op,
                             const config::ArchConfig& arch) {
  const GraphTensor& x = *g.find(op.args[0].tensor);
  LibraryKernel k;
  if (op.kind == OpKind::collective) {
    k.program = collective_kernel(g, op);
    k.choices = {{"ranks", op.ranks}};
    if (op.op == "all_reduce" || op.op == "reduce_scatter") k.choices["reduce_op"] = op.reduce_op;
    return k;
  }
  if (op.kind == OpKind::copy) {
    k.program = copy_kernel(g, op, arch, w.file);
    return k;
  }
  if (op.op == "transpose") {
    const uint64_t es = isa::size_of(x.dtype);
    const uint64_t chunk =
        std::min<uint64_t>(static_cast<uint64_t>(x.shape[1]),
                           std::min<uint64_t>(arch.sbuf_partition_bytes / (2 * es), 16384));
    const uint64_t blocks = (static_cast<uint64_t>(x.shape[0]) + arch.partitions - 1) /
                            arch.partitions *
                            ((static_cast<uint64_t>(x.shape[1]) + chunk - 1) / chunk);
    if (2 * blocks > arch.max_instructions) {
      throw WorkloadError(w.file, op.where,
                          fmt::format("transpose of [{}, {}] needs {} DMA instructions; a kernel "
                                      "holds at most {}",
                                      x.shape[0], x.shape[1], 2 * blocks, arch.max_instructions));
    }
    k.program = transpose_kernel(x, op.out, arch);
    k.binding = {{"x", x.name}, {"y", op.out.name}};
    return k;
  }
  Workload sub = library_workload(w, g, op);
  if (op.op == "matmul") {
    const GraphTensor& b = *g.find(op.args[1].tensor);
    k.binding = {{"a", x.name}, {op.transpose_b ? "b_t" : "b", b.name}, {"c", op.out.name}};
  } else if (op.op == "scaled_dot_product_attention") {
    k.binding = {
        {"q", x.name}, {"k", op.args[1].tensor}, {"v", op.args[2].tensor}, {"o", op.out.name}};
  } else {
    k.binding = {{"x", x.name}, {"y", op.out.name}};
    if (op.args.size() > 1) k.binding.emplace_back("gamma", op.args[1].tensor);
    if (op.args.size() > 2) k.binding.emplace_back("beta", op.args[2].tensor);
  }
  // The graph's params "<kernel>.<param>" are the library kernel's params.
  for (const auto& item : w.params.items()) {
    const std::string prefix = sub.kernel + ".";
    if (item.key().rfind(prefix, 0) == 0)
      sub.params[item.key().substr(prefix.size())] = item.value();
  }
  const KernelEntry* entry = find_kernel(sub.kernel);
  if (entry == nullptr) {
    throw WorkloadError(
        w.file, op.where,
        fmt::format("{} needs the {} kernel, which this build does not have", op.op, sub.kernel));
  }
  try {
    LoweredKernel lk = entry->lower(sub, arch, false);
    k.program = std::move(lk.program);
    k.choices = lk.choices;
  } catch (const WorkloadError& e) {
    // The kernel names its own fields; say which op asked for it.
    const std::string what = e.what();
    const auto at = what.find(": ");
    throw WorkloadError(w.file, op.where,
                        fmt::format("the {} kernel cannot run this op: {}", sub.kernel,
                                    at == std::string::npos ? what : what.substr(at + 2)));
  }
  return k;
}

// Core `core`'s values of the index-th given tensor: an input drawn per core (per_core) from the
// seed plus the core's number, every other the same on every core.
std::vector<float> input_values(const Workload& w, const GraphInput& in, size_t index,
                                uint32_t core = 0) {
  const GraphTensor& t = in.tensor;
  std::vector<float> v = base::large_vector<float>(t.elements());
  SeededRandom rng((w.seed + (in.per_core ? core : 0)) * 1000003 + index);
  switch (in.init.kind) {
    case GraphInit::Kind::normal:
      rng.fill_normal(v.data(), v.size(),
                      [&](double n) { return static_cast<float>(in.init.a + in.init.b * n); });
      break;
    case GraphInit::Kind::uniform:
      for (float& f : v)
        f = static_cast<float>(in.init.a + (in.init.b - in.init.a) * rng.uniform());
      break;
    case GraphInit::Kind::ones:
      std::fill(v.begin(), v.end(), 1.0f);
      break;
    case GraphInit::Kind::zeros:
      break;
    case GraphInit::Kind::arange:
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
      break;
    case GraphInit::Kind::npy: {
      std::ifstream f(in.init.path, std::ios::binary);
      if (!f) {
        throw WorkloadError(w.file, in.where + "/npy", fmt::format("cannot read {}", in.init.path));
      }
      std::stringstream ss;
      ss << f.rdbuf();
      NpyArray a;
      try {
        a = parse_npy(ss.str());
      } catch (const NpyError& e) {
        throw WorkloadError(w.file, in.where + "/npy",
                            fmt::format("{}: {}", in.init.path, e.what()));
      }
      if (a.shape != t.shape) {
        throw WorkloadError(
            w.file, in.where + "/npy",
            fmt::format("{} holds shape [{}]; the input is declared [{}]", in.init.path,
                        fmt::join(a.shape, ", "), fmt::join(t.shape, ", ")));
      }
      v = std::move(a.values);
      break;
    }
  }
  for (float& f : v) f = isa::round_to(t.dtype, f);
  return v;
}

// The most rounded tensors met on any path from an input to an output: a tensor counts when its
// value is rounded to its dtype as it is stored (`rounded`: every HBM tensor between kernels and
// the values a kernel keeps in their op's dtype). Ops come in order, so one pass suffices.
// A reducing collective (all_reduce, reduce_scatter) adds up the values of its ranks, each with
// its own independent error of d roundings: as independent errors add, d times the ranks.
uint32_t roundings_on_longest_path(const Graph& g, const std::set<std::string>& rounded) {
  std::map<std::string, uint32_t> depth;  // tensors not listed (inputs) are at 0
  uint32_t deepest = 0;
  for (const GraphOp& op : g.ops) {
    uint32_t d = 0;
    for (const GraphArg& a : op.args) {
      if (!a.is_tensor()) continue;
      const auto it = depth.find(a.tensor);
      if (it != depth.end()) d = std::max(d, it->second);
    }
    if (op.op == "all_reduce" || op.op == "reduce_scatter") {
      // and the fp32 additions in rank order, one rounding each before the store's.
      d = d * op.ranks + (op.ranks - 1);
    }
    d += rounded.count(op.out.name) > 0 ? 1 : 0;
    depth[op.out.name] = d;
    if (std::find(g.outputs.begin(), g.outputs.end(), op.out.name) != g.outputs.end())
      deepest = std::max(deepest, d);
  }
  return deepest;
}

uint64_t op_flops(const Graph& g, const GraphOp& op) {
  const uint64_t n = op.out.elements();
  if (op.kind == OpKind::view || op.kind == OpKind::copy || op.kind == OpKind::host ||
      op.kind == OpKind::collective) {
    return 0;
  }
  if (op.op == "matmul") {
    return 2 * n * static_cast<uint64_t>(g.find(op.args[0].tensor)->shape.back());
  }
  if (op.kind == OpKind::reduction) return g.find(op.args[0].tensor)->elements();
  if (op.op == "transpose") return 0;
  if (op.op == "rms_norm") return 4 * n;
  if (op.op == "scaled_dot_product_attention") {
    // Q K^T and P V, 2 * seq * head_dim per score each; half the scores when causal.
    const int64_t seq = op.out.shape[op.out.shape.size() - 2];
    const uint64_t f = 4 * n * static_cast<uint64_t>(seq);
    return op.causal ? f / 2 : f;
  }
  if (op.op == "layer_norm" || op.op == "softmax") return 5 * n;
  return n;
}

}  // namespace

LoweredKernel lower_graph(const Workload& w, const config::ArchConfig& arch, bool functional) {
  const Graph& g = *w.graph;
  const GraphPlan plan = plan_graph(g, w.file);
  // Materialized: inputs, outputs, and whatever one kernel passes to another.
  std::map<std::string, size_t> kernel_of;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    for (size_t i : plan.kernels[k].ops) kernel_of[g.ops[i].out.name] = k;
  }
  if (plan.kernels.empty()) {
    throw WorkloadError(w.file, "/ops",
                        "no op runs on the device (every op is a view or runs on the host)");
  }
  // A view's data is its base's: what a reader of a view needs stored is the base.
  std::set<std::string> materialized;
  for (const std::string& name : g.outputs) materialized.insert(g.base_of(name));
  // A library or DMA kernel writes its output to HBM, read or not.
  for (const GraphPlan::Kernel& k : plan.kernels) {
    if (!k.row) materialized.insert(g.ops[k.ops.front()].out.name);
  }
  auto needs = [&](const std::string& tensor, size_t reader_kernel) {
    const std::string& base = g.base_of(tensor);
    const auto it = kernel_of.find(base);
    if (it != kernel_of.end() && it->second != reader_kernel) materialized.insert(base);
  };
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    for (size_t i : plan.kernels[k].ops) {
      for (const GraphArg& a : g.ops[i].args) {
        if (a.is_tensor()) needs(a.tensor, k);
      }
    }
  }
  for (const GraphOp& op : g.ops) {
    if (op.kind != OpKind::host) continue;
    for (const GraphArg& a : op.args) needs(a.tensor, plan.kernels.size());
  }
  LoweredKernel out;
  isa::Program& p = out.program;
  p.name = w.name;
  uint64_t hbm = 0;
  for (const GraphInput& in : g.inputs) {
    hbm += p.add_dram_tensor(in.tensor.name, in.tensor.dtype, in.tensor.shape).bytes();
  }
  for (const GraphOp& op : g.ops) {
    if (op.kind == OpKind::host) {
      // Its results are copied to the device: given, like inputs.
      for (const GraphInput& r : op.results) {
        hbm += p.add_dram_tensor(r.tensor.name, r.tensor.dtype, r.tensor.shape).bytes();
      }
    } else if (materialized.count(op.out.name)) {
      hbm += p.add_dram_tensor(op.out.name, op.out.dtype, op.out.shape).bytes();
    }
  }
  // Views name their base's bytes in HBM under their own shape.
  for (const GraphOp& op : g.ops) {
    if (op.kind != OpKind::view || op.out.name.empty()) continue;
    const isa::DramTensor* base = p.find_dram_tensor(g.base_of(op.out.name));
    if (base == nullptr) continue;  // read by nothing
    p.dram_tensors.push_back(
        isa::DramTensor{op.out.name, op.out.dtype, op.out.shape, base->address});
  }
  if (p.dram_bytes() > arch.hbm_capacity_bytes) {
    throw WorkloadError(w.file, "/inputs",
                        fmt::format("the graph's tensors in HBM take {} bytes; a {} core has {}",
                                    p.dram_bytes(), arch.name, arch.hbm_capacity_bytes));
  }
  if (functional) {
    const std::string why = functional_size_problem(hbm * std::max<uint32_t>(1, g.cores));
    if (!why.empty()) throw WorkloadError(w.file, "/inputs", why);
  }
  nlohmann::json kernels = nlohmann::json::array();
  const ParamSpace space = graph_space(w, arch);
  const ParamValues given(w, space);
  RowChoices row_choices;
  row_choices.compile = g.mode == "compile";
  row_choices.max_bufs = row_choices.compile ? 3 : 2;
  if (space.find("bufs") != nullptr)
    row_choices.bufs = static_cast<uint32_t>(given.integer("bufs"));
  if (space.find("engines") != nullptr) row_choices.balance = given.choice("engines") == "balance";
  if (space.find("fold_reductions") != nullptr) row_choices.fold = given.flag("fold_reductions");
  std::set<std::string> rounded(materialized);
  for (const GraphPlan::Kernel& k : plan.kernels) {
    nlohmann::json c = {{"name", k.name}, {"ops", nlohmann::json::array()}};
    for (size_t i : k.ops) c["ops"].push_back(g.ops[i].op);
    if (k.row) {
      PlannedKernel pk{true, k.ops, k.space, k.name};
      RowKernelResult r = RowKernel(g, pk, materialized, arch, row_choices).lower();
      if (!r.problem.empty()) {
        throw WorkloadError(w.file, g.ops[k.ops.front()].where,
                            fmt::format("kernel {} cannot be lowered: {}", k.name, r.problem));
      }
      append_kernel(p, r.program, k.name);
      rounded.insert(r.rounded.begin(), r.rounded.end());
      c["tile_rows"] = r.tile_rows;
      c["bufs"] = r.bufs;
      c["sbuf_bytes_per_partition"] = r.sbuf_bytes;
    } else {
      const GraphOp& op = g.ops[k.ops.front()];
      LibraryKernel lk = library_kernel(w, g, op, arch);
      append_kernel(p, lk.program, k.name, lk.binding);
      if (!lk.choices.is_null()) c["choices"] = lk.choices;
    }
    kernels.push_back(c);
  }
  // The host: eager dispatches every op (a view too: metadata, no kernel) and launches its
  // kernel; consecutive compiled ops are one call (CompiledFunction) that launches all of their
  // kernels; an op that runs on the host copies its inputs over, computes, and copies its
  // results back, between the calls around it (a graph break).
  std::map<size_t, std::vector<uint32_t>> launches;  // op index -> the kernels it starts
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    launches[plan.kernels[k].ops.front()].push_back(static_cast<uint32_t>(k));
  }
  bool compiled_open = false;
  auto bytes_of = [&](const std::string& name) {
    const GraphTensor& t = *g.find(name);
    return t.elements() * isa::size_of(t.dtype);
  };
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const GraphOp& op = g.ops[i];
    const std::vector<uint32_t> ks = launches.count(i) ? launches[i] : std::vector<uint32_t>{};
    if (op.kind == OpKind::host) {
      compiled_open = false;
      isa::HostOp h;
      h.name = op.name;
      h.on_host = true;
      for (const GraphArg& a : op.args) {
        h.to_host.push_back(isa::HostCopy{a.tensor, bytes_of(a.tensor)});
        h.host_bytes += bytes_of(a.tensor);
      }
      for (const GraphInput& r : op.results) {
        h.to_device.push_back(isa::HostCopy{r.tensor.name, bytes_of(r.tensor.name)});
        h.host_bytes += bytes_of(r.tensor.name);
      }
      p.host_ops.push_back(h);
    } else if (g.mode_of(op) == "compile") {
      if (ks.empty()) continue;
      if (!compiled_open) p.host_ops.push_back(isa::HostOp{"CompiledFunction", {}});
      compiled_open = true;
      for (uint32_t k : ks) p.host_ops.back().kernels.push_back(k);
    } else {
      compiled_open = false;
      // Consecutive ops of one call (GraphOp::call) are one dispatch launching their kernels.
      const bool same_call = op.call >= 0 && i > 0 && g.ops[i - 1].call == op.call &&
                             g.ops[i - 1].kind != OpKind::host &&
                             g.mode_of(g.ops[i - 1]) != "compile" && !p.host_ops.empty();
      if (same_call) {
        for (uint32_t k : ks) p.host_ops.back().kernels.push_back(k);
        continue;
      }
      p.host_ops.push_back(isa::HostOp{op.name, ks});
    }
  }
  // Tensors one kernel stores to HBM and another reads back (eager's round trips).
  uint64_t intermediate_bytes = 0;
  nlohmann::json intermediates = nlohmann::json::array();
  for (const GraphOp& op : g.ops) {
    if (op.kind != OpKind::host && materialized.count(op.out.name) &&
        std::find(g.outputs.begin(), g.outputs.end(), op.out.name) == g.outputs.end()) {
      intermediates.push_back(op.out.name);
      intermediate_bytes += op.out.elements() * isa::size_of(op.out.dtype);
    }
  }
  out.choices = {{"mode", g.mode},
                 {"kernels", kernels},
                 {"hbm_intermediates", intermediates},
                 {"hbm_intermediate_bytes", intermediate_bytes}};
  // The params given (the graph's defaults leave stats.json as it was).
  if (!w.params.empty()) out.choices["params"] = w.params;
  for (const GraphOp& op : g.ops) out.model_flops += op_flops(g, op);
  const DType dt = g.find(g.outputs.front())->dtype;
  out.tolerance = dt == DType::fp32   ? Tolerance{1e-4, 1e-3}
                  : dt == DType::bf16 ? Tolerance{1e-2, 2e-2}
                                      : Tolerance{1e-2, 1e-2};
  if (isa::is_fp8(dt)) out.tolerance = Tolerance{5e-2, 0.125};
  // The tolerance above is one kernel's. Along a chain of kernels every stored rounding the
  // simulated run and the reference each make adds its own error (a 1-ulp flip of an
  // intermediate moves everything computed from it), so the bound widens with the number of
  // rounded tensors on the longest path from an input to an output. It widens as the square
  // root of that number, the probabilistic rounding-error bound of Higham and Mary ("A New
  // Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019:
  // independent roundings add like a random walk, sqrt(n) u with high probability), not
  // linearly (the worst case, which a deep graph never approaches). One kernel: unchanged.
  const uint32_t roundings = roundings_on_longest_path(g, rounded);
  if (roundings > 1) {
    const double widen = std::sqrt(static_cast<double>(roundings));
    out.tolerance = Tolerance{out.tolerance.atol * widen, out.tolerance.rtol * widen};
  }
  out.write_npy = true;
  if (functional && g.cores > 0) {
    // A graph on cores: every core's given tensors (its own for per_core inputs), and its own
    // reference outputs, the collectives combining the cores' values.
    const std::vector<const GraphInput*> given = g.given_tensors();
    std::vector<std::vector<std::vector<float>>> values(g.cores);
    for (uint32_t c = 0; c < g.cores; ++c) {
      for (size_t i = 0; i < given.size(); ++i)
        values[c].push_back(input_values(w, *given[i], i, c));
    }
    const std::vector<GraphValues> ref =
        evaluate_graph_cores(g, values, std::vector<std::string>(rounded.begin(), rounded.end()));
    for (uint32_t c = 0; c < g.cores; ++c) {  // the values move into the inputs, not copied
      std::vector<HostTensor> inputs;
      for (size_t i = 0; i < given.size(); ++i) {
        const GraphTensor& t = given[i]->tensor;
        inputs.push_back(HostTensor{t.name, t.dtype, t.shape, std::move(values[c][i])});
      }
      out.core_inputs.push_back(std::move(inputs));
    }
    for (uint32_t c = 0; c < g.cores; ++c) {
      std::vector<HostTensor> expected;
      for (const std::string& name : g.outputs) {
        const GraphTensor& t = *g.find(name);
        const std::vector<double>& v = *ref[c].find(name);
        expected.push_back(
            HostTensor{name, t.dtype, t.shape, std::vector<float>(v.begin(), v.end())});
      }
      out.core_expected.push_back(std::move(expected));
    }
    out.inputs = out.core_inputs.front();
    out.expected = out.core_expected.front();
  } else if (functional) {
    // Inputs, and the results of ops that run on the host: in HBM from the start (no kernel
    // reads a result before the host has copied it over, which comes before the launches of
    // the kernels that read it).
    std::vector<std::vector<float>> values;
    const std::vector<const GraphInput*> given = g.given_tensors();
    for (size_t i = 0; i < given.size(); ++i) values.push_back(input_values(w, *given[i], i));
    const GraphValues ref =
        evaluate_graph(g, values, std::vector<std::string>(rounded.begin(), rounded.end()));
    for (size_t i = 0; i < given.size(); ++i) {  // the values move into the inputs, not copied
      const GraphTensor& t = given[i]->tensor;
      out.inputs.push_back(HostTensor{t.name, t.dtype, t.shape, std::move(values[i])});
    }
    for (const std::string& name : g.outputs) {
      const GraphTensor& t = *g.find(name);
      const std::vector<double>& v = *ref.find(name);
      out.expected.push_back(
          HostTensor{name, t.dtype, t.shape, std::vector<float>(v.begin(), v.end())});
    }
  }
  return out;
}

}  // namespace trnsim::workloads
