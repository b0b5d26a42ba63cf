#include "workloads/graph/graph.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>

#include "base/gemm.hpp"
#include "base/large_page_allocator.hpp"
#include "base/names.hpp"
#include "workloads/kernels/attention.hpp"
#include "workloads/kernels/collective.hpp"
#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/matmul.hpp"

namespace trnsim::workloads {

using nlohmann::json;

namespace {

constexpr int kMaxCat = 64;       // tensors one cat joins
constexpr int kMaxHostArgs = 64;  // device tensors an op run on the host reads

struct OpInfo {
  const char* name;
  OpKind kind;
  int tensors;   // tensor arguments (binary ops: 2 operands, either may be a number)
  int optional;  // further optional tensor arguments (norm weights and biases)
  std::vector<std::string> attrs;
};

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> t = {
      {"exp", OpKind::unary, 1, 0, {}},
      {"log", OpKind::unary, 1, 0, {}},
      {"sqrt", OpKind::unary, 1, 0, {}},
      {"rsqrt", OpKind::unary, 1, 0, {}},
      {"reciprocal", OpKind::unary, 1, 0, {}},
      {"neg", OpKind::unary, 1, 0, {}},
      {"abs", OpKind::unary, 1, 0, {}},
      {"tanh", OpKind::unary, 1, 0, {}},
      {"sigmoid", OpKind::unary, 1, 0, {}},
      {"relu", OpKind::unary, 1, 0, {}},
      {"gelu", OpKind::unary, 1, 0, {"approximate"}},
      {"silu", OpKind::unary, 1, 0, {}},
      {"add", OpKind::binary, 2, 0, {}},
      {"sub", OpKind::binary, 2, 0, {}},
      {"mul", OpKind::binary, 2, 0, {}},
      {"div", OpKind::binary, 2, 0, {}},
      {"pow", OpKind::binary, 2, 0, {}},
      {"maximum", OpKind::binary, 2, 0, {}},
      {"minimum", OpKind::binary, 2, 0, {}},
      {"sum", OpKind::reduction, 1, 0, {"dim", "keepdim"}},
      {"mean", OpKind::reduction, 1, 0, {"dim", "keepdim"}},
      {"max", OpKind::reduction, 1, 0, {"dim", "keepdim"}},
      {"matmul", OpKind::kernel, 2, 0, {"strategy", "transpose_b"}},
      {"transpose", OpKind::kernel, 1, 0, {"dim0", "dim1"}},
      {"softmax", OpKind::kernel, 1, 0, {"dim"}},
      {"rms_norm", OpKind::kernel, 1, 1, {"eps", "normalized_shape"}},
      {"layer_norm", OpKind::kernel, 1, 2, {"eps", "normalized_shape"}},
      {"scaled_dot_product_attention", OpKind::kernel, 3, 0, {"is_causal"}},
      {"to", OpKind::unary, 1, 0, {}},
      {"reshape", OpKind::view, 1, 0, {"shape"}},
      {"view", OpKind::view, 0, 1, {}},
      {"permute", OpKind::copy, 1, 0, {"dims"}},
      {"slice", OpKind::copy, 1, 0, {"dim", "start", "end", "step"}},
      {"cat", OpKind::copy, 1, kMaxCat - 1, {"dim"}},
      {"clone", OpKind::copy, 1, 0, {}},
      {"host", OpKind::host, 0, kMaxHostArgs, {}},
      {"all_reduce", OpKind::collective, 1, 0, {"reduce_op", "group"}},
      {"all_gather", OpKind::collective, 1, 0, {"group"}},
      {"reduce_scatter", OpKind::collective, 1, 0, {"reduce_op", "group"}},
      {"all_to_all", OpKind::collective, 1, 0, {"group"}},
  };
  return t;
}

const OpInfo* find_op(const std::string& name) {
  for (const auto& o : op_table()) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

std::string shape_text(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

// NumPy broadcasting of two shapes; false when they do not broadcast.
bool broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               std::vector<int64_t>& out) {
  const size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = std::max(da, db);
  }
  return true;
}

struct Parser {
  const std::string& file;
  Graph g;
  std::string dir;                                    // of the workload file, for .npy paths
  std::map<std::string, const GraphTensor*> tensors;  // rebuilt as ops are added
  isa::DType default_dtype = isa::DType::bf16;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw WorkloadError(file, where, what);
  }

  std::vector<int64_t> shape(const json& v, const std::string& where) const {
    if (!v.is_array() || v.empty() || v.size() > 4) {
      fail(where, fmt::format("expected an array of 1 to 4 positive integers, got {}", v.dump()));
    }
    std::vector<int64_t> s;
    uint64_t total = 1;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<int64_t>() <= 0 ||
          v[i].get<int64_t>() > (int64_t{1} << 32)) {
        fail(fmt::format("{}/{}", where, i),
             fmt::format("expected a positive integer up to 2^32, got {}", v[i].dump()));
      }
      s.push_back(v[i].get<int64_t>());
      if (__builtin_mul_overflow(total, static_cast<uint64_t>(s.back()), &total) ||
          total > (uint64_t{1} << 40)) {
        fail(where, fmt::format("{} elements is more than any HBM holds", v.dump()));
      }
    }
    return s;
  }

  isa::DType dtype(const json& v, const std::string& where) const {
    const auto t = v.is_string() ? isa::parse_dtype(v.get<std::string>()) : std::nullopt;
    if (!t || isa::is_integer(*t)) {
      fail(where, fmt::format("expected a floating-point dtype (fp32, bf16, fp16, fp8_e4m3, "
                              "fp8_e5m2), got {}",
                              v.dump()));
    }
    return *t;
  }

  void check_keys(const json& obj, const std::string& where, const std::vector<std::string>& keys,
                  const std::string& what) const {
    for (const auto& item : obj.items()) {
      if (std::find(keys.begin(), keys.end(), item.key()) != keys.end()) continue;
      const std::string near = base::closest_name(item.key(), keys);
      fail(where + "/" + item.key(),
           fmt::format("unknown key for {}; expected one of: {}{}", what, fmt::join(keys, ", "),
                       near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
  }

  void check_name(const json& v, const std::string& where) const {
    if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64) {
      fail(where, fmt::format("expected a tensor name (a string of 1 to 64 characters), got {}",
                              v.dump()));
    }
    for (char c : v.get<std::string>()) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
        fail(where,
             fmt::format("tensor names use letters, digits, '_', '.' and '-'; got {}", v.dump()));
      }
    }
  }

  void add_tensor(const GraphTensor& t, const std::string& where) {
    if (tensors.count(t.name)) {
      fail(where,
           fmt::format("tensor \"{}\" is already defined; every tensor has one producer", t.name));
    }
    tensors[t.name] = nullptr;
  }

  void parse_input(const std::string& name, const json& v, const std::string& where,
                   const std::string& dir) {
    GraphInput in = tensor_spec(name, v, where, dir, true);
    add_tensor(in.tensor, where);
    g.inputs.push_back(std::move(in));
  }

  // A tensor given by its shape, dtype and values (an input, or a result of an op that runs on
  // the host).
  GraphInput tensor_spec(const std::string& name, const json& v, const std::string& where,
                         const std::string& dir, bool input = false) const {
    if (!v.is_object()) fail(where, fmt::format("expected an object, got {}", v.type_name()));
    std::vector<std::string> keys = {"shape", "dtype", "init", "npy", "mean", "std", "low", "high"};
    if (input) keys.push_back("per_core");
    check_keys(v, where, keys, input ? "an input" : "a result of an op run on the host");
    GraphInput in;
    in.where = where;
    in.tensor.name = name;
    if (!v.contains("shape")) fail(where + "/shape", "missing; expected the tensor's shape");
    in.tensor.shape = shape(v["shape"], where + "/shape");
    in.tensor.dtype = v.contains("dtype") ? dtype(v["dtype"], where + "/dtype") : default_dtype;
    const std::vector<std::string> inits = {"normal", "uniform", "ones", "zeros", "arange", "npy"};
    std::string init = v.contains("npy") ? "npy" : "normal";
    if (v.contains("init")) {
      const json& i = v["init"];
      if (!i.is_string() ||
          std::find(inits.begin(), inits.end(), i.get<std::string>()) == inits.end()) {
        fail(where + "/init",
             fmt::format("expected one of: {}; got {}", fmt::join(inits, ", "), i.dump()));
      }
      init = i.get<std::string>();
    }
    auto number = [&](const char* key, double dflt) {
      if (!v.contains(key)) return dflt;
      if (!v[key].is_number() || !std::isfinite(v[key].get<double>())) {
        fail(where + "/" + key, fmt::format("expected a finite number, got {}", v[key].dump()));
      }
      return v[key].get<double>();
    };
    if (init == "normal") {
      in.init.kind = GraphInit::Kind::normal;
      in.init.a = number("mean", 0.0);
      in.init.b = number("std", 1.0);
    } else if (init == "uniform") {
      in.init.kind = GraphInit::Kind::uniform;
      in.init.a = number("low", 0.0);
      in.init.b = number("high", 1.0);
    } else if (init == "ones") {
      in.init.kind = GraphInit::Kind::ones;
    } else if (init == "zeros") {
      in.init.kind = GraphInit::Kind::zeros;
    } else if (init == "arange") {
      in.init.kind = GraphInit::Kind::arange;
    } else {
      in.init.kind = GraphInit::Kind::npy;
      if (!v.contains("npy") || !v["npy"].is_string()) {
        fail(where + "/npy", "expected the path of a .npy file (relative to the workload file)");
      }
      const std::string p = v["npy"].get<std::string>();
      in.init.path = !p.empty() && p[0] == '/' ? p : dir + p;
    }
    if (v.contains("per_core")) {
      if (!v["per_core"].is_boolean()) fail(where + "/per_core", "expected true or false");
      in.per_core = v["per_core"].get<bool>();
      if (in.per_core && g.cores == 0) {
        fail(where + "/per_core",
             "per_core gives each of the graph's cores its own values; the graph has no "
             "\"cores\" key");
      }
      if (in.per_core && init != "normal" && init != "uniform") {
        fail(where + "/per_core",
             fmt::format("per_core draws each core's values from the seed plus the core's "
                         "number; init \"{}\" would give every core the same values (expected "
                         "init \"normal\" or \"uniform\")",
                         init));
      }
    }
    return in;
  }

  const GraphTensor& tensor(const std::string& name, const std::string& where) const {
    const GraphTensor* t = g.find(name);
    if (t == nullptr) {
      std::vector<std::string> known;
      for (const auto& [n, p] : tensors) known.push_back(n);
      const std::string near = base::closest_name(name, known);
      fail(where, fmt::format("no tensor \"{}\" is defined before this op{}", name,
                              near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    return *t;
  }

  int last_dim_attr(const json& op, const std::string& where, const GraphTensor& x,
                    const char* key) const {
    if (!op.contains(key)) return -1;
    const json& d = op[key];
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (!d.is_number_integer() || (d.get<int64_t>() != -1 && d.get<int64_t>() != rank - 1)) {
      fail(where + "/" + key,
           fmt::format("only the last dimension is supported ({} or -1 for a tensor of rank {}), "
                       "got {}",
                       rank - 1, rank, d.dump()));
    }
    return -1;
  }

  void parse_op(const json& v, size_t index) {
    const std::string where = fmt::format("/ops/{}", index);
    if (!v.is_object()) fail(where, fmt::format("expected an object, got {}", v.type_name()));
    if (!v.contains("op") || !v["op"].is_string()) {
      fail(where + "/op", fmt::format("missing or not a string; expected one of: {}",
                                      fmt::join(graph_op_names(), ", ")));
    }
    GraphOp op;
    op.op = v["op"].get<std::string>();
    op.where = where;
    const OpInfo* info = find_op(op.op);
    if (info == nullptr) {
      const std::string near = base::closest_name(op.op, graph_op_names());
      fail(where + "/op",
           fmt::format("unknown op \"{}\"; expected one of: {}{}", op.op,
                       fmt::join(graph_op_names(), ", "),
                       near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    op.kind = info->kind;
    std::vector<std::string> keys = {"op", "args", "out", "name", "mode", "call"};
    if (op.kind != OpKind::host && op.kind != OpKind::collective) keys.push_back("dtype");
    keys.insert(keys.end(), info->attrs.begin(), info->attrs.end());
    check_keys(v, where, keys, "op " + op.op);
    if (v.contains("name")) {
      const json& n = v["name"];
      if (!n.is_string() || n.get<std::string>().empty() || n.get<std::string>().size() > 128) {
        fail(where + "/name",
             fmt::format("expected the op's name for the profile (1 to 128 characters, e.g. "
                         "\"aten::mm\"), got {}",
                         n.dump()));
      }
      op.name = n.get<std::string>();
    }
    if (op.name.empty()) {
      // torch.distributed's functional collectives (what torch.compile traces) for collectives.
      op.name = op.kind == OpKind::collective ? "_c10d_functional::" + op.op : aten_name(op.op);
    }
    if (v.contains("mode")) {
      const json& m = v["mode"];
      if (!m.is_string() || (m != "eager" && m != "compile")) {
        fail(where + "/mode", fmt::format("expected \"eager\" or \"compile\", got {}", m.dump()));
      }
      op.mode = m.get<std::string>();
    }
    if (v.contains("call")) {
      const json& c = v["call"];
      if (!c.is_number_integer() || c.get<int64_t>() < 0) {
        fail(where + "/call", fmt::format("expected a non-negative integer, got {}", c.dump()));
      }
      op.call = c.get<int64_t>();
    }
    if (!v.contains("args") || !v["args"].is_array()) {
      fail(where + "/args", "missing; expected an array of tensor names and numbers");
    }
    const json& args = v["args"];
    const size_t lo = info->tensors, hi = info->tensors + info->optional;
    if (args.size() < lo || args.size() > hi) {
      fail(where + "/args",
           fmt::format("{} takes {} arguments, got {}", op.op,
                       lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi),
                       args.size()));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string at = fmt::format("{}/args/{}", where, i);
      GraphArg a;
      if (args[i].is_number() && info->kind == OpKind::binary) {
        a.number = args[i].get<double>();
        if (!std::isfinite(a.number)) fail(at, "expected a finite number");
      } else if (args[i].is_string()) {
        a.tensor = args[i].get<std::string>();
        tensor(a.tensor, at);
      } else {
        fail(at, fmt::format("expected a tensor name{}, got {}",
                             info->kind == OpKind::binary ? " or a number" : "", args[i].dump()));
      }
      op.args.push_back(a);
    }
    if (op.kind == OpKind::host) {
      parse_host_op(v, op);
      return;
    }
    if (op.op == "view") {
      // A view op's dispatch: nothing computed, nothing named.
      if (v.contains("out")) {
        fail(where + "/out", "a view op has no output (use reshape for another shape)");
      }
      g.ops.push_back(std::move(op));
      return;
    }
    if (info->kind == OpKind::binary && !op.args[0].is_tensor() && !op.args[1].is_tensor()) {
      fail(where + "/args", "at least one argument must be a tensor");
    }
    if (op.op == "pow" && op.args[1].is_tensor()) {
      fail(where + "/args/1", "pow takes a number as its exponent");
    }
    if (!v.contains("out")) fail(where + "/out", "missing; expected the output tensor's name");
    check_name(v["out"], where + "/out");
    op.out.name = v["out"].get<std::string>();

    // Shapes and attributes.
    const GraphTensor& x =
        tensor(op.args[0].is_tensor() ? op.args[0].tensor : op.args[1].tensor, where + "/args");
    op.out.dtype = v.contains("dtype") ? dtype(v["dtype"], where + "/dtype") : x.dtype;
    if (op.op == "to" && !v.contains("dtype")) {
      fail(where + "/dtype", "missing; expected the dtype to convert to");
    }
    if ((op.kind == OpKind::view || op.kind == OpKind::copy) && op.out.dtype != x.dtype) {
      fail(where + "/dtype",
           fmt::format("{} moves data without converting it; use \"to\" to change its dtype",
                       op.op));
    }
    switch (info->kind) {
      case OpKind::unary:
        op.out.shape = x.shape;
        if (v.contains("approximate")) {
          const json& a = v["approximate"];
          if (!a.is_string() || (a != "none" && a != "tanh")) {
            fail(where + "/approximate",
                 fmt::format("expected \"none\" or \"tanh\", got {}", a.dump()));
          }
          op.approximate = a.get<std::string>();
        }
        break;
      case OpKind::binary: {
        std::vector<int64_t> a =
            op.args[0].is_tensor() ? tensor(op.args[0].tensor, "").shape : std::vector<int64_t>{1};
        std::vector<int64_t> b =
            op.args[1].is_tensor() ? tensor(op.args[1].tensor, "").shape : std::vector<int64_t>{1};
        if (!broadcast(a, b, op.out.shape)) {
          fail(where + "/args",
               fmt::format("shapes {} and {} do not broadcast", shape_text(a), shape_text(b)));
        }
        break;
      }
      case OpKind::reduction:
        if (!v.contains("dim")) {
          fail(where + "/dim", "missing; expected -1 (reductions run along the last dimension)");
        }
        last_dim_attr(v, where, x, "dim");
        if (v.contains("keepdim")) {
          if (!v["keepdim"].is_boolean()) fail(where + "/keepdim", "expected true or false");
          op.keepdim = v["keepdim"].get<bool>();
        }
        op.out.shape = x.shape;
        if (op.keepdim) {
          op.out.shape.back() = 1;
        } else {
          op.out.shape.pop_back();
          if (op.out.shape.empty()) op.out.shape.push_back(1);
        }
        break;
      case OpKind::kernel:
        parse_kernel_op(v, op, x);
        break;
      case OpKind::view:
        parse_reshape(v, op, x);
        break;
      case OpKind::copy:
        parse_copy_op(v, op, x);
        break;
      case OpKind::collective:
        parse_collective_op(v, op, x);
        break;
      case OpKind::host:
        break;
    }
    add_tensor(op.out, where + "/out");
    g.ops.push_back(std::move(op));
  }

  // A dimension attribute: an integer in [-rank, rank), as a non-negative index.
  int64_t dim_attr(const json& v, const std::string& where, const char* key, size_t rank) const {
    if (!v.contains(key)) fail(where + "/" + key, "missing; expected a dimension");
    const json& d = v[key];
    const auto r = static_cast<int64_t>(rank);
    if (!d.is_number_integer() || d.get<int64_t>() < -r || d.get<int64_t>() >= r) {
      fail(where + "/" + key,
           fmt::format("expected a dimension of a rank-{} tensor ({} to {}), got {}", rank, -r,
                       r - 1, d.dump()));
    }
    const int64_t i = d.get<int64_t>();
    return i < 0 ? i + r : i;
  }

  void parse_reshape(const json& v, GraphOp& op, const GraphTensor& x) {
    const std::string at = op.where + "/shape";
    if (!v.contains("shape") || !v["shape"].is_array() || v["shape"].empty() ||
        v["shape"].size() > 4) {
      fail(at, "missing or not an array of 1 to 4 sizes (one may be -1)");
    }
    uint64_t known = 1;
    int free = -1;
    for (size_t i = 0; i < v["shape"].size(); ++i) {
      const json& d = v["shape"][i];
      if (!d.is_number_integer() || d.get<int64_t>() < -1 || d.get<int64_t>() == 0 ||
          d.get<int64_t>() > (int64_t{1} << 32)) {
        fail(fmt::format("{}/{}", at, i),
             fmt::format("expected a positive size or -1, got {}", d.dump()));
      }
      if (d.get<int64_t>() == -1) {
        if (free >= 0) fail(fmt::format("{}/{}", at, i), "only one size may be -1");
        free = static_cast<int>(i);
        op.out.shape.push_back(1);
        continue;
      }
      op.out.shape.push_back(d.get<int64_t>());
      known *= static_cast<uint64_t>(d.get<int64_t>());
    }
    if (free >= 0 && known > 0 && x.elements() % known == 0) {
      op.out.shape[static_cast<size_t>(free)] = static_cast<int64_t>(x.elements() / known);
    }
    if (op.out.elements() != x.elements()) {
      fail(at, fmt::format("{} has {} elements; shape {} has {}", x.name, x.elements(),
                           v["shape"].dump(),
                           free >= 0 ? std::string("no whole size for -1")
                                     : std::to_string(op.out.elements())));
    }
  }

  void parse_copy_op(const json& v, GraphOp& op, const GraphTensor& x) {
    const std::string& where = op.where;
    const size_t rank = x.shape.size();
    if (op.op == "permute") {
      if (!v.contains("dims") || !v["dims"].is_array() || v["dims"].size() != rank) {
        fail(where + "/dims", fmt::format("missing or not a permutation of the {} dimensions of "
                                          "{}",
                                          rank, x.name));
      }
      std::vector<bool> seen(rank, false);
      for (size_t i = 0; i < rank; ++i) {
        const json& d = v["dims"][i];
        const auto r = static_cast<int64_t>(rank);
        if (!d.is_number_integer() || d.get<int64_t>() < -r || d.get<int64_t>() >= r ||
            seen[static_cast<size_t>((d.get<int64_t>() + r) % r)]) {
          fail(fmt::format("{}/dims/{}", where, i),
               fmt::format("expected each dimension of a rank-{} tensor once, got {}", rank,
                           v["dims"].dump()));
        }
        const int64_t k = (d.get<int64_t>() + r) % r;
        seen[static_cast<size_t>(k)] = true;
        op.dims.push_back(k);
        op.out.shape.push_back(x.shape[static_cast<size_t>(k)]);
      }
    } else if (op.op == "slice") {
      op.dim = dim_attr(v, where, "dim", rank);
      const int64_t size = x.shape[static_cast<size_t>(op.dim)];
      auto bound = [&](const char* key, int64_t dflt) {
        if (!v.contains(key)) return dflt;
        if (!v[key].is_number_integer()) {
          fail(where + "/" + key, fmt::format("expected an integer, got {}", v[key].dump()));
        }
        // Python's rules: negative counts from the end, out-of-range clamps.
        int64_t i = v[key].get<int64_t>();
        if (i < 0) i = std::max<int64_t>(0, i + size);
        return std::min(i, size);
      };
      op.start = bound("start", 0);
      op.end = bound("end", size);
      if (v.contains("step")) {
        const json& st = v["step"];
        if (!st.is_number_integer() || st.get<int64_t>() < 1 || st.get<int64_t>() > size) {
          fail(where + "/step",
               fmt::format("expected a step from 1 to {}, got {}", size, st.dump()));
        }
        op.step = st.get<int64_t>();
      }
      if (op.end <= op.start) {
        fail(where, fmt::format("slice [{}:{}] of dimension {} ({} elements) is empty", op.start,
                                op.end, op.dim, size));
      }
      op.out.shape = x.shape;
      op.out.shape[static_cast<size_t>(op.dim)] = (op.end - op.start + op.step - 1) / op.step;
    } else if (op.op == "cat") {
      op.dim = dim_attr(v, where, "dim", rank);
      op.out.shape = x.shape;
      for (size_t i = 1; i < op.args.size(); ++i) {
        const std::string at = fmt::format("{}/args/{}", where, i);
        const GraphTensor& t = tensor(op.args[i].tensor, at);
        bool same = t.shape.size() == rank && t.dtype == x.dtype;
        for (size_t d = 0; same && d < rank; ++d) {
          same = static_cast<int64_t>(d) == op.dim || t.shape[d] == x.shape[d];
        }
        if (!same) {
          fail(at, fmt::format("cat joins {} tensors of shape {} along dimension {}; {} is {} "
                               "{}",
                               isa::name_of(x.dtype), shape_text(x.shape), op.dim, t.name,
                               isa::name_of(t.dtype), shape_text(t.shape)));
        }
        op.out.shape[static_cast<size_t>(op.dim)] += t.shape[static_cast<size_t>(op.dim)];
      }
    } else {  // clone
      op.out.shape = x.shape;
    }
  }

  // all_reduce [x] -> x's shape; all_gather: dimension 0 times the ranks (the ranks' inputs one
  // after another); reduce_scatter: dimension 0 over the ranks (rank r's part of the reduced
  // tensor); all_to_all: x's shape, part s of dimension 0 going to rank s.
  void parse_collective_op(const json& v, GraphOp& op, const GraphTensor& x) {
    const std::string& where = op.where;
    if (g.cores == 0) {
      fail(where, fmt::format("{} runs across the graph's cores; the graph has no \"cores\" key "
                              "(expected e.g. \"cores\": 8 at the top level)",
                              op.op));
    }
    op.ranks = g.cores;
    if (v.contains("group")) {
      const json& gr = v["group"];
      if (!gr.is_number_unsigned() || gr.get<uint64_t>() < 1 || gr.get<uint64_t>() > 255 ||
          g.cores % gr.get<uint64_t>() != 0) {
        fail(where + "/group",
             fmt::format("expected the cores per group (consecutive cores), dividing the graph's "
                         "{} cores; got {}",
                         g.cores, gr.dump()));
      }
      op.ranks = static_cast<uint32_t>(gr.get<uint64_t>());
    }
    if (v.contains("reduce_op")) {
      const json& r = v["reduce_op"];
      if (!r.is_string() || (r != "sum" && r != "max" && r != "min")) {
        fail(where + "/reduce_op",
             fmt::format("expected \"sum\", \"max\" or \"min\" (torch.distributed.ReduceOp), "
                         "got {}",
                         r.dump()));
      }
      op.reduce_op = r.get<std::string>();
    }
    op.out.shape = x.shape;
    if (op.op == "all_gather") {
      op.out.shape[0] *= op.ranks;
    } else if (op.op != "all_reduce" && x.shape[0] % op.ranks != 0) {
      fail(where + "/args/0",
           fmt::format("{} splits dimension 0 of {} {} over {} ranks; {} is not a multiple of {}",
                       op.op, x.name, shape_text(x.shape), op.ranks, x.shape[0], op.ranks));
    } else if (op.op == "reduce_scatter") {
      op.out.shape[0] /= op.ranks;
    }
  }

  void parse_host_op(const json& v, GraphOp& op) {
    const std::string at = op.where + "/out";
    if (!v.contains("out") || !v["out"].is_object()) {
      fail(at,
           "missing or not an object; an op that runs on the host names its results with "
           "their shape, dtype and values, like inputs ({} when they stay on the host)");
    }
    for (const auto& item : v["out"].items()) {
      check_name(json(item.key()), at + "/" + item.key());
      GraphInput r = tensor_spec(item.key(), item.value(), at + "/" + item.key(), dir);
      add_tensor(r.tensor, at + "/" + item.key());
      op.results.push_back(std::move(r));
    }
    if (op.results.size() > 16) fail(at, "at most 16 results");
    if (!op.results.empty()) op.out = op.results.front().tensor;
    g.ops.push_back(std::move(op));
  }

  void parse_kernel_op(const json& v, GraphOp& op, const GraphTensor& x) {
    const std::string& where = op.where;
    if (op.op == "matmul") {
      const GraphTensor& b = tensor(op.args[1].tensor, where + "/args/1");
      if (v.contains("transpose_b")) {
        if (!v["transpose_b"].is_boolean()) fail(where + "/transpose_b", "expected true or false");
        op.transpose_b = v["transpose_b"].get<bool>();
      }
      // a [..., M, K] @ b [..., K, N] (b [..., N, K] with transpose_b): the same batch
      // dimensions, or b of two dimensions for every batch.
      const size_t ra = x.shape.size(), rb = b.shape.size();
      bool ok = ra >= 2 && rb >= 2 && (rb == 2 || rb == ra);
      int64_t k_b = 0, n = 0;
      if (ok) {
        k_b = b.shape[rb - (op.transpose_b ? 1 : 2)];
        n = b.shape[rb - (op.transpose_b ? 2 : 1)];
        ok = x.shape[ra - 1] == k_b &&
             (rb == 2 || std::equal(b.shape.begin(), b.shape.end() - 2, x.shape.begin()));
      }
      if (!ok) {
        fail(where + "/args",
             fmt::format("matmul takes [M, K] and {}, each after the same batch dimensions (or "
                         "none for b); got {} and {}",
                         op.transpose_b ? "[N, K] (transpose_b)" : "[K, N]", shape_text(x.shape),
                         shape_text(b.shape)));
      }
      if (b.dtype != x.dtype) fail(where + "/args", "matmul operands must have the same dtype");
      op.out.shape = x.shape;
      op.out.shape.back() = n;
      if (v.contains("strategy")) {
        const json& s = v["strategy"];
        if (!s.is_number_integer() || s.get<int64_t>() < 1 || s.get<int64_t>() > 4) {
          fail(where + "/strategy", fmt::format("expected 1, 2, 3 or 4, got {}", s.dump()));
        }
        op.strategy = s.get<int>();
      }
    } else if (op.op == "transpose") {
      if (x.shape.size() != 2) {
        fail(where + "/args/0",
             fmt::format("transpose takes a 2-D tensor, got {}", shape_text(x.shape)));
      }
      for (const char* key : {"dim0", "dim1"}) {
        if (v.contains(key) && (!v[key].is_number_integer() || v[key].get<int64_t>() < -2 ||
                                v[key].get<int64_t>() > 1)) {
          fail(where + "/" + key, fmt::format("expected 0, 1, -1 or -2, got {}", v[key].dump()));
        }
      }
      op.out.shape = {x.shape[1], x.shape[0]};
    } else if (op.op == "softmax") {
      last_dim_attr(v, where, x, "dim");
      op.out.shape = x.shape;
    } else if (op.op == "scaled_dot_product_attention") {
      // PyTorch's F.scaled_dot_product_attention(q, k, v, is_causal=...): q, k and v of one
      // shape [..., heads, seq, head_dim] and dtype, scale 1/sqrt(head_dim); the flash
      // attention kernel of the library, its heads the product of the leading dimensions.
      for (size_t i = 1; i < 3; ++i) {
        const GraphTensor& t = tensor(op.args[i].tensor, fmt::format("{}/args/{}", where, i));
        if (t.shape != x.shape || t.dtype != x.dtype) {
          fail(fmt::format("{}/args/{}", where, i),
               fmt::format("q, k and v must have one shape and dtype: q is {} {}, got {} {}",
                           isa::name_of(x.dtype), shape_text(x.shape), isa::name_of(t.dtype),
                           shape_text(t.shape)));
        }
      }
      if (x.shape.size() < 2) {
        fail(where + "/args/0",
             fmt::format("expected [..., seq, head_dim], got {}", shape_text(x.shape)));
      }
      if (v.contains("is_causal")) {
        if (!v["is_causal"].is_boolean()) fail(where + "/is_causal", "expected true or false");
        op.causal = v["is_causal"].get<bool>();
      }
      op.out.shape = x.shape;
    } else {  // rms_norm, layer_norm
      op.eps = op.op == "rms_norm" ? 1e-6 : 1e-5;
      if (v.contains("eps")) {
        if (!v["eps"].is_number() || v["eps"].get<double>() < 0 || v["eps"].get<double>() > 1) {
          fail(where + "/eps", fmt::format("expected a number in [0, 1], got {}", v["eps"].dump()));
        }
        op.eps = v["eps"].get<double>();
      }
      if (v.contains("normalized_shape")) {
        const json& n = v["normalized_shape"];
        if (!n.is_array() || n.size() != 1 || n[0] != x.shape.back()) {
          fail(where + "/normalized_shape",
               fmt::format("only the last dimension is normalized: expected [{}], got {}",
                           x.shape.back(), n.dump()));
        }
      }
      for (size_t i = 1; i < op.args.size(); ++i) {
        const GraphTensor& w = tensor(op.args[i].tensor, fmt::format("{}/args/{}", where, i));
        if (w.shape != std::vector<int64_t>{x.shape.back()} || w.dtype != x.dtype) {
          fail(fmt::format("{}/args/{}", where, i),
               fmt::format("expected a {} tensor of shape [{}], got {} {}", isa::name_of(x.dtype),
                           x.shape.back(), isa::name_of(w.dtype), shape_text(w.shape)));
        }
      }
      if (op.args.size() != 1 + static_cast<size_t>(op.op == "rms_norm" ? 1 : 2)) {
        fail(where + "/args",
             fmt::format("{} takes the input and {} (weights are required)", op.op,
                         op.op == "rms_norm" ? "the weight" : "the weight and the bias"));
      }
      op.out.shape = x.shape;
    }
  }
};

}  // namespace

uint64_t GraphTensor::elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

const GraphTensor* Graph::find(const std::string& name) const {
  for (const auto& in : inputs) {
    if (in.tensor.name == name) return &in.tensor;
  }
  for (const auto& op : ops) {
    if (op.out.name == name) return &op.out;
    for (const auto& r : op.results) {
      if (r.tensor.name == name) return &r.tensor;
    }
  }
  return nullptr;
}

const GraphOp* Graph::producer(const std::string& name) const {
  for (const auto& op : ops) {
    if (op.out.name == name) return &op;
    for (const auto& r : op.results) {
      if (r.tensor.name == name) return &op;
    }
  }
  return nullptr;
}

const std::string& Graph::base_of(const std::string& name) const {
  const GraphOp* p = producer(name);
  if (p == nullptr || p->kind != OpKind::view) return name;
  return base_of(p->args[0].tensor);
}

std::vector<const GraphInput*> Graph::given_tensors() const {
  std::vector<const GraphInput*> out;
  for (const auto& in : inputs) out.push_back(&in);
  for (const auto& op : ops) {
    for (const auto& r : op.results) out.push_back(&r);
  }
  return out;
}

bool is_graph_document(const json& doc) {
  return doc.is_object() && doc.contains("ops");
}

const std::vector<std::string>& graph_keys() {
  static const std::vector<std::string> keys = {"name", "mode",    "dtype",  "seed",  "inputs",
                                                "ops",  "outputs", "params", "cores", "chips"};
  return keys;
}

std::vector<std::string> graph_op_names() {
  std::vector<std::string> names;
  for (const auto& o : op_table()) names.push_back(o.name);
  return names;
}

isa::AluOp binary_alu_op(const std::string& op) {
  if (op == "add") return isa::AluOp::add;
  if (op == "sub") return isa::AluOp::subtract;
  if (op == "mul") return isa::AluOp::multiply;
  if (op == "div") return isa::AluOp::divide;
  if (op == "maximum") return isa::AluOp::max;
  if (op == "minimum") return isa::AluOp::min;
  return isa::AluOp::pow;
}

std::string aten_name(const std::string& op) {
  return "aten::" + op;
}

Graph parse_graph(const json& doc, const std::string& file) {
  Parser p{file, {}, {}, {}, isa::DType::bf16};
  p.check_keys(doc, "", graph_keys(), "a graph workload");
  if (doc.contains("mode")) {
    const json& m = doc["mode"];
    if (!m.is_string() || (m != "eager" && m != "compile")) {
      p.fail("/mode", fmt::format("expected \"eager\" or \"compile\", got {}", m.dump()));
    }
    p.g.mode = m.get<std::string>();
  }
  if (doc.contains("dtype")) p.default_dtype = p.dtype(doc["dtype"], "/dtype");
  for (const char* key : {"cores", "chips"}) {
    if (!doc.contains(key)) continue;
    const json& c = doc[key];
    if (!c.is_number_unsigned() || c.get<uint64_t>() < 1 || c.get<uint64_t>() > 64) {
      p.fail(fmt::format("/{}", key),
             fmt::format("expected a positive integer ({}), got {}",
                         key == std::string("cores") ? "NeuronCores that each run the graph"
                                                     : "chips the cores spread over",
                         c.dump()));
    }
    (key == std::string("cores") ? p.g.cores : p.g.chips) =
        static_cast<uint32_t>(c.get<uint64_t>());
  }
  if (p.g.chips > 1 && p.g.cores == 0) p.fail("/chips", "expected \"cores\" with \"chips\"");
  p.dir = file.find('/') == std::string::npos ? std::string()
                                              : file.substr(0, file.find_last_of('/') + 1);
  const std::string& dir = p.dir;
  if (!doc.contains("inputs") || !doc["inputs"].is_object() || doc["inputs"].empty()) {
    p.fail("/inputs", "missing or empty; expected an object of named input tensors");
  }
  for (const auto& item : doc["inputs"].items()) {
    p.check_name(json(item.key()), "/inputs/" + item.key());
    p.parse_input(item.key(), item.value(), "/inputs/" + item.key(), dir);
  }
  const json& ops = doc["ops"];
  if (!ops.is_array() || ops.empty()) p.fail("/ops", "expected a non-empty array of ops");
  if (ops.size() > 10000) p.fail("/ops", "more than 10000 ops");
  for (size_t i = 0; i < ops.size(); ++i) p.parse_op(ops[i], i);
  if (!doc.contains("outputs")) {
    for (auto op = p.g.ops.rbegin(); op != p.g.ops.rend() && p.g.outputs.empty(); ++op) {
      if (!op->out.name.empty()) p.g.outputs.push_back(op->out.name);
    }
    if (p.g.outputs.empty()) p.fail("/outputs", "no op has a result on the device to output");
  } else {
    const json& o = doc["outputs"];
    if (!o.is_array() || o.empty()) p.fail("/outputs", "expected a non-empty array of names");
    for (size_t i = 0; i < o.size(); ++i) {
      const std::string at = fmt::format("/outputs/{}", i);
      p.check_name(o[i], at);
      p.tensor(o[i].get<std::string>(), at);
      p.g.outputs.push_back(o[i].get<std::string>());
    }
  }
  return p.g;
}

// ---- reference ----

const std::vector<double>* GraphValues::find(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return &values[i];
  }
  return nullptr;
}

namespace {

// Element i of a tensor of shape `in` broadcast to shape `out` (NumPy rules).
struct Broadcaster {
  std::vector<int64_t> out_shape;
  std::vector<int64_t> in_strides;  // per output dimension, 0 where broadcast
  Broadcaster(const std::vector<int64_t>& in, const std::vector<int64_t>& out) : out_shape(out) {
    in_strides.assign(out.size(), 0);
    int64_t stride = 1;
    for (size_t k = 0; k < in.size(); ++k) {
      const size_t d = in.size() - 1 - k;
      const size_t o = out.size() - 1 - k;
      in_strides[o] = in[d] == 1 ? 0 : stride;
      stride *= in[d];
    }
    if (in.size() == out.size()) classify(in);
  }
  // The common cases without a division per dimension: the same shape, one value, one row
  // ([H]) or one value per row ([..., 1]).
  enum class Kind { same, one, last, rows, general } kind = Kind::general;
  int64_t last_dim = 1;
  void classify(const std::vector<int64_t>& in) {
    last_dim = out_shape.back();
    uint64_t n_in = 1, n_out = 1;
    for (int64_t d : in) n_in *= static_cast<uint64_t>(d);
    for (int64_t d : out_shape) n_out *= static_cast<uint64_t>(d);
    if (n_in == n_out) {
      kind = Kind::same;
    } else if (n_in == 1) {
      kind = Kind::one;
    } else if (n_in == static_cast<uint64_t>(last_dim) && in.back() == last_dim) {
      kind = Kind::last;
    } else if (in.back() == 1 && n_in * static_cast<uint64_t>(last_dim) == n_out &&
               std::equal(in.rbegin() + 1, in.rend(), out_shape.rbegin() + 1)) {
      kind = Kind::rows;
    }
  }
  int64_t index(uint64_t flat) const {
    switch (kind) {
      case Kind::same:
        return static_cast<int64_t>(flat);
      case Kind::one:
        return 0;
      case Kind::last:
        return static_cast<int64_t>(flat % last_dim);
      case Kind::rows:
        return static_cast<int64_t>(flat / last_dim);
      case Kind::general:
        break;
    }
    int64_t idx = 0;
    for (size_t k = out_shape.size(); k-- > 0;) {
      const int64_t c = static_cast<int64_t>(flat % out_shape[k]);
      flat /= out_shape[k];
      idx += c * in_strides[k];
    }
    return idx;
  }
};

double gelu(double x, bool tanh_approx) {
  if (tanh_approx) {
    const double c = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// The elementwise functions, named once per op rather than per element: comparing the op's
// name for every element was about 5% of a decoder layer's functional run (perf samples of
// memcmp and string::compare), and dispatching on it more.
enum class UnaryFn : uint8_t {
  exp,
  log,
  sqrt,
  rsqrt,
  reciprocal,
  neg,
  abs,
  tanh,
  sigmoid,
  relu,
  gelu,
  gelu_tanh,
  to,
  silu
};
UnaryFn unary_fn(const GraphOp& op) {
  const std::string& f = op.op;
  if (f == "exp") return UnaryFn::exp;
  if (f == "log") return UnaryFn::log;
  if (f == "sqrt") return UnaryFn::sqrt;
  if (f == "rsqrt") return UnaryFn::rsqrt;
  if (f == "reciprocal") return UnaryFn::reciprocal;
  if (f == "neg") return UnaryFn::neg;
  if (f == "abs") return UnaryFn::abs;
  if (f == "tanh") return UnaryFn::tanh;
  if (f == "sigmoid") return UnaryFn::sigmoid;
  if (f == "relu") return UnaryFn::relu;
  if (f == "gelu") return op.approximate == "tanh" ? UnaryFn::gelu_tanh : UnaryFn::gelu;
  if (f == "to") return UnaryFn::to;
  return UnaryFn::silu;
}
double unary(UnaryFn f, double x) {
  switch (f) {
    case UnaryFn::exp:
      return std::exp(x);
    case UnaryFn::log:
      return std::log(x);
    case UnaryFn::sqrt:
      return std::sqrt(x);
    case UnaryFn::rsqrt:
      return 1.0 / std::sqrt(x);
    case UnaryFn::reciprocal:
      return 1.0 / x;
    case UnaryFn::neg:
      return -x;
    case UnaryFn::abs:
      return std::abs(x);
    case UnaryFn::tanh:
      return std::tanh(x);
    case UnaryFn::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryFn::relu:
      return x > 0 ? x : 0.0;
    case UnaryFn::gelu:
      return gelu(x, false);
    case UnaryFn::gelu_tanh:
      return gelu(x, true);
    case UnaryFn::to:
      return x;
    case UnaryFn::silu:
      break;
  }
  return x / (1.0 + std::exp(-x));  // silu
}

double binary(isa::AluOp f, double a, double b) {
  switch (f) {
    case isa::AluOp::add:
      return a + b;
    case isa::AluOp::subtract:
      return a - b;
    case isa::AluOp::multiply:
      return a * b;
    case isa::AluOp::divide:
      return a / b;
    case isa::AluOp::pow:
      return b == 2 ? a * a : std::pow(a, b);
    case isa::AluOp::max:
      return std::max(a, b);
    default:
      break;
  }
  return std::min(a, b);
}

}  // namespace

namespace {

// Row-major strides of `shape`, in elements.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

// out[i] = x[offset + sum of index(i)[d] * stride[d]] over the output's row-major indices: a
// strided view of x read out in order (permute, slice).
void gather(const std::vector<double>& x, const std::vector<int64_t>& shape,
            const std::vector<int64_t>& stride, int64_t offset, double* out) {
  std::vector<int64_t> idx(shape.size(), 0);
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  for (uint64_t i = 0; i < n; ++i) {
    int64_t at = offset;
    for (size_t d = 0; d < shape.size(); ++d) at += idx[d] * stride[d];
    out[i] = x[static_cast<size_t>(at)];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

namespace {

// A given tensor's values in double (large ones on huge pages).
std::vector<double> to_values(const std::vector<float>& given) {
  std::vector<double> v;
  base::reserve_large(v, given.size());
  v.assign(given.begin(), given.end());
  return v;
}

// n zeros, in the smallest spare buffer that holds them when there is one (no new pages to
// fault in and clear), else in a new vector.
std::vector<double> zeroed(std::vector<std::vector<double>>& spare, size_t n) {
  auto best = spare.end();
  for (auto it = spare.begin(); it != spare.end(); ++it) {
    if (it->capacity() >= n && (best == spare.end() || it->capacity() < best->capacity())) {
      best = it;
    }
  }
  if (best == spare.end()) return base::large_vector<double>(n);
  std::vector<double> out = std::move(*best);
  spare.erase(best);
  out.assign(n, 0.0);
  return out;
}

// For each op, the tensors it is the last to read; the graph's outputs are never among them.
std::vector<std::vector<std::string>> last_reads(const Graph& g) {
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    for (const GraphArg& a : g.ops[i].args) {
      if (a.is_tensor()) last[a.tensor] = i;
    }
  }
  for (const std::string& name : g.outputs) last.erase(name);
  std::vector<std::vector<std::string>> dying(g.ops.size());
  for (const auto& [name, i] : last) dying[i].push_back(name);
  return dying;
}

// Releases the values no later op reads, keeping their memory for later results.
void release(GraphValues& v, const std::vector<std::string>& dead) {
  for (const std::string& name : dead) {
    for (size_t i = 0; i < v.names.size(); ++i) {
      if (v.names[i] == name && v.values[i].capacity() > 0) {
        v.spare.push_back(std::move(v.values[i]));
        v.values[i] = std::vector<double>();
      }
    }
  }
}

// One op of the graph: appends its values to v. The results of an op that runs on the host are
// the next of `inputs` (from next_given on).
void evaluate_op(const Graph& g, const GraphOp& op, GraphValues& v,
                 const std::vector<std::vector<float>>& inputs, size_t& next_given,
                 const std::vector<std::string>& rounded) {
  auto get = [&](const std::string& n) -> const std::vector<double>& { return *v.find(n); };
  if (op.kind == OpKind::view && op.out.name.empty()) return;  // a view op's dispatch
  if (op.kind == OpKind::host) {
    for (const GraphInput& r : op.results) {
      v.names.push_back(r.tensor.name);
      v.values.push_back(to_values(inputs[next_given]));
      ++next_given;
    }
    return;
  }
  std::vector<double> out = zeroed(v.spare, op.out.elements());
  const GraphTensor& x0 = *g.find(op.args[0].is_tensor() ? op.args[0].tensor : op.args[1].tensor);
  if (op.kind == OpKind::unary) {
    const auto& x = get(op.args[0].tensor);
    const UnaryFn f = unary_fn(op);
    for (size_t i = 0; i < out.size(); ++i) out[i] = unary(f, x[i]);
  } else if (op.kind == OpKind::binary) {
    auto operand = [&](const GraphArg& a) -> std::pair<const std::vector<double>*, Broadcaster> {
      if (!a.is_tensor()) return {nullptr, Broadcaster({1}, op.out.shape)};
      return {&get(a.tensor), Broadcaster(g.find(a.tensor)->shape, op.out.shape)};
    };
    const auto [pa, ba] = operand(op.args[0]);
    const auto [pb, bb] = operand(op.args[1]);
    const isa::AluOp f = binary_alu_op(op.op);
    for (uint64_t i = 0; i < out.size(); ++i) {
      const double a = pa ? (*pa)[ba.index(i)] : op.args[0].number;
      const double b = pb ? (*pb)[bb.index(i)] : op.args[1].number;
      out[i] = binary(f, a, b);
    }
  } else if (op.kind == OpKind::reduction) {
    const auto& x = get(op.args[0].tensor);
    const int64_t h = x0.shape.back();
    const bool max = op.op == "max", mean = op.op == "mean";
    for (size_t r = 0; r < out.size(); ++r) {
      const double* row = &x[r * h];
      double acc = max ? row[0] : 0.0;
      for (int64_t i = 0; i < h; ++i) acc = max ? std::max(acc, row[i]) : acc + row[i];
      out[r] = mean ? acc / static_cast<double>(h) : acc;
    }
  } else if (op.kind == OpKind::view || op.op == "clone") {
    const auto& x = get(op.args[0].tensor);
    std::copy(x.begin(), x.end(), out.begin());
  } else if (op.op == "permute") {
    const std::vector<int64_t> in_stride = strides_of(x0.shape);
    std::vector<int64_t> stride;
    for (int64_t d : op.dims) stride.push_back(in_stride[static_cast<size_t>(d)]);
    gather(get(op.args[0].tensor), op.out.shape, stride, 0, out.data());
  } else if (op.op == "slice") {
    std::vector<int64_t> stride = strides_of(x0.shape);
    const int64_t offset = op.start * stride[static_cast<size_t>(op.dim)];
    stride[static_cast<size_t>(op.dim)] *= op.step;
    gather(get(op.args[0].tensor), op.out.shape, stride, offset, out.data());
  } else if (op.op == "cat") {
    // Each input fills a slice of the output along dim.
    const std::vector<int64_t> out_stride = strides_of(op.out.shape);
    int64_t at = 0;
    for (const GraphArg& a : op.args) {
      const GraphTensor& t = *g.find(a.tensor);
      const auto& x = get(a.tensor);
      std::vector<int64_t> idx(t.shape.size(), 0);
      for (double value : x) {
        int64_t o = at * out_stride[static_cast<size_t>(op.dim)];
        for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * out_stride[d];
        out[static_cast<size_t>(o)] = value;
        for (size_t d = idx.size(); d-- > 0;) {
          if (++idx[d] < t.shape[d]) break;
          idx[d] = 0;
        }
      }
      at += t.shape[static_cast<size_t>(op.dim)];
    }
  } else if (op.op == "matmul") {
    const GraphTensor& b = *g.find(op.args[1].tensor);
    using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int64_t m = x0.shape[x0.shape.size() - 2], k = x0.shape.back();
    const int64_t n = op.out.shape.back();
    const uint64_t batches = op.out.elements() / static_cast<uint64_t>(m * n);
    const bool shared_b = b.shape.size() == 2;
    // A low-precision result sums in fp32 through the library's reference (matmul_reference
    // says why fp32 sums are exact enough for these dtypes' checks; an operand held in double
    // here loses at most 2^-24 of itself going to float, as little again): it is tiled and
    // runs on every host thread, where Eigen's double gemm on one thread was most of a
    // decoder layer's functional run. An fp32 result sums in double.
    const bool in_fp32 = op.out.dtype != isa::DType::fp32;
    using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    std::vector<float> fa, fb;
    for (uint64_t i = 0; i < batches; ++i) {
      Eigen::Map<const Mat> ma(get(op.args[0].tensor).data() + i * m * k, m, k);
      const double* bp = get(op.args[1].tensor).data() + (shared_b ? 0 : i * k * n);
      Eigen::Map<Mat> mc(out.data() + i * m * n, m, n);
      if (!in_fp32) {
        base::gemm(m, n, k, ma.data(), k, false, bp, op.transpose_b ? k : n, op.transpose_b, 0.0,
                   mc.data(), n);
        continue;
      }
      const auto multiply = [&](const auto& b_kn) {  // B as [K, N]
        if (fa.empty()) base::reserve_large(fa, static_cast<size_t>(m * k));
        fa.resize(static_cast<size_t>(m * k));
        Eigen::Map<MatF>(fa.data(), m, k) = ma.cast<float>();
        if (i == 0 || !shared_b) {
          if (fb.empty()) base::reserve_large(fb, static_cast<size_t>(k * n));
          fb.resize(static_cast<size_t>(k * n));
          Eigen::Map<MatF>(fb.data(), k, n) = b_kn.template cast<float>();
        }
        const std::vector<float> c = matmul_reference(fa, fb, m, k, n, op.out.dtype);
        mc = Eigen::Map<const MatF>(c.data(), m, n).cast<double>();
      };
      if (op.transpose_b) {
        multiply(Eigen::Map<const Mat>(bp, n, k).transpose());
      } else {
        multiply(Eigen::Map<const Mat>(bp, k, n));
      }
    }
  } else if (op.op == "transpose") {
    const auto& x = get(op.args[0].tensor);
    const int64_t rows = x0.shape[0], cols = x0.shape[1];
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = x[r * cols + c];
    }
  } else if (op.op == "scaled_dot_product_attention") {
    // The library kernel's reference, head by head; q, k and v are stored in HBM by the
    // kernels that made them, so they hold dtype-rounded values that fp32 keeps exactly.
    const int64_t seq = x0.shape[x0.shape.size() - 2], d = x0.shape.back();
    const int64_t heads = static_cast<int64_t>(out.size()) / (seq * d);
    auto as_float = [&](const GraphArg& a) {
      const auto& t = get(a.tensor);
      return std::vector<float>(t.begin(), t.end());
    };
    const std::vector<float> o = attention_reference(
        as_float(op.args[0]), as_float(op.args[1]), as_float(op.args[2]), heads, seq, d, op.causal);
    std::copy(o.begin(), o.end(), out.begin());
  } else {  // softmax, rms_norm, layer_norm: along the last dimension
    const auto& x = get(op.args[0].tensor);
    const int64_t h = x0.shape.back();
    const std::vector<double>* w = op.args.size() > 1 ? &get(op.args[1].tensor) : nullptr;
    const std::vector<double>* bias = op.args.size() > 2 ? &get(op.args[2].tensor) : nullptr;
    const bool softmax = op.op == "softmax", rms_norm = op.op == "rms_norm";
    for (size_t r = 0; r < x.size() / h; ++r) {
      const double* row = &x[r * h];
      double* y = &out[r * h];
      if (softmax) {
        const double m = *std::max_element(row, row + h);
        double sum = 0;
        for (int64_t i = 0; i < h; ++i) sum += (y[i] = std::exp(row[i] - m));
        for (int64_t i = 0; i < h; ++i) y[i] /= sum;
      } else if (rms_norm) {
        double ss = 0;
        for (int64_t i = 0; i < h; ++i) ss += row[i] * row[i];
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(h) + op.eps);
        for (int64_t i = 0; i < h; ++i) y[i] = row[i] * inv * (*w)[i];
      } else {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < h; ++i) mean += row[i];
        mean /= static_cast<double>(h);
        for (int64_t i = 0; i < h; ++i) var += (row[i] - mean) * (row[i] - mean);
        const double inv = 1.0 / std::sqrt(var / static_cast<double>(h) + op.eps);
        for (int64_t i = 0; i < h; ++i) y[i] = (row[i] - mean) * inv * (*w)[i] + (*bias)[i];
      }
    }
  }
  if (std::find(rounded.begin(), rounded.end(), op.out.name) != rounded.end()) {
    for (double& d : out) d = isa::round_to(op.out.dtype, static_cast<float>(d));
  }
  v.names.push_back(op.out.name);
  v.values.push_back(std::move(out));
}

}  // namespace

GraphValues evaluate_graph(const Graph& g, const std::vector<std::vector<float>>& inputs,
                           const std::vector<std::string>& rounded) {
  if (std::any_of(g.ops.begin(), g.ops.end(),
                  [](const GraphOp& op) { return op.kind == OpKind::collective; })) {
    return evaluate_graph_cores(g, {inputs}, rounded).front();  // one rank: copies
  }
  GraphValues v;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    v.names.push_back(g.inputs[i].tensor.name);
    v.values.push_back(to_values(inputs[i]));
  }
  size_t next_given = g.inputs.size();
  const std::vector<std::vector<std::string>> dying = last_reads(g);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    evaluate_op(g, g.ops[i], v, inputs, next_given, rounded);
    release(v, dying[i]);
  }
  v.spare.clear();
  return v;
}

std::vector<GraphValues> evaluate_graph_cores(
    const Graph& g, const std::vector<std::vector<std::vector<float>>>& inputs,
    const std::vector<std::string>& rounded) {
  const size_t cores = inputs.size();
  std::vector<GraphValues> v(cores);
  std::vector<size_t> next_given(cores, g.inputs.size());
  for (size_t c = 0; c < cores; ++c) {
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      v[c].names.push_back(g.inputs[i].tensor.name);
      v[c].values.push_back(to_values(inputs[c][i]));
    }
  }
  const std::vector<std::vector<std::string>> dying = last_reads(g);
  for (size_t op_index = 0; op_index < g.ops.size(); ++op_index) {
    const GraphOp& op = g.ops[op_index];
    if (op.kind != OpKind::collective) {
      for (size_t c = 0; c < cores; ++c) {
        evaluate_op(g, op, v[c], inputs[c], next_given[c], rounded);
        release(v[c], dying[op_index]);
      }
      continue;
    }
    // The collective instruction's reference: each rank's input (as stored in HBM, in its
    // dtype), reduced in fp32 in rank order; then every core's result rounded to the dtype.
    const std::string function =
        op.op == "all_reduce" || op.op == "reduce_scatter"
            ? op.op + (op.reduce_op == "sum" ? std::string("_add") : "_" + op.reduce_op)
            : op.op;
    std::vector<std::vector<float>> each(cores);
    for (size_t c = 0; c < cores; ++c) {
      const std::vector<double>& x = *v[c].find(op.args[0].tensor);
      each[c].assign(x.begin(), x.end());
    }
    for (size_t c = 0; c < cores; ++c) {
      const size_t first = c / op.ranks * op.ranks;
      const std::vector<std::vector<float>> group(
          each.begin() + static_cast<std::ptrdiff_t>(first),
          each.begin() + static_cast<std::ptrdiff_t>(first + op.ranks));
      const std::vector<float> y =
          collective_reference(function, group, static_cast<uint32_t>(c - first));
      std::vector<double> out(y.size());
      for (size_t i = 0; i < y.size(); ++i) out[i] = isa::round_to(op.out.dtype, y[i]);
      v[c].names.push_back(op.out.name);
      v[c].values.push_back(std::move(out));
    }
    for (size_t c = 0; c < cores; ++c) release(v[c], dying[op_index]);
  }
  for (GraphValues& values : v) values.spare.clear();
  return v;
}

}  // namespace trnsim::workloads
