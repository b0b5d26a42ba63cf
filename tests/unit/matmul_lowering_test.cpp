// Matmul and MLP lowerings without simulation: what each strategy loads from HBM and how many
// instructions it emits, tiles that follow the PE array, the full-size shape in timing-only form,
// the synchronization (the program played in several engine orders still computes the right
// result), the references, and the errors for bad options.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "config/parameters.hpp"
#include "isa/instruction.hpp"
#include "isa/program.hpp"
#include "isa/semantics.hpp"
#include "isa/validate.hpp"
#include "kernel_test_support.hpp"
#include "workloads/kernels/engine_streams.hpp"
#include "workloads/kernels/matmul.hpp"
#include "workloads/kernels/mlp.hpp"
#include "workloads/lowering.hpp"
#include "workloads/workload.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::Instruction;
using trnsim::isa::Memory;
using trnsim::isa::Opcode;
using trnsim::isa::Program;
using trnsim::workloads::lower;
using trnsim::workloads::LoweredKernel;
using trnsim::workloads::parse_workload;
using trnsim::workloads::Workload;
using trnsim::workloads::WorkloadError;
using trnsim_test::error_of;
using trnsim_test::play;

namespace {

Workload matmul(int strategy, const std::string& shape, const std::string& params = "{}",
                const std::string& layout = "km", const std::string& dtype = "bf16") {
  return parse_workload(R"({"kernel": "matmul", "strategy": )" + std::to_string(strategy) +
                            R"(, "a_layout": ")" + layout + R"(", "shape": )" + shape +
                            R"(, "dtype": ")" + dtype + R"(", "params": )" + params + "}",
                        "w.json");
}

Workload mlp(const std::string& shape, const std::string& params = "{}",
             const std::string& activation = "gelu") {
  return parse_workload(R"({"kernel": "mlp", "activation": ")" + activation + R"(", "shape": )" +
                            shape + R"(, "dtype": "bf16", "params": )" + params + "}",
                        "w.json");
}

uint64_t count(const Program& p, Opcode op) {
  uint64_t n = 0;
  for (const auto& s : p.streams)
    for (const auto& in : s) n += in.opcode == op;
  return n;
}

uint64_t hbm_bytes_read(const Program& p) {
  uint64_t n = 0;
  for (const auto& s : p.streams)
    for (const auto& in : s)
      if (trnsim::isa::is_dma(in.opcode) && in.src[0]->memory == Memory::hbm) n += in.dst->bytes();
  return n;
}

ArchConfig with(const std::vector<std::string>& sets) {
  ArchConfig arch = trnsim::config::trn2();
  for (const auto& s : sets) trnsim::config::set_parameter(arch, s);
  return arch;
}

// The kernel's output is right whichever engine runs ahead.
void check_in_every_order(const Workload& w) {
  const ArchConfig arch = trnsim::config::trn2();
  const LoweredKernel k = lower(w, arch, true);
  trnsim::isa::validate(k.program, arch);
  const std::vector<std::vector<Engine>> orders = {
      {Engine::sync, Engine::tensor, Engine::scalar, Engine::vector, Engine::gpsimd},
      {Engine::vector, Engine::scalar, Engine::tensor, Engine::sync, Engine::gpsimd},
      {Engine::tensor, Engine::vector, Engine::sync, Engine::scalar, Engine::gpsimd}};
  for (const auto& order : orders) {
    trnsim::isa::MemoryImage mem(arch, k.program.dram_bytes());
    trnsim::workloads::load_inputs(k, mem);
    REQUIRE(play(k.program, arch, mem, order));
    const auto c = trnsim::workloads::check_outputs(k, mem);
    INFO("order starting with " << trnsim::name_of(order[0]) << ": max abs " << c.max_abs_error);
    CHECK(c.status == trnsim::workloads::CheckResult::Status::pass);
  }
}

const std::string kFull = "[4096, 8192, 8192]";

}  // namespace

TEST_CASE("matmul strategies load fewer HBM bytes in turn: 1 > 2 > 3 >= 4", "[unit][matmul]") {
  for (const std::string& shape : {kFull, std::string("[1024, 2048, 4096]")}) {
    std::vector<uint64_t> bytes;
    for (int s = 1; s <= 4; ++s) {
      const LoweredKernel k = lower(matmul(s, shape), trnsim::config::trn2(), false);
      bytes.push_back(hbm_bytes_read(k.program));
      CHECK(k.choices["hbm_bytes_loaded"].get<uint64_t>() == bytes.back());
    }
    INFO(shape << ": " << bytes[0] << " " << bytes[1] << " " << bytes[2] << " " << bytes[3]);
    CHECK(bytes[0] > bytes[1]);
    CHECK(bytes[1] > bytes[2]);
    CHECK(bytes[2] >= bytes[3]);
  }
  // At the full shape (the tutorial's byte counts, docs/kernels.md): strategy 1 reloads A per N
  // tile and B per M tile (1 + 4 GiB); strategy 4 loads B once and A once per 1024 columns
  // of C (128 + 512 MiB).
  const LoweredKernel s1 = lower(matmul(1, kFull), trnsim::config::trn2(), false);
  CHECK(hbm_bytes_read(s1.program) == (5ULL << 30));
  const LoweredKernel s4 = lower(matmul(4, kFull), trnsim::config::trn2(), false);
  CHECK(hbm_bytes_read(s4.program) == (640ULL << 20));
}

TEST_CASE(
    "every strategy lowers [4096, 8192, 8192] bf16 for timing under the instruction and "
    "SBUF limits",
    "[unit][matmul]") {
  const ArchConfig arch = trnsim::config::trn2();
  for (int s = 1; s <= 4; ++s) {
    for (const std::string layout : {"km", "mk"}) {
      INFO("strategy " << s << " " << layout);
      const LoweredKernel k = lower(matmul(s, kFull, "{}", layout), arch, false);
      CHECK_NOTHROW(trnsim::isa::validate(k.program, arch));
      CHECK(k.program.instruction_count() < arch.max_instructions);
      CHECK(k.choices["sbuf_bytes_per_partition"].get<uint64_t>() <= arch.sbuf_partition_bytes);
      CHECK(count(k.program, Opcode::matmul) == 32 * 16 * 64);
      CHECK(k.model_flops == 2ULL * 4096 * 8192 * 8192);
      CHECK(k.inputs.empty());
    }
  }
}

TEST_CASE("matmul strategies follow the NKI tutorial's loop nests: instruction and DMA counts",
          "[unit][matmul]") {
  // The counts derived from the tutorial's four kernels (docs/kernels.md; tiles 128 x 128 x
  // 512, Mt = M/128, Kt = K/128, Nt = N/512): nki_matmul_tiled_, nki_matmul_hoist_load_,
  // nki_matmul_block_free_dimension_ (2 x 2 tiles) and nki_matmul_fully_optimized_ (blocks of
  // 2048 x 1024 x 1024), at shapes that are multiples of their blocks.
  const ArchConfig arch = trnsim::config::trn2();
  for (const auto& shape : std::vector<std::vector<uint64_t>>{
           {4096, 8192, 8192}, {2048, 1024, 1024}, {4096, 2048, 3072}}) {
    const uint64_t M = shape[0], K = shape[1], N = shape[2];
    const uint64_t Mt = M / 128, Kt = K / 128, Nt = N / 512;
    const std::string json =
        "[" + std::to_string(M) + ", " + std::to_string(K) + ", " + std::to_string(N) + "]";
    auto loads = [](const Program& p) {
      uint64_t n = 0;
      for (const auto& st : p.streams)
        for (const auto& in : st)
          n += in.opcode == Opcode::dma_copy && in.src[0]->memory == Memory::hbm;
      return n;
    };
    auto stores = [](const Program& p) {
      uint64_t n = 0;
      for (const auto& st : p.streams)
        for (const auto& in : st)
          n += in.opcode == Opcode::dma_copy && in.dst->memory == Memory::hbm;
      return n;
    };
    auto evacuations = [](const Program& p) {
      return count(p, Opcode::activation) + count(p, Opcode::tensor_copy);
    };
    for (int s = 1; s <= 4; ++s) {
      INFO("strategy " << s << " at " << json);
      const LoweredKernel k = lower(matmul(s, json), arch, false);
      const Program& p = k.program;
      CHECK(count(p, Opcode::matmul) == Mt * Nt * Kt);
      switch (s) {
        case 1:
          CHECK(loads(p) == 2 * Mt * Nt * Kt);
          CHECK(evacuations(p) == Mt * Nt);
          CHECK(stores(p) == Mt * Nt);
          CHECK(p.instruction_count() == 3 * Mt * Nt * Kt + 2 * Mt * Nt);
          break;
        case 2:
          CHECK(loads(p) == Mt * Kt + Mt * Nt * Kt);
          CHECK(evacuations(p) == Mt * Nt);
          CHECK(stores(p) == Mt * Nt);
          break;
        case 3:
          CHECK(k.choices["block_m"] == 256);
          CHECK(k.choices["block_n"] == 1024);
          CHECK(loads(p) == Mt * Kt + (M / 256) * Nt * Kt);
          CHECK(evacuations(p) == Mt * Nt);
          CHECK(stores(p) == Mt * Nt);
          break;
        default:
          CHECK(k.choices["block_m"] == 2048);
          CHECK(k.choices["block_k"] == 1024);
          CHECK(k.choices["block_n"] == 1024);
          CHECK(loads(p) == Nt * Kt / 2 + (N / 1024) * Kt * (M / 2048));
          CHECK(count(p, Opcode::tensor_tensor) == Mt * Nt * (K / 1024));
          CHECK(count(p, Opcode::memset) == (N / 1024) * Mt);
          CHECK(stores(p) == (N / 1024) * Mt);
          for (const auto& st : p.streams)
            for (const auto& in : st)
              if (in.opcode == Opcode::dma_copy && in.dst->memory == Memory::hbm)
                CHECK(in.dst->free_elements() == 1024);  // 2 KiB per partition
      }
    }
  }
  // The [M, K] layout transposes A on the way in: one dma_transpose per 128 x 128 tile.
  const LoweredKernel t2 = lower(matmul(2, "[256, 384, 1024]", "{}", "mk"), arch, false);
  CHECK(count(t2.program, Opcode::dma_transpose) == 2 * 3);
  CHECK(t2.program.find_dram_tensor("a")->shape == std::vector<int64_t>{256, 384});
  CHECK(t2.program.find_dram_tensor("a_t") == nullptr);
  const LoweredKernel s4 = lower(matmul(4, "[256, 384, 1024]"), arch, false);
  CHECK(s4.program.find_dram_tensor("a_t")->shape == std::vector<int64_t>{384, 256});
  CHECK(s4.program.find_dram_tensor("b")->shape == std::vector<int64_t>{384, 1024});
  CHECK(s4.program.find_dram_tensor("c")->shape == std::vector<int64_t>{256, 1024});
}

TEST_CASE("matmul tiles follow pe_rows, pe_columns and the moving size, not 128 and 512",
          "[unit][matmul]") {
  const auto w = matmul(4, "[1024, 1024, 2048]");
  auto matmuls = [&](const ArchConfig& arch) {
    const LoweredKernel k = lower(w, arch, false);
    trnsim::isa::validate(k.program, arch);
    return count(k.program, Opcode::matmul);
  };
  const uint64_t base = matmuls(trnsim::config::trn2());
  CHECK(base == 8 * 8 * 4);
  CHECK(matmuls(with({"pe_rows=64"})) == 2 * base);
  CHECK(matmuls(with({"pe_columns=64"})) == 2 * base);
  // Wider moving tiles need PSUM banks that hold them: 4 KiB banks hold 1024 fp32.
  CHECK(matmuls(with({"psum_partition_bytes=32768", "matmul_moving_max=1024"})) == base / 2);
  // A stationary's columns become PSUM partitions: a 256-column PE array cannot be used wider
  // than the 128 partitions, so the tiles stay 128 rows (docs/kernels.md).
  CHECK(matmuls(with({"pe_columns=256"})) == base);
  const LoweredKernel narrow = lower(w, with({"pe_rows=64", "pe_columns=32"}), false);
  CHECK(narrow.choices["tile_k"] == 64);
  CHECK(narrow.choices["tile_m"] == 32);
  for (const auto& in : narrow.program.stream(Engine::tensor)) {
    CHECK(in.src[0]->partitions <= 64);
    CHECK(in.src[0]->free_elements() <= 32);
  }
}

TEST_CASE("matmul strategy 4 keeps TensorE's waits few: one per accumulation group at most",
          "[unit][matmul]") {
  const LoweredKernel k = lower(matmul(4, kFull), trnsim::config::trn2(), false);
  uint64_t waiting = 0, groups = 0;
  for (const auto& in : k.program.stream(Engine::tensor)) {
    waiting += !in.waits.empty();
    groups += in.accumulate_start;
  }
  CHECK(waiting <= groups);
  // Updates only where someone waits: far fewer than the 32,768 matmuls.
  uint64_t updates = 0;
  for (const auto& in : k.program.stream(Engine::tensor)) updates += !in.updates.empty();
  CHECK(updates < 32768 / 4);
}

TEST_CASE("matmul lowerings compute the product whichever engine runs ahead", "[unit][matmul]") {
  const std::string shape = "[200, 300, 600]";
  for (int s = 1; s <= 4; ++s) {
    for (const std::string layout : {"km", "mk"}) {
      INFO("strategy " << s << " " << layout);
      check_in_every_order(matmul(s, shape, "{}", layout));
    }
  }
  check_in_every_order(matmul(3, shape, R"({"block_m": 128, "block_n": 512, "bufs": 1})"));
  check_in_every_order(
      matmul(4, shape, R"({"block_m": 128, "block_k": 128, "block_n": 512, "bufs": 1})"));
  check_in_every_order(
      matmul(4, shape, R"({"block_k": 128, "out_bufs": 1, "psum_bufs": 2})", "mk"));
}

TEST_CASE("the mlp lowering computes the MLP whichever engine runs ahead", "[unit][mlp]") {
  check_in_every_order(mlp("[300, 200, 700]"));
  check_in_every_order(mlp("[300, 600, 700]",
                           R"({"block_m": 128, "w1_tiles": 1, "w2_tiles": 1, "bufs": 1})", "silu"));
}

TEST_CASE("the mlp applies its activation on ScalarE reading PSUM", "[unit][mlp]") {
  const LoweredKernel k =
      lower(mlp("[512, 1024, 4096]", "{}", "gelu_tanh"), trnsim::config::trn2(), false);
  uint64_t activations = 0;
  for (const auto& in : k.program.stream(Engine::scalar)) {
    if (in.opcode != Opcode::activation) continue;
    ++activations;
    CHECK(in.function == trnsim::isa::ActivationFunction::gelu_tanh);
    CHECK(in.src[0]->memory == Memory::psum);
    CHECK(in.dst->memory == Memory::sbuf);
  }
  CHECK(activations == 4096 / 128);  // one per F tile of the one chunk of 512 rows
  CHECK(count(k.program, Opcode::matmul) == 2 * 8 * 32 * 1);
  CHECK(k.model_flops == 4ULL * 512 * 1024 * 4096);
  // x^T comes through the DMA transpose unit; the hidden never goes to HBM.
  CHECK(count(k.program, Opcode::dma_transpose) == 1024 / 128);
  uint64_t stores = 0;
  for (const auto& s : k.program.streams)
    for (const auto& in : s)
      if (trnsim::isa::is_dma(in.opcode) && in.dst->memory == Memory::hbm) {
        ++stores;
        CHECK(in.dst->offset >= k.program.find_dram_tensor("y")->address);
      }
  CHECK(stores == 4 * 2);
}

TEST_CASE("references: matmul and the MLP in double precision", "[unit][matmul]") {
  // [[1, 2, 3], [4, 5, 6]] @ [[1, 0], [0, 1], [1, 1]]
  const auto c =
      trnsim::workloads::matmul_reference({1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1}, 2, 3, 2);
  CHECK(c == std::vector<float>{4, 5, 10, 11});
  using trnsim::isa::ActivationFunction;
  for (ActivationFunction f :
       {ActivationFunction::gelu, ActivationFunction::gelu_tanh, ActivationFunction::silu}) {
    for (double x = -6; x <= 6; x += 0.25) {
      const double want = trnsim::workloads::activation_reference(f, x);
      CHECK(std::abs(trnsim::isa::apply(f, static_cast<float>(x)) - want) <=
            1e-6 * std::max(1.0, std::abs(want)));
    }
  }
  // y = silu(x w1) w2 with one element each: silu(2 * 3) * 0.5, the hidden rounded to bf16.
  const auto y = trnsim::workloads::mlp_reference(
      {2}, {3}, {0.5f}, 1, 1, 1, ActivationFunction::silu, trnsim::isa::DType::bf16);
  CHECK(y[0] == Approx(trnsim::isa::round_to(trnsim::isa::DType::bf16,
                                             static_cast<float>(6 / (1 + std::exp(-6.0)))) *
                       0.5));
}

TEST_CASE("EngineStreams waits only when the engine does not already know", "[unit][matmul]") {
  Program p;
  const ArchConfig arch = trnsim::config::trn2();
  trnsim::workloads::EngineStreams s(p, arch, "w.json");
  auto nop = [](Engine e) {
    Instruction in;
    in.opcode = Opcode::nop;
    in.engine = e;
    return in;
  };
  const auto a1 = s.emit(nop(Engine::vector), {});
  const auto a2 = s.emit(nop(Engine::vector), {});
  s.emit(nop(Engine::vector), a1);  // its own engine: stream order
  s.emit(nop(Engine::tensor), a2);  // waits
  s.emit(nop(Engine::tensor), a1);  // already knows
  s.finish();
  const auto& pe = p.stream(Engine::tensor);
  REQUIRE(pe[0].waits.size() == 1);
  CHECK(pe[0].waits[0].value == 1);  // renumbered: a2 is the only instruction waited for
  CHECK(pe[1].waits.empty());
  const auto& dve = p.stream(Engine::vector);
  CHECK(dve[0].updates.empty());
  CHECK(dve[1].updates.size() == 1);
  CHECK(dve[2].updates.empty());
}

TEST_CASE("matmul options and params are checked, naming the key", "[unit][matmul]") {
  const std::string base = R"({"kernel": "matmul", "shape": [512, 1024, 1024], )";
  CHECK_THAT(error_of(base + R"("strategy": 5})"),
             StartsWith("w.json: /strategy: unknown matmul strategy 5"));
  CHECK_THAT(error_of(base + R"("strategy": "2"})"), StartsWith("w.json: /strategy:"));
  CHECK_THAT(error_of(base + R"("strategy": 1, "a_layout": "nk"})"),
             StartsWith("w.json: /a_layout: expected \"km\""));
  CHECK_THAT(error_of(base + R"("strategy": 1, "params": {"block_k": 256}})"),
             StartsWith("w.json: /params/block_k: unknown parameter for matmul strategy 1") &&
                 Contains("bufs, out_bufs, psum_bufs"));
  CHECK_THAT(error_of(base + R"("strategy": 4, "params": {"blok_k": 256}})"),
             Contains("did you mean \"block_k\""));
  CHECK_THAT(error_of(base + R"("strategy": 4, "params": {"block_m": 1000}})"),
             StartsWith("w.json: /params/block_m: expected a multiple of the 128-element tile"));
  CHECK_THAT(error_of(base + R"("strategy": 3, "params": {"bufs": 9}})"),
             StartsWith("w.json: /params/bufs: expected an integer in [1, 8]"));
  CHECK_THAT(error_of(base + R"("strategy": 3, "params": {"psum_bufs": 9}})"),
             StartsWith("w.json: /params/psum_bufs: expected an integer in [1, 8]"));
  CHECK_THAT(error_of(R"({"kernel": "matmul", "shape": [512, 1024]})"),
             StartsWith("w.json: /shape: expected an array of 3 positive integers [M, K, N]"));
  CHECK_THAT(error_of(R"({"kernel": "matmul", "shape": [512, 0, 1024]})"),
             StartsWith("w.json: /shape/1: expected a positive integer"));
  CHECK_THAT(error_of(R"({"kernel": "matmul", "shape": [512, 1024, 1024], "dtype": "int8"})"),
             StartsWith("w.json: /dtype: matmul takes a floating-point dtype"));
  CHECK_THAT(error_of(R"({"kernel": "matmul", "shape": [512, 1024, 1024], "activation": "gelu"})"),
             StartsWith("w.json: /activation: unknown key for kernel matmul"));
}

TEST_CASE("matmul sizes that cannot fit are refused before lowering", "[unit][matmul]") {
  // Strategy 4 with explicit huge blocks: A and B blocks of 16384 deep do not fit SBUF.
  CHECK_THAT(error_of(R"({"kernel": "matmul", "strategy": 4, "shape": [16384, 16384, 16384],
                          "params": {"block_m": 16384, "block_k": 16384, "block_n": 1024}})"),
             StartsWith("w.json: /params/block_k: matmul strategy 4") &&
                 Contains("bytes per partition of SBUF") && Contains("trn2 has 229376"));
  // Strategies 2 and 3 keep all of K on chip: K = 1M does not fit, strategy 4 is suggested.
  for (int s : {2, 3}) {
    CHECK_THAT(error_of(R"({"kernel": "matmul", "strategy": )" + std::to_string(s) +
                        R"(, "shape": [128, 1048576, 512]})"),
               StartsWith("w.json: /shape/1: matmul strategy " + std::to_string(s)) &&
                   Contains("K = 1048576") && Contains("Strategy 4 blocks K"));
  }
  // ... while strategy 4 blocks it.
  CHECK(error_of(R"({"kernel": "matmul", "strategy": 4, "shape": [128, 1048576, 512]})").empty());
  CHECK_THAT(error_of(R"({"kernel": "matmul", "shape": [1000000, 1000000, 1000000]})"),
             StartsWith("w.json: /shape: A [1000000, 1000000]") && Contains("HBM"));
  CHECK_THAT(error_of(R"({"kernel": "matmul", "strategy": 1, "shape": [16384, 16384, 16384]})"),
             StartsWith("w.json: /shape: [16384, 16384, 16384] with matmul strategy 1 lowers to "
                        "about") &&
                 Contains("at most 1000000"));
  // Functional runs are refused above 1 GiB of tensors, suggesting --timing-only.
  try {
    lower(matmul(4, "[12288, 16384, 16384]"), trnsim::config::trn2(), true);
    FAIL("no error");
  } catch (const WorkloadError& e) {
    CHECK_THAT(e.what(), Contains("--timing-only"));
  }
}

TEST_CASE("mlp options and params are checked, naming the key", "[unit][mlp]") {
  CHECK_THAT(error_of(R"({"kernel": "mlp", "shape": [128, 256, 512]})"),
             StartsWith("w.json: /activation: missing; expected one of: gelu, gelu_tanh, silu"));
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "relu", "shape": [128, 256, 512]})"),
             StartsWith("w.json: /activation: unknown activation \"relu\""));
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "gleu", "shape": [128, 256, 512]})"),
             Contains("did you mean \"gelu\""));
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "silu", "shape": [128, 256]})"),
             StartsWith("w.json: /shape: expected an array of 3 positive integers [M, D, F]"));
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "silu", "shape": [128, 256, 512],
                          "params": {"block_m": 1024}})"),
             StartsWith("w.json: /params/block_m: expected an integer in [1, 512]"));
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "silu", "shape": [128, 256, 512],
                          "params": {"tile": 1}})"),
             StartsWith("w.json: /params/tile: unknown mlp parameter"));
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "silu", "shape": [1024, 256, 512],
                          "params": {"psum_bufs": 2}})"),
             StartsWith("w.json: /params/psum_bufs: the second matmul accumulates 4 output tiles"));
  // The hidden of even 128 rows of x does not fit SBUF when F is 2 million.
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "silu", "shape": [128, 128, 2000000]})"),
             StartsWith("w.json: /shape: mlp of D = 128, F = 2000000") &&
                 Contains("bytes per partition of SBUF"));
  CHECK_THAT(error_of(R"({"kernel": "mlp", "activation": "silu", "shape": [128, 128, 2000000],
                          "params": {"block_m": 512, "bufs": 4}})"),
             StartsWith("w.json: /params/block_m: mlp needs"));
}

TEST_CASE("matmul blocks not given are the tutorial's, shrunk only to fit SBUF", "[unit][matmul]") {
  const ArchConfig arch = trnsim::config::trn2();
  // Strategy 3 at K 8192: the tutorial's 2 x 2 tiles; two buffers of each strip do not fit,
  // so one.
  const LoweredKernel s3 = lower(matmul(3, kFull), arch, false);
  CHECK(s3.choices["block_m"] == 256);
  CHECK(s3.choices["block_n"] == 1024);
  CHECK(s3.choices["bufs"] == 1);
  CHECK(s3.choices["sbuf_bytes_per_partition"].get<uint64_t>() <= arch.sbuf_partition_bytes);
  const LoweredKernel given =
      lower(matmul(3, kFull, R"({"block_m": 128, "block_n": 512})"), arch, false);
  CHECK(given.choices["block_m"] == 128);
  CHECK(given.choices["block_n"] == 512);
  // Strategy 4 in fp32: the result tiles of a column block (M x block_n in fp32) and the
  // double-buffered blocks do not fit at 2048 x 1024 x 1024: block_m is halved first.
  const LoweredKernel fp32 = lower(matmul(4, kFull, "{}", "km", "fp32"), arch, false);
  CHECK(fp32.choices["block_m"].get<int64_t>() < 2048);
  CHECK(fp32.choices["sbuf_bytes_per_partition"].get<uint64_t>() <= arch.sbuf_partition_bytes);
  // When every block is given and they do not fit: an error naming one.
  CHECK_THAT(error_of(R"({"kernel": "matmul", "shape": [4096, 8192, 8192], "dtype": "fp32",
                          "params": {"block_m": 2048, "block_k": 1024, "block_n": 1024}})"),
             StartsWith("w.json: /params/block_k: matmul strategy 4"));
}
