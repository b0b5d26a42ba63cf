// The engine_stream micro-benchmark on the simulated core: back-to-back instructions at the
// cost formula's rate, and a functional result that passes the check.
#include <catch2/catch.hpp>

#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "models/neuroncore/cost.hpp"
#include "sim_support.hpp"
#include "workloads/lowering.hpp"

using namespace trnsim;

namespace {

workloads::LoweredKernel lowered(const std::string& engine, bool functional) {
  const auto w = workloads::parse_workload(
      R"({"kernel": "engine_stream", "shape": [128, 64], "instructions": 50, "engine": ")" +
          engine + R"("})",
      "s.json");
  return workloads::lower(w, config::trn2(), functional);
}

}  // namespace

TEST_CASE("engine_stream: the stream's instructions run back to back at their cost") {
  const config::ArchConfig arch = config::trn2();
  const auto k = lowered("vector", false);
  trnsim_test::Recorder rec;
  REQUIRE(models::simulate(k.program, arch, nullptr, rec).completed);
  const auto cost = models::instruction_time(k.program.stream(Engine::vector)[1], arch);
  // The second instruction starts when the first ends, and so on: no gaps.
  for (uint32_t i = 1; i < 50; ++i) {
    CHECK(rec.of(Engine::vector, i).start == rec.of(Engine::vector, i - 1).end);
    CHECK(rec.of(Engine::vector, i).end - rec.of(Engine::vector, i).start == cost);
  }
  CHECK(rec.transfers.size() == 2);
}

TEST_CASE("engine_stream on ScalarE computes y = 2x - 1 and passes the check") {
  const config::ArchConfig arch = config::trn2();
  const auto k = lowered("scalar", true);
  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  trnsim_test::Recorder rec;
  REQUIRE(models::simulate(k.program, arch, &memory, rec).completed);
  const auto c = workloads::check_outputs(k, memory);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.elements == 128 * 64);
}

TEST_CASE("engine_stream on VectorE computes y = 2x - 1 and passes the check") {
  const config::ArchConfig arch = config::trn2();
  const auto k = lowered("vector", true);
  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  trnsim_test::Recorder rec;
  REQUIRE(models::simulate(k.program, arch, &memory, rec).completed);
  CHECK(workloads::check_outputs(k, memory).status == workloads::CheckResult::Status::pass);
}
