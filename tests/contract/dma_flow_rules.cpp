// Contract tests for the flow-level memory model (arch flag dma_flow_model;
// models/dma/flow_model.hpp), one rule per test. The figures are worked out from the trn2
// preset with 27 ns per descriptor, as in dma_hbm_rules.cpp: 16 DMA engines, 8 partitions per
// engine, 27 B/ns per engine, 1300 ns start latency; HBM: 725 B/ns per stack over 32
// pseudo-channels of 256-byte interleave units, hbm_latency_ns 70 + CL 14 ns at the end of a
// read.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "../support/dma_bench.hpp"
#include "base/units.hpp"
#include "config/arch.hpp"
#include "isa/access_pattern.hpp"
#include "isa/instruction.hpp"
#include "models/dma/memory_model.hpp"
#include "models/hbm/hbm.hpp"

using trnsim::Engine;
using trnsim::Picoseconds;
using trnsim::isa::DType;
using trnsim::isa::hbm_ap;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::isa::sbuf_ap;
using trnsim::models::DmaPlan;
using trnsim::models::HbmModel;
using trnsim::models::MemoryModel;
using trnsim::models::plan_transfer;

namespace {

trnsim::config::ArchConfig flow_arch() {
  // Fixed rule figures, as tests/contract/dma_hbm_rules.cpp's: 27 B/ns, 27 ns per descriptor,
  // 1.3 us start latency (the rule arch of dma_hbm_rules) and no per-engine setup, no channel hash.
  auto arch = trnsim::config::trn2();
  arch.dma_engine_bytes_per_ns = 27.0;
  arch.dma_descriptor_overhead_ns = 27.0;
  arch.dma_start_latency_ns = 1300.0;
  arch.dma_transfer_setup_ns = 0.0;
  arch.hbm.channel_hash = false;
  arch.dma_flow_model = true;
  return arch;
}

// HBM -> SBUF: `partitions` rows of `elements` bf16 elements, `stride` elements apart in HBM
// (contiguous by default), into SBUF from partition `first`.
Instruction load(uint32_t partitions, uint32_t elements, uint16_t queue = 0, uint32_t first = 0,
                 int64_t stride = 0) {
  Instruction in;
  in.opcode = Opcode::dma_copy;
  in.engine = Engine::sync;
  in.src[0] = hbm_ap(DType::bf16, 0, partitions, stride == 0 ? elements : stride, {{1, elements}});
  in.dst = sbuf_ap(DType::bf16, first, partitions, 0, {{1, elements}});
  in.dma_queue = queue;
  return in;
}

Instruction sbuf_copy(uint32_t partitions, uint32_t elements) {
  Instruction in = load(partitions, elements);
  in.src[0] = sbuf_ap(DType::bf16, 0, partitions, 65536, {{1, elements}});
  return in;
}

using Bench = trnsim_test::DmaBench;

const Picoseconds kStart = trnsim::from_ns(1300);
const Picoseconds kReadTail = trnsim::from_ns(70 + 14);  // hbm_latency_ns + CL

// Within `ps` picoseconds (the model rounds each rate period up to a whole picosecond).
bool near(Picoseconds a, Picoseconds b, int64_t ps = 4) {
  return std::llabs(a.value - b.value) <= ps;
}

}  // namespace

TEST_CASE("flow: a lone engine-bound transfer takes start latency + engine time + HBM round trip",
          "[contract][dma][flow]") {
  Bench b(flow_arch());
  b.add(load(128, 32768));  // 8 MiB: 432 B/ns of engines against 725 B/ns of HBM
  b.run();
  const DmaPlan& plan = b.plans[0];
  CHECK(plan.engines == 16);
  CHECK(near(b.start(0), kStart));
  CHECK(near(b.end(0), kStart + plan.engine_time + kReadTail));
}

TEST_CASE("flow: a lone HBM-bound transfer takes start latency + bytes / HBM peak + round trip",
          "[contract][dma][flow]") {
  auto arch = flow_arch();
  arch.dma_engine_bytes_per_ns = 200;  // 3200 B/ns of engines: the stack binds
  Bench b(arch);
  b.add(load(128, 32768));
  b.run();
  const double hbm_ns = static_cast<double>(b.plans[0].bytes) / b.hbm_peak_bytes_per_ns();
  REQUIRE(hbm_ns > b.plans[0].engine_time.ns());
  CHECK(near(b.end(0), kStart + trnsim::from_ns(hbm_ns) + kReadTail));
  CHECK(b.memory->hbm_counters().read_bytes == b.plans[0].bytes);
  CHECK(b.memory->hbm_counters().write_bytes == 0);
  CHECK(b.memory->hbm_counters().row_hits == 0);  // not modelled
}

TEST_CASE("flow: transfers on different queues of the same engines share the engines",
          "[contract][dma][flow]") {
  Bench b(flow_arch());
  b.add(load(128, 32768, 0));
  b.add(load(128, 32768, 1));
  b.run();
  // Each engine gives each of its two queues half its time: both finish after twice the time.
  const Picoseconds engine = b.plans[0].engine_time;
  CHECK(near(b.start(1), kStart));
  CHECK(near(b.end(0), kStart + engine + engine + kReadTail, 8));
  CHECK(near(b.end(1), b.end(0), 8));
}

TEST_CASE("flow: transfers on one queue of the same engines run one after the other",
          "[contract][dma][flow]") {
  Bench b(flow_arch());
  b.add(load(128, 32768, 0));
  b.add(load(128, 32768, 0));
  b.run();
  const Picoseconds engine = b.plans[0].engine_time;
  // The second starts when the first's last byte has moved (its round trip holds no engine):
  // an engine-bound part has nothing issued ahead of its engine (the next test: HBM-bound).
  CHECK(near(b.start(1), kStart + engine));
  CHECK(near(b.end(1), kStart + engine + engine + kReadTail, 8));
}

TEST_CASE("flow: on one queue, an HBM-bound part lets the next start once a window is left",
          "[contract][dma][flow]") {
  // The engines run ahead of HBM by their outstanding window (dma_engine_outstanding_chunks x
  // dma_chunk_bytes, 8 KiB): an engine has issued the last chunk of its part when that much is
  // left, and starts the next part of the queue while those bytes drain.
  auto arch = flow_arch();
  arch.dma_engine_bytes_per_ns = 200;  // 3200 B/ns of engines: the stack binds
  Bench b(arch);
  b.add(load(128, 32768, 0));
  b.add(load(128, 32768, 0));
  b.run();
  const double window = 4.0 * 2048.0;
  REQUIRE(arch.dma_engine_outstanding_chunks * arch.dma_chunk_bytes == window);
  const double part = static_cast<double>(b.plans[0].bytes) / 16;  // one engine's share
  const double per_engine = b.hbm_peak_bytes_per_ns() / 16;        // B/ns each, HBM-bound
  CHECK(near(b.start(1), kStart + trnsim::from_ns((part - window) / per_engine), 16));
  CHECK(b.start(1) + kReadTail < b.end(0));
  // HBM moves both at its peak throughout, and completion stays in order.
  const double both_ns = 2.0 * static_cast<double>(b.plans[0].bytes) / b.hbm_peak_bytes_per_ns();
  CHECK(near(b.end(1), kStart + trnsim::from_ns(both_ns) + kReadTail, 16));
  CHECK(b.end(0) < b.end(1));
}

TEST_CASE("flow: many engines saturate an HBM stack at its peak", "[contract][dma][flow]") {
  // Two cores share a trn2 stack: 2 x 16 engines x 27 B/ns = 864 B/ns against 725 B/ns.
  Bench b(flow_arch(), 2);
  for (uint32_t core = 0; core < 2; ++core) {
    for (uint16_t q = 0; q < 4; ++q) b.add(load(128, 16384, q), Picoseconds(0), core);
  }
  b.run();
  Picoseconds last;
  uint64_t bytes = 0;
  for (size_t i = 0; i < b.plans.size(); ++i) {
    last = trnsim::max(last, b.end(i));
    bytes += b.plans[i].bytes;
  }
  // All start together and all finish together: the data phase runs at the peak.
  const double data_ns = (last - kStart - kReadTail).ns();
  CHECK(static_cast<double>(bytes) / data_ns == Approx(b.hbm_peak_bytes_per_ns()).epsilon(1e-6));
}

TEST_CASE("flow: a transfer is held to the pseudo-channels its addresses map to",
          "[contract][dma][flow]") {
  // 128 rows of 256 bytes, 16 KiB apart: every row falls on the same pseudo-channel (the map
  // interleaves 256-byte units over 32 channels, 8 KiB per round), so the transfer moves at
  // one channel's share of the peak, as in the detailed model.
  Bench b(flow_arch());
  b.add(load(128, 128, 0, 0, 8192));
  b.run();
  const double channel = b.hbm_peak_bytes_per_ns() / 32;
  const double hbm_ns = static_cast<double>(b.plans[0].bytes) / channel;
  REQUIRE(hbm_ns > b.plans[0].engine_time.ns());
  CHECK(near(b.end(0), kStart + trnsim::from_ns(hbm_ns) + kReadTail));
}

TEST_CASE("flow: a broadcast read with runs shorter than a chunk reads each chunk's run once",
          "[contract][dma][flow]") {
  // Every partition reads the same 1 KiB (partition stride 0). The detailed engine cuts each
  // part into 2 KiB chunks of two runs, whose pieces of one unit coalesce: HBM moves each
  // chunk's run once, half the bytes, at the tCCD_L rate of one bank group (every burst falls
  // in the same units), on the 4 pseudo-channels a 1 KiB run covers.
  Instruction in = load(128, 512);
  in.src[0].edit().partition_stride = 0;
  Bench b(flow_arch());
  b.add(in);
  b.run();
  const auto& hbm = b.arch.hbm;
  const double same_group = std::max(1.0, hbm.t_ccd_l / hbm.burst_ns());
  const double channel = b.hbm_peak_bytes_per_ns() / 32;
  const double per_channel = static_cast<double>(b.plans[0].bytes) / 4 * 0.5 * same_group;
  REQUIRE(per_channel / channel > b.plans[0].engine_time.ns());  // HBM binds
  // (Within 0.1%: the model's burst time is a whole number of picoseconds.)
  const double data_ns = (b.end(0) - kStart - kReadTail).ns();
  CHECK(data_ns == Approx(per_channel / channel).epsilon(1e-3));
  // The detailed model's time for the same transfer is close (it was 2x with every run read).
  auto detailed_arch = flow_arch();
  detailed_arch.dma_flow_model = false;
  Bench d(detailed_arch);
  d.add(in);
  d.run();
  const double flow_ns = (b.end(0) - kStart).ns(), detailed_ns = (d.end(0) - kStart).ns();
  CHECK(flow_ns == Approx(detailed_ns).epsilon(0.01));

  SECTION("not on a channel the run puts two units on") {
    // Two pseudo-channels: the 1 KiB run puts two 256-byte units on each, a descriptor's second
    // piece comes between two descriptors' first ones, and nothing coalesces: every run is read.
    auto two = flow_arch();
    two.hbm.pseudo_channels = 2;
    Bench f2(two);
    f2.add(in);
    f2.run();
    const double same_group2 = std::max(1.0, two.hbm.t_ccd_l / two.hbm.burst_ns());
    const double per_channel2 = static_cast<double>(f2.plans[0].bytes) / 2 * same_group2;
    const double channel2 = f2.hbm_peak_bytes_per_ns() / 2;
    // (Within 1%: the model's burst time is a whole number of picoseconds, 88 here.)
    CHECK((f2.end(0) - kStart - kReadTail).ns() == Approx(per_channel2 / channel2).epsilon(0.01));
    two.dma_flow_model = false;
    Bench d2(two);
    d2.add(in);
    d2.run();
    CHECK((f2.end(0) - kStart).ns() == Approx((d2.end(0) - kStart).ns()).epsilon(0.05));
  }
}

TEST_CASE("flow: completion is in order per queue", "[contract][dma][flow]") {
  Bench b(flow_arch());
  b.add(load(8, 32768, 0, 0));   // engine 0, 512 KiB
  b.add(load(8, 1024, 0, 120));  // engine 15, 16 KiB: done long before, completes after
  b.add(load(8, 1024, 1, 120));  // another queue: not held
  b.run();
  CHECK(b.start(1) < b.end(0));  // ran beside the first, on its own engine
  CHECK(b.end(1) == b.end(0));
  CHECK(b.end(2) < b.end(0));
  const auto& done = b.memory->completions();
  REQUIRE(done.size() == 3);
  CHECK(done[0] == 2);
  CHECK(done[1] == 0);
  CHECK(done[2] == 1);
}

TEST_CASE("flow: SBUF-to-SBUF transfers are not limited by HBM", "[contract][dma][flow]") {
  auto arch = flow_arch();
  arch.hbm.stack_bytes_per_ns = 10;  // a very slow stack
  Bench b(arch);
  b.add(sbuf_copy(128, 32768), Picoseconds(0));
  b.add(load(128, 32768, 1), Picoseconds(0));
  b.run();
  // The copy runs at the engines' pace, without an HBM round trip at the end; the load shares
  // the engines only as long as the stack lets it.
  CHECK(b.end(0) < b.end(1));
  CHECK(b.end(1).ns() > static_cast<double>(b.plans[1].bytes) / 10.0);
  CHECK(b.memory->hbm_counters().read_bytes == b.plans[1].bytes);
  // Alone, the copy takes start latency + engine time.
  Bench alone(arch);
  alone.add(sbuf_copy(128, 32768));
  alone.run();
  CHECK(near(alone.end(0), kStart + alone.plans[0].engine_time));
}

TEST_CASE("flow: idle time costs nothing", "[contract][dma][flow]") {
  Bench early(flow_arch());
  early.add(load(128, 4096));
  early.run();
  Bench late(flow_arch());
  const Picoseconds second = trnsim::from_ns(1e9);
  late.add(load(128, 4096), second);
  late.run();
  CHECK(late.end(0) - second == early.end(0));
  CHECK(late.memory->events_processed() == early.memory->events_processed());
  // A handful of events per transfer, whatever its size: ready, rates, finish, completion.
  CHECK(early.memory->events_processed() <= 4);
}

TEST_CASE("flow: the same input gives the same times", "[contract][dma][flow]") {
  auto run = [] {
    Bench b(flow_arch(), 2);
    for (uint32_t i = 0; i < 40; ++i) {
      b.add(load(8 * (1 + i % 16), 512 * (1 + i % 7), static_cast<uint16_t>(i % 5), 0,
                 i % 3 == 0 ? 8192 : 0),
            trnsim::from_ns(100.0 * i), i % 2);
    }
    b.run();
    std::vector<int64_t> ends;
    for (size_t i = 0; i < b.plans.size(); ++i) ends.push_back(b.end(i).value);
    return ends;
  };
  CHECK(run() == run());
}
