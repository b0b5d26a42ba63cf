// Graph workloads as programs of several kernels: `eager` makes one kernel per op; `compile`
// runs a fusion pass that groups consecutive row-local ops (elementwise ops and reductions
// along the last dimension over the same rows) into one kernel each. Library ops (matmul,
// transpose, softmax, rms_norm, layer_norm) are kernels of their own in both modes.
#pragma once

#include <string>
#include <vector>

#include "workloads/graph/graph.hpp"
#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::workloads {

struct GraphPlan {
  struct Kernel {
    std::string name;
    std::vector<size_t> ops;  // indices into Graph::ops
    bool row = true;          // made by the row kernel generator, else a library kernel
    std::vector<int64_t> space;
  };
  std::vector<Kernel> kernels;
};

// The kernels of `g` in its mode. Throws WorkloadError (naming the op) for an op that fits no
// kernel, e.g. a broadcast along the rows.
GraphPlan plan_graph(const Graph& g, const std::string& file);

// The graph's choices: the option mode; the row kernels' bufs (compile mode: engines,
// fold_reductions); each library kernel's params as "<kernel>.<param>" (rmsnorm.scale_engine).
ParamSpace graph_space(const Workload& w, const config::ArchConfig& arch);

LoweredKernel lower_graph(const Workload& w, const config::ArchConfig& arch, bool functional);

}  // namespace trnsim::workloads
