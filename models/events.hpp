// What the models report as they run: one record per instruction and per DMA transfer. The
// records are plain structs of numbers (no strings, no allocation); sim/ turns them into
// statistics and traces.
#pragma once

#include <cstdint>

#include "isa/arch.hpp"
#include "isa/units.hpp"

namespace trnsim::models {

constexpr int32_t kNoSemaphore = -1;

struct InstructionRecord {
  int core = 0;
  isa::Engine engine = isa::Engine::sync;
  uint32_t index = 0;     // position in the engine's stream
  Picoseconds ready;      // the previous instruction of the engine finished
  Picoseconds start;      // every semaphore wait was met and the shared ports were free
  Picoseconds port_wait;  // part of [ready, start) spent waiting for a shared port
  Picoseconds end;
  Cycles cycles;                      // cost in the engine's clock
  int32_t blocked_on = kNoSemaphore;  // the last semaphore the instruction waited for
};

struct TransferRecord {
  int core = 0;
  uint16_t queue = 0;
  isa::Engine issuer = isa::Engine::sync;
  uint32_t index = 0;  // the DMA instruction's position in the issuer's stream
  Picoseconds issued;  // trigger completed on the issuing engine
  Picoseconds start;   // first DMA engine starts
  Picoseconds end;     // semaphore raised
  uint64_t bytes = 0;
  uint32_t engines = 0;
  uint64_t descriptors = 0;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_instruction(const InstructionRecord& r) = 0;
  virtual void on_transfer(const TransferRecord& r) = 0;
};

}  // namespace trnsim::models
