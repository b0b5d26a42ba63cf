// Reading what the user gave trnsim: a workload JSON (kernel form), a program in the JSON
// program form, or a .tasm assembly file. Only sim/ touches files.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "isa/arch.hpp"
#include "isa/arch_file.hpp"
#include "isa/assembly.hpp"
#include "workloads/lowering.hpp"

namespace trnsim::sim {

// The input file is unusable (missing, not a regular file, too large): exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole file, if it is a regular file of at most kMaxInputBytes.
constexpr uint64_t kMaxInputBytes = 64ULL << 20;
std::string read_input_file(const std::string& path);
// The same, or "" when nothing exists at `path` (other problems still throw).
std::string read_input_file_if_exists(const std::string& path);

struct LoadedWorkload {
  workloads::Workload workload;
  workloads::LoweredKernel kernel;
  isa::ArchConfig arch;
};

// Loads and lowers `path`. `arch_name` empty means: the file's `.arch`, else trn2. Throws
// InputError, workloads::WorkloadError or isa::AssemblyError for bad input.
LoadedWorkload load_workload_file(const std::string& path, const std::string& arch_name,
                                  const std::vector<std::string>& sets, bool functional);

// The preset `name`, or the arch file `name` (a path: it has a slash, ends in .json or exists;
// docs/sweeps.md gives the format), with the "name=value" overrides applied, and where each
// value came from. Throws InputError naming the file, key and expectation, or the nearest
// preset name.
isa::ArchSpec load_arch_spec(const std::string& name, const std::vector<std::string>& sets);
// The same, without the sources.
isa::ArchConfig configured_arch(const std::string& name, const std::vector<std::string>& sets);

// An assembly (.tasm) or JSON program file as an Assembly, for asm/disasm.
isa::Assembly load_program_file(const std::string& path, const isa::ArchConfig& arch);

}  // namespace trnsim::sim
