// The engine_stream micro-benchmark kernel (bench/): its lowered program, choices and errors.
#include <catch2/catch.hpp>

#include <string>

#include "config/arch.hpp"
#include "isa/validate.hpp"
#include "workloads/lowering.hpp"
#include "workloads/workload.hpp"

using Catch::Matchers::Contains;
using trnsim::Engine;
using trnsim::isa::Opcode;
using trnsim::workloads::lower;
using trnsim::workloads::LoweredKernel;
using trnsim::workloads::parse_workload;
using trnsim::workloads::WorkloadError;

namespace {

LoweredKernel stream(const std::string& keys, bool functional = false) {
  const auto w =
      parse_workload(R"({"kernel": "engine_stream", "shape": [128, 64], )" + keys + "}", "s.json");
  return lower(w, trnsim::config::trn2(), functional);
}

std::string error_of(const std::string& keys) {
  try {
    stream(keys);
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("engine_stream puts `instructions` identical instructions on one engine") {
  const LoweredKernel k = stream(R"("engine": "vector", "instructions": 1000)");
  const auto& p = k.program;
  REQUIRE(p.stream(Engine::vector).size() == 1000);
  CHECK(p.stream(Engine::scalar).empty());
  CHECK(p.stream(Engine::gpsimd).empty());
  CHECK(p.stream(Engine::tensor).empty());
  // SyncE: the load of x and the store of y.
  REQUIRE(p.stream(Engine::sync).size() == 2);
  CHECK(p.stream(Engine::sync)[1].waits.size() == 1);
  for (const auto& in : p.stream(Engine::vector)) CHECK(in.opcode == Opcode::tensor_scalar);
  // Only the first waits (for the load) and only the last signals (for the store).
  CHECK(p.stream(Engine::vector).front().waits.size() == 1);
  CHECK(p.stream(Engine::vector)[1].waits.empty());
  CHECK(p.stream(Engine::vector)[998].updates.empty());
  CHECK(p.stream(Engine::vector).back().updates.size() == 1);
  CHECK(k.choices["instructions"] == 1000);
  CHECK(k.choices["engine"] == "vector");
  trnsim::isa::validate(p, trnsim::config::trn2());
  trnsim::isa::validate(p, trnsim::config::trn1());
}

TEST_CASE("engine_stream runs activation on ScalarE and tensor_scalar on GpSimdE") {
  const LoweredKernel act = stream(R"("engine": "scalar", "instructions": 3)");
  REQUIRE(act.program.stream(Engine::scalar).size() == 3);
  CHECK(act.program.stream(Engine::scalar)[0].opcode == Opcode::activation);
  trnsim::isa::validate(act.program, trnsim::config::trn2());
  const LoweredKernel pool = stream(R"("engine": "gpsimd", "instructions": 3)");
  REQUIRE(pool.program.stream(Engine::gpsimd).size() == 3);
  CHECK(pool.program.stream(Engine::gpsimd)[0].opcode == Opcode::tensor_scalar);
  trnsim::isa::validate(pool.program, trnsim::config::trn2());
}

TEST_CASE("engine_stream's reference is y = 2x - 1 rounded to the dtype") {
  const LoweredKernel k = stream(R"("instructions": 2, "dtype": "bf16")", true);
  REQUIRE(k.inputs.size() == 1);
  REQUIRE(k.expected.size() == 1);
  const auto& x = k.inputs[0].values;
  const auto& y = k.expected[0].values;
  REQUIRE(x.size() == 128 * 64);
  for (size_t i = 0; i < x.size(); i += 97) {
    CHECK(y[i] == trnsim::isa::round_to(trnsim::isa::DType::bf16, x[i] * 2.0f - 1.0f));
  }
}

TEST_CASE("engine_stream refuses other engines, a bad count, a tile beyond SBUF, and params") {
  CHECK_THAT(error_of(R"("engine": "tensor")"), Contains("/engine") && Contains("gpsimd"));
  CHECK_THAT(error_of(R"("engine": 3)"), Contains("/engine"));
  CHECK_THAT(error_of(R"("instructions": 0)"), Contains("/instructions"));
  CHECK_THAT(error_of(R"("instructions": -4)"), Contains("/instructions"));
  CHECK_THAT(error_of(R"("instructions": 1000001)"), Contains("max_instructions"));
  CHECK_THAT(error_of(R"("params": {"bufs": 2})"), Contains("/params/bufs"));
  const auto wide =
      parse_workload(R"({"kernel": "engine_stream", "shape": [128, 65536]})", "w.json");
  CHECK_THROWS_WITH(lower(wide, trnsim::config::trn2(), false), Contains("/shape/1"));
  const auto tall = parse_workload(R"({"kernel": "engine_stream", "shape": [129, 64]})", "t.json");
  CHECK_THROWS_WITH(lower(tall, trnsim::config::trn2(), false), Contains("/shape/0"));
}
