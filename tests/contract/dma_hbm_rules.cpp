// Contract tests for DMA and HBM timing (fact sheet section 3, D1 and D2; models/dma and
// models/hbm). Expected values are worked out by hand from the preset parameters: 16 DMA
// engines, 8 partitions per engine, 27 B/ns per engine, 1300 ns start latency, HBM 100 ns latency
// and 2900/8 = 362.5 B/ns per core (trn2) or 820/2 = 410 B/ns (trn1). The per-descriptor cost
// is an assumption (26 ns in the presets); the timing-rule tests pin the rule with it set to
// 27 ns so that their worked figures stay independent of that choice, and the D2 size tests
// use the presets as they are.
#include <catch2/catch.hpp>

#include "isa/access_pattern.hpp"
#include "isa/arch.hpp"
#include "isa/instruction.hpp"
#include "isa/units.hpp"
#include "models/dma/dma_timing.hpp"
#include "models/hbm/hbm.hpp"
#include "print_units.hpp"

using trnsim::Picoseconds;
using trnsim::isa::Dim;
using trnsim::isa::DType;
using trnsim::isa::Engine;
using trnsim::isa::hbm_ap;
using trnsim::isa::Instruction;
using trnsim::isa::Opcode;
using trnsim::isa::sbuf_ap;
using trnsim::models::DmaEngineSet;
using trnsim::models::DmaPlan;
using trnsim::models::DmaTiming;
using trnsim::models::HbmModel;
using trnsim::models::plan_transfer;

namespace {
trnsim::isa::ArchConfig trn2_with_27ns_descriptors() {
  auto arch = trnsim::isa::trn2();
  arch.dma_descriptor_overhead_ns = 27.0;
  return arch;
}
}  // namespace

namespace {

// HBM -> SBUF, `partitions` rows of `elements` contiguous bf16 elements each.
Instruction load(uint32_t partitions, uint32_t elements) {
  Instruction in;
  in.opcode = Opcode::dma_copy;
  in.engine = Engine::sync;
  in.src[0] = hbm_ap(DType::bf16, 0, partitions, elements, {{1, elements}});
  in.dst = sbuf_ap(DType::bf16, 0, partitions, 0, {{1, elements}});
  return in;
}

// SBUF -> SBUF: no HBM traffic.
Instruction sbuf_copy(uint32_t partitions, uint32_t elements) {
  Instruction in = load(partitions, elements);
  in.src[0] = sbuf_ap(DType::bf16, 0, partitions, 65536, {{1, elements}});
  return in;
}

// Bytes per ns one engine achieves: the bytes it moves over its busy time.
double engine_bytes_per_ns(const DmaPlan& plan) {
  const double bytes_per_engine = static_cast<double>(plan.bytes) / plan.engines;
  return bytes_per_engine / plan.engine_time.ns();
}

}  // namespace

TEST_CASE("a transfer over P partitions uses ceil(P / 8) DMA engines, at most 16",
          "[contract][dma]") {
  const auto arch = trnsim::isa::trn2();
  CHECK(arch.dma_engines_for(128) == 16);
  CHECK(arch.dma_engines_for(8) == 1);
  CHECK(arch.dma_engines_for(100) == 13);
  CHECK(arch.dma_engines_for(1) == 1);
  CHECK(arch.dma_engines_for(9) == 2);
  CHECK(arch.dma_engines_for(0) == 1);
  // The plan agrees, and spreads the partitions evenly.
  const DmaPlan full = plan_transfer(load(128, 2048), arch);
  CHECK(full.engines == 16);
  CHECK(full.partitions_per_engine == 8);
  const DmaPlan eight = plan_transfer(load(8, 2048), arch);
  CHECK(eight.engines == 1);
  CHECK(eight.partitions_per_engine == 8);
  const DmaPlan hundred = plan_transfer(load(100, 2048), arch);
  CHECK(hundred.engines == 13);
  CHECK(hundred.partitions_per_engine == 8);  // ceil(100 / 13)
}

TEST_CASE("a DMA engine spends 27 ns per descriptor plus the bytes at 27 B/ns", "[contract][dma]") {
  const auto arch = trn2_with_27ns_descriptors();
  // 128 x 4096 bytes: one 4096-byte descriptor per partition, 8 partitions per engine:
  // 8 x (27 + 4096 / 27) ns = 1429.6296 ns -> 1429630 ps.
  const DmaPlan plan = plan_transfer(load(128, 2048), arch);
  CHECK(plan.bytes == 128 * 4096);
  CHECK(plan.run_bytes == 4096);
  CHECK(plan.descriptors == 128);
  CHECK(plan.engine_time == Picoseconds(1429630));
  CHECK(plan.hbm_bytes == 128 * 4096);
  // SBUF -> SBUF moves no HBM bytes; HBM -> HBM counts them twice (read and write).
  CHECK(plan_transfer(sbuf_copy(128, 2048), arch).hbm_bytes == 0);
  Instruction hbm_to_hbm = load(128, 2048);
  hbm_to_hbm.dst = hbm_ap(DType::bf16, 1 << 20, 128, 2048, {{1, 2048}});
  CHECK(plan_transfer(hbm_to_hbm, arch).hbm_bytes == 2 * 128 * 4096);
}

TEST_CASE("DMA runs under 256 bytes per partition reach under 30% of the engine bandwidth",
          "[contract][dma]") {
  const auto arch = trnsim::isa::trn2();
  // 128-byte runs: 8 x (26 + 128 / 27) ns = 245.926 ns for 1024 bytes -> 4.16 B/ns (15.4%).
  const DmaPlan b128 = plan_transfer(load(128, 64), arch);
  CHECK(b128.engine_time == Picoseconds(245926));
  CHECK(engine_bytes_per_ns(b128) < 0.30 * 27.0);
  // 254-byte runs: 254 / (26 + 254 / 27) = 7.17 B/ns (26.6%).
  const DmaPlan b254 = plan_transfer(load(128, 127), arch);
  CHECK(engine_bytes_per_ns(b254) < 0.30 * 27.0);
  CHECK(engine_bytes_per_ns(b254) > 0.25 * 27.0);
}

TEST_CASE("DMA runs of 4 KiB per partition reach at least 85% of the engine bandwidth",
          "[contract][dma]") {
  const auto arch = trnsim::isa::trn2();
  // D2: 4 KiB or more per partition saturates; the sustained figure is 23 of 27 B/ns (85%).
  const DmaPlan b4k = plan_transfer(load(128, 2048), arch);
  CHECK(engine_bytes_per_ns(b4k) >= 0.85 * 27.0);
  // 2 KiB, D2's recommended minimum, sits between the two (2048 / 102.85 ns = 19.9 B/ns).
  const DmaPlan b2k = plan_transfer(load(128, 1024), arch);
  CHECK(engine_bytes_per_ns(b2k) > 0.70 * 27.0);
  CHECK(engine_bytes_per_ns(b2k) < engine_bytes_per_ns(b4k));
  // 16 KiB is closer still to the theoretical 27 B/ns.
  const DmaPlan b16k = plan_transfer(load(128, 8192), arch);
  CHECK(engine_bytes_per_ns(b16k) >= 0.95 * 27.0);
}

TEST_CASE("strided DMA patterns cost one descriptor per contiguous run", "[contract][dma]") {
  const auto arch = trn2_with_27ns_descriptors();
  // Each of 128 partition rows gathers 16 runs of 4 bf16 elements (8 bytes) spaced 8 apart.
  Instruction strided = load(128, 64);
  strided.src[0] = hbm_ap(DType::bf16, 0, 128, 128, {{8, 16}, {1, 4}});
  const DmaPlan plan = plan_transfer(strided, arch);
  CHECK(plan.run_bytes == 8);
  CHECK(plan.descriptors == 16 * 128);
  // 16 runs x 8 partitions x (27 + 8 / 27) ns = 3493.926 ns.
  CHECK(plan.engine_time == Picoseconds(3493926));
  // The same bytes contiguous: one descriptor per partition, 253.926 ns.
  const DmaPlan contiguous = plan_transfer(load(128, 64), arch);
  CHECK(contiguous.descriptors == 128);
  CHECK(contiguous.engine_time == Picoseconds(253926));
  // A strided destination splits the runs the same way.
  Instruction scatter = load(128, 64);
  scatter.dst = sbuf_ap(DType::bf16, 0, 128, 0, {{8, 16}, {1, 4}});
  CHECK(plan_transfer(scatter, arch).descriptors == 16 * 128);
  // Element-wise stride 2: one descriptor per element.
  Instruction every_other = load(128, 64);
  every_other.src[0] = hbm_ap(DType::bf16, 0, 128, 128, {{2, 64}});
  const DmaPlan elementwise = plan_transfer(every_other, arch);
  CHECK(elementwise.run_bytes == 2);
  CHECK(elementwise.descriptors == 64 * 128);
  // Outer dims that continue the inner run merge into one run: [[64, 2], [1, 64]] is 128.
  Instruction merged = load(128, 128);
  merged.src[0] = hbm_ap(DType::bf16, 0, 128, 128, {{64, 2}, {1, 64}});
  CHECK(plan_transfer(merged, arch).descriptors == 128);
}

TEST_CASE("HBM bandwidth caps a transfer whose engines would be faster", "[contract][dma][hbm]") {
  const auto trn2 = trnsim::isa::trn2();
  // 128 x 4 KiB = 524288 bytes. Engines: 8 x (26 + 4096 / 27) ns = 1421630 ps. trn2 HBM,
  // 362.5 B/ns per core:
  // 524288 / 362.5 = 1446.3117 ns -> 1446312 ps, longer than the engines.
  const DmaPlan plan = plan_transfer(load(128, 2048), trn2);
  HbmModel hbm(trn2);
  CHECK(hbm.transfer_time(524288) == Picoseconds(1446312));
  DmaEngineSet engines(trn2);
  const DmaTiming t = engines.schedule(plan, Picoseconds(0), hbm);
  CHECK(t.start == Picoseconds(1300000));
  // start + HBM time + HBM latency (100 ns).
  CHECK(t.end == Picoseconds(1300000 + 1446312 + 100000));

  // A slower HBM (100 B/ns) caps harder: 5242.88 ns.
  auto slow = trn2;
  slow.hbm_bytes_per_ns = 100.0;
  HbmModel slow_hbm(slow);
  DmaEngineSet slow_engines(slow);
  const DmaTiming s =
      slow_engines.schedule(plan_transfer(load(128, 2048), slow), Picoseconds(0), slow_hbm);
  CHECK(s.end == Picoseconds(1300000 + 5242880 + 100000));

  // trn1's 410 B/ns per core (1278.75 ns) is faster than the engines: they set the pace,
  // with trn1's 89 ns per descriptor: 8 x (89 + 4096 / 27) ns = 1925.6296 ns.
  const auto trn1 = trnsim::isa::trn1();
  HbmModel trn1_hbm(trn1);
  DmaEngineSet trn1_engines(trn1);
  const DmaTiming f =
      trn1_engines.schedule(plan_transfer(load(128, 2048), trn1), Picoseconds(0), trn1_hbm);
  CHECK(f.end == Picoseconds(1300000 + 1925630 + 100000));
}

TEST_CASE("HBM serves transfers first-come-first-served at its bandwidth", "[contract][hbm]") {
  auto arch = trn2_with_27ns_descriptors();
  arch.hbm_bytes_per_ns = 100.0;
  HbmModel hbm(arch);
  CHECK(hbm.latency() == Picoseconds(100000));
  CHECK(hbm.reserve(Picoseconds(0), 1000) == Picoseconds(10000));
  // Arrives while the first is still moving: waits for it.
  CHECK(hbm.reserve(Picoseconds(5000), 1000) == Picoseconds(20000));
  // Arrives after the channel went idle: starts at once.
  CHECK(hbm.reserve(Picoseconds(50000), 500) == Picoseconds(55000));
}

TEST_CASE("the 1.3 us DMA start latency delays the first byte", "[contract][dma]") {
  const auto arch = trn2_with_27ns_descriptors();
  HbmModel hbm(arch);
  DmaEngineSet engines(arch);
  // SBUF -> SBUF, 8 partitions x 4 KiB on one engine: 1429630 ps of engine time.
  const DmaTiming t =
      engines.schedule(plan_transfer(sbuf_copy(8, 2048), arch), Picoseconds(5000), hbm);
  CHECK(t.start == Picoseconds(5000 + 1300000));
  CHECK(t.end == Picoseconds(5000 + 1300000 + 1429630));
}

TEST_CASE("the DMA start latency does not serialize back-to-back transfers", "[contract][dma]") {
  const auto arch = trn2_with_27ns_descriptors();
  HbmModel hbm(arch);
  DmaEngineSet engines(arch);
  const DmaPlan plan = plan_transfer(sbuf_copy(128, 2048), arch);
  REQUIRE(plan.engine_time == Picoseconds(1429630));
  const DmaTiming first = engines.schedule(plan, Picoseconds(0), hbm);
  const DmaTiming second = engines.schedule(plan, Picoseconds(0), hbm);
  const DmaTiming third = engines.schedule(plan, Picoseconds(1000), hbm);
  CHECK(first.start == Picoseconds(1300000));
  CHECK(first.end == Picoseconds(1300000 + 1429630));
  // The second starts as soon as the engines are free: the latency is paid once, not twice.
  CHECK(second.start == first.end);
  CHECK(second.end == Picoseconds(1300000 + 2 * 1429630));
  CHECK(third.end == Picoseconds(1300000 + 3 * 1429630));
}

TEST_CASE("DMA transfers reserve engines first-come-first-served", "[contract][dma]") {
  const auto arch = trn2_with_27ns_descriptors();
  HbmModel hbm(arch);
  DmaEngineSet engines(arch);
  const DmaPlan one_engine = plan_transfer(sbuf_copy(8, 2048), arch);
  const DmaPlan all_engines = plan_transfer(sbuf_copy(128, 2048), arch);
  REQUIRE(one_engine.engines == 1);
  REQUIRE(all_engines.engines == 16);
  // A and B each take one engine; B does not wait for A, another engine is free.
  const DmaTiming a = engines.schedule(one_engine, Picoseconds(0), hbm);
  const DmaTiming b = engines.schedule(one_engine, Picoseconds(0), hbm);
  CHECK(a.start == Picoseconds(1300000));
  CHECK(b.start == Picoseconds(1300000));
  CHECK(b.end == Picoseconds(1300000 + 1429630));
  // C needs all 16: 14 start at once, the two that A and B hold finish 1429630 ps later.
  const DmaTiming c = engines.schedule(all_engines, Picoseconds(0), hbm);
  CHECK(c.start == Picoseconds(1300000));
  CHECK(c.end == Picoseconds(1300000 + 2 * 1429630));
  // D, also issued at time 0 but after C, gets no engine before C is done with it.
  const DmaTiming d = engines.schedule(all_engines, Picoseconds(0), hbm);
  CHECK(d.end == Picoseconds(1300000 + 3 * 1429630));
}
