// Programs of several kernels and the host model (models/host): kernels run one after another,
// each starting when the previous one has drained and its launch has arrived; the host
// dispatches ops, launches kernels asynchronously up to host.max_inflight, and synchronizes at
// the end. One simulation per test case (a process of its own).
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "sim_support.hpp"

using namespace trnsim;
using namespace trnsim;
using namespace trnsim::isa;
using namespace trnsim::config;
using namespace trnsim::compiler;
using trnsim_test::Recorder;

namespace {

Picoseconds ns(double v) {
  return Picoseconds(static_cast<int64_t>(v * 1000));
}

Instruction vector_copy(uint32_t elements) {
  Instruction in;
  in.engine = Engine::vector;
  in.opcode = Opcode::tensor_copy;
  in.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, elements}});
  in.dst = sbuf_ap(DType::fp32, 0, 128, 65536, {{1, elements}});
  return in;
}

// A kernel of one VectorE copy of `elements` per partition.
Program compute_kernel(uint32_t elements) {
  Program k;
  k.stream(Engine::vector).push_back(vector_copy(elements));
  return k;
}

// A kernel whose SyncE triggers a store of `bytes` per partition and ends without waiting for
// it: the kernel is over only when the transfer has completed.
Program store_kernel(const Program& whole, uint32_t elements) {
  Program k;
  k.dram_tensors = whole.dram_tensors;
  const uint16_t q = k.add_queue("qStore");
  Instruction st;
  st.engine = Engine::sync;
  st.opcode = Opcode::dma_copy;
  st.dma_queue = q;
  st.src[0] = sbuf_ap(DType::fp32, 0, 128, 0, {{1, elements}});
  st.dst = hbm_ap(DType::fp32, 0, 128, elements, {{1, elements}});
  k.stream(Engine::sync).push_back(st);
  return k;
}

ArchConfig host_arch() {
  ArchConfig a = trn2();
  a.host.framework_op_ns = 3000;
  a.host.runtime_launch_ns = 2000;
  a.host.launch_latency_ns = 1000;
  a.host.kernel_setup_ns = 500;
  a.host.sync_ns = 4000;
  a.host.max_inflight = 8;
  return a;
}

}  // namespace

TEST_CASE("a kernel starts only after the previous kernel's transfers have completed") {
  const ArchConfig arch = trn2();
  Program p;
  p.add_dram_tensor("y", DType::fp32, {128, 1024});
  append_kernel(p, store_kernel(p, 1024), "store");
  append_kernel(p, compute_kernel(512), "compute");
  validate(p, arch);
  REQUIRE(find_deadlock(p, arch).empty());
  Recorder rec;
  const auto result = models::simulate(p, arch, nullptr, rec);
  REQUIRE(result.completed);
  REQUIRE(rec.transfers.size() == 1);
  REQUIRE(rec.kernels.size() == 2);
  CHECK(rec.kernels[0].end == rec.transfers[0].end);
  CHECK(rec.kernels[1].start == rec.kernels[0].end);
  const auto& v = rec.of(Engine::vector);
  CHECK(v.kernel == 1);
  CHECK(v.start == rec.transfers[0].end);
  CHECK(rec.transfers[0].kernel == 0);
}

TEST_CASE("semaphores start from zero in every kernel") {
  const ArchConfig arch = trn2();
  // Both kernels: ScalarE waits until VectorE's copy raised `done` to 1.
  Program k;
  const uint16_t done = k.add_semaphore("done");
  Instruction producer = vector_copy(4096);
  producer.updates.push_back(SemaphoreUpdate{done});
  Instruction consumer;
  consumer.engine = Engine::scalar;
  consumer.opcode = Opcode::nop;
  consumer.waits.push_back(SemaphoreWait{done, 1});
  k.stream(Engine::vector).push_back(producer);
  k.stream(Engine::scalar).push_back(consumer);
  Program p;
  append_kernel(p, k, "first");
  append_kernel(p, k, "second");
  validate(p, arch);
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  // Had `done` kept kernel 0's value, the second nop would start with its kernel.
  const auto& second_copy = rec.of(Engine::vector, 1);
  const auto& second_nop = rec.of(Engine::scalar, 1);
  // The update fires when the copy's results land (its pipeline latency after its end); the
  // nop starts the cross-engine wake latency after that.
  CHECK(second_nop.start == second_copy.results + from_ns(arch.semaphore_cross_engine_ns));
  CHECK(second_nop.start > rec.kernels[1].start);
}

TEST_CASE("with a host model a kernel starts after dispatch, launch, launch latency and setup") {
  const ArchConfig arch = host_arch();
  Program p;
  append_kernel(p, compute_kernel(512), "k0");
  p.host_ops.push_back(HostOp{"aten::copy", {0}});
  validate(p, arch);
  Recorder rec;
  const auto result = models::simulate(p, arch, nullptr, rec);
  REQUIRE(result.completed);
  REQUIRE(rec.kernels.size() == 1);
  CHECK(rec.kernels[0].arrived == ns(3000 + 2000 + 1000));
  CHECK(rec.kernels[0].start == ns(3000 + 2000 + 1000 + 500));
  CHECK(rec.of(Engine::vector).start == rec.kernels[0].start);
  // The host synchronizes: it waits for the kernel, then pays sync_ns.
  CHECK(result.end_time == rec.kernels[0].end + ns(4000));
  REQUIRE(rec.host.size() == 3);
  CHECK(rec.host[0].activity == models::HostActivity::dispatch);
  CHECK(rec.host[1].activity == models::HostActivity::launch);
  CHECK(rec.host[2].activity == models::HostActivity::synchronize);
  CHECK(rec.host[2].end == result.end_time);
}

TEST_CASE("launches are asynchronous: the host dispatches the next op while a kernel runs") {
  const ArchConfig arch = host_arch();
  Program p;
  // Long kernels (32768 elements: about 34 us on VectorE) against 5 us of host time per op.
  for (int i = 0; i < 3; ++i) {
    append_kernel(p, compute_kernel(32768), "k" + std::to_string(i));
    p.host_ops.push_back(HostOp{"op", {static_cast<uint32_t>(i)}});
  }
  validate(p, arch);
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  REQUIRE(rec.kernels.size() == 3);
  // Every launch call returned before the first kernel ended ...
  for (const auto& h : rec.host) {
    if (h.activity == models::HostActivity::launch) CHECK(h.end < rec.kernels[0].end);
  }
  // ... so the device runs the kernels back to back, separated only by the setup.
  CHECK(rec.kernels[1].start == rec.kernels[0].end + ns(500));
  CHECK(rec.kernels[2].start == rec.kernels[1].end + ns(500));
}

TEST_CASE("a launch call blocks while host.max_inflight kernels are unfinished") {
  ArchConfig arch = host_arch();
  arch.host.max_inflight = 1;
  Program p;
  for (int i = 0; i < 2; ++i) {
    append_kernel(p, compute_kernel(32768), "k" + std::to_string(i));
    p.host_ops.push_back(HostOp{"op", {static_cast<uint32_t>(i)}});
  }
  validate(p, arch);
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  const models::HostRecord* blocked = nullptr;
  for (const auto& h : rec.host) {
    if (h.activity == models::HostActivity::queue_full) blocked = &h;
  }
  REQUIRE(blocked != nullptr);
  CHECK(blocked->kernel == 1);
  CHECK(blocked->end == rec.kernels[0].end);
  // Launched only then: the device waits for the launch call and its latency.
  CHECK(rec.kernels[1].arrived == rec.kernels[0].end + ns(2000 + 1000));
}

TEST_CASE("a device faster than the host idles between kernels, waiting for launches") {
  ArchConfig arch = host_arch();
  arch.host.framework_op_ns = 20000;
  Program p;
  for (int i = 0; i < 2; ++i) {
    append_kernel(p, compute_kernel(128), "k" + std::to_string(i));
    p.host_ops.push_back(HostOp{"op", {static_cast<uint32_t>(i)}});
  }
  validate(p, arch);
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  // Op 1 is dispatched after op 0's dispatch and launch: 2 x (20 + 2) us, plus latency, setup.
  CHECK(rec.kernels[1].arrived == ns(2 * 22000 + 1000));
  CHECK(rec.kernels[1].start == ns(2 * 22000 + 1000 + 500));
  CHECK(rec.kernels[1].start - rec.kernels[0].end > ns(15000));
}

TEST_CASE(
    "an op run on the host copies its inputs after the device drains, computes, and copies "
    "its results back before the next dispatch") {
  ArchConfig arch = host_arch();
  arch.host.transfer_latency_ns = 700;
  arch.host.transfer_bytes_per_ns = 16;
  arch.host.cpu_bytes_per_ns = 4;
  Program p;
  append_kernel(p, compute_kernel(32768), "k0");
  append_kernel(p, compute_kernel(512), "k1");
  p.host_ops.push_back(HostOp{"aten::exp", {0}});
  HostOp fallback("aten::cumsum", {});
  fallback.on_host = true;
  fallback.to_host = {{"a", 16000}, {"b", 3200}};
  fallback.to_device = {{"c", 8000}};
  fallback.host_bytes = 24000;
  p.host_ops.push_back(fallback);
  p.host_ops.push_back(HostOp{"aten::mul", {1}});
  validate(p, arch);
  Recorder rec;
  REQUIRE(models::simulate(p, arch, nullptr, rec).completed);
  REQUIRE(rec.kernels.size() == 2);
  std::vector<models::HostRecord> fb;
  for (const auto& h : rec.host) {
    if (h.op == 1) fb.push_back(h);
  }
  // dispatch, two copies to the host, the CPU op, one copy back
  REQUIRE(fb.size() == 5);
  CHECK(fb[0].activity == models::HostActivity::dispatch);
  CHECK(fb[1].activity == models::HostActivity::to_host);
  CHECK(fb[2].activity == models::HostActivity::to_host);
  CHECK(fb[3].activity == models::HostActivity::host_compute);
  CHECK(fb[4].activity == models::HostActivity::to_device);
  // The first copy waits for the kernel launched before it (its input is that kernel's result).
  CHECK(fb[1].start == fb[0].end);
  CHECK(fb[1].end == rec.kernels[0].end + ns(700 + 16000.0 / 16));
  CHECK(fb[2].end == fb[2].start + ns(700 + 3200.0 / 16));
  CHECK(fb[3].end == fb[3].start + ns(24000.0 / 4));
  CHECK(fb[4].end == fb[4].start + ns(700 + 8000.0 / 16));
  CHECK(fb[3].lane == models::HostLane::framework);
  CHECK(fb[4].lane == models::HostLane::runtime);
  // The next op is dispatched only when the result is back on the device.
  const auto next = std::find_if(rec.host.begin(), rec.host.end(), [](const auto& h) {
    return h.op == 2 && h.activity == models::HostActivity::dispatch;
  });
  REQUIRE(next != rec.host.end());
  CHECK(next->start == fb[4].end);
  CHECK(rec.kernels[1].start > fb[4].end);
}
