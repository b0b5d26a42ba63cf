// A Python NKI kernel as a tune target. The NKI front end (python/trnsim/nki) has no way yet for a
// kernel to declare its parameters (no nki.tunable, no `trnsim run --param`), so a kernel.py has
// an empty space: `trnsim tune kernel.py` says so and exits 2 rather than searching nothing.
#include <fmt/format.h>

#include "sim/io/input_file.hpp"
#include "sim/tune/tune_runner.hpp"

namespace trnsim::sim::tuner {

std::unique_ptr<Target> nki_target(const std::string& file, const NkiKernelOptions&,
                                   const std::string&, const std::vector<std::string>&,
                                   const std::vector<Fix>&) {
  throw InputError(fmt::format(
      "{}: an NKI kernel declares no tunable parameters yet (the NKI front end has no way to "
      "declare them), so there is nothing to search; tune a workload JSON of a library kernel "
      "or a graph (docs/tune.md)",
      file));
}

}  // namespace trnsim::sim::tuner
