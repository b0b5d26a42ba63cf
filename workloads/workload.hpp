// The workload file: what a user asks trnsim to run. This is the kernel form, e.g.
//   {"kernel": "rmsnorm", "variant": "fused", "shape": [2048, 4096], "dtype": "bf16",
//    "eps": 1e-6, "seed": 0}
// or a DMA micro-benchmark, {"kernel": "dma", "pattern": "contiguous", "bytes_per_partition":
// 4096, ...}, whose keys the dma lowering checks (they are kept in `params`).
// See docs/workload-format.md.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/dtype.hpp"
#include "isa/json.hpp"
#include "isa/names.hpp"

namespace trnsim::workloads {

struct Graph;

// Bad input: names the file, the place in it (JSON pointer or line:column) and what was
// expected. The CLI prints what() and exits with code 2.
class WorkloadError : public std::runtime_error {
 public:
  WorkloadError(const std::string& file, const std::string& where, const std::string& what);
};

struct Workload {
  std::string file;               // as given, for messages
  std::string name;               // "name" in the file, or the file's stem
  std::string kernel;             // "rmsnorm", ...
  std::string variant = "fused";  // rmsnorm: "fused"
  std::vector<int64_t> shape;
  isa::DType dtype = isa::DType::bf16;
  double eps = 1e-6;  // the kernel's default (KernelEntry::default_eps) unless the file gives one
  uint64_t seed = 0;
  // NeuronCores that each run the kernel on their own tensors, sharing the memory system
  // (HBM stacks are shared as the preset says). 1 by default.
  uint32_t cores = 1;
  // The kernel's own top-level keys (KernelEntry::options, e.g. "strategy"), checked by its
  // lowering; "variant" and "eps" are parsed into the fields above.
  nlohmann::json options = nlohmann::json::object();
  nlohmann::json params = nlohmann::json::object();  // the lowering's choices, checked there
  // The graph form (kernel "graph", variant = its mode); null for the kernel form.
  std::shared_ptr<const Graph> graph;
};

// Parses `text` (the contents of `file`) as JSON: malformed JSON, duplicate keys and nesting
// deeper than kMaxJsonDepth are errors naming the line and column (isa/json.hpp).
using isa::kMaxJsonDepth;
nlohmann::json parse_json(const std::string& text, const std::string& file);

Workload parse_workload(const std::string& text, const std::string& file);

using isa::closest_name;

}  // namespace trnsim::workloads
