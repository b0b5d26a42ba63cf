// Softmax on the simulated core against the double-precision reference, and proof that the
// check catches a wrong lowering. One simulation per test case (one process each).
#include <catch2/catch.hpp>

#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "workloads/lowering.hpp"

using namespace trnsim;

namespace {

struct Discard : models::EventSink {
  void on_instruction(const models::InstructionRecord&) override {}
  void on_transfer(const models::TransferRecord&) override {}
};

workloads::Workload softmax(std::vector<int64_t> shape, const std::string& params = "{}") {
  return workloads::parse_workload(
      R"({"kernel": "softmax", "shape": [)" + std::to_string(shape[0]) + ", " +
          std::to_string(shape[1]) + R"(], "dtype": "bf16", "seed": 5, "params": )" + params + "}",
      "test.json");
}

template <typename Mutate>
workloads::CheckResult run(const workloads::Workload& w, Mutate mutate) {
  const config::ArchConfig arch = config::trn2();
  workloads::LoweredKernel k = workloads::lower(w, arch, true);
  mutate(k.program);
  isa::validate(k.program, arch);
  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  Discard sink;
  REQUIRE(models::simulate(k.program, arch, &memory, sink).completed);
  return workloads::check_outputs(k, memory);
}

isa::Instruction& find(isa::Program& p, Engine e, const std::string& label) {
  for (auto& in : p.stream(e)) {
    if (in.label == label) return in;
  }
  FAIL("no instruction " << label);
  return p.stream(e).front();
}

}  // namespace

TEST_CASE("Softmax matches the reference within bf16 tolerance") {
  // 300 rows: tiles of 128, 128 and 44.
  const auto c = run(softmax({300, 2000}), [](isa::Program&) {});
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.elements == 300 * 2000);
  CHECK(c.max_rel_error > 0);
}

TEST_CASE("Softmax scaled on ScalarE with one buffer matches the reference") {
  const auto c =
      run(softmax({200, 700}, R"({"scale_engine": "scalar", "bufs": 1})"), [](isa::Program&) {});
  CHECK(c.status == workloads::CheckResult::Status::pass);
}

TEST_CASE("a Softmax that does not divide by the sum fails the check") {
  const auto c = run(softmax({256, 512}), [](isa::Program& p) {
    find(p, Engine::vector, "scale tile 1").op0 = isa::AluOp::bypass;
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
  CHECK(c.mismatches > 0);
}

TEST_CASE("a Softmax whose exp does not wait for the max fails the check") {
  // Without its wait, ScalarE reads -max before VectorE writes it (zero from the start).
  const auto c = run(softmax({256, 512}),
                     [](isa::Program& p) { find(p, Engine::scalar, "exp tile 0").waits.clear(); });
  CHECK(c.status == workloads::CheckResult::Status::fail);
}
