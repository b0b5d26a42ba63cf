// Engine synchronization, as a compiler inserts it. A program written in one sequential order
// (as a kernel author thinks) is split into per-engine streams, and the semaphore waits and
// updates that keep every read-after-write, write-after-read and write-after-write dependency
// on overlapping SBUF, PSUM and HBM regions are added, no more than needed: a dependency that
// the engine's stream order, the queue's completion order, or an earlier wait already implies
// adds nothing.
#pragma once

#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"

namespace trnsim::compiler {

// `sequence` is every instruction in program order; `program` holds the tensors, semaphores
// and queues (its streams are ignored). Hand-written waits and updates are kept. Adds one
// semaphore per engine that others wait on, named "<engine>_sync". Returns the program with
// its streams filled.
isa::Program synchronize(const std::vector<isa::Instruction>& sequence, isa::Program program,
                         const config::ArchConfig& arch);

// Distributes a sequence into per-engine streams as written (hand-synchronized programs).
isa::Program distribute(const std::vector<isa::Instruction>& sequence, isa::Program program);

}  // namespace trnsim::compiler
