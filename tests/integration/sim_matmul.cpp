// Matmul (four strategies, both layouts of the left operand) and the MLP on the simulated core,
// against the double-precision references, at small shapes that are not multiples of the tile
// sizes; and proof that the check catches a lowering that reads a tile before it arrives. One
// simulation per test case (one process each).
#include <catch2/catch.hpp>

#include <string>

#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "workloads/lowering.hpp"

using namespace trnsim;

namespace {

struct Discard : models::EventSink {
  void on_instruction(const models::InstructionRecord&) override {}
  void on_transfer(const models::TransferRecord&) override {}
};

workloads::Workload matmul(int strategy, const std::string& layout, const std::string& shape,
                           const std::string& dtype = "bf16", const std::string& params = "{}") {
  return workloads::parse_workload(R"({"kernel": "matmul", "strategy": )" +
                                       std::to_string(strategy) + R"(, "a_layout": ")" + layout +
                                       R"(", "shape": )" + shape + R"(, "dtype": ")" + dtype +
                                       R"(", "seed": 3, "params": )" + params + "}",
                                   "test.json");
}

workloads::Workload mlp(const std::string& activation, const std::string& shape,
                        const std::string& params = "{}") {
  return workloads::parse_workload(R"({"kernel": "mlp", "activation": ")" + activation +
                                       R"(", "shape": )" + shape +
                                       R"(, "dtype": "bf16", "seed": 5, "params": )" + params + "}",
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

workloads::CheckResult run(const workloads::Workload& w) {
  return run(w, [](isa::Program&) {});
}

void require_pass(const workloads::CheckResult& c, uint64_t elements) {
  INFO("max abs " << c.max_abs_error << " max rel " << c.max_rel_error << " mismatches "
                  << c.mismatches);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.elements == elements);
  CHECK(c.max_abs_error > 0);  // a bf16 output cannot be exact: the check really compares
}

// 300 x 700 x 1100: partial tiles in every dimension (128, 128, 512).
const std::string kOdd = "[300, 700, 1100]";

}  // namespace

TEST_CASE("matmul strategy 1 (tiled) matches the reference at an odd shape") {
  require_pass(run(matmul(1, "km", kOdd)), 300 * 1100);
}

TEST_CASE("matmul strategy 1 with a [M, K] left operand transposed by DMA matches") {
  require_pass(run(matmul(1, "mk", kOdd)), 300 * 1100);
}

TEST_CASE("matmul strategy 2 (hoisted loads) matches the reference at an odd shape") {
  require_pass(run(matmul(2, "km", kOdd)), 300 * 1100);
}

TEST_CASE("matmul strategy 2 with a [M, K] left operand matches") {
  require_pass(run(matmul(2, "mk", kOdd)), 300 * 1100);
}

TEST_CASE("matmul strategy 3 (blocked M and N) with partial blocks matches") {
  // Blocks of 256 x 512: two blocks of M (the second of 44 rows), three of N.
  require_pass(run(matmul(3, "km", kOdd, "bf16", R"({"block_m": 256, "block_n": 512})")),
               300 * 1100);
}

TEST_CASE("matmul strategy 3 with a [M, K] left operand and one buffer matches") {
  require_pass(
      run(matmul(3, "mk", kOdd, "bf16", R"({"block_m": 128, "block_n": 1024, "bufs": 1})")),
      300 * 1100);
}

TEST_CASE("matmul strategy 4 with partial sums over three K blocks matches") {
  // 700 = 256 + 256 + 188: an ScalarE copy, a VectorE add, then the final add into bf16.
  require_pass(
      run(matmul(4, "km", kOdd, "bf16", R"({"block_m": 256, "block_k": 256, "block_n": 512})")),
      300 * 1100);
}

TEST_CASE("matmul strategy 4 with a [M, K] left operand over K blocks matches") {
  require_pass(run(matmul(4, "mk", kOdd, "bf16",
                          R"({"block_m": 128, "block_k": 384, "block_n": 1024, "bufs": 3})")),
               300 * 1100);
}

TEST_CASE("matmul strategy 4 with its default blocks (one K block) matches") {
  require_pass(run(matmul(4, "km", kOdd)), 300 * 1100);
}

TEST_CASE("matmul strategy 4 in fp32 (4x slower matmuls) matches within fp32 tolerance") {
  const auto c =
      run(matmul(4, "km", "[200, 300, 600]", "fp32", R"({"block_k": 128, "block_n": 512})"));
  INFO("max abs " << c.max_abs_error);
  CHECK(c.status == workloads::CheckResult::Status::pass);
  CHECK(c.max_abs_error < 1e-3);
}

TEST_CASE("matmul with a single buffer and one PSUM bank still matches") {
  // No overlap at all: every reuse of a buffer or bank waits for its readers.
  require_pass(run(matmul(1, "km", "[200, 300, 600]", "bf16",
                          R"({"bufs": 1, "out_bufs": 1, "psum_bufs": 1})")),
               200 * 600);
}

TEST_CASE("a matmul whose first matmul does not wait for its operands fails the check") {
  const auto c = run(matmul(1, "km", "[128, 256, 512]"),
                     [](isa::Program& p) { p.stream(Engine::tensor).front().waits.clear(); });
  CHECK(c.status == workloads::CheckResult::Status::fail);
}

TEST_CASE("mlp with exact GELU matches the reference at an odd shape") {
  // M 300: chunks of 512 rows hold it in one, with a partial output tile; D 200 and F 700 are
  // not multiples of 128.
  require_pass(run(mlp("gelu", "[300, 200, 700]")), 300 * 200);
}

TEST_CASE("mlp with tanh-approximated GELU matches the reference") {
  require_pass(run(mlp("gelu_tanh", "[300, 200, 700]")), 300 * 200);
}

TEST_CASE("mlp with SiLU over several chunks of x and pieces of the weights matches") {
  // Chunks of 128 rows (three), w1 in 128-column pieces, w2 in 256-row pieces, D over two
  // accumulation groups of 512 columns.
  require_pass(run(mlp("silu", "[300, 600, 700]",
                       R"({"block_m": 128, "w1_tiles": 1, "w2_tiles": 2, "x_bufs": 1})")),
               300 * 600);
}
