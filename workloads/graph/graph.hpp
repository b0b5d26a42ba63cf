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
#include "isa/instruction.hpp"

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
  // A graph on several cores ("cores"): each core draws its own values (the seed plus the
  // core's number: a data shard), else every core holds the same values (replicated, as model
  // weights are).
  bool per_core = false;
  std::string where;  // "/inputs/x", for messages
};

struct GraphArg {
  std::string tensor;  // empty: a number
  double number = 0;
  bool is_tensor() const { return !tensor.empty(); }
};

enum class OpKind {
  unary,       // elementwise function of one tensor
  binary,      // elementwise, with broadcasting
  reduction,   // along the last dimension
  kernel,      // a kernel of its own (matmul, transpose, softmax, rms_norm, layer_norm,
               // scaled_dot_product_attention)
  view,        // another shape for the same data (reshape), or a view op's dispatch alone
               // (view: metadata, no output): no kernel, no data moved
  copy,        // data movement by DMA alone (permute, slice, cat, clone): a kernel of its own
  host,        // an op with no lowering, run on the host (docs/workloads.md)
  collective,  // all_reduce, all_gather, reduce_scatter, all_to_all across the graph's cores:
               // a kernel of its own, one collective instruction
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
  bool transpose_b = false;   // matmul: b given as [..., N, K]
  bool causal = false;        // scaled_dot_product_attention: is_causal
  std::vector<int64_t> dims;  // permute: the output's dimensions in the input's numbering
  int64_t dim = 0;            // slice, cat: the dimension (non-negative)
  int64_t start = 0, end = 0, step = 1;  // slice
  // collective: the reduction (all_reduce, reduce_scatter: "sum", "max" or "min", as
  // torch.distributed.ReduceOp names them) and the ranks, groups of this many consecutive cores
  // (the graph's cores unless the op sets "group").
  std::string reduce_op = "sum";
  uint32_t ranks = 1;
  // The framework op's name for the profile ("aten::mm"); default aten_name(op).
  std::string name;
  // "eager" or "compile": the graph's mode unless the op sets its own.
  std::string mode;
  // Consecutive eager ops of one call (the same number) are one framework call: dispatched
  // once, launching all of their kernels (a PyTorch op whose input is copied to a contiguous
  // layout first; addmm as a matmul and an add). -1: a call of its own.
  int64_t call = -1;
  // host: the results the op copies back to the device (shape, dtype and values like an
  // input's); `out` is the first of them (none: the op's results stay on the host).
  std::vector<GraphInput> results;
  std::string where;  // "/ops/3", for messages
};

struct Graph {
  std::string mode = "eager";  // "eager" or "compile"
  // "cores": every core runs the graph (SPMD), 0 when the key is absent (one core, and no
  // collective op); "chips": the chips they spread over.
  uint32_t cores = 0;
  uint32_t chips = 1;
  std::vector<GraphInput> inputs;
  std::vector<GraphOp> ops;
  std::vector<std::string> outputs;

  // The tensor named `name` (an input or an op's output), or nullptr.
  const GraphTensor* find(const std::string& name) const;
  // The op that produces `name`, or nullptr for an input.
  const GraphOp* producer(const std::string& name) const;
  // The tensor whose data `name` is: itself, or for a view (reshape) the tensor it views.
  const std::string& base_of(const std::string& name) const;
  // The op's mode: its own, else the graph's.
  const std::string& mode_of(const GraphOp& op) const { return op.mode.empty() ? mode : op.mode; }
  // Tensors whose values are given rather than computed on the device: the inputs, then the
  // results of the ops that run on the host, in op order.
  std::vector<const GraphInput*> given_tensors() const;
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
// `inputs` holds the values of Graph::given_tensors() in that order (the results of an op that
// runs on the host are given, not computed). Returns every tensor's values, by name.
// The reference's values by tensor name. Evaluating a graph keeps only what a later op reads and
// the graph's outputs: a value is released (left empty) after its last reader, and its memory
// is reused for a later op's result (`spare`), so that a decoder layer's reference does not
// hold, and fault in afresh, every intermediate tensor.
struct GraphValues {
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
  std::vector<std::vector<double>> spare;  // released values' memory, for later results
  const std::vector<double>* find(const std::string& name) const;
};
GraphValues evaluate_graph(const Graph& g, const std::vector<std::vector<float>>& inputs,
                           const std::vector<std::string>& rounded);
// The same on every core of a graph with collectives: inputs[c] are core c's given tensors;
// each collective op combines the cores' values of its argument (reductions in fp32 in rank
// order, as the collective instruction does, then rounded to the dtype). One result per core.
std::vector<GraphValues> evaluate_graph_cores(
    const Graph& g, const std::vector<std::vector<std::vector<float>>>& inputs,
    const std::vector<std::string>& rounded);

// The ALU operation of a binary op ("add" -> add, "sub" -> subtract, ..., "pow" -> pow): the
// lowering's instruction and the reference's arithmetic.
isa::AluOp binary_alu_op(const std::string& op);

// The PyTorch name of an op ("aten::pow"), as the profiler's key_averages shows it.
std::string aten_name(const std::string& op);

}  // namespace trnsim::workloads
