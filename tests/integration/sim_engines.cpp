// The SystemC NeuronCore: engines run concurrently, semaphores order them, DMA queues raise
// their semaphores per DMA engine, deadlocks are reported. One simulation per test case:
// catch_discover_tests runs each in a process of its own.
#include <catch2/catch.hpp>
#include <vector>

#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "models/neuroncore/cost.hpp"
#include "sim_support.hpp"

using namespace trnsim;
using namespace trnsim;
using namespace trnsim::isa;
using namespace trnsim::config;
using trnsim_test::Recorder;

namespace {

Instruction copy_on(Engine e, uint64_t offset) {
  Instruction in;
  in.engine = e;
  in.opcode = e == Engine::scalar ? Opcode::activation : Opcode::tensor_copy;
  in.src[0] = sbuf_ap(DType::fp32, 0, 128, offset, {{1, 512}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, offset + 4096, {{1, 512}});
  return in;
}

}  // namespace

TEST_CASE("two independent instructions on different engines overlap in time") {
  const ArchConfig arch = trn2();
  Program p;
  p.stream(Engine::vector).push_back(copy_on(Engine::vector, 0));
  p.stream(Engine::scalar).push_back(copy_on(Engine::scalar, 16384));
  validate(p, arch);
  Recorder rec;
  const auto result = models::simulate(p, arch, nullptr, rec);
  REQUIRE(result.completed);
  const auto& v = rec.of(Engine::vector);
  const auto& s = rec.of(Engine::scalar);
  CHECK(v.start == Picoseconds(0));
  CHECK(s.start == Picoseconds(0));
  // 512 cycles each: VectorE at 960 MHz, ScalarE at 1200 MHz.
  CHECK(v.end == Picoseconds(533334));
  CHECK(s.end == Picoseconds(426667));
  CHECK(result.end_time == Picoseconds(533334));
}

TEST_CASE("a semaphore-dependent pair does not overlap") {
  const ArchConfig arch = trn2();
  Program p;
  const uint16_t sem = p.add_semaphore("act_done");
  Instruction producer = copy_on(Engine::scalar, 0);
  producer.updates.push_back(SemaphoreUpdate{sem});
  Instruction consumer = copy_on(Engine::vector, 0);
  consumer.src[0] = producer.dst;  // reads what ScalarE wrote
  consumer.dst = sbuf_ap(DType::fp32, 0, 128, 8192, {{1, 512}});
  consumer.waits.push_back(SemaphoreWait{sem, 1});
  p.stream(Engine::scalar).push_back(producer);
  p.stream(Engine::vector).push_back(consumer);
  validate(p, arch);
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  const auto& s = rec.of(Engine::scalar);
  const auto& v = rec.of(Engine::vector);
  CHECK(v.ready == Picoseconds(0));
  CHECK(v.blocked_on == sem);
  // ScalarE's results land 159 cycles (at 1200 MHz: 132,500 ps) after its interval, when its
  // update fires; VectorE starts the cross-engine wake latency (35 ns) later.
  CHECK(s.results == s.end + Picoseconds(132500));
  CHECK(v.start == s.results + Picoseconds(35000));
  // The consumer's own interval: 512 cycles at 960 MHz.
  CHECK(v.end - v.start == Picoseconds(533334));
}

TEST_CASE("a DMA over 128 partitions raises its queue semaphore by 16, one per DMA engine") {
  const ArchConfig arch = trn2();
  Program p;
  p.add_dram_tensor("x", DType::bf16, {128, 2048});
  const uint16_t q = p.add_queue("qSyncIn");
  Instruction dma;
  dma.engine = Engine::sync;
  dma.opcode = Opcode::dma_copy;
  dma.src[0] = hbm_ap(DType::bf16, 0, 128, 2048, {{1, 2048}});
  dma.dst = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 2048}});
  dma.dma_queue = q;
  p.stream(Engine::sync).push_back(dma);
  // Waiting for 15 would start early; 16 is the documented completion count.
  Instruction use = copy_on(Engine::vector, 0);
  use.src[0] = sbuf_ap(DType::bf16, 0, 128, 0, {{1, 2048}});
  use.dst = sbuf_ap(DType::bf16, 0, 128, 8192, {{1, 2048}});
  use.waits.push_back(SemaphoreWait{p.queues[q].semaphore, 16});
  p.stream(Engine::vector).push_back(use);
  validate(p, arch);
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  REQUIRE(rec.transfers.size() == 1);
  const auto& t = rec.transfers[0];
  CHECK(t.engines == 16);
  CHECK(t.bytes == 128 * 2048 * 2);
  // The trigger costs dma_trigger_ns on SyncE (8 ns: 10 cycles at 1200 MHz); the data starts
  // dma_start_latency_ns and the engine's dma_transfer_setup_ns later; the waiting VectorE starts
  // dma_completion_wake_ns after the completion (D2's 1.3 us from semaphore to DMA start, in D1's
  // parts).
  const Picoseconds trigger = to_picoseconds(Cycles(10), arch.mhz(Engine::sync));
  CHECK(t.issued == trigger);
  // The first engine's setup follows the start latency; the transfer starts with its data.
  CHECK(t.start == trigger + from_ns(arch.dma_start_latency_ns + arch.dma_transfer_setup_ns));
  CHECK(rec.of(Engine::vector).start == t.end + from_ns(arch.dma_completion_wake_ns));
}

TEST_CASE("a deadlock is reported with what each engine waits for") {
  const ArchConfig arch = trn2();
  Program p;
  const uint16_t a = p.add_semaphore("never_raised");
  const uint16_t b = p.add_semaphore("raised_once");
  Instruction v = copy_on(Engine::vector, 0);
  v.waits.push_back(SemaphoreWait{a, 1});
  Instruction s = copy_on(Engine::scalar, 16384);
  s.updates.push_back(SemaphoreUpdate{b});
  Instruction s2 = copy_on(Engine::scalar, 16384);
  s2.waits.push_back(SemaphoreWait{b, 2});
  p.stream(Engine::vector).push_back(v);
  p.stream(Engine::scalar).push_back(s);
  p.stream(Engine::scalar).push_back(s2);
  validate(p, arch);
  Recorder rec;
  const auto result = models::simulate(p, arch, nullptr, rec);
  CHECK_FALSE(result.completed);
  INFO(result.deadlock);
  CHECK(result.deadlock.find("VectorE stopped at instruction 0") != std::string::npos);
  CHECK(result.deadlock.find("never_raised") != std::string::npos);
  CHECK(result.deadlock.find("to reach 1; it holds 0") != std::string::npos);
  CHECK(result.deadlock.find("ScalarE stopped at instruction 1") != std::string::npos);
  CHECK(result.deadlock.find("to reach 2; it holds 1") != std::string::npos);
  CHECK(rec.instructions.size() == 1);  // only ScalarE's first instruction ran
}

TEST_CASE("a second simulation in one process is refused") {
  const ArchConfig arch = trn2();
  Program p;
  p.stream(Engine::vector).push_back(copy_on(Engine::vector, 0));
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  CHECK_THROWS_AS(models::simulate(p, arch, nullptr, rec), std::logic_error);
}
