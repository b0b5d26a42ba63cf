#include "workloads/kernels/kernel_table.hpp"

#include "workloads/kernels/attention.hpp"
#include "workloads/kernels/collective.hpp"
#include "workloads/kernels/engine_stream_bench.hpp"
#include "workloads/kernels/layernorm.hpp"
#include "workloads/kernels/matmul.hpp"
#include "workloads/kernels/mlp.hpp"
#include "workloads/kernels/rmsnorm.hpp"
#include "workloads/kernels/softmax.hpp"

namespace trnsim::workloads {

const std::vector<KernelEntry>& kernel_table() {
  static const std::vector<KernelEntry> table = {
      {"rmsnorm",
       {"variant", "eps"},
       2,
       "[rows, hidden]",
       true,
       lower_rmsnorm_fused,
       1e-6,
       rmsnorm_space},
      {"matmul", {"strategy", "a_layout"}, 3, "[M, K, N]", true, lower_matmul, 1e-6, matmul_space},
      {"mlp", {"activation", "tensor_parallel"}, 3, "[M, D, F]", true, lower_mlp, 1e-6, mlp_space},
      {"layernorm",
       {"eps", "method"},
       2,
       "[rows, hidden]",
       true,
       lower_layernorm,
       1e-5,
       layernorm_space},
      {"softmax", {}, 2, "[rows, hidden]", true, lower_softmax, 1e-6, softmax_space},
      {"attention",
       {"causal"},
       3,
       "[heads, seq, head_dim]",
       true,
       lower_attention,
       1e-6,
       attention_space},
      {"engine_stream",
       {"engine", "instructions"},
       2,
       "[partitions, elements]",
       true,
       lower_engine_stream},
      // No shape: "bytes" (nccom-test's size) says how much; integer dtypes move exactly.
      {"collective", {"op", "bytes", "reduce", "group"}, 0, "", false, lower_collective},
  };
  return table;
}

const KernelEntry* find_kernel(const std::string& name) {
  for (const auto& k : kernel_table()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace trnsim::workloads
