// The host (SystemC shell): one thread plays the framework dispatching the program's host ops
// in order and the runtime launching each op's kernels, asynchronously: a launch call returns
// once the kernel is queued, and blocks only while arch.host.max_inflight kernels are launched
// and unfinished. After the last op the host synchronizes: it waits for the device, then pays
// the sync's own cost. An op that runs on the host (a CPU fallback) waits for the device, copies
// its inputs to the host and its results back (run_on_host). Costs are arch.host (assumptions,
// docs/architecture.md "Host model").
#pragma once

#include <systemc>

#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "models/records/records.hpp"

namespace trnsim::models {

class HostModule : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(HostModule);
  HostModule(sc_core::sc_module_name name, const isa::Program& program,
             const config::ArchConfig& arch, uint32_t cores, EventSink& sink);

  // Device side: kernel k may start once launched(k) and now >= arrival(k).
  bool launched(size_t k) const { return k < launched_; }
  Picoseconds arrival(size_t k) const { return arrival_[k]; }
  sc_core::sc_event& launch_event() { return launch_event_; }
  // A core finished kernel k; the kernel is done when every core has.
  void kernel_done(size_t k);
  bool finished() const { return finished_; }
  Picoseconds end() const { return end_; }

 private:
  void run();
  void run_on_host(size_t op);

  const isa::Program& program_;
  const config::ArchConfig& arch_;
  uint32_t cores_;
  EventSink& sink_;
  size_t launched_ = 0;
  size_t done_ = 0;  // kernels finished on every core
  std::vector<uint32_t> cores_done_;
  std::vector<Picoseconds> arrival_;
  sc_core::sc_event launch_event_;
  sc_core::sc_event done_event_;
  bool finished_ = false;
  Picoseconds end_;
};

}  // namespace trnsim::models
