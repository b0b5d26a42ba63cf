// Issue 22, items 4 and 5: a tensor-parallel MLP over a chip's cores (and two chips) with its
// all-reduce, checked against the tensor-parallel computation's reference; the chip summary's
// collectives, exposed and overlapped; the committed scaling sweep.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {

const char* kTpMlp = R"({"kernel": "mlp", "activation": "gelu", "shape": [128, 256, 1024],
  "dtype": "bf16", "tensor_parallel": true, "cores": 4})";

}  // namespace

TEST_CASE("tensor-parallel MLP: each core's slice of F, one all-reduce, every core's y checked") {
  const std::string dir = fresh_dir("chip_tp_mlp");
  const std::string w = write_file(dir, "w.json", kTpMlp);
  const Run run = run_ok(w, "", "chip_tp_mlp_run");
  const auto& s = run.stats;
  CHECK(s["check"]["status"] == "pass");
  CHECK(s["check"]["mismatches"] == 0);
  REQUIRE(s["collectives"].size() == 1);
  const auto& cc = s["collectives"][0];
  CHECK(cc["op"] == "all_reduce");
  CHECK(cc["ranks"] == 4);
  CHECK(cc["bytes"] == 128 * 256 * 2);  // y in bf16, nccom-test's all_reduce size
  // Megatron's split: the all-reduce comes after both matmuls, so nothing overlaps it.
  CHECK(s["chip"]["collective_exposed_percent"].get<double>() > 99.0);
  CHECK(s["chip"]["collective_time_percent"].get<double>() > 0.0);
  // Every core takes part, so every core ends with the collective, at the run's end.
  for (const auto& c : s["cores"]) {
    CHECK(c["end_time"].get<double>() == Approx(s["summary"]["total_time"].get<double>()));
    CHECK(c["collective_exposed_time"].get<double>() > 0.0);
  }
  CHECK(run.invocation.out.find("chip: collectives") != std::string::npos);
  CHECK(run.invocation.out.find("collectives 1: all_reduce 64.0 KiB") != std::string::npos);
  // explain names the exposed all-reduce, with its cost.
  const Invocation x = trnsim("explain " + run.out, run.dir);
  CHECK(x.exit_code == 0);
  CHECK(x.out.find("collectives (exposed communication)") != std::string::npos);
  CHECK(x.out.find("all_reduce 0.1 MiB") != std::string::npos);
}

TEST_CASE("tensor-parallel MLP: more cores are faster, and two chips run it over NeuronLink") {
  const std::string dir = fresh_dir("chip_tp_scaling");
  auto time_of = [&](const std::string& extra, const std::string& tag) {
    const std::string w = write_file(
        dir, tag + ".json",
        R"({"kernel": "mlp", "activation": "gelu", "shape": [512, 1024, 4096], "dtype": "bf16",
            "tensor_parallel": true)" +
            extra + "}");
    const Run r = run_ok(w, "--timing-only --no-report", "chip_tp_" + tag);
    return r.stats["summary"]["total_time"].get<double>();
  };
  const double one = time_of("", "one");
  const double four = time_of(R"(, "cores": 4)", "four");
  const double eight = time_of(R"(, "cores": 8)", "eight");
  const double two_chips = time_of(R"(, "cores": 16, "chips": 2)", "two_chips");
  CHECK(four < 0.6 * one);
  CHECK(eight < four);
  CHECK(two_chips < one);
}

TEST_CASE("tensor-parallel MLP: bad tensor_parallel and an F the cores do not divide exit 2") {
  const std::string dir = fresh_dir("chip_tp_bad");
  const std::string flag =
      write_file(dir, "flag.json",
                 R"({"kernel": "mlp", "activation": "gelu", "shape": [128, 256, 1024], "cores": 2,
          "tensor_parallel": "yes"})");
  const Invocation a = trnsim(flag + " --timing-only --out " + dir + "/a", dir);
  CHECK(a.exit_code == 2);
  CHECK(a.err.find(flag + ": /tensor_parallel: expected true or false") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/a"));
  const std::string odd =
      write_file(dir, "odd.json",
                 R"({"kernel": "mlp", "activation": "gelu", "shape": [128, 256, 1000], "cores": 3,
          "tensor_parallel": true})");
  const Invocation b = trnsim(odd + " --timing-only --out " + dir + "/b", dir);
  CHECK(b.exit_code == 2);
  CHECK(b.err.find(odd + ": /shape/2: tensor_parallel splits F = 1000 over 3 cores") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/b"));
}

TEST_CASE("the committed scaling sweep runs 1, 2, 4, 8 cores and 2 chips, faster each time") {
  const std::string dir = fresh_dir("chip_tp_sweep");
  const Invocation r =
      trnsim("sweep " + example("sweeps/tp_mlp_scaling.json") + " -j 2 --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json results = read_json(dir + "/out/results.json");
  const auto& points = results["points"];
  REQUIRE(points.size() == 5);
  CHECK(points[0]["base"] == true);
  CHECK(points[4]["parameters"]["workload.chips"] == 2);
  for (size_t i = 1; i < points.size(); ++i) {
    INFO(i);
    CHECK(points[i]["speedup"].get<double>() > points[i - 1]["speedup"].get<double>());
  }
}

namespace {

// Core 0's program: an all-reduce of x into y, written for a set of 2 cores (.cores 2: core c
// draws x with seed + c, and the reference sums both cores' x).
const char* kCore0 = R"(.arch trn2
.cores 2
.sync manual
.tensor x fp32 [128, 512] init=normal(0, 1, seed=7)
.tensor y fp32 [128, 512]
.semaphore reduced
sp.collective y[:, :], x[:, :], cc=all_reduce, op0=add, update=reduced+=1
sp.nop wait=reduced>=1
.expect y = all_reduce_add(x)
)";

std::string program_set(const std::string& dir, const std::string& core1) {
  write_file(dir, "core0.tasm", kCore0);
  write_file(dir, "core1.tasm", core1);
  return write_file(dir, "set.json", R"({"programs": ["core0.tasm", "core1.tasm"]})");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("a program per core: different streams meet in their collective, each core checked") {
  const std::string dir = fresh_dir("chip_program_set");
  // Core 1 issues the same all-reduce from GpSimdE instead of SyncE.
  const std::string set = program_set(dir, replaced(kCore0, "sp.", "pool."));
  const Run run = run_ok(set, "", "chip_program_set_run");
  CHECK(run.stats["check"]["status"] == "pass");
  CHECK(run.stats["cores"].size() == 2);
  CHECK(run.stats["collectives"].size() == 1);
  CHECK(run.stats["summary"]["gpsimd_engine_instruction_count"] == 2);  // core 1's only
  CHECK(run.stats["summary"]["sync_engine_instruction_count"] == 2);    // core 0's only
  CHECK(run.invocation.out.find("lnc=") == std::string::npos);  // own HBM each, no logical core
}

TEST_CASE("a program per core: ranks that disagree exit 2 naming both cores, no outputs") {
  const std::string dir = fresh_dir("chip_program_set_disagree");
  const std::string set = program_set(
      dir,
      replaced(replaced(kCore0, "y[:, :], x[:, :]", "y[:, 0:256], x[:, 0:256]"), "sp.", "pool."));
  const Invocation r = trnsim(set + " --out " + dir + "/out", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("collective #0: the ranks disagree: core 1 triggered all_reduce op0=add fp32 "
                   "src 32768 elements") != std::string::npos);
  CHECK(r.err.find("core 0 triggered all_reduce op0=add fp32 src 65536 elements") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}

TEST_CASE("a program per core: a core that never reaches the collective is a deadlock report") {
  const std::string dir = fresh_dir("chip_program_set_deadlock");
  const std::string set = program_set(dir, R"(.arch trn2
.sync manual
.tensor x fp32 [128, 512]
.tensor y fp32 [128, 512]
.semaphore reduced
pool.nop
)");
  const Invocation r = trnsim(set + " --timing-only --out " + dir + "/out", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the program deadlocked") != std::string::npos);
  CHECK(r.err.find("core 0:") != std::string::npos);
  CHECK(r.err.find("SyncE stopped at instruction 1 (nop): waits for semaphore 0 (reduced)") !=
        std::string::npos);
  CHECK(r.err.find("waits for collective #0: cores {0} arrived, {1} did not") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}

TEST_CASE("a program set's bad input exits 2 naming the file and the entry") {
  const std::string dir = fresh_dir("chip_program_set_bad");
  write_file(dir, "core0.tasm", kCore0);
  write_file(dir, "other.tasm", replaced(kCore0, "[128, 512]", "[128, 256]"));
  write_file(dir, "w.json", R"({"kernel": "softmax", "shape": [128, 256]})");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"programs": ["core0.tasm"]})", "/programs: expected a list of at least two program"},
      {R"({"programs": ["core0.tasm", "w.json"]})",
       "/programs/1: " + dir + "/w.json is not a program"},
      {R"({"programs": ["core0.tasm", "other.tasm"]})",
       "/programs/1: " + dir + "/other.tasm declares other HBM tensors than core0.tasm"},
      {R"({"programs": ["core0.tasm", "core0.tasm"], "cores": 2})", "/cores: unknown key"},
      {R"({"programs": ["core0.tasm", "core0.tasm", "core0.tasm"]})",
       "is written for 2 cores (.cores); the set has 3"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string set = write_file(dir, "set" + std::to_string(i) + ".json", cases[i].first);
    const Invocation r = trnsim(set + " --out " + dir + "/out", dir);
    INFO(cases[i].first << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(set + ": ") != std::string::npos);
    CHECK(r.err.find(cases[i].second) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/out"));
  }
}
