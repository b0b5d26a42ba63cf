// Fused RMSNorm on the simulated core against the double-precision reference, and proof that
// the check catches a wrong lowering. One simulation per test case (one process each).
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

workloads::Workload rmsnorm(std::vector<int64_t> shape, const std::string& params = "{}") {
  return workloads::parse_workload(R"({"kernel": "rmsnorm", "shape": [)" +
                                       std::to_string(shape[0]) + ", " + std::to_string(shape[1]) +
                                       R"(], "dtype": "bf16", "eps": 1e-6, "seed": 7, "params": )" +
                                       params + "}",
                                   "test.json");
}

// Lowers, lets `mutate` change the program, simulates, checks.
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

TEST_CASE("fused RMSNorm matches the reference within bf16 tolerance") {
  // 300 rows: two full tiles of 128 and a partial one of 44.
  const auto c = run(rmsnorm({300, 512}), [](isa::Program&) {});
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.elements == 300 * 512);
  CHECK(c.mismatches == 0);
  CHECK(c.max_rel_error > 0);  // bf16 output cannot be exact: the check really compares
}

TEST_CASE("fused RMSNorm with VectorE scaling and three buffers matches the reference") {
  const auto c =
      run(rmsnorm({260, 384}, R"({"bufs": 3, "scale_engine": "vector"})"), [](isa::Program&) {});
  CHECK(c.status == workloads::CheckResult::Status::pass);
}

TEST_CASE("a lowering that forgets gamma fails the functional check") {
  const auto c = run(rmsnorm({256, 512}), [](isa::Program& p) {
    find(p, Engine::vector, "gamma tile 1").op0 = isa::AluOp::bypass;
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
  CHECK(c.mismatches > 0);
}

TEST_CASE("a lowering that sums instead of averaging the squares fails the check") {
  const auto c = run(rmsnorm({128, 512}), [](isa::Program& p) {
    find(p, Engine::scalar, "square-sum tile 0").scale = isa::ScalarOperand::immediate(1.0f);
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
}

TEST_CASE("a lowering that stores a tile before it is computed fails the check") {
  // Dropping the store's wait on VectorE lets the DMA read the output buffer too early.
  const auto c = run(rmsnorm({256, 512}), [](isa::Program& p) {
    find(p, Engine::sync, "store y tile 0").waits.clear();
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
}
