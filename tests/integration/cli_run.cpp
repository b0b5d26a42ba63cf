// trnsim run as a user runs it: the summary, the output files, determinism, timing-only.
#include <catch2/catch.hpp>
#include <set>

#include "cli_support.hpp"

using namespace trnsim_test;

TEST_CASE("trnsim prints the summary and writes stats.json and trace.json") {
  const std::string dir = fresh_dir("run_summary");
  const Invocation r = trnsim(example("rmsnorm.json") + " --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("arch=trn2") != std::string::npos);
  CHECK(r.out.find("NeuronCore cycles") != std::string::npos);
  CHECK(r.out.find("check: PASS") != std::string::npos);
  for (const char* engine : {"TensorE", "VectorE", "ScalarE", "GpSimdE", "SyncE", "DMA"}) {
    CHECK(r.out.find(engine) != std::string::npos);
  }
  const auto stats = read_json(dir + "/out/stats.json");
  CHECK(stats["check"]["status"] == "pass");
  CHECK(stats["summary"]["neuroncore_cycle_count"].get<uint64_t>() > 0);
  CHECK(stats["summary"]["dma_transfer_bytes"].get<uint64_t>() > 0);
  // 2048 x 4096 bf16 in and out, plus gamma broadcast to 128 partitions.
  CHECK(stats["summary"]["hbm_read_bytes"] == 2048 * 4096 * 2 + 128 * 4096 * 2);
  CHECK(stats["summary"]["hbm_write_bytes"] == 2048 * 4096 * 2);
  CHECK(stats["choices"]["bufs"] == 2);
}

TEST_CASE(
    "trace.json has a lane per engine and per DMA queue, a slice per instruction and "
    "transfer") {
  const std::string dir = fresh_dir("run_trace");
  const Invocation r = trnsim(example("rmsnorm.json") + " --out " + dir, dir);
  REQUIRE(r.exit_code == 0);
  const auto trace = read_json(dir + "/trace.json");
  const auto stats = read_json(dir + "/stats.json");
  std::set<std::string> lanes;
  size_t instructions = 0, transfers = 0, waits = 0;
  double last_end_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") lanes.insert(e["args"]["name"]);
    if (e["ph"] != "X") continue;
    last_end_us = std::max(last_end_us, e["ts"].get<double>() + e["dur"].get<double>());
    if (e["cat"] == "instruction") {
      ++instructions;
      CHECK(e["args"].contains("opcode"));
      CHECK(e["args"].contains("operands"));
    }
    if (e["cat"] == "dma") ++transfers;
    if (e["cat"] == "semaphore") ++waits;
  }
  // "DMA qSyncIn #2": the loads of gamma and of the first x tile are in flight together.
  CHECK(lanes == std::set<std::string>{"Kernels", "TensorE", "VectorE", "ScalarE", "GpSimdE",
                                       "SyncE", "DMA qSyncIn", "DMA qSyncIn #2", "DMA qSyncOut"});
  uint64_t counted = 0;
  for (const char* e : {"tensor", "vector", "scalar", "gpsimd", "sync"}) {
    counted += stats["summary"][std::string(e) + "_engine_instruction_count"].get<uint64_t>();
  }
  CHECK(instructions == counted);
  CHECK(transfers == stats["summary"]["dma_transfer_count"].get<uint64_t>());
  CHECK(waits > 0);
  CHECK(last_end_us * 1e6 == Approx(stats["summary"]["total_time_ps"].get<double>()));
}

TEST_CASE("timing-only mode gives the same cycle count as the full run") {
  const std::string dir = fresh_dir("run_timing_only");
  REQUIRE(trnsim(example("rmsnorm.json") + " --out " + dir + "/full", dir).exit_code == 0);
  const Invocation t = trnsim(example("rmsnorm.json") + " --timing-only --out " + dir + "/t", dir);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("check: skipped") != std::string::npos);
  const auto full = read_json(dir + "/full/stats.json");
  const auto timing = read_json(dir + "/t/stats.json");
  CHECK(full["summary"] == timing["summary"]);
  CHECK(timing["check"]["status"] == "skipped");
  CHECK(slurp(dir + "/full/trace.json") == slurp(dir + "/t/trace.json"));
}

TEST_CASE("a second run gives byte-identical stats.json and trace.json") {
  const std::string dir = fresh_dir("run_deterministic");
  REQUIRE(trnsim(example("rmsnorm.json") + " --out " + dir + "/a", dir).exit_code == 0);
  REQUIRE(trnsim(example("rmsnorm.json") + " --out " + dir + "/b", dir).exit_code == 0);
  const std::string a = slurp(dir + "/a/stats.json");
  CHECK(!a.empty());
  CHECK(a == slurp(dir + "/b/stats.json"));
  CHECK(slurp(dir + "/a/trace.json") == slurp(dir + "/b/trace.json"));
}

TEST_CASE("trn1 and trn2 presets give different timings for the same workload") {
  const std::string dir = fresh_dir("run_presets");
  REQUIRE(trnsim(example("rmsnorm.json") + " --timing-only --arch trn1 --out " + dir + "/1", dir)
              .exit_code == 0);
  REQUIRE(trnsim(example("rmsnorm.json") + " --timing-only --arch trn2 --out " + dir + "/2", dir)
              .exit_code == 0);
  const auto s1 = read_json(dir + "/1/stats.json");
  const auto s2 = read_json(dir + "/2/stats.json");
  CHECK(s1["arch"]["name"] == "trn1");
  CHECK(s2["arch"]["name"] == "trn2");
  CHECK(s1["summary"]["total_time_ps"] != s2["summary"]["total_time_ps"]);
}

TEST_CASE("trnsim run WORKLOAD is the same as trnsim WORKLOAD") {
  const std::string dir = fresh_dir("run_subcommand");
  const Invocation r =
      trnsim("run " + example("rmsnorm.json") + " --timing-only --out " + dir, dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("mode=timing-only") != std::string::npos);
}

TEST_CASE("the matmul and mlp examples pass their checks, the same in timing-only mode") {
  for (const std::string name : {"matmul_s1", "matmul_s4", "mlp_gelu"}) {
    INFO(name);
    const std::string dir = fresh_dir("run_" + name);
    const Invocation r = trnsim(example(name + ".json") + " --out " + dir + "/full", dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("check: PASS") != std::string::npos);
    REQUIRE(trnsim(example(name + ".json") + " --timing-only --out " + dir + "/t", dir).exit_code ==
            0);
    const auto full = read_json(dir + "/full/stats.json");
    CHECK(full["summary"] == read_json(dir + "/t/stats.json")["summary"]);
    CHECK(full["summary"]["hbm_read_bytes"] == full["choices"]["hbm_bytes_loaded"]);
  }
  // 512 x 1024 x 1024 bf16: strategy 4's one block reads A and B once and writes C.
  const auto s4 = read_json(std::string(TRNSIM_TEST_OUT) + "/run_matmul_s4/full/stats.json");
  CHECK(s4["summary"]["hbm_read_bytes"] == (512 * 1024 + 1024 * 1024) * 2);
  CHECK(s4["summary"]["hbm_write_bytes"] == 512 * 1024 * 2);
  CHECK(s4["summary"]["model_flops"] == 2ULL * 512 * 1024 * 1024);
  CHECK(s4["choices"]["strategy"] == 4);
  CHECK(s4["choices"]["block_k"] == 1024);
}
