// trnsim sweep (docs/sweeps.md) and arch files: the same results at any -j, bad sweep files
// refused before any point runs, a failed point not stopping the others, --resume, the plot.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {

// A small RMSNorm (a few microseconds simulated, a few milliseconds of host time per point).
const char* kSmallWorkload = R"({"kernel": "rmsnorm", "shape": [256, 512], "dtype": "bf16"})";

// A grid axis and a zip group: 2 x 3 points, and the base point (trn2's values) added first.
const char* kSweep = R"({
  "name": "small",
  "workloads": ["w.json"],
  "arch": "trn2",
  "grid": {"clock.scalar_mhz": [600, 2400]},
  "zip": {"hbm.stack_bytes_per_ns": [181.25, 362.5, 1450], "hbm_latency_ns": [35, 70, 140]}
})";

std::string sweep_dir(const std::string& name, const std::string& sweep = kSweep) {
  const std::string dir = fresh_dir(name);
  write_file(dir, "w.json", kSmallWorkload);
  write_file(dir, "s.json", sweep);
  return dir;
}

size_t count_lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Runs a sweep file that must be refused: exit 2, the message names `key`, nothing ran.
void refused(const std::string& name, const std::string& sweep, const std::string& key,
             const std::string& also = "") {
  const std::string dir = sweep_dir("sweep_bad_" + name, sweep);
  const Invocation r = trnsim("sweep " + dir + "/s.json --out " + dir + "/out", dir);
  INFO(name << ": " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(dir + "/s.json: " + key) != std::string::npos);
  if (!also.empty()) CHECK(r.err.find(also) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}

}  // namespace

TEST_CASE("sweep: -j 2 gives the same CSV and JSON as the serial sweep") {
  const std::string dir = sweep_dir("sweep_parallel");
  const Invocation serial = trnsim("sweep " + dir + "/s.json --out " + dir + "/serial", dir);
  INFO(serial.err);
  REQUIRE(serial.exit_code == 0);
  const Invocation parallel =
      trnsim("sweep " + dir + "/s.json -j 2 --out " + dir + "/parallel", dir);
  INFO(parallel.err);
  REQUIRE(parallel.exit_code == 0);
  const std::string csv = slurp(dir + "/serial/results.csv");
  CHECK(csv == slurp(dir + "/parallel/results.csv"));
  CHECK(slurp(dir + "/serial/results.json") == slurp(dir + "/parallel/results.json"));
  CHECK(slurp(dir + "/serial/table.txt") == slurp(dir + "/parallel/table.txt"));
  CHECK(count_lines(csv) == 1 + 7);  // header, the added base point, 2 x 3 points

  const nlohmann::json results = read_json(dir + "/serial/results.json");
  CHECK(results["parameters"] ==
        nlohmann::json({"clock.scalar_mhz", "hbm.stack_bytes_per_ns", "hbm_latency_ns"}));
  const auto& points = results["points"];
  REQUIRE(points.size() == 7);
  // The base point first, with trn2's values; then the grid, the zip varying fastest.
  CHECK(points[0]["point"] == "p000");
  CHECK(points[0]["base"] == true);
  CHECK(points[0]["parameters"]["clock.scalar_mhz"] == 1200);
  CHECK(points[0]["parameters"]["hbm.stack_bytes_per_ns"] == 725.0);
  CHECK(points[0]["speedup"] == 1.0);
  CHECK(points[1]["parameters"]["clock.scalar_mhz"] == 600);
  CHECK(points[1]["parameters"]["hbm.stack_bytes_per_ns"] == 181.25);
  CHECK(points[1]["parameters"]["hbm_latency_ns"] == 35.0);
  CHECK(points[2]["parameters"]["hbm.stack_bytes_per_ns"] == 362.5);
  CHECK(points[4]["parameters"]["clock.scalar_mhz"] == 2400);
  for (const auto& p : points) {
    INFO(p.dump());
    CHECK(p["status"] == "ok");
    CHECK(p["total_time_us"].get<double>() > 0);
    CHECK(p["neuroncore_cycle_count"].get<double>() > 0);
    CHECK(p["metrics"].contains("mbu_estimated_percent"));
    CHECK(p["metrics"].contains("scalar_engine_active_time_percent"));
    CHECK(p["speedup"].get<double>() ==
          Approx(points[0]["total_time_us"].get<double>() / p["total_time_us"].get<double>()));
    // Each point's own outputs, and what it ran with.
    const std::string pdir = dir + "/serial/points/" + p["point"].get<std::string>();
    CHECK(std::filesystem::exists(pdir + "/stats.json"));
    CHECK(read_json(pdir + "/stats.json")["arch"]["parameters"]["clock.scalar_mhz"] ==
          p["parameters"]["clock.scalar_mhz"]);
  }
  // A slower ScalarE is slower; the table marks the base point.
  CHECK(points[1]["total_time_us"].get<double>() > points[4]["total_time_us"].get<double>());
  CHECK(serial.out.find("p000*") != std::string::npos);
  CHECK(serial.out.find("results.csv") != std::string::npos);
  CHECK(serial.err.find("7/7 points done") != std::string::npos);
}

TEST_CASE("sweep: a grid point equal to the base arch is the base point, none is added") {
  const std::string dir = sweep_dir(
      "sweep_base_on_grid", R"({"workloads": "w.json", "grid": {"clock.vector_mhz": [480, 960]}})");
  const Invocation r = trnsim("sweep " + dir + "/s.json --out " + dir + "/o", dir);
  REQUIRE(r.exit_code == 0);
  const auto points = read_json(dir + "/o/results.json")["points"];
  REQUIRE(points.size() == 2);
  CHECK(points[0]["base"] == false);
  CHECK(points[1]["base"] == true);
  CHECK(points[1]["speedup"] == 1.0);
}

TEST_CASE("sweep: bad sweep files fail before any point runs, exit 2, naming the key") {
  refused("unknown_key", R"({"workloads": "w.json", "gird": {"pe_rows": [64]}})", "/gird",
          "did you mean \"grid\"?");
  refused("bad_parameter", R"({"workloads": "w.json", "grid": {"clock.scalr_mhz": [600]}})",
          "/grid/clock.scalr_mhz", "did you mean clock.scalar_mhz?");
  refused("out_of_range", R"({"workloads": "w.json", "grid": {"pe_rows": [64, 1024]}})",
          "/grid/pe_rows/1", "out of range");
  refused("inconsistent", R"({"workloads": "w.json", "grid": {"pe_columns": [128, 256]}})",
          "point p001 (pe_columns=256)", "set partitions too");
  refused("not_an_integer", R"({"workloads": "w.json", "grid": {"pe_rows": [64.5]}})",
          "/grid/pe_rows/0", "expected an integer");
  refused("not_a_number", R"({"workloads": "w.json", "grid": {"pe_rows": ["fast"]}})",
          "/grid/pe_rows/0", "expected a number");
  refused("flag", R"({"workloads": "w.json", "grid": {"vector_perf_modes": [2]}})",
          "/grid/vector_perf_modes/0", "true or false");
  refused("empty_grid", R"({"workloads": "w.json", "grid": {}})", "/grid", "empty");
  refused("empty_list", R"({"workloads": "w.json", "grid": {"pe_rows": []}})", "/grid/pe_rows",
          "empty list");
  refused("nothing_varied", R"({"workloads": "w.json"})", "/grid", "varies at least one");
  refused("zip_lengths",
          R"({"workloads": "w.json", "zip": {"pe_rows": [64, 128], "pe_columns": [64]}})",
          "/zip/pe_columns", "zipped lists");
  refused("set_and_varied",
          R"({"workloads": "w.json", "set": {"pe_rows": 64}, "grid": {"pe_rows": [32]}})",
          "/grid/pe_rows", "already set or varied at /set/pe_rows");
  refused("bad_set",
          R"({"workloads": "w.json", "set": {"hbm.t_rcd": -1}, "grid": {"pe_rows": [32]}})",
          "/set/hbm.t_rcd", "out of range");
  refused("missing_workload", R"({"workloads": ["nope.json"], "grid": {"pe_rows": [32]}})",
          "/workloads/0", "nope.json");
  refused("bad_workload", R"({"workloads": ["s.json"], "grid": {"pe_rows": [32]}})", "/workloads/0",
          "/kernel");
  refused("no_workloads", R"({"grid": {"pe_rows": [32]}})", "/workloads", "missing");
  refused("bad_arch", R"({"workloads": "w.json", "arch": "trn5", "grid": {"pe_rows": [32]}})",
          "/arch", "unknown preset");
  refused("plot_x",
          R"({"workloads": "w.json", "grid": {"pe_rows": [32]}, "plot": {"x": "pe_columns"}})",
          "/plot/x", "not varied");
  refused("plot_y", R"({"workloads": "w.json", "grid": {"pe_rows": [32]}, "plot": {"y": "time"}})",
          "/plot/y", "unknown metric");
  refused("malformed", "{\"workloads\": \"w.json\",\n \"grid\": {\"pe_rows\": [32]}", "line 2",
          "malformed JSON");
}

TEST_CASE("sweep: a failed point is reported with its error and does not stop the others") {
  // 1 KiB of SBUF per partition cannot hold the RMSNorm's tiles: those points fail in lowering.
  const std::string dir = sweep_dir(
      "sweep_failed_point",
      R"({"workloads": "w.json", "grid": {"sbuf_partition_bytes": [1024, 229376], "clock.scalar_mhz": [600, 1200]}})");
  const Invocation r = trnsim("sweep " + dir + "/s.json -j 2 --out " + dir + "/o", dir);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  const auto points = read_json(dir + "/o/results.json")["points"];
  REQUIRE(points.size() == 4);
  for (int i : {0, 1}) {
    CHECK(points[i]["status"] == "failed");
    CHECK(points[i]["exit_code"] == 2);
    CHECK(points[i]["error"].get<std::string>().find("SBUF") != std::string::npos);
    CHECK(points[i]["error"].get<std::string>().find("w.json: /shape") == 0);  // as written
    CHECK(points[i]["total_time_us"].is_null());
  }
  for (int i : {2, 3}) CHECK(points[i]["status"] == "ok");
  CHECK(r.err.find("point p000") != std::string::npos);
  CHECK(r.err.find("failed") != std::string::npos);
  CHECK(slurp(dir + "/o/results.csv").find("failed") != std::string::npos);
}

TEST_CASE("sweep: --resume reuses finished points and runs only the rest") {
  const std::string dir = sweep_dir("sweep_resume");
  REQUIRE(trnsim("sweep " + dir + "/s.json --out " + dir + "/o", dir).exit_code == 0);
  const std::string first = slurp(dir + "/o/results.json");
  // An interrupted sweep: p003 never finished. A marker shows whether p001 is run again.
  std::filesystem::remove(dir + "/o/points/p003/result.json");
  write_file(dir + "/o/points/p001", "marker", "kept");
  const Invocation r = trnsim("sweep " + dir + "/s.json --out " + dir + "/o --resume", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("6 reused") != std::string::npos);
  CHECK(std::filesystem::exists(dir + "/o/points/p001/marker"));
  CHECK(std::filesystem::exists(dir + "/o/points/p003/result.json"));
  CHECK(slurp(dir + "/o/results.json") == first);

  // A changed sweep reuses nothing whose definition changed: without --resume, all run again.
  const Invocation again = trnsim("sweep " + dir + "/s.json --out " + dir + "/o", dir);
  REQUIRE(again.exit_code == 0);
  CHECK(again.err.find("0 reused") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/o/points/p001/marker"));
  write_file(
      dir, "s.json",
      R"({"name": "small", "workloads": ["w.json"], "grid": {"clock.scalar_mhz": [600, 1200]}})");
  const Invocation changed = trnsim("sweep " + dir + "/s.json --out " + dir + "/o --resume", dir);
  REQUIRE(changed.exit_code == 0);
  CHECK(changed.err.find("0 reused") != std::string::npos);
  CHECK(read_json(dir + "/o/results.json")["points"].size() == 2);
}

TEST_CASE("sweep: without gnuplot it says so, skips the plot and still succeeds") {
  const std::string dir = sweep_dir("sweep_no_gnuplot");
  const Invocation r = trnsim("sweep " + dir + "/s.json --out " + dir + "/o", dir,
                              std::string("PATH=") + dir + "/no-such-dir " + TRNSIM_BINARY);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("gnuplot is not installed") != std::string::npos);
  CHECK(std::filesystem::exists(dir + "/o/results.csv"));
  CHECK(std::filesystem::exists(dir + "/o/plot.gp"));
  CHECK_FALSE(std::filesystem::exists(dir + "/o/plot.svg"));
  // With gnuplot on the PATH (Debian's gnuplot-nox), the same sweep draws plot.svg.
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    REQUIRE(trnsim("sweep " + dir + "/s.json --out " + dir + "/p", dir).exit_code == 0);
    CHECK(slurp(dir + "/p/plot.svg").find("<svg") != std::string::npos);
  }
}

TEST_CASE("sweep: bad options exit 2") {
  const std::string dir = sweep_dir("sweep_options");
  CHECK(trnsim("sweep " + dir + "/s.json -j 0 --out " + dir + "/o", dir).exit_code == 2);
  CHECK(
      trnsim("sweep " + dir + "/s.json --full --timing-only --out " + dir + "/o", dir).exit_code ==
      2);
  CHECK_FALSE(std::filesystem::exists(dir + "/o"));
  CHECK(trnsim("sweep", dir).exit_code == 2);
  CHECK(trnsim("sweep " + dir + "/nope.json", dir).err.find("nope.json") != std::string::npos);
}

TEST_CASE("arch file: a base preset with overrides runs, and params shows the sources") {
  const std::string dir = fresh_dir("arch_file");
  const std::string arch = write_file(dir, "wide.json", R"({
    "name": "wide", "base": "trn2",
    "parameters": {"clock.scalar_mhz": 2400,
                   "hbm.stack_bytes_per_ns": {"value": 1450, "unit": "B/ns", "source": "what-if: 2x"}}})");
  const Invocation r = trnsim(
      example("rmsnorm.json") + " --timing-only --arch " + arch + " --out " + dir + "/o", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("arch=wide") != std::string::npos);
  const auto stats = read_json(dir + "/o/stats.json");
  CHECK(stats["arch"]["parameters"]["clock.scalar_mhz"] == 2400);
  CHECK(stats["arch"]["parameters"]["clock.vector_mhz"] == 960);  // trn2's

  const Invocation p = trnsim("params --arch " + arch + " --set pe_columns=64", dir);
  CHECK(p.exit_code == 0);
  CHECK(p.out.find("based on trn2") != std::string::npos);
  CHECK(p.out.find("what-if: 2x") != std::string::npos);           // its own source
  CHECK(p.out.find("A2: VectorE 0.96 GHz") != std::string::npos);  // the base's
  CHECK(p.out.find("--set") != std::string::npos);
}

TEST_CASE("arch file: params --json prints a complete arch file that reads back the same") {
  const std::string dir = fresh_dir("arch_json");
  for (const char* preset : {"trn1", "trn2", "trn3"}) {
    const Invocation j = trnsim(std::string("params --json --arch ") + preset, dir);
    REQUIRE(j.exit_code == 0);
    const std::string file = write_file(dir, std::string("copy-") + preset + ".json", j.out);
    const Invocation a = trnsim(std::string("params --arch ") + preset, dir);
    const Invocation b = trnsim("params --arch " + file, dir);
    REQUIRE(b.exit_code == 0);
    // The same table below the header lines (which name the origin).
    CHECK(a.out.substr(a.out.find("\nname ")) == b.out.substr(b.out.find("\nname ")));
  }
}

TEST_CASE("arch file: errors name the file, the key and the expectation, exit 2") {
  const std::string dir = fresh_dir("arch_errors");
  const auto check_error = [&](const std::string& name, const std::string& text,
                               const std::string& key, const std::string& what) {
    const std::string file = write_file(dir, name + ".json", text);
    const Invocation r = trnsim("params --arch " + file, dir);
    INFO(name << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(file + ": " + key) != std::string::npos);
    CHECK(r.err.find(what) != std::string::npos);
  };
  check_error("unknown_key", R"({"base": "trn2", "paramters": {}})", "/paramters",
              "did you mean \"parameters\"?");
  check_error("unknown_parameter", R"({"base": "trn2", "parameters": {"pe_colums": 64}})",
              "/parameters/pe_colums", "did you mean pe_columns?");
  check_error("out_of_range", R"({"base": "trn2", "parameters": {"pe_rows": 4096}})",
              "/parameters/pe_rows", "out of range");
  check_error(
      "wrong_unit",
      R"({"base": "trn2", "parameters": {"clock.tensor_mhz": {"value": 3, "unit": "GHz"}}})",
      "/parameters/clock.tensor_mhz/unit", "expected \"MHz\"");
  check_error("flag", R"({"base": "trn2", "parameters": {"vector_perf_modes": 1}})",
              "/parameters/vector_perf_modes", "true or false");
  check_error("unknown_base", R"({"base": "trn22", "parameters": {}})", "/base",
              "did you mean \"trn2\"?");
  check_error("incomplete",
              R"({"parameters": {"pe_rows": {"value": 64, "unit": "rows", "source": "x"}}})",
              "/parameters", "parameters are missing");
  check_error("no_source", R"({"parameters": {"pe_rows": {"value": 64, "unit": "rows"}}})",
              "/parameters/pe_rows/source", "missing");
  const Invocation r = trnsim("params --arch trn4", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("trn1, trn2, trn3") != std::string::npos);
  CHECK(trnsim("params --arch " + dir + "/absent.json", dir).err.find("absent.json") !=
        std::string::npos);
}

TEST_CASE("sweep: --full runs the functional model and its check in every point") {
  const std::string dir = sweep_dir(
      "sweep_full", R"({"workloads": "w.json", "grid": {"clock.vector_mhz": [480, 960]}})");
  const Invocation r = trnsim("sweep " + dir + "/s.json --full --out " + dir + "/o", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* p : {"p000", "p001"}) {
    const auto stats = read_json(dir + "/o/points/" + p + "/stats.json");
    CHECK(stats["mode"] == "full");
    CHECK(stats["check"]["status"] == "pass");
  }
  CHECK(read_json(dir + "/o/results.json")["timing_only"] == false);
}

// Issue 22, item 5: a sweep over the core count. "workload.cores" varies the workload's own
// "cores": each point runs a copy of the workload with it replaced, the file's value is the
// base point, and the column is the count.
TEST_CASE("sweep: workload.cores varies the number of cores, the workload's own is the base") {
  const std::string dir = sweep_dir("sweep_cores", R"({
    "workloads": ["w.json"],
    "grid": {"workload.cores": [1, 2, 4]},
    "plot": {"x": "workload.cores"}
  })");
  const Invocation r = trnsim("sweep " + dir + "/s.json --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json results = read_json(dir + "/out/results.json");
  const auto& rows = results["points"];
  REQUIRE(rows.size() == 3);
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint64_t cores = uint64_t{1} << i;
    CHECK(rows[i]["parameters"]["workload.cores"] == cores);
    CHECK(rows[i]["status"] == "ok");
    CHECK(rows[i]["base"] == (i == 0));
    CHECK(rows[i]["kernel"] == "w");  // the copy keeps the file's name
    const nlohmann::json stats =
        read_json(dir + "/out/points/" + rows[i]["point"].get<std::string>() + "/stats.json");
    CHECK(stats.contains("cores") == (cores > 1));
    if (cores > 1) CHECK(stats["cores"].size() == cores);
  }
  CHECK(results["units"]["workload.cores"] == "cores");
  // Cores sharing HBM stacks: more cores are not faster on the same per-core work.
  CHECK(rows[1]["total_time_us"].get<double>() >= rows[0]["total_time_us"].get<double>());
}

TEST_CASE("sweep: workload.cores is refused where it cannot apply, before any point runs") {
  refused("cores_set", R"({"workloads": ["w.json"], "set": {"workload.cores": 2},
      "grid": {"clock.scalar_mhz": [600]}})",
          "/set/workload.cores", "is a workload key");
  refused("cores_zero", R"({"workloads": ["w.json"], "grid": {"workload.cores": [1, 0]}})",
          "/grid/workload.cores/1", "expected a positive integer");
  const std::string dir = sweep_dir("sweep_bad_cores_program", R"({
    "workloads": ["p.tasm"], "grid": {"workload.cores": [1, 2]}})");
  write_file(dir, "p.tasm", ".arch trn2\n");
  const Invocation r = trnsim("sweep " + dir + "/s.json --out " + dir + "/out", dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("only a workload in the kernel form") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}
