// A streamed matmul or mlp (Workload::stream_from): the lowering runs once to count, then again
// while the run reads its instructions. The streamed program must be the whole one, instruction
// for instruction, and compute the same result.
#include <catch2/catch.hpp>

#include <string>

#include "isa/text/assembly.hpp"
#include "models/chip/simulate.hpp"
#include "sim_support.hpp"
#include "workloads/lowering.hpp"

using namespace trnsim;

namespace {

workloads::LoweredKernel lowered(int strategy, bool streamed, bool functional,
                                 const std::string& shape = "[200, 300, 700]") {
  auto w =
      workloads::parse_workload(R"({"kernel": "matmul", "strategy": )" + std::to_string(strategy) +
                                    R"(, "shape": )" + shape + R"(, "dtype": "bf16", "seed": 3})",
                                "m.json");
  w.stream_from = streamed ? 0 : workloads::kNeverStreamed;
  return workloads::lower(w, config::trn2(), functional);
}

// Reads every stream of `streamed` to its end and checks it against `whole`.
void same_program(const workloads::LoweredKernel& whole, workloads::LoweredKernel& streamed) {
  REQUIRE(whole.program.feed == nullptr);
  REQUIRE(streamed.program.feed != nullptr);
  CHECK(streamed.program.instruction_count() == 0);  // nothing lowered before it is read
  CHECK(streamed.program.feed->expected_instructions == whole.program.instruction_count());
  // What the lowering reports besides the instructions comes from the counting pass.
  CHECK(streamed.choices == whole.choices);
  CHECK(streamed.program.semaphores.size() == whole.program.semaphores.size());
  // Read every engine's stream to its end (the feed lowers on as it is asked).
  for (Engine e : kAllEngines) {
    size_t i = 0;
    while (streamed.program.has(e, i)) ++i;
    CHECK(i == whole.program.stream(e).size());
  }
  CHECK(streamed.program.feed->ended());
  // Same waits, updates and their numbers, operands and labels.
  CHECK(isa::print_assembly(streamed.program) == isa::print_assembly(whole.program));
}

}  // namespace

TEST_CASE("a streamed matmul lowers to the whole lowering's instructions in its order") {
  const int strategy = GENERATE(1, 2, 3, 4);
  INFO("strategy " << strategy);
  const auto whole = lowered(strategy, false, false);
  auto streamed = lowered(strategy, true, false);  // not const: it fills as it is read
  same_program(whole, streamed);
}

TEST_CASE("a streamed mlp lowers to the whole lowering's instructions in its order") {
  auto w = workloads::parse_workload(
      R"({"kernel": "mlp", "activation": "gelu", "shape": [300, 384, 1100], "dtype": "bf16"})",
      "mlp.json");
  const auto whole = workloads::lower(w, config::trn2(), false);
  w.stream_from = 0;
  auto streamed = workloads::lower(w, config::trn2(), false);
  same_program(whole, streamed);
}

TEST_CASE("a streamed matmul computes the product and passes the check") {
  const config::ArchConfig arch = config::trn2();
  auto k = lowered(1, true, true);  // not const: it fills as it is read
  REQUIRE(k.program.feed != nullptr);
  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  trnsim_test::Recorder rec;
  REQUIRE(models::simulate(k.program, arch, &memory, rec).completed);
  CHECK(k.program.feed->ended());
  const auto c = workloads::check_outputs(k, memory);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.elements == 200 * 700);
}

TEST_CASE("a matmul below stream_from is lowered whole") {
  auto w = workloads::parse_workload(
      R"({"kernel": "matmul", "strategy": 1, "shape": [256, 256, 512], "dtype": "bf16"})",
      "m.json");
  w.stream_from = 1000;  // the program has 16 instructions
  CHECK(workloads::lower(w, config::trn2(), false).program.feed == nullptr);
  w.stream_from = 10;
  CHECK(workloads::lower(w, config::trn2(), false).program.feed != nullptr);
}

TEST_CASE("max_instructions bounds a matmul held whole and not a streamed one") {
  config::ArchConfig arch = config::trn2();
  arch.max_instructions = 10;  // the program has 16
  auto w = workloads::parse_workload(
      R"({"kernel": "matmul", "strategy": 1, "shape": [256, 256, 512], "dtype": "bf16"})",
      "m.json");
  CHECK_THROWS_AS(workloads::lower(w, arch, false), workloads::WorkloadError);
  w.stream_from = 16;
  auto k = workloads::lower(w, arch, false);
  REQUIRE(k.program.feed != nullptr);
  for (Engine e : kAllEngines) {
    for (size_t i = 0; k.program.has(e, i); ++i) {
    }
  }
  k.program.feed->rethrow_error();  // the replay went through
  CHECK(k.program.feed->ended());
  CHECK(k.program.instruction_count() == 16);
}
