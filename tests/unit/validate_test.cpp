// Validation: one test per rule in isa/validate.cpp. Each failing program puts a valid
// instruction first and the offending one at index 1, so the message must name the engine,
// index 1, the opcode and label, the operand and the rule.
#include <catch2/catch.hpp>

#include <string>

#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/instruction.hpp"
#include "isa/program.hpp"
#include "isa/validate.hpp"

using Catch::Matchers::Contains;
using trnsim::Engine;
using trnsim::config::ArchConfig;
using trnsim::isa::AccessPattern;
using trnsim::isa::AluOp;
using trnsim::isa::DType;
using trnsim::isa::hbm_ap;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::isa::partition_start_allowed;
using trnsim::isa::Program;
using trnsim::isa::psum_ap;
using trnsim::isa::sbuf_ap;
using trnsim::isa::ScalarOperand;
using trnsim::isa::SemaphoreUpdate;
using trnsim::isa::SemaphoreWait;
using trnsim::isa::validate;
using trnsim::isa::ValidationError;

namespace {

// The ValidationError message, or "" when the program is valid.
std::string error_of(const Program& p, const ArchConfig& arch = trnsim::config::trn2()) {
  try {
    validate(p, arch);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

Instruction copy(Engine e, const AccessPattern& src, const AccessPattern& dst) {
  Instruction in;
  in.opcode = Opcode::tensor_copy;
  in.engine = e;
  in.src[0] = src;
  in.dst = dst;
  return in;
}

Instruction good_copy(Engine e = Engine::vector) {
  return copy(e, sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}}),
              sbuf_ap(DType::bf16, 0, 128, 1024, {{1, 64}}));
}

Instruction good_matmul() {
  Instruction in;
  in.opcode = Opcode::matmul;
  in.engine = Engine::tensor;
  in.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 128}});
  in.src[1] = sbuf_ap(DType::bf16, 0, 128, 256, {{1, 512}});
  in.dst = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  return in;
}

// A program whose stream for `e` is [a valid instruction, `bad`]; two semaphores, one queue
// and a bf16 [128, 64] HBM tensor.
Program with_second(Engine e, Instruction bad) {
  Program p;
  p.add_queue("q0");
  p.add_semaphore("s1");
  p.add_dram_tensor("x", DType::bf16, {128, 64});
  bad.label = "bad";
  Instruction first = e == Engine::tensor ? good_matmul() : good_copy(e);
  if (e == Engine::sync) {
    first.opcode = Opcode::dma_copy;
    first.src[0] = hbm_ap(DType::bf16, 0, 128, 64, {{1, 64}});
  }
  first.engine = e;
  p.stream(e).push_back(first);
  p.stream(e).push_back(bad);
  return p;
}

Program vector_copy(const AccessPattern& src, const AccessPattern& dst) {
  return with_second(Engine::vector, copy(Engine::vector, src, dst));
}

}  // namespace

TEST_CASE("validate accepts a well-formed program on every engine", "[unit][validate]") {
  for (Engine e : {Engine::vector, Engine::scalar, Engine::gpsimd}) {
    CHECK(error_of(with_second(e, good_copy(e))) == "");
  }
  CHECK(error_of(with_second(Engine::tensor, good_matmul())) == "");
  Instruction dma = good_copy(Engine::sync);
  dma.opcode = Opcode::dma_copy;
  dma.src[0] = hbm_ap(DType::bf16, 0, 128, 64, {{1, 64}});
  CHECK(error_of(with_second(Engine::sync, dma)) == "");
  // Any engine can trigger a DMA.
  dma.engine = Engine::scalar;
  CHECK(error_of(with_second(Engine::scalar, dma)) == "");
}

TEST_CASE(
    "partition start rule: 65-128 partitions start at 0, 33-64 at 0 or 64, 32 or fewer "
    "at 0, 32, 64 or 96",
    "[unit][validate]") {
  CHECK(partition_start_allowed(0, 128));
  CHECK(partition_start_allowed(0, 65));
  CHECK_FALSE(partition_start_allowed(32, 65));
  CHECK_FALSE(partition_start_allowed(1, 96));
  CHECK(partition_start_allowed(0, 64));
  CHECK(partition_start_allowed(64, 64));
  CHECK(partition_start_allowed(64, 33));
  CHECK_FALSE(partition_start_allowed(32, 64));
  CHECK_FALSE(partition_start_allowed(32, 33));
  CHECK_FALSE(partition_start_allowed(96, 33));
  for (uint32_t start : {0u, 32u, 64u, 96u}) {
    CHECK(partition_start_allowed(start, 32));
    CHECK(partition_start_allowed(start, 1));
  }
  CHECK_FALSE(partition_start_allowed(16, 32));
  CHECK_FALSE(partition_start_allowed(1, 1));
  CHECK_FALSE(partition_start_allowed(100, 1));
  CHECK_FALSE(partition_start_allowed(128, 1));
}

TEST_CASE("validate rejects 65-128 partitions that do not start at 0", "[unit][validate]") {
  const std::string msg = error_of(vector_copy(sbuf_ap(DType::bf16, 32, 65, 0, {{1, 64}}),
                                               sbuf_ap(DType::bf16, 0, 65, 1024, {{1, 64}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("src SBUF[p32:97"));
  CHECK_THAT(msg, Contains("65 partitions cannot start at partition 32"));
  CHECK(error_of(vector_copy(sbuf_ap(DType::bf16, 0, 65, 0, {{1, 64}}),
                             sbuf_ap(DType::bf16, 0, 65, 1024, {{1, 64}}))) == "");
}

TEST_CASE("validate rejects 33-64 partitions that start elsewhere than 0 or 64",
          "[unit][validate]") {
  const std::string msg = error_of(vector_copy(sbuf_ap(DType::bf16, 0, 40, 0, {{1, 64}}),
                                               sbuf_ap(DType::bf16, 32, 40, 1024, {{1, 64}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("dst SBUF[p32:72"));
  CHECK_THAT(msg, Contains("40 partitions cannot start at partition 32"));
  CHECK(error_of(vector_copy(sbuf_ap(DType::bf16, 64, 40, 0, {{1, 64}}),
                             sbuf_ap(DType::bf16, 0, 40, 1024, {{1, 64}}))) == "");
}

TEST_CASE("validate rejects 32 or fewer partitions that start off a multiple of 32",
          "[unit][validate]") {
  const std::string msg = error_of(vector_copy(sbuf_ap(DType::bf16, 16, 32, 0, {{1, 64}}),
                                               sbuf_ap(DType::bf16, 96, 32, 1024, {{1, 64}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("src SBUF[p16:48"));
  CHECK_THAT(msg, Contains("32 partitions cannot start at partition 16"));
  CHECK(error_of(vector_copy(sbuf_ap(DType::bf16, 32, 32, 0, {{1, 64}}),
                             sbuf_ap(DType::bf16, 96, 32, 1024, {{1, 64}}))) == "");
}

TEST_CASE("validate rejects partitions beyond the 128th", "[unit][validate]") {
  const std::string msg = error_of(vector_copy(sbuf_ap(DType::bf16, 0, 129, 0, {{1, 64}}),
                                               sbuf_ap(DType::bf16, 0, 129, 1024, {{1, 64}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("src "));
  CHECK_THAT(msg, Contains("partitions [0, 129) exceed the 128 partitions"));
  const std::string late = error_of(vector_copy(sbuf_ap(DType::bf16, 96, 32, 0, {{1, 64}}),
                                                psum_ap(DType::bf16, 96, 33, 0, {{1, 64}})));
  CHECK_THAT(late, Contains("dst PSUM[p96:129"));
  CHECK_THAT(late, Contains("partitions [96, 129) exceed the 128 partitions"));
}

TEST_CASE("validate rejects SBUF bytes beyond the partition", "[unit][validate]") {
  // trn2: 224 KiB = 229376 bytes per partition. 11 fp32 from 229336 reach 229380.
  const Program over = vector_copy(sbuf_ap(DType::fp32, 0, 128, 0, {{1, 11}}),
                                   sbuf_ap(DType::fp32, 0, 128, 229336, {{1, 11}}));
  const std::string msg = error_of(over);
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("dst SBUF"));
  CHECK_THAT(msg, Contains("reaches bytes [229336, 229380) of each partition, outside the 229376 "
                           "bytes of a SBUF partition"));
  // Ending exactly at the last byte is fine on trn2; trn1 has only 192 KiB = 196608 bytes.
  const Program fits = vector_copy(sbuf_ap(DType::fp32, 0, 128, 0, {{1, 11}}),
                                   sbuf_ap(DType::fp32, 0, 128, 229332, {{1, 11}}));
  CHECK(error_of(fits) == "");
  CHECK_THAT(error_of(fits, trnsim::config::trn1()), Contains("outside the 196608 bytes"));
}

TEST_CASE("validate rejects a negative stride that reaches below byte 0", "[unit][validate]") {
  const std::string msg = error_of(vector_copy(sbuf_ap(DType::fp32, 0, 128, 4, {{-1, 3}}),
                                               sbuf_ap(DType::fp32, 0, 128, 1024, {{1, 3}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("src SBUF"));
  CHECK_THAT(msg, Contains("reaches bytes [-4, 8) of each partition"));
  CHECK(error_of(vector_copy(sbuf_ap(DType::fp32, 0, 128, 8, {{-1, 3}}),
                             sbuf_ap(DType::fp32, 0, 128, 1024, {{1, 3}}))) == "");
}

TEST_CASE("validate rejects a PSUM free size over 4096 elements", "[unit][validate]") {
  const std::string msg = error_of(vector_copy(psum_ap(DType::bf16, 0, 128, 0, {{1, 4097}}),
                                               sbuf_ap(DType::bf16, 0, 128, 0, {{1, 4097}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("src has 4097 elements per partition; at most 4096 from PSUM"));
  CHECK(error_of(vector_copy(psum_ap(DType::bf16, 0, 128, 0, {{1, 4096}}),
                             sbuf_ap(DType::bf16, 0, 128, 0, {{1, 4096}}))) == "");
}

TEST_CASE("validate rejects an SBUF free size over 65536 elements", "[unit][validate]") {
  // Two dims of 2 x 32769 (the outer one re-reads, stride 0): each count fits a uint16, the
  // product does not fit the limit.
  const std::string msg =
      error_of(vector_copy(sbuf_ap(DType::bf16, 0, 128, 0, {{0, 2}, {1, 32769}}),
                           psum_ap(DType::bf16, 0, 128, 0, {{1, 4096}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("src has 65538 elements per partition; at most 65536 from SBUF"));
}

TEST_CASE("validate rejects a free-dimension count over 65535 and an on-chip stride over 32767",
          "[unit][validate]") {
  CHECK_THAT(error_of(vector_copy(sbuf_ap(DType::bf16, 0, 128, 0, {{1, 65536}}),
                                  sbuf_ap(DType::bf16, 0, 128, 0, {{1, 65536}}))),
             Contains("free dimension 0 has count 65536; a count is 1 to 65535"));
  CHECK_THAT(error_of(vector_copy(sbuf_ap(DType::bf16, 0, 128, 0, {{32768, 2}}),
                                  sbuf_ap(DType::bf16, 0, 128, 0, {{1, 2}}))),
             Contains("free dimension 0 has stride 32768; at most 32767 in magnitude"));
}

TEST_CASE("validate rejects GpSimd reading or writing PSUM", "[unit][validate]") {
  const std::string reads = error_of(
      with_second(Engine::gpsimd, copy(Engine::gpsimd, psum_ap(DType::bf16, 0, 128, 0, {{1, 64}}),
                                       sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}}))));
  CHECK_THAT(reads, Contains("GpSimdE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(reads, Contains("src is in PSUM, which GpSimdE cannot reach"));
  const std::string writes = error_of(
      with_second(Engine::gpsimd, copy(Engine::gpsimd, sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}}),
                                       psum_ap(DType::bf16, 0, 128, 0, {{1, 64}}))));
  CHECK_THAT(writes, Contains("dst is in PSUM, which GpSimdE cannot reach"));
  // VectorE reaches PSUM.
  CHECK(error_of(with_second(Engine::vector,
                             copy(Engine::vector, psum_ap(DType::bf16, 0, 128, 0, {{1, 64}}),
                                  sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}})))) == "");
}

TEST_CASE("validate rejects an engine instruction reading HBM", "[unit][validate]") {
  const std::string msg = error_of(vector_copy(hbm_ap(DType::bf16, 0, 128, 64, {{1, 64}}),
                                               sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}})));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("src is in HBM"));
}

TEST_CASE("validate rejects a matmul writing SBUF", "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.dst = sbuf_ap(DType::fp32, 0, 128, 8192, {{1, 512}});
  const std::string msg = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(msg, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(msg, Contains("matmul writes PSUM only"));
}

TEST_CASE("validate rejects a matmul accumulating in bf16", "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.dst = psum_ap(DType::bf16, 0, 128, 0, {{1, 512}});
  const std::string msg = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(msg, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(msg, Contains("PSUM accumulation groups are fp32"));
}

TEST_CASE("validate rejects a matmul whose contraction sizes differ", "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.src[1] = sbuf_ap(DType::bf16, 0, 64, 256, {{1, 512}});
  const std::string msg = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(msg, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(msg, Contains("stationary has 128 partitions and moving 64"));
}

TEST_CASE("validate rejects a matmul stationary over 128 columns", "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 129}});
  mm.src[1] = sbuf_ap(DType::bf16, 0, 128, 512, {{1, 512}});
  const std::string msg = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(msg, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(msg, Contains("stationary is 129 wide; at most 128 columns"));
}

TEST_CASE("validate rejects a matmul moving over 512 columns", "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.src[1] = sbuf_ap(DType::bf16, 0, 128, 256, {{1, 513}});
  const std::string msg = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(msg, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(msg, Contains("moving is 513 wide; at most 512"));
}

TEST_CASE("validate rejects a matmul dst that is not stationary columns x moving columns",
          "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}});
  const std::string msg = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(msg, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(msg, Contains("dst must be [64 x 512]"));
  CHECK_THAT(msg, Contains("is [128 x 512]"));
}

TEST_CASE("validate rejects a matmul dst crossing a PSUM bank", "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.dst = psum_ap(DType::fp32, 0, 128, 1024, {{1, 512}});
  const std::string msg = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(msg, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(
      msg,
      Contains("dst reaches bytes [1024, 3072), which crosses a 2048-byte PSUM bank boundary"));
  // Whole banks are fine, the last one included.
  mm.dst = psum_ap(DType::fp32, 0, 128, 2048, {{1, 512}});
  CHECK(error_of(with_second(Engine::tensor, mm)) == "");
  mm.dst = psum_ap(DType::fp32, 0, 128, 14336, {{1, 512}});
  CHECK(error_of(with_second(Engine::tensor, mm)) == "");
  // A small group inside one bank, away from its start.
  mm.src[1] = sbuf_ap(DType::bf16, 0, 128, 256, {{1, 4}});
  mm.dst = psum_ap(DType::fp32, 0, 128, 2032, {{1, 4}});
  CHECK(error_of(with_second(Engine::tensor, mm)) == "");
  mm.dst = psum_ap(DType::fp32, 0, 128, 2036, {{1, 4}});
  CHECK_THAT(error_of(with_second(Engine::tensor, mm)), Contains("crosses"));
}

TEST_CASE("validate rejects a wait on an unknown semaphore", "[unit][validate]") {
  Instruction in = good_copy();
  in.waits.push_back(SemaphoreWait{2, 1});
  const std::string msg = error_of(with_second(Engine::vector, in));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("waits on semaphore 2, but the program has 2"));
  in.waits[0].semaphore = 1;
  CHECK(error_of(with_second(Engine::vector, in)) == "");
}

TEST_CASE("validate rejects an update of an unknown semaphore", "[unit][validate]") {
  Instruction in = good_copy(Engine::scalar);
  in.updates.push_back(SemaphoreUpdate{7});
  const std::string msg = error_of(with_second(Engine::scalar, in));
  CHECK_THAT(msg, Contains("ScalarE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("updates semaphore 7, but the program has 2"));
}

TEST_CASE("validate rejects a DMA on an unknown queue", "[unit][validate]") {
  Instruction in;
  in.opcode = Opcode::dma_copy;
  in.engine = Engine::sync;
  in.src[0] = hbm_ap(DType::bf16, 0, 128, 64, {{1, 64}});
  in.dst = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}});
  in.dma_queue = 1;
  const std::string msg = error_of(with_second(Engine::sync, in));
  CHECK_THAT(msg, Contains("SyncE instruction 1 (dma_copy 'bad')"));
  CHECK_THAT(msg, Contains("uses DMA queue 1, but the program has 1"));
  in.dma_queue = 0;
  CHECK(error_of(with_second(Engine::sync, in)) == "");
}

TEST_CASE("validate rejects a DMA outside the program's HBM tensors", "[unit][validate]") {
  Instruction in;
  in.opcode = Opcode::dma_copy;
  in.engine = Engine::sync;
  // The [128, 64] bf16 tensor is 16384 bytes; two bytes further reaches 16386.
  in.src[0] = hbm_ap(DType::bf16, 2, 128, 64, {{1, 64}});
  in.dst = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}});
  const std::string msg = error_of(with_second(Engine::sync, in));
  CHECK_THAT(msg, Contains("SyncE instruction 1 (dma_copy 'bad')"));
  CHECK_THAT(msg, Contains("src HBM"));
  CHECK_THAT(msg, Contains("reaches HBM bytes [2, 16386), outside the 16384 bytes"));
}

TEST_CASE("validate rejects a DMA that converts dtypes", "[unit][validate]") {
  Instruction in;
  in.opcode = Opcode::dma_copy;
  in.engine = Engine::sync;
  in.src[0] = hbm_ap(DType::bf16, 0, 64, 128, {{1, 64}});
  in.dst = sbuf_ap(DType::fp32, 0, 64, 0, {{1, 64}});
  const std::string msg = error_of(with_second(Engine::sync, in));
  CHECK_THAT(msg, Contains("SyncE instruction 1 (dma_copy 'bad')"));
  CHECK_THAT(msg, Contains("does not convert dtypes"));
}

TEST_CASE("validate rejects an opcode on an engine that cannot run it", "[unit][validate]") {
  Instruction mm = good_matmul();
  mm.engine = Engine::vector;
  const std::string msg = error_of(with_second(Engine::vector, mm));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(msg, Contains("matmul does not run on VectorE"));

  Instruction act = good_copy(Engine::gpsimd);
  act.opcode = Opcode::activation;
  CHECK_THAT(error_of(with_second(Engine::gpsimd, act)),
             Contains("activation does not run on GpSimdE"));
  Instruction reduce = good_copy(Engine::scalar);
  reduce.opcode = Opcode::tensor_reduce;
  CHECK_THAT(error_of(with_second(Engine::scalar, reduce)),
             Contains("tensor_reduce does not run on ScalarE"));
  Instruction set = good_copy(Engine::scalar);
  set.opcode = Opcode::memset;
  CHECK_THAT(error_of(with_second(Engine::scalar, set)),
             Contains("memset does not run on ScalarE"));
  Instruction tt = good_copy(Engine::tensor);
  tt.opcode = Opcode::tensor_copy;
  CHECK_THAT(error_of(with_second(Engine::tensor, tt)),
             Contains("tensor_copy does not run on TensorE"));
}

TEST_CASE("validate rejects an instruction placed in another engine's stream", "[unit][validate]") {
  Instruction in = good_copy(Engine::scalar);
  Program p = with_second(Engine::vector, good_copy());
  p.stream(Engine::vector).push_back(in);
  CHECK_THAT(error_of(p), Contains("VectorE instruction 2 is marked for ScalarE"));
}

TEST_CASE("validate rejects operands whose shapes do not match", "[unit][validate]") {
  Instruction tt;
  tt.opcode = Opcode::tensor_tensor;
  tt.engine = Engine::vector;
  tt.op0 = AluOp::add;
  tt.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}});
  tt.src[1] = sbuf_ap(DType::bf16, 0, 128, 256, {{1, 32}});
  tt.dst = sbuf_ap(DType::bf16, 0, 128, 512, {{1, 64}});
  const std::string msg = error_of(with_second(Engine::vector, tt));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_tensor 'bad')"));
  CHECK_THAT(msg, Contains("dst is [128 x 64] but src1 is [128 x 32]"));
  // Partitions count as much as free size.
  const std::string parts = error_of(vector_copy(sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}}),
                                                 sbuf_ap(DType::bf16, 0, 64, 1024, {{1, 64}})));
  CHECK_THAT(parts, Contains("dst is [64 x 64] but src is [128 x 64]"));
  // The same element count in another shape matches.
  CHECK(error_of(vector_copy(sbuf_ap(DType::bf16, 0, 128, 0, {{1, 64}}),
                             sbuf_ap(DType::bf16, 0, 128, 1024, {{8, 8}, {1, 8}}))) == "");
}

TEST_CASE("validate rejects a per-partition scalar that is not one value per partition",
          "[unit][validate]") {
  Instruction ts = good_copy();
  ts.opcode = Opcode::tensor_scalar;
  ts.op0 = AluOp::multiply;
  ts.operand0 = ScalarOperand::from(sbuf_ap(DType::fp32, 0, 128, 4096, {{1, 2}}));
  const std::string msg = error_of(with_second(Engine::vector, ts));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_scalar 'bad')"));
  CHECK_THAT(msg, Contains("operand0 must be one value per partition, [128 x 1]"));
}

TEST_CASE("validate rejects an activation accumulator that is not fp32 [P x 1]",
          "[unit][validate]") {
  Instruction act = good_copy(Engine::scalar);
  act.opcode = Opcode::activation;
  act.accumulate = sbuf_ap(DType::bf16, 0, 128, 4096, {{1, 1}});
  const std::string msg = error_of(with_second(Engine::scalar, act));
  CHECK_THAT(msg, Contains("ScalarE instruction 1 (activation 'bad')"));
  CHECK_THAT(msg, Contains("accumulate must be fp32 [128 x 1]"));
  act.accumulate = sbuf_ap(DType::fp32, 0, 128, 4096, {{1, 1}});
  CHECK(error_of(with_second(Engine::scalar, act)) == "");
}

TEST_CASE("validate rejects a tensor_reduce with a wrong dst shape or op", "[unit][validate]") {
  Instruction r;
  r.opcode = Opcode::tensor_reduce;
  r.engine = Engine::vector;
  r.op0 = AluOp::add;
  r.reduce_dims = 1;
  r.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{8, 4}, {1, 8}});
  r.dst = sbuf_ap(DType::fp32, 0, 128, 1024, {{1, 4}});
  CHECK(error_of(with_second(Engine::vector, r)) == "");
  r.dst = sbuf_ap(DType::fp32, 0, 128, 1024, {{1, 1}});
  CHECK_THAT(error_of(with_second(Engine::vector, r)),
             Contains("dst must be [128 x 4] after reducing, is [128 x 1]"));
  r.reduce_dims = 3;
  CHECK_THAT(error_of(with_second(Engine::vector, r)),
             Contains("reduces 3 free dimensions; src has 2"));
  r.reduce_dims = 2;
  r.op0 = AluOp::multiply;
  const std::string msg = error_of(with_second(Engine::vector, r));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_reduce 'bad')"));
  CHECK_THAT(msg, Contains("reduces with multiply; expected add, max, min"));
}

TEST_CASE("validate rejects a missing operand", "[unit][validate]") {
  Instruction in = good_copy();
  in.src[0] = AccessPattern{};
  const std::string msg = error_of(with_second(Engine::vector, in));
  CHECK_THAT(msg, Contains("VectorE instruction 1 (tensor_copy 'bad')"));
  CHECK_THAT(msg, Contains("operand src is missing"));
}

TEST_CASE("validate rejects more semaphores or queues than the arch has", "[unit][validate]") {
  Program sems;
  for (int i = 0; i < 257; ++i) sems.add_semaphore("s");
  CHECK_THAT(error_of(sems), Contains("the program uses 257 semaphores; trn2 has 256"));
  Program queues;
  for (int i = 0; i < 17; ++i) queues.add_queue("q");
  CHECK_THAT(error_of(queues), Contains("the program uses 17 DMA queues; trn2 allows 16"));
}

TEST_CASE("validate rejects a strided matmul dst whose elements span two PSUM banks",
          "[unit][validate]") {
  // 512 fp32 at stride 2 from byte 0 touch bytes [0, 4092): banks 0 and 1.
  Instruction mm = good_matmul();
  mm.dst = psum_ap(DType::fp32, 0, 128, 0, {{2, 512}});
  const std::string strided = error_of(with_second(Engine::tensor, mm));
  CHECK_THAT(strided, Contains("TensorE instruction 1 (matmul 'bad')"));
  CHECK_THAT(strided, Contains("crosses a 2048-byte PSUM bank boundary"));
  // 512 fp32 walking backwards from byte 2048 touch bytes [4, 2052): banks 0 and 1.
  mm.dst = psum_ap(DType::fp32, 0, 128, 2048, {{-1, 512}});
  CHECK_THAT(error_of(with_second(Engine::tensor, mm)),
             Contains("crosses a 2048-byte PSUM bank boundary"));
  // Backwards from the last element of bank 0 stays inside it.
  mm.dst = psum_ap(DType::fp32, 0, 128, 2044, {{-1, 512}});
  CHECK(error_of(with_second(Engine::tensor, mm)) == "");
}
