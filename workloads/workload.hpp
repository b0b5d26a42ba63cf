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

#include "base/json.hpp"
#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

// Parses `text` (the contents of `file`) as JSON: malformed JSON, duplicate keys and nesting
// deeper than kMaxJsonDepth are errors naming the line and column (isa/json.hpp).
using base::kMaxJsonDepth;
nlohmann::json parse_json(const std::string& text, const std::string& file);

Workload parse_workload(const std::string& text, const std::string& file);

}  // namespace trnsim::workloads
