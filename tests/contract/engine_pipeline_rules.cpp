// Contract tests of the engine pipeline (models/neuroncore/pipeline.hpp): one test per rule, each
// named after it. Plain C++, no SystemC; tests/integration/sim_pipeline.cpp checks the rules end
// to end in the simulation.
#include <catch2/catch.hpp>

#include "config/arch.hpp"
#include "isa/instruction.hpp"
#include "isa/program.hpp"
#include "models/neuroncore/pipeline.hpp"

using namespace trnsim;
using namespace trnsim::isa;
using trnsim::config::ArchConfig;

namespace {

ArchConfig pipelined() {
  ArchConfig a = config::trn2();
  a.result_latency_cycles = {400, 380, 160, 380, 0};
  a.semaphore_local_ns = 30;
  a.semaphore_cross_engine_ns = 35;
  a.dma_completion_wake_ns = 300;
  return a;
}

Instruction copy(Engine e, uint64_t from, uint64_t to, uint32_t n = 64) {
  Instruction in;
  in.engine = e;
  in.opcode = e == Engine::scalar ? Opcode::activation : Opcode::tensor_copy;
  in.src[0] = sbuf_ap(DType::fp32, 0, 128, from, {{1, n}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, to, {{1, n}});
  return in;
}

InstructionStream stream_of(std::initializer_list<Instruction> list) {
  InstructionStream s;
  for (const auto& in : list) s.push_back(in);
  return s;
}

}  // namespace

TEST_CASE("results are committed the engine's result latency after the initiation interval") {
  const ArchConfig a = pipelined();
  const Instruction act = copy(Engine::scalar, 0, 1024);
  CHECK(models::result_latency_cycles(act, a) == Cycles(160));
  // 160 cycles of ScalarE at 1.2 GHz, rounded up.
  CHECK(models::result_latency(act, a) == Picoseconds(133334));
  CHECK(models::result_latency_cycles(copy(Engine::vector, 0, 1024), a) == Cycles(380));
}

TEST_CASE("a DMA trigger and a nop commit no results on their engine") {
  const ArchConfig a = pipelined();
  Instruction dma;
  dma.engine = Engine::scalar;
  dma.opcode = Opcode::dma_copy;
  CHECK(models::result_latency_cycles(dma, a) == Cycles(0));
  Instruction nop;
  nop.engine = Engine::vector;
  nop.opcode = Opcode::nop;
  CHECK(models::result_latency_cycles(nop, a) == Cycles(0));
}

TEST_CASE("a same-engine reader of an earlier instruction's results waits for that instruction") {
  // 0 writes A; 1 writes B (independent); 2 reads A: its producer is 0.
  const auto s = stream_of({copy(Engine::scalar, 0, 1024), copy(Engine::scalar, 0, 2048),
                            copy(Engine::scalar, 1024, 4096)});
  const auto p = models::same_engine_producers(s);
  CHECK(p == std::vector<int32_t>{-1, -1, 0});
}

TEST_CASE("the newest overlapping writer is the producer") {
  const auto s = stream_of({copy(Engine::vector, 0, 1024), copy(Engine::vector, 0, 1024),
                            copy(Engine::vector, 1024, 4096)});
  CHECK(models::same_engine_producers(s)[2] == 1);
}

TEST_CASE("a writer further back than the producer window has committed its results") {
  InstructionStream s;
  s.push_back(copy(Engine::vector, 0, 1024));
  for (size_t i = 0; i < models::kProducerWindow; ++i) s.push_back(copy(Engine::vector, 0, 8192));
  s.push_back(copy(Engine::vector, 1024, 4096));
  CHECK(models::same_engine_producers(s).back() == -1);
}

TEST_CASE("the producer is found as the engine issues, one instruction at a time") {
  // The engine asks ProducerTracker as it issues; it holds the last kProducerWindow writes only,
  // and positions count from the stream's start, past any number of instructions.
  models::ProducerTracker t;
  for (int i = 0; i < 1000; ++i) CHECK(t.next(copy(Engine::vector, 0, 8192)) == -1);
  CHECK(t.next(copy(Engine::vector, 0, 1024)) == -1);       // 1000 writes 1024
  CHECK(t.next(copy(Engine::vector, 0, 16384)) == -1);      // 1001
  CHECK(t.next(copy(Engine::vector, 1024, 4096)) == 1000);  // reads 1000's result
  Instruction dma;
  dma.engine = Engine::vector;
  dma.opcode = Opcode::dma_copy;
  CHECK(t.next(dma) == -1);  // its queue writes, later
  for (size_t i = 0; i + 4 < models::kProducerWindow; ++i) t.next(copy(Engine::vector, 0, 16384));
  CHECK(t.count() == 1000 + models::kProducerWindow);
  CHECK(t.next(copy(Engine::vector, 1024, 4096)) == 1000);  // kProducerWindow back: still seen
  CHECK(t.next(copy(Engine::vector, 16384, 4096)) == 1000 + models::kProducerWindow - 1);
  for (size_t i = 0; i < models::kProducerWindow; ++i) t.next(copy(Engine::vector, 0, 16384));
  CHECK(t.next(copy(Engine::vector, 1024, 4096)) == -1);  // 1000 is out of the window
}

TEST_CASE("writing what an earlier instruction read or wrote is no read after write") {
  // 1 overwrites 0's source, 2 overwrites 0's destination: in-order issue keeps both.
  const auto s = stream_of({copy(Engine::vector, 0, 1024), copy(Engine::vector, 4096, 0),
                            copy(Engine::vector, 8192, 1024)});
  CHECK(models::same_engine_producers(s) == std::vector<int32_t>{-1, -1, -1});
}

TEST_CASE("a matmul accumulating into PSUM does not wait for the previous matmul's results") {
  Instruction mm;
  mm.engine = Engine::tensor;
  mm.opcode = Opcode::matmul;
  mm.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 128}});
  mm.src[1] = sbuf_ap(DType::bf16, 0, 128, 256, {{1, 512}});
  mm.dst = psum_ap(DType::fp32, 0, 128, 0, {{1, 512}});
  Instruction next = mm;
  next.accumulate_start = false;
  const auto s = stream_of({mm, next});
  CHECK(models::same_engine_producers(s) == std::vector<int32_t>{-1, -1});
}

TEST_CASE("a reader of a per-partition scalar the engine just wrote waits for it") {
  Instruction sum = copy(Engine::scalar, 0, 1024);
  sum.accumulate = sbuf_ap(DType::fp32, 0, 128, 8192, {{1, 1}});
  Instruction scale = copy(Engine::scalar, 0, 2048);
  scale.scale = ScalarOperand::from(sbuf_ap(DType::fp32, 0, 128, 8192, {{1, 1}}));
  const auto s = stream_of({sum, scale});
  CHECK(models::same_engine_producers(s)[1] == 0);
}

TEST_CASE("a semaphore wait wakes its instruction after the updater's latency") {
  const ArchConfig a = pipelined();
  CHECK(models::wake_latency(models::SemaphoreSource::same_engine, a) == Picoseconds(30000));
  CHECK(models::wake_latency(models::SemaphoreSource::other_engine, a) == Picoseconds(35000));
  CHECK(models::wake_latency(models::SemaphoreSource::dma_queue, a) == Picoseconds(300000));
}

TEST_CASE("TensorE throttling starts at its start fraction and ramps to full over ramp_ns") {
  ArchConfig a = pipelined();
  a.tensor_throttle = {0.5, 3000, 3000, 0.5};
  models::TensorThrottle t(a);
  REQUIRE(t.enabled());
  // The first instruction after idle runs at half rate: 100 ns of work takes 200 ns.
  CHECK(t.busy_time(Picoseconds(0), Picoseconds(100000)) == Picoseconds(200000));
  // Linear ramp: 75% half way through, full from ramp_ns on.
  CHECK(t.limit(Picoseconds(1500000)) == Approx(0.75));
  CHECK(t.limit(Picoseconds(3000000)) == Approx(1.0));
  // An instruction's busy time is its work over the rate at its start.
  CHECK(t.busy_time(Picoseconds(1500000), Picoseconds(75000)) == Picoseconds(100000));
}

TEST_CASE("TensorE throttling re-engages after occupancy fell below the threshold") {
  ArchConfig a = pipelined();
  a.tensor_throttle = {0.5, 3000, 3000, 0.5};
  models::TensorThrottle t(a);
  // 2.25 us of work from idle takes 4.5 us at the ramping rate (0.5 at its start).
  CHECK(t.busy_time(Picoseconds(0), Picoseconds(2250000)) == Picoseconds(4500000));
  // Busy all of the last window and ramped: full rate.
  CHECK(t.busy_time(Picoseconds(4500000), Picoseconds(100000)) == Picoseconds(100000));
  // Idle from 4.6 us to 8 us: occupancy 0 over the window, half rate again.
  CHECK(t.busy_time(Picoseconds(8000000), Picoseconds(100000)) == Picoseconds(200000));
}

TEST_CASE("TensorE throttling stays off while occupancy stays at the threshold or above") {
  ArchConfig a = pipelined();
  a.tensor_throttle = {0.5, 3000, 3000, 0.5};
  models::TensorThrottle t(a);
  CHECK(t.busy_time(Picoseconds(0), Picoseconds(1500000)) == Picoseconds(3000000));
  CHECK(t.busy_time(Picoseconds(3000000), Picoseconds(1000000)) == Picoseconds(1000000));
  // Window [2 us, 5 us]: busy 2 us of 3 (67%).
  CHECK(t.busy_time(Picoseconds(5000000), Picoseconds(100000)) == Picoseconds(100000));
  // Window [2.6 us, 5.6 us]: busy 0.4 + 1 + 0.1 = 1.5 us of 3 (50%): not below.
  CHECK(t.busy_time(Picoseconds(5600000), Picoseconds(100000)) == Picoseconds(100000));
}

TEST_CASE("TensorE throttling with a start fraction of 1 changes nothing") {
  ArchConfig a = pipelined();
  a.tensor_throttle = {1.0, 3000, 3000, 0.5};
  models::TensorThrottle t(a);
  CHECK_FALSE(t.enabled());
  CHECK(t.busy_time(Picoseconds(0), Picoseconds(100000)) == Picoseconds(100000));
}
