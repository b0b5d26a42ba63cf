// Programs written by hand (.tasm) or by tools (the JSON program form) as workloads: their
// tensors are initialised as the file says, the synchronization is added when the program is
// written sequentially, and `.expect` lines become the functional check.
#pragma once

#include "isa/text/assembly.hpp"
#include "workloads/lowering.hpp"

namespace trnsim::workloads {

// Throws isa::AssemblyError when an expectation's reference cannot be computed.
LoweredKernel lower_assembly(const isa::Assembly& a, const config::ArchConfig& arch,
                             bool functional);

// The Workload that describes a program in stats.json and the summary.
Workload describe_assembly(const isa::Assembly& a);

}  // namespace trnsim::workloads
