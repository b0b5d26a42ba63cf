// `barrier` in the assembly: every engine arrives before any leaves.
#include <catch2/catch.hpp>

#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"

using namespace trnsim;

using namespace trnsim::isa;

using namespace trnsim::config;

using namespace trnsim::compiler;

TEST_CASE("assembly: a barrier is an arrive and a leave nop on every engine", "[unit][assembly]") {
  const ArchConfig arch = trn2();
  const Assembly a = parse_assembly(
      ".sync manual\n.buffer a sbuf fp32 [128, 64]\n.buffer b sbuf fp32 [128, 64]\n"
      "act.activation b[:, :], a[:, :], func=exp\nbarrier\ndve.tensor_copy a[:, :], b[:, :]\n"
      "barrier\n",
      "b.tasm", arch);
  const Program p = distribute(a.sequence, a.program);
  validate(p, arch);
  CHECK(find_deadlock(p, arch).empty());
  REQUIRE(p.semaphores.size() == 1);
  CHECK(p.semaphores[0].name == "barrier");
  for (Engine e : kAllEngines) {
    INFO(name_of(e));
    const auto& s = p.stream(e);
    // ScalarE: exp, then arrive/leave twice; VectorE: arrive/leave, copy, arrive/leave.
    const size_t extra = e == Engine::scalar || e == Engine::vector ? 1 : 0;
    REQUIRE(s.size() == 4 + extra);
    const size_t first = e == Engine::scalar ? 1 : 0;
    CHECK(s[first].opcode == Opcode::nop);
    CHECK(s[first].updates.at(0).value == 1);
    CHECK(s[first + 1].waits.at(0).value == 5);  // all five engines arrived
  }
  CHECK(p.stream(Engine::vector)[2].opcode == Opcode::tensor_copy);
  CHECK(p.stream(Engine::vector)[4].waits.at(0).value == 10);
}

TEST_CASE("assembly: the barrier's semaphore does not take a declared name", "[unit][assembly]") {
  const Assembly a = parse_assembly(".semaphore barrier\nbarrier\n", "b.tasm", trn2());
  REQUIRE(a.program.semaphores.size() == 2);
  CHECK(a.program.semaphores[1].name == "barrier_");
}
