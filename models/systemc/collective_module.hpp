// The collectives of a program (SystemC shell, thin): a rendezvous of the run's cores. Each
// core's engine triggers its k-th collective; when the last rank arrives, the plain-C++
// CollectiveFabric (models/collective/fabric.hpp) is asked once when the collective ends; at
// that end the data moves between the cores' memory images and every rank's semaphore updates
// fire (docs/chip.md, "Collectives in a program").
#pragma once

#include <systemc>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "models/collective/fabric.hpp"
#include "models/records/records.hpp"
#include "models/systemc/memory_system_module.hpp"
#include "models/systemc/semaphore_file.hpp"

namespace trnsim::models {

class CollectiveModule : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(CollectiveModule);
  // Ranks are the run's cores 0..cores-1, in core order, spread evenly over `chips` chips: rank
  // g is core g % (cores / chips) of chip g / (cores / chips).
  CollectiveModule(sc_core::sc_module_name name, const config::ArchConfig& arch, uint32_t cores,
                   uint32_t chips, EventSink& sink);

  // The memory system that carries the collectives' traffic next to the kernels' transfers
  // (docs/chip.md, "Collective traffic and the kernel's DMA"), before the run. Without one (the
  // rendezvous tests) a collective takes the fabric's time alone.
  void attach_memory(MemorySystemModule& memory);
  // Core `core`'s semaphores and memory image (nullptr: timing only), before the run.
  void attach(uint32_t core, SemaphoreFile* semaphores, isa::MemoryImage* memory);
  // `core`'s engine finished triggering `in` now: its next collective.
  void trigger(uint32_t core, const isa::Instruction& in);
  // Collectives `core` triggered that have not ended; ended() fires whenever one ends.
  uint32_t outstanding(uint32_t core) const { return outstanding_[core]; }
  const sc_core::sc_event& ended() const { return ended_; }
  // Why the run stopped (ranks disagreeing about a collective, a request the fabric refuses);
  // "" when it did not. The simulation is stopped when it is set.
  const std::string& error() const { return error_; }
  // Collectives some ranks triggered and others never did; "" when none waits.
  std::string deadlock_report() const;

 private:
  // A collective of one group: the k-th each of its cores triggered (a group is G consecutive
  // cores, the instruction's collective_group; all the cores when it is 0).
  using Key = std::pair<uint32_t, uint32_t>;  // (k, first core of the group)
  struct Pending {
    uint32_t first_core = 0;                       // of the group; by_rank[r] is core first + r
    std::vector<const isa::Instruction*> by_rank;  // nullptr: not triggered yet
    uint32_t arrived = 0;
    uint32_t first_arrived = 0;  // the core that triggered it first
    Picoseconds first_trigger;
    Picoseconds triggered;
    CollectiveTiming timing;
    uint32_t traffic_open = 0;  // its transfers in the memory system not yet completed
    bool fabric_done = false;   // the fabric's end has passed
  };
  // A send/recv pair: the k-th send from core `from` to core `to` and the k-th recv on `to`
  // from `from` (counted apart from the group collectives).
  struct PairKey {
    uint32_t from = 0, to = 0, k = 0;
    bool operator<(const PairKey& o) const {
      return std::tie(from, to, k) < std::tie(o.from, o.to, o.k);
    }
  };
  struct PairPending {
    const isa::Instruction* send = nullptr;  // nullptr: not triggered yet
    const isa::Instruction* recv = nullptr;
    Picoseconds first_trigger;
    Picoseconds triggered;
    CollectiveTiming timing;
    uint32_t traffic_open = 0;  // as Pending's
    bool fabric_done = false;
  };
  // What ends at a time: a group collective, or a send/recv pair.
  struct Due {
    Key key;
    bool pair = false;
    PairKey pair_key;
  };
  // One step's transfer of one rank in the memory system: a DMA copy within the rank's HBM of
  // the bytes it sends (the transfer points at its instruction, so it lives until it completes);
  // `of` is the collective or the send/recv pair it belongs to.
  struct Traffic {
    Due of;
    uint32_t core = 0;
    uint64_t bytes = 0;
    isa::Instruction dma;
  };
  // Enters `timing`'s traffic, rank r on core cores[r], to be submitted as the steps begin.
  uint32_t add_traffic(const Due& of, const CollectiveTiming& timing,
                       const std::vector<uint32_t>& cores);
  void trigger_pair(uint32_t core, const isa::Instruction& in);
  void complete_pair(const PairKey& key);
  void run();
  void fail(const std::string& why);
  void complete(Key key);
  void finish_record(CollectiveRecord& rec, Picoseconds first_trigger, Picoseconds triggered,
                     const CollectiveTiming& timing);
  void submit_traffic(uint32_t tag);
  void traffic_done(uint32_t tag, const DmaTransfer& transfer);
  void move_data(const Pending& p);
  CollectiveRequest request_for(const isa::Instruction& in, uint32_t first_core) const;

  const config::ArchConfig& arch_;
  uint32_t cores_;
  uint32_t cores_per_chip_;
  EventSink& sink_;
  CollectiveFabric fabric_;
  std::vector<SemaphoreFile*> semaphores_;
  std::vector<isa::MemoryImage*> memories_;
  std::vector<uint32_t> next_;  // per core: the index of its next collective
  std::vector<uint32_t> outstanding_;
  std::map<Key, Pending> pending_;
  std::map<PairKey, PairPending> pairs_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> sends_, recvs_;  // (from, to) -> next k
  std::multimap<int64_t, Due> due_;                                  // end time (ps) -> collective
  MemorySystemModule* memory_system_ = nullptr;
  std::map<uint32_t, std::unique_ptr<Traffic>> traffic_;  // by tag
  std::multimap<int64_t, uint32_t> traffic_due_;          // submit time (ps) -> tag
  uint32_t next_tag_ = 0;
  sc_core::sc_event scheduled_, ended_;
  std::string error_;
};

}  // namespace trnsim::models
