#include "workloads/lowering.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "workloads/graph/graph_lowering.hpp"
#include "workloads/kernels/dma.hpp"
#include "workloads/kernels/kernel_table.hpp"
#include "workloads/kernels/rmsnorm.hpp"

namespace trnsim::workloads {

void load_inputs(const LoweredKernel& k, isa::MemoryImage& memory, uint32_t core) {
  const auto& inputs = k.core_inputs.empty() ? k.inputs : k.core_inputs.at(core);
  for (const auto& t : inputs) {
    uint8_t* p = memory.hbm.data() + k.program.find_dram_tensor(t.name)->address;
    for (float v : t.values) {
      isa::store_element(t.dtype, p, v);
      p += isa::size_of(t.dtype);
    }
  }
}

std::vector<float> read_tensor(const LoweredKernel& k, const isa::MemoryImage& memory,
                               const std::string& name) {
  const isa::DramTensor* d = k.program.find_dram_tensor(name);
  std::vector<float> v(d->elements());
  const uint8_t* p = memory.hbm.data() + d->address;
  for (float& f : v) {
    f = isa::load_element(d->dtype, p);
    p += isa::size_of(d->dtype);
  }
  return v;
}

CheckResult check_outputs(const LoweredKernel& k, const isa::MemoryImage& memory, uint32_t core) {
  const auto& references = k.core_expected.empty() ? k.expected : k.core_expected.at(core);
  CheckResult c;
  c.tolerance = k.tolerance;
  c.rel_error_floor = k.tolerance.rtol > 0 ? k.tolerance.atol / k.tolerance.rtol : 0;
  for (const auto& expected : references) {
    const isa::DramTensor* d = k.program.find_dram_tensor(expected.name);
    const uint8_t* p = memory.hbm.data() + d->address;
    for (float want : expected.values) {
      const double got = isa::load_element(d->dtype, p);
      p += isa::size_of(d->dtype);
      const double err = std::abs(got - want);
      ++c.elements;
      // A NaN error stays NaN in the maxima, so the report shows it.
      if (!std::isnan(c.max_abs_error) && (std::isnan(err) || err > c.max_abs_error)) {
        c.max_abs_error = err;
      }
      if (std::abs(want) >= c.rel_error_floor && want != 0) {
        ++c.rel_error_elements;
        const double rel = err / std::abs(want);
        if (!std::isnan(c.max_rel_error) && (std::isnan(rel) || rel > c.max_rel_error)) {
          c.max_rel_error = rel;
        }
      }
      if (!(err <= k.tolerance.atol + k.tolerance.rtol * std::abs(want))) ++c.mismatches;
    }
  }
  if (k.expected.empty()) return c;  // nothing to check against (micro-benchmarks): skipped
  c.status = c.mismatches > 0 ? CheckResult::Status::fail : CheckResult::Status::pass;
  return c;
}

std::string chips_error(uint32_t cores, uint32_t chips, const config::ArchConfig& arch) {
  if (chips > std::max<uint32_t>(1, arch.instance.chips())) {
    return fmt::format("{} chips asked for; a {} instance has {}", chips, arch.name,
                       arch.instance.chips());
  }
  if (cores % chips != 0) {
    return fmt::format("{} cores do not spread evenly over {} chips", cores, chips);
  }
  if (cores / chips > arch.chip_cores) {
    return chips == 1 ? fmt::format("{} cores asked for; a {} chip has {}", cores, arch.name,
                                    arch.chip_cores)
                      : fmt::format("{} cores on {} chips is {} per chip; a {} chip has {}", cores,
                                    chips, cores / chips, arch.name, arch.chip_cores);
  }
  return {};
}

LoweredKernel lower(const Workload& w, const config::ArchConfig& arch, bool functional) {
  // parse_workload admits only known kernels and variants.
  if (const std::string e = chips_error(w.cores, w.chips, arch); !e.empty()) {
    throw WorkloadError(w.file, w.chips > 1 ? "/chips" : "/cores", e);
  }
  if (w.graph) return lower_graph(w, arch, functional);
  if (const KernelEntry* k = find_kernel(w.kernel)) return k->lower(w, arch, functional);
  return lower_dma(w, arch, functional);
}

ParamSpace space_of(const Workload& w, const config::ArchConfig& arch) {
  if (w.graph) return graph_space(w, arch);
  const KernelEntry* k = find_kernel(w.kernel);
  if (k != nullptr && k->space != nullptr) return k->space(w, arch);
  ParamSpace none;
  none.kernel = w.kernel;
  none.unknown = w.kernel + " takes no params";
  return none;
}

}  // namespace trnsim::workloads
