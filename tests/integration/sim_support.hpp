// An EventSink that keeps every record, for simulation tests.
#pragma once

#include <catch2/catch.hpp>
#include <vector>

#include "models/records/records.hpp"

namespace trnsim_test {

struct Recorder : trnsim::models::EventSink {
  std::vector<trnsim::models::InstructionRecord> instructions;
  std::vector<trnsim::models::TransferRecord> transfers;
  void on_instruction(const trnsim::models::InstructionRecord& r) override {
    instructions.push_back(r);
  }
  void on_transfer(const trnsim::models::TransferRecord& r) override { transfers.push_back(r); }
  std::vector<trnsim::models::KernelRecord> kernels;
  std::vector<trnsim::models::HostRecord> host;
  void on_kernel(const trnsim::models::KernelRecord& r) override { kernels.push_back(r); }
  void on_host(const trnsim::models::HostRecord& r) override { host.push_back(r); }
  // The record of instruction `index` of engine `e` (core 0).
  const trnsim::models::InstructionRecord& of(trnsim::Engine e, uint32_t index = 0) const {
    for (const auto& r : instructions) {
      if (r.engine == e && r.index == index) return r;
    }
    FAIL("no record of that instruction");
    return instructions.front();
  }
};

}  // namespace trnsim_test
