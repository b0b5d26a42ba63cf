// The memory system's transfer horizon (TransferRecord::horizon, which the statistics use to sum
// and drop the old pieces of the DMA busy union): no transfer record delivered later starts
// before what an earlier one's horizon said, with either memory model, on one core and on two.
// One simulation per test case (one process each).
#include <catch2/catch.hpp>

#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "workloads/lowering.hpp"

using namespace trnsim;

namespace {

struct HorizonCheck : models::EventSink {
  Picoseconds promised{INT64_MIN};  // the latest horizon so far
  Picoseconds last_start;
  size_t transfers = 0;
  size_t early = 0;  // records that started before a horizon given earlier
  void on_instruction(const models::InstructionRecord&) override {}
  void on_transfer(const models::TransferRecord& r) override {
    REQUIRE(r.horizon != nullptr);
    ++transfers;
    if (r.start < promised) ++early;
    last_start = max(last_start, r.start);
    promised = max(promised, r.horizon->later_starts_from());
  }
};

// A matmul whose large loads stay in flight while others complete (strategy 4; a horizon of
// just the simulation's time is caught here), timing only, on `cores`.
void check(bool flow, uint32_t cores) {
  config::ArchConfig arch = config::trn2();
  arch.dma_flow_model = flow;
  const workloads::Workload w = workloads::parse_workload(
      R"({"kernel": "matmul", "strategy": 4, "shape": [1024, 2048, 4096], "dtype": "bf16"})",
      "test.json");
  const workloads::LoweredKernel k = workloads::lower(w, arch, false);
  isa::validate(k.program, arch);
  HorizonCheck sink;
  const std::vector<isa::MemoryImage*> memories(cores, nullptr);
  REQUIRE(models::simulate(k.program, arch, memories, sink).completed);
  REQUIRE(sink.transfers > 100);
  CHECK(sink.early == 0);
  // And it moves with the run: a horizon stuck at 0 would be safe but fold nothing.
  CHECK(sink.promised.value > sink.last_start.value / 2);
}

}  // namespace

TEST_CASE("transfer horizon: no later transfer starts before it (detailed model)") {
  check(false, 1);
}

TEST_CASE("transfer horizon: no later transfer starts before it (flow model)") {
  check(true, 1);
}

TEST_CASE("transfer horizon: no later transfer starts before it (two cores)") {
  check(false, 2);
}
