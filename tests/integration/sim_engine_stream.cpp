// The engine_stream micro-benchmark on the simulated core: back-to-back instructions at the
// cost formula's rate, and a functional result that passes the check.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "models/neuroncore/cost.hpp"
#include "sim_support.hpp"
#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/thread_feed.hpp"
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

namespace {

workloads::LoweredKernel lowered_streamed(uint64_t instructions, bool streamed, bool functional) {
  auto w = workloads::parse_workload(
      R"({"kernel": "engine_stream", "shape": [128, 64], "engine": "vector", "instructions": )" +
          std::to_string(instructions) + "}",
      "s.json");
  w.stream_from = streamed ? 0 : workloads::kNeverStreamed;
  return workloads::lower(w, config::trn2(), functional);
}

}  // namespace

TEST_CASE("engine_stream streamed runs back to back at the cost formula and frees what it passed") {
  const config::ArchConfig arch = config::trn2();
  // Three fixed blocks and more: the first ones are freed while the run goes on.
  const uint64_t n = 3 * isa::InstructionStream::kBlock + 10;
  const auto whole = lowered_streamed(n, false, false);
  auto streamed = lowered_streamed(n, true, false);  // not const: it fills as it is read
  REQUIRE(whole.program.feed == nullptr);
  REQUIRE(streamed.program.feed != nullptr);
  CHECK(streamed.program.instruction_count() == 0);  // lowered as the run reads it
  // One simulation per process (SystemC): the whole program's timing is the cost formula's,
  // back to back (the first test case above), so the streamed one is held to that.
  trnsim_test::Recorder rec;
  REQUIRE(models::simulate(streamed.program, arch, nullptr, rec).completed);
  CHECK(streamed.program.instruction_count() == whole.program.instruction_count());
  const auto cost = models::instruction_time(whole.program.stream(Engine::vector)[1], arch);
  std::vector<const models::InstructionRecord*> vector(n, nullptr);
  for (const auto& r : rec.instructions) {
    if (r.engine == Engine::vector) vector.at(r.index) = &r;
  }
  bool back_to_back = true;
  for (uint64_t i = 1; i < n; ++i) {
    back_to_back = back_to_back && vector[i] != nullptr && vector[i]->start == vector[i - 1]->end &&
                   vector[i]->end - vector[i]->start == cost;
  }
  CHECK(back_to_back);
  CHECK(rec.transfers.size() == 2);
  CHECK(streamed.program.stream(Engine::vector).released() >= 2 * isa::InstructionStream::kBlock);
  CHECK(whole.program.stream(Engine::vector).released() == 0);
}

TEST_CASE("engine_stream streamed computes y = 2x - 1 and passes the check") {
  const config::ArchConfig arch = config::trn2();
  auto k = lowered_streamed(100, true, true);  // not const: it fills as it is read
  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  trnsim_test::Recorder rec;
  REQUIRE(models::simulate(k.program, arch, &memory, rec).completed);
  CHECK(workloads::check_outputs(k, memory).status == workloads::CheckResult::Status::pass);
}

TEST_CASE("a streamed program that deadlocks is reported with what each engine waits for") {
  // VectorE's first instruction waits for a semaphore nothing raises; the lowering is left part
  // way, and the engines it said were done have finished.
  isa::Program p;
  const uint16_t never = p.add_semaphore("never");
  const isa::AccessPattern tile = isa::sbuf_ap(isa::DType::bf16, 0, 128, 0, {{1, 64}});
  p.feed = std::make_shared<workloads::ThreadFeed>([never, tile](workloads::ThreadFeed& feed) {
    for (Engine e : kAllEngines) {
      if (e != Engine::vector) feed.end_of(e);
    }
    for (int i = 0; i < 3 * static_cast<int>(workloads::ThreadFeed::kAhead); ++i) {
      isa::Instruction in =
          workloads::tensor_scalar(Engine::vector, tile, tile, isa::AluOp::multiply, 2.0f, "step");
      if (i == 0) in.waits.push_back(isa::SemaphoreWait{never, 1});
      feed.append(std::move(in));
    }
  });
  trnsim_test::Recorder rec;
  const models::SimulationResult r = models::simulate(p, config::trn2(), nullptr, rec);
  CHECK_FALSE(r.completed);
  CHECK_FALSE(p.feed->ended());
  CHECK_THAT(r.deadlock, Catch::Matchers::Contains("VectorE stopped at instruction 0") &&
                             Catch::Matchers::Contains("never"));
  CHECK_THAT(r.deadlock, !Catch::Matchers::Contains("TensorE"));  // its stream ended: finished
}
