// The assembly parser as the CLI drives it for a .tasm file: parse, lower for timing only
// (synchronize or distribute, the expectations' sizes), validate, check for deadlock. Bad input
// must end in AssemblyError or ValidationError.
#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "fuzz/fuzz_support.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"
#include "workloads/program.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trnsim;
  const std::string text = trnsim_fuzz::text_of(data, size);
  const config::ArchConfig arch = config::trn2();
  try {
    const isa::Assembly a = isa::parse_assembly(text, "fuzz.tasm", arch);
    const workloads::LoweredKernel k = workloads::lower_assembly(a, arch, /*functional=*/false);
    isa::validate(k.program, arch);
    (void)compiler::find_deadlock(k.program, arch);
  } catch (const isa::AssemblyError&) {
  } catch (const isa::ValidationError&) {
  }
  return 0;
}
