// A memory system driven directly (no SystemC) by a list of DMA instructions, for the DMA/HBM
// contract tests of both memory models (tests/contract/dma_hbm_rules.cpp, dma_flow_rules.cpp):
// add() transfers with their trigger times, run() submits them all and runs to completion.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <utility>
#include <vector>

#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/instruction.hpp"
#include "models/dma/memory_model.hpp"
#include "models/hbm/hbm.hpp"

namespace trnsim_test {

struct DmaBench {
  explicit DmaBench(const trnsim::config::ArchConfig& a, uint32_t cores = 1)
      : arch(a), cores(cores) {
    instructions.reserve(4096);  // transfers point at their instruction: no reallocation
    plans.reserve(4096);
  }
  void add(const trnsim::isa::Instruction& in, trnsim::Picoseconds issued = trnsim::Picoseconds(0),
           uint32_t core = 0) {
    REQUIRE(instructions.size() < instructions.capacity());
    instructions.push_back(in);
    plans.push_back(trnsim::models::plan_transfer(instructions.back(), arch));
    pending.push_back({core, issued});
  }
  // Runs everything; returns the memory system for inspection.
  trnsim::models::MemoryModel& run() {
    memory = trnsim::models::make_memory_model(arch, cores, instructions.size());
    REQUIRE((memory->name() == "flow") == arch.dma_flow_model);
    for (size_t i = 0; i < instructions.size(); ++i) {
      memory->submit(pending[i].first, instructions[i], plans[i], static_cast<uint32_t>(i),
                     pending[i].second);
    }
    memory->run_to_completion();
    REQUIRE(memory->incomplete() == 0);
    return *memory;
  }
  trnsim::Picoseconds end(size_t i) const { return memory->transfer(static_cast<uint32_t>(i)).end; }
  trnsim::Picoseconds start(size_t i) const {
    return memory->transfer(static_cast<uint32_t>(i)).start;
  }
  // Bytes per ns from time 0 to the last completion.
  double bytes_per_ns() const {
    trnsim::Picoseconds last;
    uint64_t bytes = 0;
    for (size_t i = 0; i < instructions.size(); ++i) {
      last = trnsim::max(last, end(i));
      bytes += plans[i].bytes;
    }
    return static_cast<double>(bytes) / last.ns();
  }
  // One HBM stack's peak, bytes per ns.
  double hbm_peak_bytes_per_ns() const {
    return trnsim::models::HbmModel(arch, 1).stack_peak_bytes_per_ns();
  }

  trnsim::config::ArchConfig arch;
  uint32_t cores;
  std::vector<trnsim::isa::Instruction> instructions;
  std::vector<trnsim::models::DmaPlan> plans;
  std::vector<std::pair<uint32_t, trnsim::Picoseconds>> pending;
  std::unique_ptr<trnsim::models::MemoryModel> memory;
};

}  // namespace trnsim_test
