// trnsim check and --set: golden files, tolerances, drift reports, --update; parameter
// overrides with type, range and name checks.
#include <catch2/catch.hpp>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {
std::string golden_copy(const std::string& dir, const std::string& tolerance = "") {
  auto g = read_json(std::string(TRNSIM_SOURCE_DIR) + "/tests/golden/rmsnorm.json");
  g["workload"] = example("rmsnorm.json");
  if (!tolerance.empty()) g["tolerance"] = nlohmann::json::parse(tolerance);
  return write_file(dir, "golden.json", g.dump(2));
}
}  // namespace

TEST_CASE("check passes on an unchanged model and exits 0") {
  const std::string dir = fresh_dir("check_pass");
  const Invocation r = trnsim("check --golden " + golden_copy(dir) + " --out " + dir + "/o", dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("check: PASS rmsnorm (trn2): 15 metrics within tolerance") != std::string::npos);
}

TEST_CASE(
    "a cost constant changed by 5% makes check fail with a diff naming the metric and kernel") {
  const std::string dir = fresh_dir("check_drift");
  // ScalarE bounds the example: its clock 5% slower moves the cycle count.
  const Invocation r = trnsim(
      "check --golden " + golden_copy(dir) + " --set clock.scalar_mhz=1140 --out " + dir + "/o",
      dir);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("check: DRIFT rmsnorm (trn2)") != std::string::npos);
  CHECK(r.out.find("neuroncore_cycle_count") != std::string::npos);
  CHECK(r.out.find("156584") != std::string::npos);  // golden
  CHECK(r.out.find("where the time moved in kernel rmsnorm") != std::string::npos);
  CHECK(r.out.find("scalar_engine_active_time") != std::string::npos);
  // The same change for a constant the kernel does not depend on passes.
  CHECK(trnsim("check --golden " + golden_copy(dir) + " --set clock.tensor_mhz=2280 --out " + dir +
                   "/o2",
               dir)
            .exit_code == 0);
}

TEST_CASE("check tolerances: relative and absolute, per metric or by default") {
  const std::string dir = fresh_dir("check_tolerance");
  const std::string five = " --set clock.scalar_mhz=1140 --out " + dir + "/o";
  CHECK(trnsim("check --golden " + golden_copy(dir, R"({"default": {"rel": 0.06}})") + five, dir)
            .exit_code == 0);
  CHECK(trnsim("check --golden " + golden_copy(dir, R"({"default": {"rel": 0.04}})") + five, dir)
            .exit_code == 1);
  const Invocation r =
      trnsim("check --golden " +
                 golden_copy(
                     dir, R"({"default": {"rel": 0.06}, "neuroncore_cycle_count": {"abs": 100}})") +
                 five,
             dir);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("1 of 15 metrics") != std::string::npos);
  CHECK(r.out.find("abs 100 + rel 0") != std::string::npos);  // its own entry replaces the default
}

TEST_CASE("check --update rewrites the golden file and says what changed") {
  const std::string dir = fresh_dir("check_update");
  const std::string g = golden_copy(dir);
  const Invocation u = trnsim(
      "check --golden " + g + " --update --set clock.scalar_mhz=1140 --out " + dir + "/o", dir);
  INFO(u.err);
  CHECK(u.exit_code == 0);
  CHECK(u.out.find("updated") != std::string::npos);
  CHECK(u.out.find("156584 -> 163313") != std::string::npos);
  CHECK(read_json(g)["summary"]["neuroncore_cycle_count"] == 163313);
  CHECK(trnsim("check --golden " + g + " --set clock.scalar_mhz=1140 --out " + dir + "/o", dir)
            .exit_code == 0);
  // A new golden file gets the default metrics.
  const std::string fresh = dir + "/new.json";
  const Invocation c = trnsim("check " + example("micro_act.tasm") + " --golden " + fresh +
                                  " --update --out " + dir + "/o3",
                              dir);
  CHECK(c.exit_code == 0);
  CHECK(read_json(fresh)["summary"].size() == 15);
}

TEST_CASE("check with a bad golden file exits 2 naming it") {
  const std::string dir = fresh_dir("check_bad");
  CHECK(trnsim("check --golden " + dir + "/missing.json", dir).exit_code == 2);
  const std::string bad =
      write_file(dir, "bad.json", R"({"workload": "x.json", "summary": {"a": "b"}})");
  const Invocation r = trnsim("check --golden " + bad, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("/summary/a: expected a number") != std::string::npos);
  const std::string tol =
      write_file(dir, "tol.json",
                 R"({"workload": "x.json", "summary": {}, "tolerance": {"default": {"rl": 1}}})");
  CHECK(trnsim("check --golden " + tol, dir).err.find("/tolerance/default/rl") !=
        std::string::npos);
}

TEST_CASE("set: --set checks the name, the type and the range before anything runs") {
  const std::string dir = fresh_dir("set_errors");
  const std::string w = example("rmsnorm.json") + " --out " + dir + "/o ";
  const Invocation typo = trnsim(w + "--set clock.scalr_mhz=1000", dir);
  CHECK(typo.exit_code == 2);
  CHECK(typo.err.find("did you mean clock.scalar_mhz?") != std::string::npos);
  CHECK(trnsim(w + "--set pe_rows=1.5", dir).err.find("expected an integer") != std::string::npos);
  CHECK(trnsim(w + "--set pe_rows=600", dir).err.find("out of range") != std::string::npos);
  // In range alone, but deeper than the partitions: named with the parameter to change.
  CHECK(trnsim(w + "--set pe_columns=256", dir).err.find("set partitions too") !=
        std::string::npos);
  CHECK(trnsim(w + "--set vector_perf_modes=maybe", dir).err.find("true or false") !=
        std::string::npos);
  CHECK(trnsim(w + "--set pe_rows", dir).err.find("name=value") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/o/stats.json"));
}

TEST_CASE("set: --set changes the model and stats.json records it, trnsim params lists it") {
  const std::string dir = fresh_dir("set_applies");
  REQUIRE(
      trnsim(example("rmsnorm.json") + " --timing-only --set hbm.t_rcd=20 --out " + dir + "/o", dir)
          .exit_code == 0);
  CHECK(read_json(dir + "/o/stats.json")["arch"]["parameters"]["hbm.t_rcd"] == 20.0);
  const Invocation p = trnsim("params --arch trn1 --set clock.vector_mhz=2000", dir);
  CHECK(p.exit_code == 0);
  CHECK(p.out.find("parameters of trn1") != std::string::npos);
  CHECK(p.out.find("clock.vector_mhz") != std::string::npos);
  CHECK(p.out.find("2000") != std::string::npos);
}

// Issue 18, item 4: golden files stored the workload path as given (absolute if given so, else
// relative to where trnsim ran), so they broke when the repository moved.
TEST_CASE("check --update stores the workload relative to the golden file: the pair can move") {
  namespace fs = std::filesystem;
  const std::string dir = fresh_dir("check_relative");
  fs::create_directories(dir + "/project/golden");
  fs::create_directories(dir + "/elsewhere");
  write_file(dir + "/project", "small.json",
             R"({"kernel": "rmsnorm", "shape": [256, 1024], "dtype": "bf16"})");
  const std::string golden = dir + "/project/golden/small.golden.json";
  const Invocation u = trnsim(
      "check " + dir + "/project/small.json --golden " + golden + " --update --out " + dir + "/o",
      dir);
  INFO(u.err);
  REQUIRE(u.exit_code == 0);
  CHECK(read_json(golden)["workload"] == "../small.json");
  CHECK(read_json(golden)["arch"] == "trn2");
  // The project moves; the check runs from another directory, without naming the workload.
  fs::rename(dir + "/project", dir + "/moved");
  const std::string from_elsewhere = "cd " + dir + "/elsewhere && " + TRNSIM_BINARY;
  const Invocation c = trnsim(
      "check --golden ../moved/golden/small.golden.json --out " + dir + "/o2", dir, from_elsewhere);
  INFO(c.err);
  CHECK(c.exit_code == 0);
  CHECK(c.out.find("check: PASS small (trn2)") != std::string::npos);
  CHECK(c.err.empty());
  // A golden file of an earlier version, its workload relative to where trnsim ran, still
  // works from there, with a warning saying how to move on.
  auto g = read_json(dir + "/moved/golden/small.golden.json");
  g["workload"] = "moved/small.json";
  write_file(dir + "/moved/golden", "old.json", g.dump(2));
  const Invocation old =
      trnsim("check --golden " + dir + "/moved/golden/old.json --out " + dir + "/o3", dir,
             "cd " + dir + " && " + TRNSIM_BINARY);
  CHECK(old.exit_code == 0);
  CHECK(old.err.find("moved/small.json is not beside the golden file; taken from the current "
                     "directory") != std::string::npos);
}
