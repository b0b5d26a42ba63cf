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

// The HBM bandwidth is one parameter: a what-if on the stack's peak moves the time and MBU
// together. MBU divides by what the HBM stacks the run uses could move (the Neuron profiler's
// total_bandwidth_available); it used to divide by a core's share of its stack, which a core
// running alone exceeds (issue 18, item 7).
TEST_CASE("HBM bandwidth: MBU divides by the peak of the HBM stacks the run uses") {
  for (const char* stack : {"725", "1450"}) {
    INFO(stack);
    const nlohmann::json s =
        run_stats("rmsnorm.json",
                  std::string("--timing-only --no-report --set hbm.stack_bytes_per_ns=") + stack,
                  std::string("mbu_") + stack);
    const auto& m = s["summary"];
    // One stack, which trn2's one core uses; its peak as the HBM model reaches it (bursts in
    // whole picoseconds: within 0.2% of the parameter).
    CHECK(m["hbm_stacks"] == 1);
    const double peak = m["hbm_peak_bytes_per_second"].get<double>();
    CHECK(peak == Approx(std::stod(stack) * 1e9).epsilon(0.002));
    const double bytes = m["hbm_read_bytes"].get<double>() + m["hbm_write_bytes"].get<double>();
    CHECK(m["mbu_estimated_percent"].get<double>() ==
          Approx(100 * bytes / (peak * m["total_time"].get<double>())).epsilon(1e-12));
    CHECK_FALSE(s["arch"]["parameters"].contains("hbm_bytes_per_ns"));
    CHECK(s["arch"]["parameters"]["hbm.stack_bytes_per_ns"] == std::stod(stack));
  }
}

// Issue 18, item 7: MBU was 116% on a streaming read and 195% with two cores on one stack.
TEST_CASE("MBU stays within 100% where the HBM is busiest, and is defined once") {
  int n = 0;
  for (const char* micro :
       {"micro/stream_read.json", "micro/contention_two_cores.json", "micro/hbm_to_hbm.json"}) {
    INFO(micro);
    const nlohmann::json s =
        run_stats(micro, "--timing-only --no-report", "mbu_bound_" + std::to_string(n++));
    const auto& m = s["summary"];
    CHECK(m["mbu_estimated_percent"].get<double>() > 50);
    CHECK(m["mbu_estimated_percent"].get<double>() <= 100);
    // One figure, one key: the former hbm_achieved_percent_of_peak was MBU under another name.
    CHECK_FALSE(m.contains("hbm_achieved_percent_of_peak"));
  }
}

TEST_CASE("the dropped hbm_bytes_per_ns is refused with what to set instead") {
  const std::string dir = trnsim_test::fresh_dir("whatif_dropped_share");
  const std::string instead =
      "hbm_bytes_per_ns: no longer a parameter: a core's share of the HBM bandwidth moved "
      "nothing but MBU, which divides by the peak of the HBM stacks the run uses; set "
      "hbm.stack_bytes_per_ns";
  const std::string w = example("rmsnorm.json") + " --timing-only --out " + dir + "/o ";
  const trnsim_test::Invocation set = trnsim_test::trnsim(w + "--set hbm_bytes_per_ns=725", dir);
  CHECK(set.exit_code == 2);
  CHECK(set.err.find("--set " + instead) != std::string::npos);
  const std::string arch = trnsim_test::write_file(
      dir, "share.json", R"({"base": "trn2", "parameters": {"hbm_bytes_per_ns": 725}})");
  const trnsim_test::Invocation file = trnsim_test::trnsim(w + "--arch " + arch, dir);
  CHECK(file.exit_code == 2);
  CHECK(file.err.find(arch + ": /parameters/" + instead) != std::string::npos);
  trnsim_test::write_file(dir, "w.json", R"({"kernel": "rmsnorm", "shape": [256, 512]})");
  const std::string sweep = trnsim_test::write_file(
      dir, "s.json", R"({"workloads": "w.json", "grid": {"hbm_bytes_per_ns": [181.25, 362.5]}})");
  const trnsim_test::Invocation sw =
      trnsim_test::trnsim("sweep " + sweep + " --out " + dir + "/sweep", dir);
  CHECK(sw.exit_code == 2);
  CHECK(sw.err.find(sweep + ": /grid/" + instead) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/o/stats.json"));
  CHECK(trnsim_test::trnsim("params --set hbm_bytes_per_ns=1", dir).exit_code == 2);
}

// Issue 22, item 5: a multi-core run says, per core, what kept it busy and when it ended, and
// how evenly the chip's cores were loaded; a single-core run's outputs have none of it.
TEST_CASE("a multi-core run reports each core and the chip's load balance") {
  const trnsim_test::Run two =
      trnsim_test::run_ok(example("micro/contention_two_cores.json"), "--timing-only", "chip_two");
  const auto& cores = two.stats["cores"];
  REQUIRE(cores.size() == 2);
  for (const auto& c : cores) {
    CHECK(c["dma_bytes"] == 32ULL << 20);
    CHECK(c["busiest_time"] == c["dma_active_time"]);  // a DMA-only kernel
    CHECK(c["end_time"].get<double>() <= two.stats["summary"]["total_time"].get<double>());
  }
  // Both cores run the same stream over one HBM stack: nearly even.
  const double balance = two.stats["chip"]["load_balance"].get<double>();
  CHECK(balance > 0.95);
  CHECK(balance <= 1.0);
  CHECK(two.invocation.out.find("chip: 2 cores, load balance") != std::string::npos);
  // A kernel's bound is a share of its time per core: at most 100% however many cores run it
  // (it summed the cores' engine times, 654% on 8 cores).
  const auto& kernel = two.stats["kernels"][0];
  CHECK(kernel["cores"] == 2);
  CHECK(kernel["bound_by_percent"].get<double>() <= 100.0);
  const trnsim_test::Run one =
      trnsim_test::run_ok(example("micro/contention_one_core.json"), "--timing-only", "chip_one");
  CHECK_FALSE(one.stats.contains("cores"));
  CHECK_FALSE(one.stats.contains("chip"));
  CHECK(one.invocation.out.find("chip:") == std::string::npos);
}
