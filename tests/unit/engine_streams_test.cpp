// EngineStreams' two ways to a program: whole (store, then finish() renumbers), and streamed
// (a counting pass, then a Replay that writes each instruction final as it is emitted).
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "workloads/kernels/engine_streams.hpp"
#include "workloads/kernels/instruction_builder.hpp"
#include "workloads/kernels/tile_ops.hpp"

using trnsim::Engine;
using trnsim::isa::Instruction;
using trnsim::isa::Program;
using trnsim::workloads::Completion;
using trnsim::workloads::Completions;
using trnsim::workloads::EngineStreams;
using trnsim::workloads::TileOps;
using trnsim::workloads::WaitedFor;

namespace {

Instruction nop(Engine e) {
  Instruction in;
  in.opcode = trnsim::isa::Opcode::nop;
  in.engine = e;
  return in;
}

// VectorE runs 150 instructions (numbers past two 64-bit words); TensorE waits for every third
// of them, and VectorE's last waits for TensorE's last. `vector_extra` more on VectorE at the end.
void emit_all(EngineStreams& s, int vector_extra = 0) {
  std::vector<Completion> dve;
  for (int i = 0; i < 150; ++i) dve.push_back(s.emit(nop(Engine::vector), {}));
  Completion pe;
  for (int i = 0; i < 150; i += 3) pe = s.emit(nop(Engine::tensor), dve[i]);
  s.emit(nop(Engine::vector), pe);
  for (int i = 0; i < vector_extra; ++i) s.emit(nop(Engine::vector), {});
}

}  // namespace

TEST_CASE("WaitedFor ranks across its 64-bit words", "[unit][engine_streams]") {
  WaitedFor w;
  for (int n = 1; n < 256; ++n) w.push_back();
  for (uint64_t n : {1, 63, 64, 127, 128, 200}) w.set(n);
  w.seal();
  CHECK_FALSE(w[0]);
  CHECK(w[63]);
  CHECK(w[64]);
  CHECK_FALSE(w[65]);
  CHECK(w.rank(0) == 0);
  CHECK(w.rank(1) == 1);
  CHECK(w.rank(62) == 1);
  CHECK(w.rank(63) == 2);
  CHECK(w.rank(64) == 3);
  CHECK(w.rank(126) == 3);
  CHECK(w.rank(127) == 4);
  CHECK(w.rank(128) == 5);
  CHECK(w.rank(199) == 5);
  CHECK(w.rank(200) == 6);
  CHECK(w.rank(255) == 6);
}

TEST_CASE("EngineStreams replay writes what finish writes and ends each engine at its last",
          "[unit][engine_streams]") {
  const auto arch = trnsim::config::trn2();
  Program whole;
  EngineStreams store(whole, arch, "w.json");
  emit_all(store);
  store.finish();

  Program counted;
  EngineStreams count(counted, arch, "w.json", EngineStreams::Mode::count);
  emit_all(count);
  CHECK(counted.instruction_count() == 0);  // counting keeps nothing
  CHECK(counted.semaphores.size() == whole.semaphores.size());

  Program meta = counted, replayed = counted;
  std::vector<std::pair<bool, Engine>> events;  // (appended, engine) or (ended, engine)
  EngineStreams replay(meta, arch, "w.json",
                       EngineStreams::Replay{count.numbering(),
                                             [&](Instruction in) {
                                               events.emplace_back(true, in.engine);
                                               replayed.stream(in.engine).push_back(std::move(in));
                                             },
                                             [&](Engine e) { events.emplace_back(false, e); }});
  // The engines with no instructions are ended before anything is emitted.
  REQUIRE(events.size() == 3);
  for (const auto& [appended, e] : events) {
    CHECK_FALSE(appended);
    CHECK((e == Engine::scalar || e == Engine::gpsimd || e == Engine::sync));
  }
  emit_all(replay);
  CHECK_NOTHROW(replay.check_replayed());
  // TensorE ends right after its 50th instruction, VectorE after its 151st, each once.
  std::vector<std::pair<bool, Engine>> after(events.begin() + 3, events.end());
  REQUIRE(after.size() == 151 + 50 + 2);
  const auto tensor_end =
      std::find(after.begin(), after.end(), std::make_pair(false, Engine::tensor));
  REQUIRE(tensor_end != after.end());
  CHECK(std::count(after.begin(), tensor_end, std::make_pair(true, Engine::tensor)) == 50);
  CHECK(after.back() == std::make_pair(false, Engine::vector));
  CHECK(after[after.size() - 2] == std::make_pair(true, Engine::vector));

  for (Engine e : trnsim::kAllEngines) {
    INFO(trnsim::name_of(e));
    REQUIRE(replayed.stream(e).size() == whole.stream(e).size());
    for (size_t i = 0; i < whole.stream(e).size(); ++i) {
      const Instruction& a = whole.stream(e)[i];
      const Instruction& b = replayed.stream(e)[i];
      REQUIRE(a.waits.size() == b.waits.size());
      for (size_t k = 0; k < a.waits.size(); ++k) {
        CHECK(a.waits[k].semaphore == b.waits[k].semaphore);
        CHECK(a.waits[k].value == b.waits[k].value);
      }
      REQUIRE(a.updates.size() == b.updates.size());
      for (size_t k = 0; k < a.updates.size(); ++k) {
        CHECK(a.updates[k].semaphore == b.updates[k].semaphore);
      }
    }
  }
  // TensorE waited for VectorE 1, 4, 7, ...: the 50 waited-for are numbered 1..50.
  CHECK(whole.stream(Engine::tensor)[49].waits.at(0).value == 50);
  CHECK(whole.stream(Engine::vector)[147].updates.size() == 1);  // number 148 = 3 x 49 + 1
  CHECK(whole.stream(Engine::vector)[148].updates.empty());
}

TEST_CASE("EngineStreams replay that strays from the counting pass is an internal error",
          "[unit][engine_streams]") {
  const auto arch = trnsim::config::trn2();
  Program counted;
  EngineStreams count(counted, arch, "w.json", EngineStreams::Mode::count);
  emit_all(count, 1);
  const auto numbering = count.numbering();
  auto replay_of = [&](Program& meta) {
    return EngineStreams(meta, arch, "w.json",
                         EngineStreams::Replay{numbering, [](Instruction) {}, [](Engine) {}});
  };
  Program fewer_meta = counted;
  EngineStreams fewer = replay_of(fewer_meta);
  emit_all(fewer);  // one VectorE instruction short
  CHECK_THROWS_AS(fewer.check_replayed(), std::logic_error);
  Program more_meta = counted;
  EngineStreams more = replay_of(more_meta);
  CHECK_THROWS_AS(emit_all(more, 2), std::logic_error);
  CHECK_THROWS_AS(more.add_queue("late"), std::logic_error);
}

namespace {

Instruction load(uint16_t queue, uint32_t partitions) {
  return trnsim::workloads::dma_copy(
      queue, trnsim::isa::sbuf_ap(trnsim::isa::DType::bf16, 0, partitions, 0, {{1, 64}}),
      trnsim::isa::hbm_ap(trnsim::isa::DType::bf16, 0, partitions, 64, {{1, 64}}), "load");
}

// The same completions, one by one.
void check_same(const std::vector<Completion>& a, const std::vector<Completion>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(i);
    CHECK(a[i].semaphore == b[i].semaphore);
    CHECK(a[i].value == b[i].value);
  }
}

// Loads on one queue (64 and 128 partitions: different numbers of DMA engines), VectorE waiting for
// each and TensorE for every other VectorE instruction: through emit(), or count() when `skip`.
std::vector<Completion> emit_mixed(EngineStreams& s, uint16_t queue, bool skip) {
  using trnsim::isa::Opcode;
  std::vector<Completion> out;
  for (int i = 0; i < 70; ++i) {
    const uint32_t parts = i % 2 == 0 ? 64 : 128;
    const Completion l = skip ? s.count(Engine::sync, Opcode::dma_copy, {}, queue, parts)
                              : s.emit(load(queue, parts), {});
    const Completion v =
        skip ? s.count(Engine::vector, Opcode::nop, l) : s.emit(nop(Engine::vector), l);
    out.push_back(l);
    out.push_back(v);
    if (i % 2 == 1) {
      out.push_back(skip ? s.count(Engine::tensor, Opcode::nop, v)
                         : s.emit(nop(Engine::tensor), v));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("EngineStreams count() numbers a counting pass as emit() does, and only counts",
          "[unit][engine_streams]") {
  const auto arch = trnsim::config::trn2();
  Program a, b;
  EngineStreams by_emit(a, arch, "w.json", EngineStreams::Mode::count);
  EngineStreams by_count(b, arch, "w.json", EngineStreams::Mode::count);
  REQUIRE(by_count.counting());
  const std::vector<Completion> ea = emit_mixed(by_emit, by_emit.add_queue("q"), false);
  const std::vector<Completion> eb = emit_mixed(by_count, by_count.add_queue("q"), true);
  check_same(ea, eb);
  // A DMA raises its queue by the engines its partitions take (D1).
  CHECK(ea[2].value == arch.dma_engines_for(64) + arch.dma_engines_for(128));
  CHECK(by_emit.instructions() == by_count.instructions());
  const auto na = by_emit.numbering(), nb = by_count.numbering();
  CHECK(na->total == nb->total);
  for (int e = 0; e < trnsim::kEngineCount; ++e) {
    INFO(e);
    CHECK(na->instructions[e] == nb->instructions[e]);
    CHECK(na->engine_semaphore[e] == nb->engine_semaphore[e]);
    REQUIRE(na->waited_for[e].size() == nb->waited_for[e].size());
    for (uint64_t n = 0; n < na->waited_for[e].size(); ++n) {
      CHECK(na->waited_for[e][n] == nb->waited_for[e][n]);
    }
  }
  // Outside a counting pass an instruction must be built.
  Program c;
  EngineStreams store(c, arch, "w.json");
  CHECK_FALSE(store.counting());
  CHECK_THROWS_AS(store.count(Engine::vector, trnsim::isa::Opcode::nop, {}), std::logic_error);
  // A DMA counted without its partitions would be taken for one engine's.
  CHECK_THROWS_AS(by_count.count(Engine::sync, trnsim::isa::Opcode::dma_copy, {}, 0),
                  std::logic_error);
}

namespace {

// Every kind of TileOps instruction, chained so that each waits for the one before; returns
// their completions.
std::vector<Completion> every_tile_op(TileOps& ops, EngineStreams& streams) {
  using trnsim::isa::ActivationFunction;
  using trnsim::isa::DType;
  const uint16_t q = streams.add_queue("q");
  const trnsim::workloads::HbmMatrix a{"a", 0, 512, 512};
  auto label = [] { return std::string("op"); };
  std::vector<Completion> out;
  out.push_back(ops.load(q, a, 0, 200, 0, 256, 128, 0, 256, {}));  // two tiles and a part
  out.push_back(ops.load_transposed(q, a, 0, 130, 0, 64, 128, 4096, 64, out.back()));
  out.push_back(ops.matmul(0, 128, 128, 256, 0, 4096, true, true, out.back(), label));
  out.push_back(ops.evacuate(Engine::scalar, ActivationFunction::copy, 0, 128, 256, DType::bf16,
                             8192, out.back(), label));
  out.push_back(ops.evacuate(Engine::vector, ActivationFunction::copy, 0, 128, 256, DType::bf16,
                             8192, out.back(), label));
  out.push_back(ops.accumulate(0, 128, 256, 16384, DType::bf16, 16384, out.back(), label));
  out.push_back(ops.zero(Engine::gpsimd, 64, 256, 32768, out.back(), label));
  out.push_back(ops.store(Engine::scalar, q, a, 0, 96, 0, 256, 8192, out.back()));
  return out;
}

}  // namespace

TEST_CASE("TileOps counts what it builds: the same engines, completions and HBM bytes",
          "[unit][engine_streams]") {
  const auto arch = trnsim::config::trn2();
  Program built, counted;
  EngineStreams store(built, arch, "w.json");
  EngineStreams count(counted, arch, "w.json", EngineStreams::Mode::count);
  TileOps by_building(store, arch, trnsim::isa::DType::bf16);
  TileOps by_counting(count, arch, trnsim::isa::DType::bf16);
  const std::vector<Completion> a = every_tile_op(by_building, store);
  const std::vector<Completion> b = every_tile_op(by_counting, count);
  check_same(a, b);
  CHECK(by_building.hbm_bytes_loaded() == by_counting.hbm_bytes_loaded());
  CHECK(by_counting.hbm_bytes_loaded() == (200 * 256 + 130 * 64) * 2);
  const auto numbering = count.numbering();
  for (Engine e : trnsim::kAllEngines) {
    INFO(trnsim::name_of(e));
    CHECK(numbering->instructions[trnsim::index_of(e)] == built.stream(e).size());
  }
  CHECK(built.stream(Engine::sync).size() == 4);  // the loads (2 + 2); ScalarE stores
  CHECK(counted.semaphores.size() == built.semaphores.size());
}

TEST_CASE("TileOps makes a label only for an instruction it builds", "[unit][engine_streams]") {
  const auto arch = trnsim::config::trn2();
  for (const auto mode : {EngineStreams::Mode::store, EngineStreams::Mode::count}) {
    Program p;
    EngineStreams streams(p, arch, "w.json", mode);
    TileOps ops(streams, arch, trnsim::isa::DType::bf16);
    int made = 0;
    auto label = [&] {
      ++made;
      return std::string("mm");
    };
    ops.matmul(0, 128, 128, 512, 0, 1024, true, true, {}, label);
    ops.zero(Engine::vector, 128, 512, 0, {}, label);
    const bool counting = mode == EngineStreams::Mode::count;
    CHECK(made == (counting ? 0 : 2));
    CHECK(streams.instructions() == 2);
    CHECK(p.instruction_count() == (counting ? 0u : 2u));
    if (!counting) CHECK(p.stream(Engine::tensor).at(0).label == "mm");
  }
}
