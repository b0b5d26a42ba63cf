// The collective rendezvous (models/systemc/collective_module.*) on its own: the k-th
// collective of every rank meets the others', the fabric is asked once when the last rank
// arrives, every rank's updates fire at the fabric's end, and ranks that disagree or never
// arrive are reported by core. One simulation per test case (a process of its own).
#include <catch2/catch.hpp>
#include <string>

#include "models/systemc/collective_module.hpp"
#include "models/systemc/sanitizer.hpp"
#include "models/systemc/sc_time.hpp"

using namespace trnsim;
using Catch::Matchers::Contains;

namespace {

struct Collectives : models::EventSink {
  void on_instruction(const models::InstructionRecord&) override {}
  void on_transfer(const models::TransferRecord&) override {}
  void on_collective(const models::CollectiveRecord& r) override { records.push_back(r); }
  std::vector<models::CollectiveRecord> records;
};

isa::Instruction collective(isa::CollectiveOp op, isa::AluOp op0, uint32_t elements) {
  isa::Instruction in;
  in.opcode = isa::Opcode::collective;
  in.collective_op = op;
  in.op0 = op0;
  in.src[0].edit().memory = isa::Memory::hbm;
  in.src[0].edit().partitions = 1;
  in.src[0].edit().ndims = 1;
  in.src[0].edit().dims[0] = isa::Dim{1, elements};
  in.dst = in.src[0];
  in.updates.push_back(isa::SemaphoreUpdate{0, isa::SemaphoreUpdateKind::add, 1});
  return in;
}

// Triggers, at the given times, the given core's collectives in turn.
struct Driver : sc_core::sc_module {
  SC_HAS_PROCESS(Driver);
  struct Trigger {
    Picoseconds at;
    uint32_t core;
    const isa::Instruction* in;
  };
  Driver(sc_core::sc_module_name n, models::CollectiveModule& cc, std::vector<Trigger> t)
      : sc_module(n), cc_(cc), triggers_(std::move(t)) {
    SC_THREAD(run);
  }
  void run() {
    for (const Trigger& t : triggers_) {
      if (t.at > models::now()) wait(models::to_sc_time(t.at - models::now()));
      cc_.trigger(t.core, *t.in);
    }
  }
  models::CollectiveModule& cc_;
  std::vector<Trigger> triggers_;
};

const config::ArchConfig& trn2() {
  static const config::ArchConfig a = *config::preset("trn2");
  return a;
}

}  // namespace

TEST_CASE("a rendezvous asks the fabric when the last rank arrives and fires every rank's update") {
  Collectives sink;
  models::CollectiveModule cc("cc", trn2(), 2, 1, sink);
  models::SemaphoreFile s0(1), s1(1);
  cc.attach(0, &s0, nullptr);
  cc.attach(1, &s1, nullptr);
  const isa::Instruction in = collective(isa::CollectiveOp::all_reduce, isa::AluOp::add, 1 << 16);
  Driver d("d", cc, {{Picoseconds(1000), 0, &in}, {Picoseconds(5000), 1, &in}});
  sc_core::sc_start();
  models::restore_sanitizer_stack_bounds();
  CHECK(cc.error().empty());
  CHECK(cc.deadlock_report().empty());
  REQUIRE(sink.records.size() == 1);
  models::CollectiveFabric fabric(trn2());
  models::CollectiveRequest r;
  r.op = isa::CollectiveOp::all_reduce;
  r.bytes = 4 << 16;
  r.element_bytes = 4;
  r.ranks = {{0, 0}, {0, 1}};
  const models::CollectiveTiming t = fabric.schedule(r, Picoseconds(5000));
  CHECK(sink.records[0].first_trigger == Picoseconds(1000));
  CHECK(sink.records[0].triggered == Picoseconds(5000));
  CHECK(sink.records[0].end == t.end);
  CHECK(models::now() == t.end);
  CHECK(s0.value(0) == 1);
  CHECK(s1.value(0) == 1);
  CHECK(cc.outstanding(0) == 0);
  CHECK(cc.outstanding(1) == 0);
}

TEST_CASE("ranks that trigger different collectives as their k-th stop the run naming both") {
  Collectives sink;
  models::CollectiveModule cc("cc", trn2(), 2, 1, sink);
  models::SemaphoreFile s0(1), s1(1);
  cc.attach(0, &s0, nullptr);
  cc.attach(1, &s1, nullptr);
  const isa::Instruction a = collective(isa::CollectiveOp::all_reduce, isa::AluOp::add, 256);
  const isa::Instruction b = collective(isa::CollectiveOp::all_reduce, isa::AluOp::add, 512);
  Driver d("d", cc, {{Picoseconds(0), 0, &a}, {Picoseconds(0), 1, &b}});
  sc_core::sc_start();
  models::restore_sanitizer_stack_bounds();
  CHECK_THAT(cc.error(), Contains("collective #0: the ranks disagree: core 0 triggered "
                                  "all_reduce op0=add fp32 src 256 elements, dst 256 elements, "
                                  "core 1 triggered all_reduce op0=add fp32 src 512 elements"));
  CHECK(sink.records.empty());
  CHECK(s0.value(0) == 0);
}

TEST_CASE("a collective some ranks never reach is reported with who arrived and who did not") {
  Collectives sink;
  models::CollectiveModule cc("cc", trn2(), 4, 1, sink);
  std::vector<std::unique_ptr<models::SemaphoreFile>> s;
  for (uint32_t c = 0; c < 4; ++c) {
    s.push_back(std::make_unique<models::SemaphoreFile>(1));
    cc.attach(c, s.back().get(), nullptr);
  }
  const isa::Instruction in = collective(isa::CollectiveOp::all_gather, isa::AluOp::bypass, 64);
  Driver d("d", cc, {{Picoseconds(0), 0, &in}, {Picoseconds(0), 2, &in}, {Picoseconds(0), 0, &in}});
  sc_core::sc_start();
  models::restore_sanitizer_stack_bounds();
  CHECK(cc.error().empty());
  CHECK(cc.deadlock_report() ==
        "  waits for collective #0: cores {0, 2} arrived, {1, 3} did not\n"
        "  waits for collective #1: cores {0} arrived, {1, 2, 3} did not\n");
  CHECK(cc.outstanding(0) == 2);
}
