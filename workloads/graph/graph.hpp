// The graph form of workload.json: named input tensors and a list of PyTorch-like ops, run in an
// execution mode, e.g.
//   {"mode": "eager", "dtype": "bf16",
//    "inputs": {"x": {"shape": [2048, 4096]}, "gamma": {"shape": [4096], "init": "ones"}},
//    "ops": [{"op": "pow", "args": ["x", 2], "out": "x2"}, ...],
//    "outputs": ["y"]}
// See docs/workloads.md. Parsing checks every op's arguments and infers every tensor's shape,
// so lowering sees a well-formed graph; errors name the JSON pointer of the bad field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "isa/dtype.hpp"

namespace trnsim::workloads {

struct GraphTensor {
  std::string name;
  std::vector<int64_t> shape;
  isa::DType dtype = isa::DType::bf16;
  uint64_t elements() const;
};

// How an input is filled: from the workload's seed, or from a .npy file.
struct GraphInit {
  enum class Kind { normal, uniform, ones, zeros, arange, npy } kind = Kind::normal;
  double a = 0, b = 1;  // normal: mean, std; uniform: low, high
  std::string path;     // npy: resolved against the workload file's directory
};

struct GraphInput {
  GraphTensor tensor;
  GraphInit init;
};

struct GraphArg {
  std::string tensor;  // empty: a number
  double number = 0;
  bool is_tensor() const { return !tensor.empty(); }
};

enum class OpKind {
  unary,      // elementwise function of one tensor
  binary,     // elementwise, with broadcasting
  reduction,  // along the last dimension
  kernel,     // a kernel of its own (matmul, transpose, softmax, rms_norm, layer_norm)
};

struct GraphOp {
  std::string op;  // "pow", "mean", ...
  OpKind kind = OpKind::unary;
  std::vector<GraphArg> args;
  GraphTensor out;
  // Attributes: dim/keepdim (reductions, softmax), eps (norms), approximate (gelu), strategy
  // (matmul), all checked at parse time.
  bool keepdim = false;
  double eps = 0;
  std::string approximate = "none";
  int strategy = 3;
  std::string where;  // "/ops/3", for messages
};

struct Graph {
  std::string mode = "eager";  // "eager" or "compile"
  std::vector<GraphInput> inputs;
  std::vector<GraphOp> ops;
  std::vector<std::string> outputs;

  // The tensor named `name` (an input or an op's output), or nullptr.
  const GraphTensor* find(const std::string& name) const;
};

// Whether `doc` is a graph-form workload (it has "ops").
bool is_graph_document(const nlohmann::json& doc);
// Keys a graph workload may have at the top level.
const std::vector<std::string>& graph_keys();
// The ops the graph form knows, for messages and docs.
std::vector<std::string> graph_op_names();

Graph parse_graph(const nlohmann::json& doc, const std::string& file);

// The graph's values in double precision, op by op. A tensor in `rounded` is rounded to its
// dtype when produced (the lowering stores it in HBM in that dtype); others stay unrounded.
// `inputs` holds every input's values in graph order. Returns every tensor's values, by name.
struct GraphValues {
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
  const std::vector<double>* find(const std::string& name) const;
};
GraphValues evaluate_graph(const Graph& g, const std::vector<std::vector<float>>& inputs,
                           const std::vector<std::string>& rounded);

// The PyTorch name of an op ("aten::pow"), as the profiler's key_averages shows it.
std::string aten_name(const std::string& op);

}  // namespace trnsim::workloads
