// Flash attention on the simulated core against the double-precision reference, and proof
// that the check catches a wrong lowering. One simulation per test case (one process each).
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

workloads::Workload attention(std::vector<int64_t> shape, bool causal,
                              const std::string& extra = "", const std::string& params = "{}") {
  return workloads::parse_workload(
      R"({"kernel": "attention", "shape": [)" + std::to_string(shape[0]) + ", " +
          std::to_string(shape[1]) + ", " + std::to_string(shape[2]) + R"(], "causal": )" +
          (causal ? "true" : "false") + extra + R"(, "seed": 11, "params": )" + params + "}",
      "test.json");
}

template <typename Mutate>
workloads::CheckResult run(const workloads::Workload& w, Mutate mutate,
                           const config::ArchConfig& arch = config::trn2()) {
  workloads::LoweredKernel k = workloads::lower(w, arch, true);
  mutate(k.program);
  isa::validate(k.program, arch);
  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  Discard sink;
  REQUIRE(models::simulate(k.program, arch, &memory, sink).completed);
  return workloads::check_outputs(k, memory);
}

}  // namespace

TEST_CASE("attention of 2 heads, seq 256, head_dim 64 matches the reference") {
  const auto c = run(attention({2, 256, 64}, false), [](isa::Program&) {});
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.elements == 2 * 256 * 64);
  CHECK(c.max_abs_error > 0);
}

TEST_CASE("causal attention with seq 300 (not a multiple of the blocks) matches the reference") {
  // Query blocks of 128, 128 and 44; key blocks of 256 with the diagonal masked; three heads
  // through two head buffers.
  const auto c =
      run(attention({3, 300, 64}, true, "", R"({"kv_block": 256})"), [](isa::Program&) {});
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
}

TEST_CASE("fp32 attention on trn1 over several key blocks matches the reference") {
  const auto c = run(
      attention({2, 640, 128}, false, R"(, "dtype": "fp32")",
                R"({"kv_block": 256, "pt_copy": "vector"})"),
      [](isa::Program&) {}, config::trn1());
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
}

TEST_CASE("attention that does not rescale the running output fails the check") {
  // Two key blocks per query block: O *= alpha left out.
  const auto c =
      run(attention({1, 512, 64}, false, "", R"({"kv_block": 256})"), [](isa::Program& p) {
        for (auto& in : p.stream(Engine::vector)) {
          if (in.label.rfind("rescale O", 0) == 0) in.op0 = isa::AluOp::bypass;
        }
      });
  CHECK(c.status == workloads::CheckResult::Status::fail);
  CHECK(c.mismatches > 0);
}

TEST_CASE("attention whose P V matmul does not wait for P^T fails the check") {
  // Without its waits, the first P V matmul multiplies P^T before it is copied to SBUF.
  const auto c = run(attention({1, 256, 64}, true), [](isa::Program& p) {
    for (auto& in : p.stream(Engine::tensor)) {
      if (in.label.rfind("PV ", 0) == 0) in.waits.clear();
    }
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
}
