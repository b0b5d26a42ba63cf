// The JSON program form as the CLI drives it: parse the JSON (workloads::parse_json, which
// rejects duplicate keys and deep nesting), isa::from_json, lower for timing only, validate,
// check for deadlock. Bad input must end in WorkloadError (malformed JSON), AssemblyError or
// ValidationError.
#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "fuzz/fuzz_support.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"
#include "workloads/program.hpp"
#include "workloads/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trnsim;
  const std::string text = trnsim_fuzz::text_of(data, size);
  const config::ArchConfig arch = config::trn2();
  try {
    const isa::Assembly a = isa::from_json(workloads::parse_json(text, "fuzz.json"), "fuzz.json");
    const workloads::LoweredKernel k = workloads::lower_assembly(a, arch, /*functional=*/false);
    isa::validate(k.program, arch);
    (void)compiler::find_deadlock(k.program, arch);
  } catch (const workloads::WorkloadError&) {
  } catch (const isa::AssemblyError&) {
  } catch (const isa::ValidationError&) {
  }
  return 0;
}
