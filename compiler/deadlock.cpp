#include "compiler/deadlock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>

namespace trnsim::compiler {

using isa::Instruction;
using isa::Program;
using isa::SemaphoreUpdateKind;

std::string find_deadlock(const Program& program, const config::ArchConfig& arch) {
  if (program.kernels.size() > 1) {
    // Kernels run one after another with fresh semaphores: each on its own.
    for (size_t k = 0; k < program.kernels.size(); ++k) {
      const std::string found = find_deadlock(kernel_program(program, k), arch);
      if (!found.empty()) return "kernel " + program.kernels[k].name + ":\n" + found;
    }
    return "";
  }
  std::vector<int64_t> value(program.semaphores.size(), 0);
  std::array<size_t, kEngineCount> pc{};
  bool progress = true;
  while (progress) {
    progress = false;
    for (Engine e : kAllEngines) {
      const auto& s = program.stream(e);
      size_t& i = pc[index_of(e)];
      while (i < s.size()) {
        const Instruction& in = s[i];
        bool ready = true;
        for (const auto& w : in.waits) ready = ready && value[w.semaphore] >= w.value;
        if (!ready) break;
        for (const auto& u : in.updates) {
          value[u.semaphore] =
              u.kind == SemaphoreUpdateKind::set ? u.value : value[u.semaphore] + u.value;
        }
        // Every core runs this program, so a collective one core reaches every core reaches:
        // its updates (applied above) fire when the last rank triggers it, which is now.
        // A transfer always completes: raise its queue's semaphore at once.
        if (is_dma(in.opcode))
          value[program.queues[in.dma_queue].semaphore] += arch.dma_engines_for(in.dst->partitions);
        ++i;
        progress = true;
      }
    }
  }
  std::string out;
  for (Engine e : kAllEngines) {
    const auto& s = program.stream(e);
    const size_t i = pc[index_of(e)];
    if (i == s.size()) continue;
    out += fmt::format("  {} instruction {} ({}{})", name_of(e), i, name_of(s[i].opcode),
                       s[i].label.empty() ? "" : fmt::format(" '{}'", s[i].label));
    for (const auto& w : s[i].waits) {
      if (value[w.semaphore] < w.value) {
        out += fmt::format(" waits for {} to reach {}; it can only reach {}",
                           program.semaphores[w.semaphore].name, w.value, value[w.semaphore]);
        break;
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace trnsim::compiler
