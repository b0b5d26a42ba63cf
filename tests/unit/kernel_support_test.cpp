// The synchronization bookkeeping the tiled kernels share: SyncTracker's waits, and the order
// run_pipeline emits stages in.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "workloads/kernels/kernel_support.hpp"

using trnsim::Engine;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::workloads::kNotEmitted;
using trnsim::workloads::make_instruction;
using trnsim::workloads::PipelineStage;
using trnsim::workloads::run_pipeline;
using trnsim::workloads::Signal;
using trnsim::workloads::SyncTracker;

namespace {
Instruction nop(Engine e, const std::string& label) {
  return make_instruction(Opcode::nop, e, label);
}
}  // namespace

TEST_CASE("SyncTracker waits once for a signal and raises its own", "[unit][kernels]") {
  trnsim::isa::Program p;
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  SyncTracker sync(p, arch);
  const uint16_t a = sync.semaphore("a");
  const Signal s1 = sync.emit(nop(Engine::vector, "v1"), {}, a);
  const Signal s2 = sync.emit(nop(Engine::vector, "v2"), {}, a);
  CHECK(s1.value == 1);
  CHECK(s2.value == 2);
  sync.emit(nop(Engine::scalar, "s1"), {s1});
  // ScalarE already waited for a >= 1: a second wait for it is dropped; a >= 2 is not.
  sync.emit(nop(Engine::scalar, "s2"), {s1});
  sync.emit(nop(Engine::scalar, "s3"), {s2, s1});
  const auto& act = p.stream(Engine::scalar);
  REQUIRE(act.size() == 3);
  REQUIRE(act[0].waits.size() == 1);
  CHECK(act[0].waits[0].value == 1);
  CHECK(act[1].waits.empty());
  REQUIRE(act[2].waits.size() == 1);
  CHECK(act[2].waits[0].value == 2);
  CHECK(p.stream(Engine::vector)[0].updates.size() == 1);
  CHECK(sync.waits() == 2);
  // A dependency on the engine's own earlier signal needs no wait.
  sync.emit(nop(Engine::vector, "v3"), {s2});
  CHECK(p.stream(Engine::vector)[2].waits.empty());
}

TEST_CASE("SyncTracker drops a wait that another engine's signal already knew about",
          "[unit][kernels]") {
  trnsim::isa::Program p;
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  SyncTracker sync(p, arch);
  const uint16_t pe = sync.semaphore("pe");
  const uint16_t dve = sync.semaphore("dve");
  const Signal mm = sync.emit(nop(Engine::tensor, "mm"), {}, pe);
  const Signal red = sync.emit(nop(Engine::vector, "reduce"), {mm}, dve);
  // ScalarE needs both the matmul and the reduce: the reduce waited for the matmul, so waiting
  // for the reduce is enough.
  sync.emit(nop(Engine::scalar, "exp"), {mm, red});
  const auto& act = p.stream(Engine::scalar);
  REQUIRE(act[0].waits.size() == 1);
  CHECK(act[0].waits[0].semaphore == dve);
  // ... and ScalarE now knows the matmul finished.
  sync.emit(nop(Engine::scalar, "copy"), {mm});
  CHECK(act[1].waits.empty());
}

TEST_CASE("SyncTracker counts DMA engines on a queue's semaphore", "[unit][kernels]") {
  trnsim::isa::Program p;
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  p.add_dram_tensor("t", trnsim::isa::DType::bf16, {128, 64});
  const uint16_t q = p.add_queue("q");
  SyncTracker sync(p, arch);
  Instruction dma = make_instruction(Opcode::dma_copy, Engine::sync, "load");
  dma.src[0] = trnsim::isa::hbm_ap(trnsim::isa::DType::bf16, 0, 128, 64, {{1, 64}});
  dma.dst = trnsim::isa::sbuf_ap(trnsim::isa::DType::bf16, 0, 128, 0, {{1, 64}});
  dma.dma_queue = q;
  const Signal first = sync.emit(dma, {});
  dma.src[0].edit().partitions = dma.dst.edit().partitions = 20;
  const Signal second = sync.emit(dma, {});
  CHECK(first.semaphore == p.queues[q].semaphore);
  CHECK(first.value == 16);       // 128 partitions: 16 DMA engines
  CHECK(second.value == 16 + 3);  // 20 partitions: 3
}

TEST_CASE("SyncTracker refuses a dependency on a stage not emitted yet", "[unit][kernels]") {
  trnsim::isa::Program p;
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  SyncTracker sync(p, arch);
  const uint16_t a = sync.semaphore("a");
  CHECK_THROWS_AS(sync.emit(nop(Engine::scalar, "early"), {kNotEmitted}), std::logic_error);
  // A value not reached yet is as wrong.
  CHECK_THROWS_AS(sync.emit(nop(Engine::scalar, "early"), {Signal{a, 1}}), std::logic_error);
  // Signal{} is met from the start.
  CHECK_NOTHROW(sync.emit(nop(Engine::scalar, "free"), {Signal{}}));
  CHECK_THROWS_AS(sync.semaphore("late"), std::logic_error);
}

TEST_CASE("run_pipeline emits item i of a stage at step i + lag, stages in order",
          "[unit][kernels]") {
  std::vector<std::string> log;
  auto stage = [&](const std::string& name, int64_t lag) {
    return PipelineStage{lag, [&log, name](int64_t i) { log.push_back(name + std::to_string(i)); }};
  };
  run_pipeline(3, {stage("a", 0), stage("b", 1), stage("L", -1)});
  CHECK(log == std::vector<std::string>{"L0", "a0", "L1", "a1", "b0", "L2", "a2", "b1", "b2"});
  // With steps: a gap of one step between items 1 and 2.
  log.clear();
  run_pipeline(std::vector<int64_t>{0, 1, 3}, {stage("a", 0), stage("b", 1)});
  CHECK(log == std::vector<std::string>{"a0", "a1", "b0", "b1", "a2", "b2"});
  CHECK_THROWS_AS(run_pipeline(std::vector<int64_t>{0, 0}, {stage("a", 0)}), std::logic_error);
}
