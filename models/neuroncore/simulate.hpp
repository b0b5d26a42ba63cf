// Runs one Program on one simulated NeuronCore. This header hides SystemC: callers see plain
// C++. SystemC cannot be elaborated twice in one process, so simulate() may be called once per
// process; a second call throws std::logic_error.
#pragma once

#include <string>

#include "isa/arch.hpp"
#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "isa/units.hpp"
#include "models/events.hpp"

namespace trnsim::models {

struct SimulationResult {
  bool completed = false;  // every engine ran its whole stream
  Picoseconds end_time;    // when the last instruction or transfer finished
  std::string deadlock;    // when !completed: what each blocked engine waits for
};

// `memory` is the functional state (SBUF, PSUM, HBM), or nullptr for timing only. The
// program must have passed isa::validate().
SimulationResult simulate(const isa::Program& program, const isa::ArchConfig& arch,
                          isa::MemoryImage* memory, EventSink& sink);

}  // namespace trnsim::models
