// What the lowering tests of the kernel library share: workloads from JSON text, lowering and
// its errors, a functional run of a lowered program without the simulator, and the check that a
// broken program fails the functional check.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "isa/validate.hpp"
#include "program_hazards.hpp"
#include "workloads/lowering.hpp"
#include "workloads/workload.hpp"

namespace trnsim_test {

inline trnsim::workloads::Workload workload(const std::string& json) {
  return trnsim::workloads::parse_workload(json, "w.json");
}

// The kernel form's JSON: {"kernel": kernel, "shape": [...]<extra>, "params": params}, where
// `extra` adds top-level keys after the shape, each with its leading comma.
inline std::string kernel_json(const std::string& kernel, const std::vector<int64_t>& shape,
                               const std::string& extra = "", const std::string& params = "{}") {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return R"({"kernel": ")" + kernel + R"(", "shape": [)" + dims + "]" + extra + R"(, "params": )" +
         params + "}";
}

// The workload of `json` lowered for `arch` (for timing only unless `functional`).
inline trnsim::workloads::LoweredKernel lowered(
    const std::string& json, const trnsim::config::ArchConfig& arch = trnsim::config::trn2(),
    bool functional = false) {
  return trnsim::workloads::lower(workload(json), arch, functional);
}

// The WorkloadError lowering (or loading) throws, or "" when there is none.
inline std::string error_of(const std::string& json,
                            const trnsim::config::ArchConfig& arch = trnsim::config::trn2()) {
  try {
    trnsim::workloads::lower(workload(json), arch, false);
  } catch (const trnsim::workloads::WorkloadError& e) {
    return e.what();
  }
  return "";
}

// The WorkloadError lowering an already parsed workload throws, or "" when there is none.
inline std::string error_of(const trnsim::workloads::Workload& w,
                            const trnsim::config::ArchConfig& arch = trnsim::config::trn2()) {
  try {
    trnsim::workloads::lower(w, arch, false);
  } catch (const trnsim::workloads::WorkloadError& e) {
    return e.what();
  }
  return "";
}

// Runs the program's instructions in an order its semaphores allow, DMAs completing at once
// and raising their queue's semaphore by the DMA engines they use (D1). Engines are visited in
// `order`, each running as far as its waits allow. Returns false on deadlock.
inline bool play(const trnsim::isa::Program& p, const trnsim::config::ArchConfig& arch,
                 trnsim::isa::MemoryImage& mem, const std::vector<trnsim::Engine>& order) {
  using namespace trnsim;
  using namespace trnsim::isa;
  using namespace trnsim::config;
  using namespace trnsim::compiler;
  std::vector<int64_t> sem(p.semaphores.size(), 0);
  std::vector<size_t> next(kEngineCount, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (Engine e : order) {
      const auto& stream = p.stream(e);
      size_t& i = next[index_of(e)];
      while (i < stream.size()) {
        const Instruction& in = stream[i];
        bool ready = true;
        for (const auto& w : in.waits) ready = ready && sem[w.semaphore] >= w.value;
        if (!ready) break;
        execute(in, mem);
        if (is_dma(in.opcode)) {
          sem[p.queues[in.dma_queue].semaphore] += arch.dma_engines_for(in.dst->partitions);
        }
        for (const auto& u : in.updates) {
          sem[u.semaphore] =
              u.kind == SemaphoreUpdateKind::add ? sem[u.semaphore] + u.value : u.value;
        }
        ++i;
        progress = true;
      }
    }
  }
  for (Engine e : kAllEngines) {
    if (next[index_of(e)] != p.stream(e).size()) return false;
  }
  return true;
}

struct FunctionalResult {
  uint64_t mismatches = 0;
  double worst = 0;  // the largest error over its tolerance
};

// Lowers `w` for `arch`, checks that it validates, has no unordered conflicting accesses and no
// deadlock and a tensor for every input, runs it in two engine orders and compares every output
// with the reference.
inline FunctionalResult check_functional(const trnsim::workloads::Workload& w,
                                         const trnsim::config::ArchConfig& arch) {
  using namespace trnsim;
  using namespace trnsim::isa;
  using namespace trnsim::config;
  using namespace trnsim::compiler;
  const trnsim::workloads::LoweredKernel k = trnsim::workloads::lower(w, arch, true);
  REQUIRE_NOTHROW(validate(k.program, arch));
  CHECK(find_deadlock(k.program, arch) == "");
  CHECK(find_unordered_conflicts(k.program, arch) == "");
  REQUIRE_FALSE(k.expected.empty());
  for (const auto& input : k.inputs) REQUIRE(k.program.find_dram_tensor(input.name) != nullptr);
  FunctionalResult r;
  const std::vector<std::vector<Engine>> orders = {
      {Engine::sync, Engine::scalar, Engine::vector, Engine::tensor, Engine::gpsimd},
      {Engine::gpsimd, Engine::tensor, Engine::vector, Engine::scalar, Engine::sync}};
  for (const auto& order : orders) {
    MemoryImage mem(arch, k.program.dram_bytes());
    trnsim::workloads::load_inputs(k, mem);
    REQUIRE(play(k.program, arch, mem, order));
    for (const auto& expected : k.expected) {
      const DramTensor* t = k.program.find_dram_tensor(expected.name);
      REQUIRE(t != nullptr);
      for (size_t i = 0; i < expected.values.size(); ++i) {
        const double got =
            load_element(t->dtype, mem.hbm.data() + t->address + i * size_of(t->dtype));
        const double want = expected.values[i];
        const double bound = k.tolerance.atol + k.tolerance.rtol * std::abs(want);
        const double ratio = std::abs(got - want) / bound;
        if (!(ratio <= 1.0)) {
          if (++r.mismatches <= 3) {
            UNSCOPED_INFO(expected.name << "[" << i << "] = " << got << ", expected " << want);
          }
        }
        if (!(ratio <= r.worst)) r.worst = ratio;
      }
    }
  }
  return r;
}

// Makes the instructions of `engines` whose label starts with `prefix` pass their input
// through (op0 bypass): the program without that step.
inline void bypass(trnsim::isa::Program& p, const std::vector<trnsim::Engine>& engines,
                   const std::string& prefix) {
  for (trnsim::Engine e : engines) {
    for (trnsim::isa::Instruction& in : p.stream(e)) {
      if (in.label.rfind(prefix, 0) == 0) in.op0 = trnsim::isa::AluOp::bypass;
    }
  }
}

// Whether `k` fails its functional check once `mutate` has changed its program (played in
// `order`, which must finish).
inline bool fails_when(const trnsim::workloads::LoweredKernel& k,
                       const trnsim::config::ArchConfig& arch,
                       const std::function<void(trnsim::isa::Program&)>& mutate,
                       const std::vector<trnsim::Engine>& order) {
  trnsim::workloads::LoweredKernel m = k;
  mutate(m.program);
  trnsim::isa::MemoryImage mem(arch, m.program.dram_bytes());
  trnsim::workloads::load_inputs(m, mem);
  REQUIRE(play(m.program, arch, mem, order));
  return trnsim::workloads::check_outputs(m, mem).status ==
         trnsim::workloads::CheckResult::Status::fail;
}

inline size_t count_of(const trnsim::isa::Program& p, trnsim::Engine e, trnsim::isa::Opcode op) {
  size_t n = 0;
  for (const auto& in : p.stream(e)) n += in.opcode == op;
  return n;
}

}  // namespace trnsim_test
