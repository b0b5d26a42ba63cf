// The workload JSON loader as the CLI drives it for a kernel workload: parse, lower for timing
// only on every preset, validate, check for deadlock. Bad input must end in WorkloadError or
// ValidationError.
//
// The presets' instruction cap is lowered to kFuzzMaxInstructions: a kernel at the real cap (a
// million instructions) takes tens of seconds and over a GiB under the sanitizers, which
// libFuzzer reports as a timeout or out-of-memory although the work is bounded and linear. The
// cap's own check runs the same code either way.
#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "fuzz/fuzz_support.hpp"
#include "isa/validate.hpp"
#include "workloads/lowering.hpp"
#include "workloads/workload.hpp"

constexpr uint64_t kFuzzMaxInstructions = 1 << 14;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trnsim;
  const std::string text = trnsim_fuzz::text_of(data, size);
  workloads::Workload w;
  try {
    w = workloads::parse_workload(text, "fuzz.json");
  } catch (const workloads::WorkloadError&) {
    return 0;
  }
  for (config::ArchConfig arch : {config::trn1(), config::trn2()}) {
    arch.max_instructions = kFuzzMaxInstructions;
    try {
      const workloads::LoweredKernel k = workloads::lower(w, arch, /*functional=*/false);
      isa::validate(k.program, arch);
      (void)compiler::find_deadlock(k.program, arch);
    } catch (const workloads::WorkloadError&) {
    } catch (const isa::ValidationError&) {
    }
  }
  return 0;
}
