// Automatic synchronization: every cross-engine dependency gets a wait, and no more waits than
// needed (same-engine order, queue order and earlier waits imply the rest). find_deadlock on
// cyclic and correct programs.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "isa/text/assembly.hpp"

using Catch::Matchers::Contains;
using namespace trnsim;
using namespace trnsim::isa;
using namespace trnsim::config;
using namespace trnsim::compiler;

namespace {

// Three SBUF buffers, one HBM tensor of each width, two queues. Ten lines.
const std::string kDecl =
    ".tensor x fp32 [128, 64]\n"
    ".tensor y fp32 [128, 64]\n"
    ".queue q0\n"
    ".queue q1\n"
    ".buffer a sbuf fp32 [128, 64]\n"
    ".buffer b sbuf fp32 [128, 64]\n"
    ".buffer c sbuf fp32 [128, 64]\n"
    ".buffer d sbuf fp32 [128, 64]\n"
    ".buffer e sbuf fp32 [128, 64]\n"
    ".buffer acc psum fp32 [128, 64]\n";

struct Synced {
  Assembly assembly;
  Program program;
  size_t semaphores_before = 0;

  const Instruction& operator[](const std::string& label) const {
    for (const auto& s : program.streams) {
      for (const auto& in : s) {
        if (in.label == label) return in;
      }
    }
    FAIL("no instruction labelled " << label);
    return program.streams[0].front();
  }
  std::string sem(uint16_t id) const { return program.semaphores.at(id).name; }
  // "name>=value" for each wait of the instruction.
  std::vector<std::string> waits(const std::string& label) const {
    std::vector<std::string> out;
    for (const auto& w : (*this)[label].waits)
      out.push_back(sem(w.semaphore) + ">=" + std::to_string(w.value));
    return out;
  }
  std::vector<std::string> updates(const std::string& label) const {
    std::vector<std::string> out;
    for (const auto& u : (*this)[label].updates) {
      out.push_back(sem(u.semaphore) + (u.kind == SemaphoreUpdateKind::add ? "+=" : "=") +
                    std::to_string(u.value));
    }
    return out;
  }
  size_t total_waits() const {
    size_t n = 0;
    for (const auto& s : program.streams)
      for (const auto& in : s) n += in.waits.size();
    return n;
  }
  size_t total_updates() const {
    size_t n = 0;
    for (const auto& s : program.streams)
      for (const auto& in : s) n += in.updates.size();
    return n;
  }
};

Synced sync(const std::string& body) {
  const ArchConfig arch = trn2();
  Synced s{parse_assembly(kDecl + body, "s.tasm", arch), {}, 0};
  s.semaphores_before = s.assembly.program.semaphores.size();
  s.program = synchronize(s.assembly.sequence, s.assembly.program, arch);
  REQUIRE(s.program.instruction_count() == s.assembly.sequence.size());
  CHECK(find_deadlock(s.program, arch).empty());
  return s;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("synchronize: a read after write across engines adds one wait and one update",
          "[unit][sync]") {
  const Synced s = sync(
      "A: act.activation b[:, :], a[:, :], func=identity\n"
      "B: dve.tensor_copy c[:, :], b[:, :]\n");
  CHECK(s.updates("A") == Strings{"act_sync+=1"});
  CHECK(s.waits("B") == Strings{"act_sync>=1"});
  CHECK(s.waits("A").empty());
  CHECK(s.updates("B").empty());
  CHECK(s.total_waits() == 1);
  CHECK(s.total_updates() == 1);
  CHECK(s.program.semaphores.size() == s.semaphores_before + 1);  // act_sync only
  // The instructions land on their engines, in order.
  CHECK(s.program.stream(Engine::scalar).size() == 1);
  CHECK(s.program.stream(Engine::vector).size() == 1);
}

TEST_CASE("synchronize: independent instructions on different engines get no semaphores",
          "[unit][sync]") {
  const Synced s = sync(
      "A: act.activation b[:, :], a[:, :], func=identity\n"
      "B: dve.tensor_copy d[:, :], c[:, :]\n"
      "C: pool.tensor_copy e[:, 0:32], c[:, 0:32]\n");  // reads c too: read-read is no conflict
  CHECK(s.total_waits() == 0);
  CHECK(s.total_updates() == 0);
  CHECK(s.program.semaphores.size() == s.semaphores_before);
}

TEST_CASE("synchronize: disjoint parts of one buffer do not conflict, overlapping parts do",
          "[unit][sync]") {
  const Synced s = sync(
      "A: act.activation b[0:64, :], a[0:64, :], func=identity\n"
      "B: dve.tensor_copy c[64:128, :], b[64:128, :]\n"     // other partitions
      "C: pool.tensor_copy d[0:64, 0:8], b[0:64, 32:40]\n"  // same partitions, bytes overlap
  );
  CHECK(s.waits("B").empty());
  CHECK(s.waits("C") == Strings{"act_sync>=1"});
  CHECK(s.total_waits() == 1);
}

TEST_CASE("synchronize: a dependency implied by an earlier wait on the same engine adds none",
          "[unit][sync]") {
  SECTION("waiting for the later writer implies the earlier one") {
    // C waits for B (act's second item); act runs in order, so A is done too: D needs nothing.
    const Synced s = sync(
        "A: act.activation c[:, :], a[:, :], func=identity\n"  // writes X = c
        "B: act.activation d[:, :], a[:, :], func=identity\n"  // writes Y = d
        "C: dve.tensor_copy e[:, 0:32], d[:, 0:32]\n"          // reads Y
        "D: dve.tensor_copy e[:, 32:64], c[:, 32:64]\n");      // reads X
    CHECK(s.waits("C") == Strings{"act_sync>=1"});
    CHECK(s.waits("D").empty());
    CHECK(s.updates("A").empty());  // nobody waits for A by itself
    CHECK(s.updates("B") == Strings{"act_sync+=1"});
    CHECK(s.total_waits() == 1);
  }
  SECTION("waiting for the earlier writer does not imply the later one") {
    // The brief's order (C reads X, D reads Y): knowing A finished says nothing about B.
    const Synced s = sync(
        "A: act.activation c[:, :], a[:, :], func=identity\n"
        "B: act.activation d[:, :], a[:, :], func=identity\n"
        "C: dve.tensor_copy e[:, 0:32], c[:, 0:32]\n"
        "D: dve.tensor_copy e[:, 32:64], d[:, 32:64]\n");
    CHECK(s.waits("C") == Strings{"act_sync>=1"});
    CHECK(s.waits("D") == Strings{"act_sync>=2"});
    CHECK(s.total_waits() == 2);
  }
  SECTION("a second reader of the same data on the same engine waits once") {
    const Synced s = sync(
        "A: act.activation c[:, :], a[:, :], func=identity\n"
        "C: dve.tensor_copy d[:, :], c[:, :]\n"
        "D: dve.tensor_copy e[:, :], c[:, :]\n");
    CHECK(s.waits("C") == Strings{"act_sync>=1"});
    CHECK(s.waits("D").empty());
  }
  SECTION("knowledge passes through a third engine") {
    // pool waits for act; dve waits for pool, so it need not wait for act again.
    const Synced s = sync(
        "A: act.activation c[:, :], a[:, :], func=identity\n"
        "B: pool.tensor_copy d[:, :], c[:, :]\n"
        "C: dve.tensor_scalar e[:, :], d[:, :], op0=add, operand0=1\n"
        "D: dve.tensor_copy b[:, :], c[:, :]\n");
    CHECK(s.waits("B") == Strings{"act_sync>=1"});
    CHECK(s.waits("C") == Strings{"pool_sync>=1"});
    CHECK(s.waits("D").empty());
    CHECK(s.total_waits() == 2);
  }
}

TEST_CASE("synchronize: dependencies on the same engine add no semaphores", "[unit][sync]") {
  const Synced s = sync(
      "A: dve.tensor_copy b[:, :], a[:, :]\n"
      "B: dve.tensor_copy c[:, :], b[:, :]\n"  // RAW
      "C: dve.tensor_copy b[:, :], d[:, :]\n"  // WAR with B, WAW with A
      "D: act.activation e[:, :], d[:, :], func=exp\n"
      "E: act.activation e[:, :], e[:, :], func=exp\n");
  CHECK(s.total_waits() == 0);
  CHECK(s.total_updates() == 0);
  CHECK(s.program.semaphores.size() == s.semaphores_before);
}

TEST_CASE("synchronize: write after read and write after write across engines each add a wait",
          "[unit][sync]") {
  SECTION("WAR") {
    const Synced s = sync(
        "R: dve.tensor_copy c[:, :], b[:, :]\n"
        "W: act.activation b[:, :], a[:, :], func=identity\n");
    CHECK(s.waits("W") == Strings{"dve_sync>=1"});
    CHECK(s.updates("R") == Strings{"dve_sync+=1"});
    CHECK(s.total_waits() == 1);
  }
  SECTION("WAW") {
    const Synced s = sync(
        "W1: dve.tensor_copy b[:, :], a[:, :]\n"
        "W2: act.activation b[:, :], c[:, :], func=identity\n");
    CHECK(s.waits("W2") == Strings{"dve_sync>=1"});
    CHECK(s.total_waits() == 1);
  }
  SECTION("WAW on PSUM: a matmul reads what it accumulates into") {
    const Synced s = sync(
        ".buffer w sbuf bf16 [128, 128]\n"
        ".buffer m sbuf bf16 [128, 64]\n"
        "Z: dve.memset acc[:, :], value=0\n"
        "M: pe.matmul acc[:, :], w[:, :], m[:, :], start, stop\n"
        "E: act.tensor_copy b[:, :], acc[:, :]\n"
        "Z2: dve.memset acc[:, :], value=0\n");
    CHECK(s.waits("M") == Strings{"dve_sync>=1"});
    CHECK(s.waits("E") == Strings{"pe_sync>=1"});
    // Z2 must wait for the reader E (act); E already waited for M, so M needs no wait.
    CHECK(s.waits("Z2") == Strings{"act_sync>=1"});
    CHECK(s.total_waits() == 3);
  }
}

TEST_CASE("synchronize: a DMA reading what an engine wrote waits on its trigger engine",
          "[unit][sync]") {
  const Synced s = sync(
      "P: dve.tensor_scalar b[:, :], a[:, :], op0=add, operand0=1\n"
      "S: sp.dma_copy y[:, :], b[:, :], queue=q1\n"
      "T: act.dma_copy x[:, :], b[:, :], queue=q0\n");
  // The waits go on the instruction that triggers the transfer.
  CHECK(s.waits("S") == Strings{"dve_sync>=1"});
  CHECK(s.waits("T") == Strings{"dve_sync>=1"});
  CHECK(s.updates("P") == Strings{"dve_sync+=1"});
  CHECK(s.program.stream(Engine::sync).size() == 1);
  CHECK(s.program.stream(Engine::scalar).size() == 1);
  CHECK(s.total_waits() == 2);
}

TEST_CASE(
    "synchronize: an engine reading what a DMA wrote waits for the queue's cumulative DMA-engine "
    "count",
    "[unit][sync]") {
  const Synced s = sync(
      "L0: sp.dma_copy a[:, :], x[:, :], queue=q0\n"               // 128 partitions: 16 engines
      "L1: sp.dma_copy b[0:64, :], x[0:64, :], queue=q0\n"         // 64 partitions: 8
      "L2: sp.dma_copy c[0:8, :], x[0:8, :], queue=q0\n"           // 8 partitions: 1
      "L3: sp.dma_copy d[0:20, :], y[0:20, :], queue=q1\n"         // 20 partitions: 3
      "U2: dve.tensor_copy e[0:8, :], c[0:8, :]\n"                 // needs L2: 16 + 8 + 1
      "U0: act.activation e[64:128, :], a[64:128, :], func=exp\n"  // needs L0 only
      "U1: pool.tensor_copy d[64:128, :], b[0:64, :]\n"            // needs L1
      "U3: act.activation e[32:52, :], d[0:20, :], func=exp\n"     // needs L3 on q1
  );
  CHECK(s.waits("U2") == Strings{"q0>=25"});
  CHECK(s.waits("U0") == Strings{"q0>=16"});
  CHECK(s.waits("U1") == Strings{"q0>=24"});
  CHECK(s.waits("U3") == Strings{"q1>=3"});
  // Queues raise their own semaphores: no update instructions and no engine semaphores.
  CHECK(s.total_updates() == 0);
  CHECK(s.program.semaphores.size() == s.semaphores_before);
  CHECK(s.total_waits() == 4);
}

TEST_CASE("synchronize: a transfer behind an earlier one on its queue needs no second wait",
          "[unit][sync]") {
  // U waits for L1 (q0 >= 32); the queue completes in order, so L0 is done as well.
  const Synced s = sync(
      "L0: sp.dma_copy a[:, :], x[:, :], queue=q0\n"
      "L1: sp.dma_copy b[:, :], y[:, :], queue=q0\n"
      "U: dve.tensor_copy c[:, :], b[:, :]\n"
      "V: dve.tensor_copy d[:, :], a[:, :]\n");
  CHECK(s.waits("U") == Strings{"q0>=32"});
  CHECK(s.waits("V").empty());
}

TEST_CASE(
    "synchronize: transitivity through a DMA: waiting on the queue covers what the trigger waited "
    "for",
    "[unit][sync]") {
  SECTION("a later instruction needs no wait for what the transfer's trigger waited for") {
    const Synced s = sync(
        "A: act.activation b[:, :], a[:, :], func=identity\n"  // writes b
        "S: sp.dma_copy c[:, :], b[:, :], queue=q1\n"          // SBUF to SBUF: waits for act
        "U: dve.tensor_copy d[:, :], c[:, :]\n"                // waits for the transfer
        "V: dve.tensor_copy e[:, :], b[:, :]\n");              // needs A: implied through q1
    CHECK(s.waits("S") == Strings{"act_sync>=1"});
    CHECK(s.waits("U") == Strings{"q1>=16"});
    CHECK(s.waits("V").empty());
    CHECK(s.total_waits() == 2);
    CHECK(s.total_updates() == 1);
  }
  SECTION("one instruction needing both waits on the queue only") {
    const Synced s = sync(
        "A: act.activation b[:, :], a[:, :], func=identity\n"  // writes b
        "S: sp.dma_copy y[:, :], b[:, :], queue=q1\n"          // reads b: waits for act
        "W: dve.tensor_copy b[:, :], c[:, :]\n");              // WAW with A, WAR with S
    CHECK(s.waits("S") == Strings{"act_sync>=1"});
    // The transfer started after its trigger saw A finish: q1 >= 16 implies A.
    CHECK(s.waits("W") == Strings{"q1>=16"});
    CHECK(s.total_waits() == 2);
  }
}

TEST_CASE("synchronize: HBM dependencies between DMA queues are kept", "[unit][sync]") {
  const Synced s = sync(
      "W: sp.dma_copy y[:, :], a[:, :], queue=q0\n"    // writes y
      "R: sp.dma_copy b[:, :], y[:, :], queue=q1\n"    // reads y on another queue
      "W2: act.dma_copy y[:, :], c[:, :], queue=q1\n"  // WAW with W, WAR with R (same queue)
  );
  CHECK(s.waits("R") == Strings{"q0>=16"});
  INFO(s.waits("W2").size());
  // q1 completes R before W2, and R's trigger waited for W: a wait on q0 is redundant but safe;
  // a wait on W2's own queue would be useless.
  CHECK((s.waits("W2").empty() || s.waits("W2") == Strings{"q0>=16"}));
}

TEST_CASE("synchronize: hand-written waits and updates are kept", "[unit][sync]") {
  const Synced s = sync(
      ".semaphore s\n"
      "A: act.activation b[:, :], a[:, :], func=identity, update=s+=1\n"
      "B: dve.tensor_copy d[:, :], c[:, :], wait=s>=1\n"
      "C: pool.tensor_copy e[:, :], b[:, :]\n");
  CHECK(s.updates("A") == Strings{"s+=1", "act_sync+=1"});
  CHECK(s.waits("B") == Strings{"s>=1"});
  CHECK(s.waits("C") == Strings{"act_sync>=1"});
  CHECK(s.updates("B").empty());
}

TEST_CASE("synchronize: find_deadlock reports streams that wait on each other in a cycle",
          "[unit][sync]") {
  const ArchConfig arch = trn2();
  const Assembly a = parse_assembly(kDecl +
                                        ".sync manual\n"
                                        ".semaphore ping\n"
                                        ".semaphore pong\n"
                                        "A: act.activation b[:, :], a[:, :], func=identity, "
                                        "update=ping+=1\n"
                                        "B: act.activation c[:, :], a[:, :], func=identity, "
                                        "wait=pong>=1, update=ping+=1\n"
                                        "C: dve.tensor_copy d[:, :], a[:, :], wait=ping>=2, "
                                        "update=pong+=1\n",
                                    "d.tasm", arch);
  CHECK_FALSE(a.auto_sync);
  const std::string d = find_deadlock(distribute(a.sequence, a.program), arch);
  INFO(d);
  CHECK_THAT(d, Contains("ScalarE instruction 1") && Contains("'B'") &&
                    Contains("waits for pong to reach 1; it can only reach 0"));
  CHECK_THAT(d, Contains("VectorE instruction 0") && Contains("'C'") &&
                    Contains("waits for ping to reach 2; it can only reach 1"));
  CHECK_THAT(d, !Contains("TensorE") && !Contains("SyncE"));
}

TEST_CASE("synchronize: find_deadlock counts DMA completions into the queue semaphore",
          "[unit][sync]") {
  const ArchConfig arch = trn2();
  auto deadlock = [&](const std::string& wait) {
    const Assembly a =
        parse_assembly(kDecl + ".sync manual\n" + "sp.dma_copy b[0:64, :], x[0:64, :], queue=q0\n" +
                           "dve.tensor_copy c[:, :], b[:, :], wait=q0>=" + wait + "\n",
                       "q.tasm", arch);
    return find_deadlock(distribute(a.sequence, a.program), arch);
  };
  CHECK(deadlock("8").empty());
  CHECK_THAT(deadlock("9"), Contains("VectorE instruction 0") &&
                                Contains("waits for q0 to reach 9; it can only reach 8"));
}

TEST_CASE("synchronize: find_deadlock returns an empty string for correct programs",
          "[unit][sync]") {
  const ArchConfig arch = trn2();
  const Synced s = sync(
      "L: sp.dma_copy a[:, :], x[:, :], queue=q0\n"
      "A: act.activation b[:, :], a[:, :], func=exp\n"
      "B: dve.tensor_tensor c[:, :], b[:, :], a[:, :], op0=add\n"
      "S: sp.dma_copy y[:, :], c[:, :], queue=q1\n"
      "C: pool.tensor_copy a[:, :], d[:, :]\n");
  CHECK(find_deadlock(s.program, arch) == "");
  CHECK(find_deadlock(Program{}, arch) == "");
  // Dropping one update makes the same program unfinishable.
  Program broken = s.program;
  for (auto& st : broken.streams)
    for (auto& in : st) in.updates.clear();
  CHECK_FALSE(find_deadlock(broken, arch).empty());
}
