// How a DMA transfer is split over the core's DMA engines and what it costs: plain C++, no
// SystemC. A transfer of P partitions goes to ceil(P / partitions_per_engine) engines (at most
// all of them, D1); each engine moves its partitions' element runs, one descriptor per run,
// paying a fixed cost per descriptor and the bytes at the engine's bandwidth (D2). Transfers
// that touch HBM also pass through the HBM model.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/arch.hpp"
#include "isa/instruction.hpp"
#include "isa/units.hpp"
#include "models/hbm/hbm.hpp"

namespace trnsim::models {

struct DmaPlan {
  uint64_t bytes = 0;
  uint32_t engines = 0;  // DMA engines that take part: the semaphore rises by this
  uint32_t partitions_per_engine = 0;
  uint64_t run_bytes = 0;    // bytes of one element run (one descriptor)
  uint64_t descriptors = 0;  // over all engines
  Picoseconds engine_time;   // busy time of the most loaded engine
  uint64_t hbm_bytes = 0;    // bytes read from plus written to HBM
};

DmaPlan plan_transfer(const isa::Instruction& dma, const isa::ArchConfig& arch);

struct DmaTiming {
  Picoseconds start;  // first engine starts moving data
  Picoseconds end;    // last byte written (HBM latency included)
};

// The core's DMA engines: each serves the descriptors given to it in the order they arrive.
class DmaEngineSet {
 public:
  explicit DmaEngineSet(const isa::ArchConfig& arch);
  // Reserves engines (the earliest free ones, lowest index first on ties) for a transfer
  // triggered at `issued`; it starts after the documented start latency.
  DmaTiming schedule(const DmaPlan& plan, Picoseconds issued, HbmModel& hbm);

 private:
  std::vector<Picoseconds> free_at_;
  std::vector<uint32_t> order_;  // scratch, reused to keep allocation off the event path
  Picoseconds start_latency_;
};

}  // namespace trnsim::models
