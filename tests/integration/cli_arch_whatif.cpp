// What-if arches beyond the presets: a 256 x 256 PE array over 256 partitions changes the
// lowering (bigger tiles, fewer matmuls), and the functional model stays right.
#include <catch2/catch.hpp>

#include "cli_support.hpp"

using trnsim_test::example;

namespace {

nlohmann::json run_stats(const std::string& workload, const std::string& extra,
                         const std::string& tag) {
  return trnsim_test::run_ok(example(workload), extra, "whatif_" + tag).stats;
}

const char* kWide = "--set partitions=256 --set pe_rows=256 --set pe_columns=256";

}  // namespace

TEST_CASE("a 256-wide PE array takes bigger tiles and fewer matmuls") {
  const auto base = run_stats("matmul_s4.json", "--timing-only", "base");
  const auto wide = run_stats("matmul_s4.json", std::string("--timing-only ") + kWide, "wide");
  CHECK(base["choices"]["tile_m"] == 128);
  CHECK(base["choices"]["tile_k"] == 128);
  CHECK(wide["choices"]["tile_m"] == 256);
  CHECK(wide["choices"]["tile_k"] == 256);
  // Twice as wide and twice as deep: a quarter of the matmul instructions.
  CHECK(wide["summary"]["tensor_engine_instruction_count"].get<uint64_t>() * 4 ==
        base["summary"]["tensor_engine_instruction_count"].get<uint64_t>());
  CHECK(wide["summary"]["total_time"].get<double>() < base["summary"]["total_time"].get<double>());
}

TEST_CASE("kernels on a 256-partition arch pass their functional checks") {
  // Flash attention contracts over 256 partitions in its matmuls: Eigen's products then need
  // more stack than SystemC's default coroutine stack (it crashed before the engines' threads
  // got a larger one).
  for (const char* w : {"attention.json", "matmul_s1.json", "rmsnorm.json"}) {
    INFO(w);
    const auto s = run_stats(w, kWide, std::string("functional_") + w);
    CHECK(s["check"]["status"] == "pass");
  }
}
