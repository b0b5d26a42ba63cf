#include "workloads/kernels.hpp"

#include "workloads/matmul.hpp"
#include "workloads/mlp.hpp"
#include "workloads/rmsnorm.hpp"

namespace trnsim::workloads {

const std::vector<KernelEntry>& kernel_table() {
  static const std::vector<KernelEntry> table = {
      {"rmsnorm", {"variant", "eps"}, 2, "[rows, hidden]", true, lower_rmsnorm_fused},
      {"matmul", {"strategy", "a_layout"}, 3, "[M, K, N]", true, lower_matmul},
      {"mlp", {"activation"}, 3, "[M, D, F]", true, lower_mlp},
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
