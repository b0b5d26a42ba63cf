// The deadlock finder: whether a program's semaphore waits can all be met, before any timing.
#pragma once

#include <string>

#include "config/arch.hpp"
#include "isa/program.hpp"

namespace trnsim::compiler {

// Plays the program's semaphores without timing: engines run while their waits hold and DMA
// transfers always complete. Returns "" when every stream can finish, else, per blocked engine,
// the instruction and the wait it can never satisfy. Exact for programs whose updates only add
// (a `set` could in principle make the outcome depend on timing).
std::string find_deadlock(const isa::Program& program, const config::ArchConfig& arch);

}  // namespace trnsim::compiler
