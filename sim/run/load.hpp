// Reading what the user gave trnsim: a workload JSON (kernel form), a program in the JSON
// program form, or a .tasm assembly file. Only sim/ touches files.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "config/arch_file.hpp"
#include "isa/text/assembly.hpp"
#include "sim/io/input_file.hpp"
#include "workloads/lowering.hpp"

namespace trnsim::sim {

struct LoadedWorkload {
  workloads::Workload workload;
  workloads::LoweredKernel kernel;
  config::ArchConfig arch;
  // HBM tensors written as <out>/<name>.npy after a functional run (a JSON program's tensors
  // marked "output": true, e.g. a traced NKI kernel's outputs).
  std::vector<std::string> npy_outputs;
  // SPMD over a logical core (LNC>1): the programs of cores 1.. (kernel.program is core 0's),
  // with kernel.program's HBM tensors and DMA queues; the cores share one HBM.
  std::vector<isa::Program> core_programs;
  // With core_programs: whether the cores share core 0's HBM (a logical core's, LNC) or each
  // has its own (a program set, one program per core: docs/chip.md).
  bool shared_hbm = true;
};

// Loads and lowers `path`: a workload, a program, or a program set (`{"programs": [FILE, ...]}`:
// one program per core, each with its own HBM). `arch_name` empty means: the file's `.arch`,
// else trn2. `stream_from`: the caller reads the program as it comes, and a program of that
// many instructions or more is streamed (Workload::stream_from). Throws InputError,
// workloads::WorkloadError or isa::AssemblyError for bad input.
LoadedWorkload load_workload_file(const std::string& path, const std::string& arch_name,
                                  const std::vector<std::string>& sets, bool functional,
                                  uint64_t stream_from = workloads::kNeverStreamed);

// The preset `name`, or the arch file `name` (a path: it has a slash, ends in .json or exists;
// docs/sweeps.md gives the format), with the "name=value" overrides applied, and where each
// value came from. Throws InputError naming the file, key and expectation, or the nearest
// preset name.
config::ArchSpec load_arch_spec(const std::string& name, const std::vector<std::string>& sets);
// The same, without the sources.
config::ArchConfig configured_arch(const std::string& name, const std::vector<std::string>& sets);

// An assembly (.tasm) or JSON program file as an Assembly, for asm/disasm.
isa::Assembly load_program_file(const std::string& path, const config::ArchConfig& arch);

}  // namespace trnsim::sim
