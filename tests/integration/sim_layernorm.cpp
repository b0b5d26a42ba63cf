// LayerNorm on the simulated core against the double-precision reference, both methods, and
// proof that the check catches a wrong lowering. One simulation per test case (one process each).
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

workloads::Workload layernorm(std::vector<int64_t> shape, const std::string& method,
                              const std::string& params = "{}") {
  return workloads::parse_workload(R"({"kernel": "layernorm", "shape": [)" +
                                       std::to_string(shape[0]) + ", " + std::to_string(shape[1]) +
                                       R"(], "dtype": "bf16", "eps": 1e-5, "method": ")" + method +
                                       R"(", "seed": 3, "params": )" + params + "}",
                                   "test.json");
}

// Lowers, lets `mutate` change the program, simulates, checks.
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

isa::Instruction& find(isa::Program& p, Engine e, const std::string& label) {
  for (auto& in : p.stream(e)) {
    if (in.label == label) return in;
  }
  FAIL("no instruction " << label);
  return p.stream(e).front();
}

}  // namespace

TEST_CASE("LayerNorm with bn_stats matches the reference within bf16 tolerance") {
  // 300 rows: tiles of 128, 128 and 44; hidden 1100: bn_stats chunks of 512, 512 and 76.
  const auto c = run(layernorm({300, 1100}, "bn_stats"), [](isa::Program&) {});
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.elements == 300 * 1100);
  CHECK(c.max_abs_error > 0);  // bf16 output cannot be exact: the check really compares
}

TEST_CASE("LayerNorm with two passes matches the reference within bf16 tolerance") {
  const auto c = run(layernorm({300, 1100}, "two_pass"), [](isa::Program&) {});
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
}

TEST_CASE("LayerNorm on trn1, beta on VectorE, one buffer, matches the reference") {
  const auto c = run(
      layernorm({200, 640}, "two_pass", R"({"bufs": 1, "tile_rows": 96})"), [](isa::Program&) {},
      config::trn1());
  CHECK(c.status == workloads::CheckResult::Status::pass);
}

TEST_CASE("a LayerNorm that forgets the mean fails the check") {
  // -mean * rstd as 0: the normalisation only scales x (whose mean is about 1).
  const auto c = run(layernorm({256, 512}, "bn_stats"), [](isa::Program& p) {
    find(p, Engine::vector, "-mean*rstd tile 1").operand0 = isa::ScalarOperand::immediate(0);
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
  CHECK(c.mismatches > 0);
}

TEST_CASE("a LayerNorm whose store does not wait for beta fails the check") {
  // Dropping the store's wait lets the DMA read the tile before GpSimdE adds beta.
  const auto c = run(layernorm({256, 512}, "two_pass"), [](isa::Program& p) {
    find(p, Engine::sync, "store y tile 0").waits.clear();
  });
  CHECK(c.status == workloads::CheckResult::Status::fail);
}
