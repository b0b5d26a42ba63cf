// Flash attention lowering: the reference, functional runs against it at small shapes, its
// synchronization, what it claims (causal blocks skipped, transposes by DMA, PSUM and SBUF
// budgets, the instruction cap at seq 8192), and the errors of bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "workloads/kernels/attention.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::Instruction;
using trnsim::isa::Memory;
using trnsim::isa::Opcode;
using trnsim::workloads::attention_reference;
using trnsim::workloads::lower;
using trnsim::workloads::LoweredKernel;
using namespace trnsim_test;

namespace {
std::string att(int64_t heads, int64_t seq, int64_t d, const std::string& extra = "",
                const std::string& params = "{}") {
  return kernel_json("attention", {heads, seq, d}, extra, params);
}
}  // namespace

TEST_CASE("attention_reference matches a hand-computed case", "[unit][attention]") {
  // One head, two positions, head_dim 1: q = [1, 2], k = [0, ln 3], v = [10, 20]; scale 1.
  // Query 0: weights exp(0), exp(ln 3) = 1, 3: o = (10 + 60) / 4 = 17.5. Query 1: exp(0),
  // exp(2 ln 3) = 1, 9: o = (10 + 180) / 10 = 19. Causal: query 0 sees key 0 only: o = 10.
  const float l3 = std::log(3.0f);
  const std::vector<float> o = attention_reference({1, 2}, {0, l3}, {10, 20}, 1, 2, 1, false);
  CHECK(o[0] == Approx(17.5f));
  CHECK(o[1] == Approx(19.0f));
  const std::vector<float> c = attention_reference({1, 2}, {0, l3}, {10, 20}, 1, 2, 1, true);
  CHECK(c[0] == Approx(10.0f));
  CHECK(c[1] == Approx(19.0f));
}

TEST_CASE("the lowered attention computes attention at small shapes", "[unit][attention]") {
  struct Case {
    int64_t heads, seq, d;
    const char* extra;
    const char* params;
  };
  const std::vector<Case> cases = {
      {2, 256, 64, "", "{}"},
      {2, 256, 64, R"(, "causal": true)", "{}"},
      {2, 300, 64, R"(, "causal": true)", "{}"},  // seq not a multiple of 128
      {1, 1000, 32, "", R"({"kv_block": 384, "pt_copy": "scalar"})"},
      {3, 700, 128, R"(, "causal": true)", R"({"kv_block": 256, "bufs": 3, "pt_copy": "vector"})"},
      {2, 130, 16, R"(, "dtype": "fp32")", R"({"kv_block": 128})"},
      {2, 200, 80, R"(, "dtype": "fp16", "causal": true)", R"({"kv_block": 512})"},
      {3, 1, 8, R"(, "causal": true)", "{}"},
      {1, 129, 1, "", "{}"},
  };
  for (const ArchConfig& arch : {trnsim::config::trn2(), trnsim::config::trn1()}) {
    for (const Case& c : cases) {
      INFO(arch.name << " " << att(c.heads, c.seq, c.d, c.extra, c.params));
      const FunctionalResult r =
          check_functional(workload(att(c.heads, c.seq, c.d, c.extra, c.params)), arch);
      CHECK(r.mismatches == 0);
    }
  }
}

TEST_CASE("attention with one head buffer drains a head before loading the next",
          "[unit][attention]") {
  // A small SBUF leaves room for one head's Q^T, K^T and V only: the next head's loads wait
  // for the last P V matmul of the head before.
  ArchConfig arch = trnsim::config::trn2();
  arch.sbuf_partition_bytes = 9500;
  for (const char* extra : {"", R"(, "causal": true)"}) {
    INFO(extra);
    const auto w = workload(att(3, 300, 64, extra, R"({"kv_block": 512})"));
    CHECK(lower(w, arch, false).choices.at("head_bufs") == 1);
    CHECK(check_functional(w, arch).mismatches == 0);
  }
  CHECK(lowered(att(3, 300, 64)).choices.at("head_bufs") == 2);
  CHECK(lowered(att(1, 300, 64)).choices.at("head_bufs") == 1);
}

TEST_CASE("attention follows the partitions, PE array and PSUM banks of the arch",
          "[unit][attention]") {
  // Parameters a user may --set: query and P^T tiles shrink to the partitions or the PE array,
  // score chunks to the moving maximum and the PSUM bank.
  struct Change {
    const char* what;
    void (*apply)(ArchConfig&);
    uint32_t tile;
  };
  const std::vector<Change> changes = {
      {"partitions 64", [](ArchConfig& a) { a.partitions = 64; }, 64},
      {"pe_columns 100", [](ArchConfig& a) { a.pe_columns = 100; }, 100},
      {"moving 256, 16 PSUM banks",
       [](ArchConfig& a) {
         a.matmul_moving_max = 256;
         a.psum_banks = 16;
       },
       128},
  };
  for (const Change& ch : changes) {
    INFO(ch.what);
    ArchConfig arch = trnsim::config::trn2();
    ch.apply(arch);
    const auto w = workload(att(2, 300, 32, R"(, "causal": true)"));
    CHECK(lower(w, arch, false).choices.at("q_block") == ch.tile);
    CHECK(check_functional(w, arch).mismatches == 0);
  }
  ArchConfig narrow = trnsim::config::trn2();
  narrow.pe_rows = 32;
  CHECK_THAT(error_of(att(1, 128, 64), narrow),
             StartsWith("w.json: /shape/2: head_dim 64 exceeds the 32 partitions"));
}

TEST_CASE("attention's check catches a missing rescale and a missing causal mask",
          "[unit][attention]") {
  // VectorE's step `label` left out of the workload `json`.
  auto fails_without = [](const std::string& json, const std::string& label) {
    const ArchConfig arch = trnsim::config::trn2();
    return fails_when(
        lowered(json, arch, true), arch,
        [&](trnsim::isa::Program& p) { bypass(p, {Engine::vector}, label); },
        {Engine::sync, Engine::tensor, Engine::vector, Engine::scalar, Engine::gpsimd});
  };
  // Two key blocks per query block: without O *= alpha the first block's share is too large.
  CHECK(fails_without(att(1, 512, 64, "", R"({"kv_block": 256})"), "rescale O"));
  // Without l *= alpha, the sum is off the same way.
  CHECK(fails_without(att(1, 512, 64, "", R"({"kv_block": 256})"), "l h"));
  // Without the mask, queries see later keys.
  CHECK(fails_without(att(1, 256, 64, R"(, "causal": true)"), "mask"));
}

TEST_CASE("the lowered attention has no unordered accesses for any choice", "[unit][attention]") {
  for (const ArchConfig& arch : {trnsim::config::trn1(), trnsim::config::trn2()}) {
    for (const char* extra : {"", R"(, "causal": true)"}) {
      for (const char* params :
           {"{}", R"({"kv_block": 128, "bufs": 3})", R"({"kv_block": 640, "pt_copy": "vector"})",
            R"({"kv_block": 256, "pt_copy": "scalar"})"}) {
        INFO(arch.name << " " << extra << " " << params);
        const LoweredKernel k = lowered(att(3, 900, 64, extra, params), arch);
        CHECK(find_unordered_conflicts(k.program, arch) == "");
      }
    }
  }
}

TEST_CASE("attention at seq 8192 fits the instruction cap, SBUF and PSUM, heads 1 to 8",
          "[unit][attention]") {
  for (const ArchConfig& arch : {trnsim::config::trn2(), trnsim::config::trn1()}) {
    for (int64_t heads : {1, 3, 8}) {
      for (const char* extra : {"", R"(, "causal": true)"}) {
        INFO(arch.name << " heads " << heads << extra);
        const LoweredKernel k = lowered(att(heads, 8192, 128, extra), arch);
        CHECK_NOTHROW(trnsim::isa::validate(k.program, arch));  // SBUF, PSUM, banks, shapes
        CHECK(trnsim::compiler::find_deadlock(k.program, arch) == "");
        CHECK(k.program.instruction_count() <= arch.max_instructions);
        const bool causal = std::string(extra).find("true") != std::string::npos;
        const uint64_t flops = 4ULL * heads * 8192 * 8192 * 128;
        CHECK(k.model_flops == (causal ? flops / 2 : flops));
        CHECK(k.choices.at("kv_block") == 1024);
        CHECK(k.choices.at("head_bufs") == (heads > 1 ? 2 : 1));
        // Every on-chip operand stays within its memory (validate checks each); PSUM use is
        // within the 8 banks: at most 16 KiB a partition.
        uint64_t psum_end = 0;
        for (Engine e : trnsim::kAllEngines) {
          for (const Instruction& in : k.program.stream(e)) {
            for (const auto* ap : {&in.dst.get(), &in.src[0].get(), &in.src[1].get()}) {
              if (ap->present() && ap->memory == Memory::psum) {
                psum_end =
                    std::max<uint64_t>(psum_end, ap->offset + ap->max_element_offset_exclusive() *
                                                                  trnsim::isa::size_of(ap->dtype));
              }
            }
          }
        }
        CHECK(psum_end <= arch.psum_partition_bytes);
      }
    }
  }
}

TEST_CASE("causal attention skips the blocks past each query block and masks the diagonal",
          "[unit][attention]") {
  // seq 1000, kv_block 256: query block j (rows 128j .. 128j + 127) needs keys up to its last
  // row, in ceil((128j + qr) / 256) blocks; the score matmuls read exactly those keys.
  const LoweredKernel k = lowered(att(1, 1000, 64, R"(, "causal": true)", R"({"kv_block": 256})"));
  const LoweredKernel full = lowered(att(1, 1000, 64, "", R"({"kv_block": 256})"));
  uint64_t keys = 0, keys_full = 0;
  for (const Instruction& in : k.program.stream(Engine::tensor)) {
    if (in.label.rfind("S ", 0) == 0) keys += in.src[1]->free_elements();
  }
  for (const Instruction& in : full.program.stream(Engine::tensor)) {
    if (in.label.rfind("S ", 0) == 0) keys_full += in.src[1]->free_elements();
  }
  uint64_t want = 0;
  for (int64_t q0 = 0; q0 < 1000; q0 += 128) want += std::min<int64_t>(q0 + 128, 1000);
  CHECK(keys == want);           // per query row block: keys 0 .. its last row
  CHECK(keys_full == 8 * 1000);  // every query block sees all keys
  // One mask add per query block, on the diagonal 128 x 128 (or smaller) tile; the mask is made
  // once by GpSimdE (memset, then affine_select keeping key <= query).
  size_t masks = 0;
  for (const Instruction& in : k.program.stream(Engine::vector)) {
    if (in.label.rfind("mask", 0) == 0) {
      ++masks;
      CHECK(in.src[1]->free_elements() <= 128);
    }
  }
  CHECK(masks == 8);
  CHECK(count_of(k.program, Engine::gpsimd, Opcode::affine_select) == 1);
  CHECK(count_of(full.program, Engine::gpsimd, Opcode::affine_select) == 0);
}

TEST_CASE("attention transposes Q and K by DMA and P by TensorE", "[unit][attention]") {
  const LoweredKernel k = lowered(att(2, 300, 64));
  const auto& p = k.program;
  // Per head one DMA transpose each for Q^T and K^T ([seq, head_dim] -> [head_dim, seq]), V by
  // plain copies (full 128-key blocks, then the 44-key tail).
  CHECK(count_of(p, Engine::sync, Opcode::dma_transpose) == 4);
  for (const Instruction& in : p.stream(Engine::sync)) {
    if (in.opcode != Opcode::dma_transpose) continue;
    CHECK(in.dst->partitions == 64);
    CHECK(in.dst->free_elements() == 300);
  }
  CHECK(k.choices.at("qk_transpose") == "dma");
  // P^T through the PE array: one per 128-key sub-block: 3 query blocks x 3 sub-blocks x 2.
  CHECK(count_of(p, Engine::tensor, Opcode::transpose) == 18);
  for (const Instruction& in : p.stream(Engine::tensor)) {
    if (in.opcode == Opcode::transpose) CHECK(in.dst->memory == Memory::psum);
  }
  // Scores in moving chunks of at most 512 keys; P V contracts 128-key sub-blocks.
  for (const Instruction& in : p.stream(Engine::tensor)) {
    if (in.opcode != Opcode::matmul) continue;
    CHECK(in.src[1]->free_elements() <= 512);
    CHECK(in.src[0]->partitions <= 128);
  }
}

TEST_CASE("attention errors name the key", "[unit][attention]") {
  CHECK_THAT(error_of(att(1, 128, 129)),
             StartsWith("w.json: /shape/2: head_dim 129 exceeds the 128 partitions"));
  CHECK_THAT(error_of(att(1, 128, 64, R"(, "causal": "yes")")),
             StartsWith("w.json: /causal: expected true or false, got \"yes\""));
  CHECK_THAT(error_of(att(1, 128, 64, R"(, "casual": true)")),
             StartsWith("w.json: /casual: unknown key for kernel attention"));
  CHECK_THAT(error_of(att(1, 128, 64, R"(, "dtype": "fp8_e4m3")")),
             StartsWith("w.json: /dtype: attention takes fp32, bf16 or fp16"));
  CHECK_THAT(error_of(att(1, 128, 64, "", R"({"kv_block": 100})")),
             StartsWith("w.json: /params/kv_block: expected an integer in [128, 2048], got 100"));
  CHECK_THAT(error_of(att(1, 128, 64, "", R"({"kv_block": 200})")),
             StartsWith("w.json: /params/kv_block: expected a multiple of 128"));
  CHECK_THAT(error_of(att(1, 128, 64, "", R"({"bufs": 1})")),
             StartsWith("w.json: /params/bufs: expected an integer in [2, 3], got 1"));
  CHECK_THAT(error_of(att(1, 128, 64, "", R"({"pt_copy": "spilt"})")),
             StartsWith("w.json: /params/pt_copy: expected \"scalar\", \"vector\" or \"split\", "
                        "got \"spilt\" (did you mean \"split\"?)"));
  CHECK_THAT(error_of(att(1, 128, 64, "", R"({"kv_block": 2048})")),
             StartsWith("w.json: /params/kv_block: kv_block 2048 with 2 buffers needs 14 PSUM "
                        "banks per partition"));
  CHECK(error_of(att(1, 128, 64, "", R"({"bufs": 3})")) == "");  // the default drops to 512
  CHECK_THAT(error_of(att(1, 128, 64, "", R"({"bufs": 3, "kv_block": 1024})")),
             StartsWith("w.json: /params/kv_block: kv_block 1024 with 3 buffers needs 11 PSUM"));
  // Q^T, K^T and V of a head must fit SBUF; seq is a free-dimension count.
  const std::string sbuf = error_of(att(1, 40000, 128));
  CHECK_THAT(sbuf, StartsWith("w.json: /shape/1: attention keeps Q^T, K^T and V of a head in "
                              "SBUF: seq 40000 with head_dim 128 (bf16) needs"));
  CHECK_THAT(sbuf, Contains("trn2 has 229376"));
  CHECK_THAT(error_of(att(1, 70000, 8)), StartsWith("w.json: /shape/1: seq 70000 exceeds 65535"));
  CHECK_THAT(error_of(R"({"kernel": "attention", "shape": [128, 64]})"),
             StartsWith("w.json: /shape: expected an array of 3 positive integers [heads, seq, "
                        "head_dim]"));
  ArchConfig tight = trnsim::config::trn2();
  tight.max_instructions = 10000;
  CHECK_THAT(error_of(att(8, 8192, 128), tight),
             StartsWith("w.json: /shape: attention of [8, 8192, 128] lowers to at least 24576 "
                        "instructions; a kernel holds at most 10000"));
  tight.max_instructions = 30000;
  CHECK_THAT(error_of(att(8, 8192, 128), tight),
             StartsWith("w.json: /shape: attention of [8, 8192, 128] lowers to 106008 "
                        "instructions"));
}
