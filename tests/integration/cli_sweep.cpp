// trnsim sweep (docs/sweeps.md) and arch files: the same results at any -j, bad sweep files
// refused before any point runs, a failed point not stopping the others, --resume, the plot.
#include <fmt/format.h>
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

// Issue 22: sweeps over an NKI kernel's logical core. A .py workload runs as `trnsim run
// kernel.py --kernel ... --input ... --grid ... --lnc ...` with the sweep file's "kernel"
// object; "kernel.lnc" and "kernel.grid" vary --lnc and --grid.
namespace {

std::string nki_kernel_path(const char* file) {
  return std::string(TRNSIM_SOURCE_DIR) + "/tests/python/kernels/" + file;
}

// A sweep file over tests/python/kernels/stream_copy.py with `rest` after its "kernel" object.
std::string nki_sweep(const std::string& kernel, const std::string& rest) {
  return fmt::format(R"({{"workloads": ["{}"], "kernel": {}, {}}})",
                     nki_kernel_path("stream_copy.py"), kernel, rest);
}

const char* kCopyKernel =
    R"({"name": "copy_spmd", "inputs": {"a": "256x1024:float32"}, "grid": 2})";

}  // namespace

TEST_CASE("sweep: an NKI kernel's logical core and grid are refused where they cannot apply") {
  // The kernel object.
  refused("nki_missing_kernel",
          fmt::format(R"({{"workloads": ["{}"], "grid": {{"kernel.lnc": [1, 2]}}}})",
                      nki_kernel_path("stream_copy.py")),
          "/workloads/0", "needs \"kernel\"");
  refused("nki_no_name",
          nki_sweep(R"({"inputs": {"a": "256x1024"}})", R"("grid": {"kernel.lnc": [1]})"),
          "/kernel/name", "missing");
  refused("nki_unknown_key",
          nki_sweep(R"({"name": "copy_spmd", "grdi": 2})", R"("grid": {"kernel.lnc": [1]})"),
          "/kernel/grdi", "did you mean \"grid\"?");
  refused("nki_bad_shape",
          nki_sweep(R"({"name": "copy_spmd", "inputs": {"a": "256by1024"}})",
                    R"("grid": {"kernel.lnc": [1]})"),
          "/kernel/inputs/a", "expected SHAPE[:DTYPE]");
  refused("nki_missing_npy",
          nki_sweep(R"({"name": "copy_spmd", "inputs": ["a=nope.npy"]})",
                    R"("grid": {"kernel.lnc": [1]})"),
          "/kernel/inputs/0", "nope.npy");
  refused("nki_bad_grid",
          nki_sweep(R"({"name": "copy_spmd", "grid": 0})", R"("grid": {"kernel.lnc": [1]})"),
          "/kernel/grid", "positive integer");
  refused("nki_bad_lnc_object",
          nki_sweep(R"({"name": "copy_spmd", "lnc": 4})", R"("grid": {"pe_rows": [64]})"),
          "/kernel/lnc", "expected 1 or 2");
  // The axes.
  refused("nki_lnc_3", nki_sweep(kCopyKernel, R"("grid": {"kernel.lnc": [1, 3]})"),
          "/grid/kernel.lnc/1", "expected 1 or 2");
  refused("nki_grid_zero", nki_sweep(kCopyKernel, R"("zip": {"kernel.grid": [2, 0]})"),
          "/zip/kernel.grid/1", "positive integer");
  refused("nki_lnc_set",
          nki_sweep(kCopyKernel, R"("set": {"kernel.lnc": 2}, "grid": {"pe_rows": [64]})"),
          "/set/kernel.lnc", "is a kernel key");
  refused("nki_lnc_trn1",
          nki_sweep(kCopyKernel, R"("arch": "trn1", "grid": {"kernel.lnc": [1, 2]})"),
          "/grid/kernel.lnc/1 (point p001)", "trn1 has no logical cores of 2");
  refused("nki_lnc_odd_grid",
          nki_sweep(R"({"name": "copy_spmd", "inputs": {"a": "384x1024"}, "grid": 3})",
                    R"("grid": {"kernel.lnc": [1, 2]})"),
          "/grid/kernel.lnc/1 (point p001)", "not a multiple of 2");
  refused("nki_cores_on_py", nki_sweep(kCopyKernel, R"("grid": {"workload.cores": [1, 2]})"),
          "/workloads/0", "vary kernel.lnc");
  refused("nki_kernel_without_py",
          R"({"workloads": ["w.json"], "kernel": {"name": "k"}, "grid": {"pe_rows": [64]}})",
          "/kernel", "no workload is an NKI kernel");
  refused(
      "nki_lnc_on_json",
      fmt::format(
          R"({{"workloads": ["w.json", "{}"], "kernel": {}, "grid": {{"kernel.lnc": [1, 2]}}}})",
          nki_kernel_path("stream_copy.py"), kCopyKernel),
      "/workloads/0", "only a .py workload has");
}

#ifdef TRNSIM_TEST_NKI
namespace {
// 26 ns per DMA descriptor (trn2: 1) holds the small copy by each core's DMA engines, so the
// second core's engines pay off; at trn2's own value this 1 MiB copy is held by the shared
// stack and lnc 2 gains nothing (4.28 us at lnc 1, 4.38 us at lnc 2).
const char* kLncAxis = R"("grid": {"kernel.lnc": [1, 2]},
        "set": {"dma_descriptor_overhead_ns": 26}, "plot": {"x": "kernel.lnc"})";
}  // namespace

TEST_CASE("sweep: kernel.lnc runs an NKI kernel on one and on two physical cores") {
  const std::string dir = sweep_dir("sweep_nki_lnc", nki_sweep(kCopyKernel, kLncAxis));
  const Invocation r = trnsim("sweep " + dir + "/s.json -j 2 --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json results = read_json(dir + "/out/results.json");
  CHECK(results["parameters"] == nlohmann::json({"kernel.lnc"}));
  CHECK(results["units"]["kernel.lnc"] == "physical cores");
  const auto& rows = results["points"];
  REQUIRE(rows.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    INFO(rows[i].dump());
    CHECK(rows[i]["status"] == "ok");
    CHECK(rows[i]["parameters"]["kernel.lnc"] == i + 1);
    CHECK(rows[i]["base"] == (i == 0));  // lnc 1, the kernel object's default, is the base
    CHECK(rows[i]["kernel"] == "copy_spmd");
  }
  const nlohmann::json one = read_json(dir + "/out/points/p000/stats.json");
  const nlohmann::json two = read_json(dir + "/out/points/p001/stats.json");
  CHECK_FALSE(one.contains("cores"));
  REQUIRE(two.contains("chip"));
  CHECK(two["chip"]["lnc"] == 2);
  CHECK(two["chip"]["cores"] == 2);
  CHECK(two["cores"].size() == 2);
  // Each point traced the kernel with its own --lnc, the sweep file's inputs and grid.
  CHECK(read_json(dir + "/out/points/p001/point.json")["kernel"]["lnc"] == "2");
  CHECK(read_json(dir + "/out/points/p001/point.json")["kernel"]["grid"] == "2");
  // Two cores copy the two bands at once: faster, and the speedup is against lnc 1.
  CHECK(rows[1]["total_time_us"].get<double>() < rows[0]["total_time_us"].get<double>());
  CHECK(rows[1]["speedup"].get<double>() > 1.0);
  CHECK(slurp(dir + "/out/results.csv").find("point,workload,base,kernel.lnc,status") == 0);

  // --resume knows the points by their kernel too: the same sweep reuses both, other inputs none.
  const std::string first = slurp(dir + "/out/results.json");
  const Invocation resumed = trnsim("sweep " + dir + "/s.json --resume --out " + dir + "/out", dir);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err.find("2 reused") != std::string::npos);
  CHECK(slurp(dir + "/out/results.json") == first);
  write_file(dir, "s.json",
             nki_sweep(R"({"name": "copy_spmd", "inputs": {"a": "256x512:float32"}, "grid": 2})",
                       kLncAxis));
  const Invocation changed = trnsim("sweep " + dir + "/s.json --resume --out " + dir + "/out", dir);
  REQUIRE(changed.exit_code == 0);
  CHECK(changed.err.find("0 reused") != std::string::npos);

  // kernel.grid varies --grid: the kernel object gives none, so the axis's first value is the
  // base. Grid 2 copies both 128-row bands, grid 1 the first only.
  const std::string grid_dir = sweep_dir(
      "sweep_nki_grid", nki_sweep(R"({"name": "copy_spmd", "inputs": {"a": "256x1024:float32"}})",
                                  R"("grid": {"kernel.grid": [1, 2]})"));
  const Invocation g = trnsim("sweep " + grid_dir + "/s.json --out " + grid_dir + "/out", grid_dir);
  INFO(g.err);
  REQUIRE(g.exit_code == 0);
  const nlohmann::json grid_rows = read_json(grid_dir + "/out/results.json")["points"];
  REQUIRE(grid_rows.size() == 2);
  CHECK(grid_rows[0]["base"] == true);
  CHECK(grid_rows[1]["parameters"]["kernel.grid"] == 2);
  CHECK(read_json(grid_dir + "/out/points/p001/point.json")["kernel"]["grid"] == "2");
  CHECK(grid_rows[1]["total_time_us"].get<double>() > grid_rows[0]["total_time_us"].get<double>());
}
#endif
