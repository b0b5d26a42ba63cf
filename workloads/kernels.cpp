#include "workloads/kernels.hpp"

#include "workloads/attention.hpp"
#include "workloads/engine_stream_bench.hpp"
#include "workloads/layernorm.hpp"
#include "workloads/matmul.hpp"
#include "workloads/mlp.hpp"
#include "workloads/rmsnorm.hpp"
#include "workloads/softmax.hpp"

namespace trnsim::workloads {

const std::vector<KernelEntry>& kernel_table() {
  static const std::vector<KernelEntry> table = {
      {"rmsnorm", {"variant", "eps"}, 2, "[rows, hidden]", true, lower_rmsnorm_fused},
      {"matmul", {"strategy", "a_layout"}, 3, "[M, K, N]", true, lower_matmul},
      {"mlp", {"activation"}, 3, "[M, D, F]", true, lower_mlp},
      {"layernorm", {"eps", "method"}, 2, "[rows, hidden]", true, lower_layernorm, 1e-5},
      {"softmax", {}, 2, "[rows, hidden]", true, lower_softmax},
      {"attention", {"causal"}, 3, "[heads, seq, head_dim]", true, lower_attention},
      {"engine_stream",
       {"engine", "instructions"},
       2,
       "[partitions, elements]",
       true,
       lower_engine_stream},
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
