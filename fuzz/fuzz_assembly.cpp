// The assembly parser as the CLI drives it for a .tasm file: parse, lower for timing only
// (synchronize or distribute, the expectations' sizes), validate, check for deadlock. Bad input
// must end in AssemblyError or ValidationError.
#include "fuzz/fuzz_support.hpp"
#include "isa/arch.hpp"
#include "isa/assembly.hpp"
#include "isa/synchronize.hpp"
#include "isa/validate.hpp"
#include "workloads/program.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trnsim;
  const std::string text = trnsim_fuzz::text_of(data, size);
  const isa::ArchConfig arch = isa::trn2();
  try {
    const isa::Assembly a = isa::parse_assembly(text, "fuzz.tasm", arch);
    const workloads::LoweredKernel k = workloads::lower_assembly(a, arch, /*functional=*/false);
    isa::validate(k.program, arch);
    (void)isa::find_deadlock(k.program, arch);
  } catch (const isa::AssemblyError&) {
  } catch (const isa::ValidationError&) {
  }
  return 0;
}
