// trnsim tune and trnsim explain --apply (docs/tune.md) as a user runs them: the space listed,
// bad input refused with exit 2 before anything runs, a tune's winner never slower than the
// default and its runnable file giving the reported time, --resume reusing finished points,
// and an applied suggestion's reported gain equal to a separate run's.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli_support.hpp"

using namespace trnsim_test;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

// A small RMSNorm: 60 points, a few milliseconds of host time each.
const char* kSmall = R"({"kernel": "rmsnorm", "shape": [256, 512], "dtype": "bf16"})";

// Refused: exit 2, nothing on stdout, the message holds `what`, no results written.
void refused(const std::string& tag, const std::string& workload, const std::string& args,
             const std::string& what) {
  const std::string dir = fresh_dir("tune_bad_" + tag);
  const std::string w = write_file(dir, "w.json", workload);
  const Invocation r = trnsim("tune " + w + " " + args + " --out " + dir + "/out", dir);
  INFO(tag << ": " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(what) != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out/results.json"));
  CHECK_FALSE(fs::exists(dir + "/out/results.csv"));
  // No point was simulated.
  CHECK((!fs::exists(dir + "/out/points") || fs::is_empty(dir + "/out/points")));
}

double total_time_ns(const json& stats) {
  return stats.at("summary").at("total_time_ps").get<double>() / 1e3;
}

}  // namespace

TEST_CASE("tune --list prints a kernel's space and its size") {
  const std::string dir = fresh_dir("tune_list");
  const Invocation r = trnsim("tune --list rmsnorm", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("rmsnorm [2048, 4096] bf16 on trn2: 60 points") != std::string::npos);
  for (const char* p : {"tile_rows", "bufs", "scale_engine"}) {
    CHECK(r.out.find(p) != std::string::npos);
  }
  const Invocation m = trnsim("tune --list matmul --json", dir);
  REQUIRE(m.exit_code == 0);
  const json j = json::parse(m.out);
  CHECK(j.dump().find("strategy") != std::string::npos);

  const Invocation bad = trnsim("tune --list rmsnrom", dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("did you mean \"rmsnorm\"") != std::string::npos);
}

TEST_CASE("tune: bad input exits 2 with a clear message before any point runs") {
  refused("unknown_parameter", kSmall, "--fix nosuch=1",
          "--fix nosuch: rmsnorm has no parameter nosuch");
  refused("budget_zero", kSmall, "--budget 0", "--budget 0: expected at least 1");
  refused("empty_space", R"({"kernel": "engine_stream", "shape": [128, 64]})", "",
          "declares no tunable parameters");
  refused("bad_time", kSmall, "--time soon", "--time soon: expected a positive duration");
  {
    const std::string dir = fresh_dir("tune_bad_tasm");
    const Invocation r =
        trnsim("tune " + example("matmul_tiled.tasm") + " --out " + dir + "/out", dir);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("matmul_tiled.tasm: a program (.tasm)") != std::string::npos);
  }
  // Eight buffers of a 16384-wide row overflow SBUF at every tile size: the default (two
  // buffers) runs, but no point of the space can.
  refused("all_invalid", R"({"kernel": "rmsnorm", "shape": [2048, 16384], "dtype": "bf16"})",
          "--fix bufs=8", "every point of the space");
}

TEST_CASE(
    "tune: the winner is never slower than the default, passes its check, and its "
    "workload file runs at the reported time") {
  const std::string dir = fresh_dir("tune_small");
  const std::string w = write_file(dir, "w.json", kSmall);
  const Invocation r = trnsim("tune " + w + " -j 2 --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("functional check of the best: pass") != std::string::npos);
  const json res = read_json(dir + "/out/results.json");
  CHECK(res["search"]["mode"] == "exhaustive");
  CHECK(res["best"]["time_us"].get<double>() <= res["default"]["time_us"].get<double>());
  CHECK(res["best"]["check"] == "pass");
  CHECK(res["roofline"]["bound_us"].get<double>() > 0);
  CHECK(res["roofline"]["bound_us"].get<double>() <= res["best"]["time_us"].get<double>());
  // One CSV line per evaluation.
  const std::string csv = slurp(dir + "/out/results.csv");
  CHECK(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')) ==
        1 + res["evaluations"].size());
  // The winner as a workload file, run on its own.
  const Invocation again = trnsim(
      res["best"]["runnable"].get<std::string>() + " --timing-only --out " + dir + "/again", dir);
  REQUIRE(again.exit_code == 0);
  CHECK(total_time_ns(read_json(dir + "/again/stats.json")) / 1e3 ==
        Approx(res["best"]["time_us"].get<double>()).epsilon(1e-12));
}

TEST_CASE("tune --resume reuses the points an interrupted tune finished") {
  const std::string dir = fresh_dir("tune_resume");
  const std::string w = write_file(dir, "w.json", kSmall);
  // A budget under the space's size: the two-model search.
  const std::string args = "tune " + w + " --budget 20 --seed 3 --no-check --out " + dir + "/out";
  const Invocation first = trnsim(args, dir);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const json a = read_json(dir + "/out/results.json");
  CHECK(a["search"]["mode"] == "evolutionary");
  CHECK(a["search"]["flow_evaluations"].get<int>() > 0);
  // An interruption after some points: drop the results of the last few.
  std::vector<fs::path> points;
  for (const auto& e : fs::directory_iterator(dir + "/out/points")) points.push_back(e.path());
  std::sort(points.begin(), points.end());
  REQUIRE(points.size() > 6);
  for (size_t i = 0; i < 5; ++i) fs::remove(points[i] / "result.json");
  const Invocation second = trnsim(args + " --resume", dir);
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  const json b = read_json(dir + "/out/results.json");
  CHECK(b["search"]["evaluations"] == a["search"]["evaluations"]);
  CHECK(b["search"]["reused_evaluations"].get<size_t>() == points.size() - 5);
  CHECK(b["best"]["label"] == a["best"]["label"]);
  CHECK(b["best"]["time_us"] == a["best"]["time_us"]);
}

TEST_CASE("explain --apply: a suggestion's reported gain equals a separate run's") {
  const std::string dir = fresh_dir("explain_apply");
  const Invocation r = trnsim(
      "explain --apply " + example("rmsnorm_fused.json") + " --json -j 2 --out " + dir + "/out",
      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);
  const double given = j["given"]["time_us"].get<double>();
  // The ScalarE-bound fused RMSNorm: the suggestion names params.scale_engine "vector".
  const json* tried = nullptr;
  for (const json& f : j["findings"]) {
    for (const json& c : f["changes"]) {
      if (c["change"] == "params.rmsnorm.scale_engine=\"vector\"" ||
          c["change"] == "params.rmsnorm.scale_engine=vector") {
        tried = &c;
      }
    }
  }
  REQUIRE(tried != nullptr);
  REQUIRE((*tried)["status"] == "ok");
  // The workload file the change ran, run again on its own, and the workload as given.
  const Invocation changed = trnsim((*tried)["workload_file"].get<std::string>() +
                                        " --timing-only --no-report --out " + dir + "/changed",
                                    dir);
  REQUIRE(changed.exit_code == 0);
  const Invocation base = trnsim(
      example("rmsnorm_fused.json") + " --timing-only --no-report --out " + dir + "/base", dir);
  REQUIRE(base.exit_code == 0);
  const double t_changed = total_time_ns(read_json(dir + "/changed/stats.json")) / 1e3;
  const double t_base = total_time_ns(read_json(dir + "/base/stats.json")) / 1e3;
  CHECK(given == Approx(t_base).epsilon(1e-12));
  CHECK((*tried)["time_us"].get<double>() == Approx(t_changed).epsilon(1e-12));
  CHECK((*tried)["gain_us"].get<double>() == Approx(t_base - t_changed).epsilon(1e-9));
  CHECK((*tried)["helps"] == (t_changed < t_base));
  // Best first within each finding.
  for (const json& f : j["findings"]) {
    double last = 0;
    for (const json& c : f["changes"]) {
      if (c["status"] != "ok") continue;
      CHECK(c["time_us"].get<double>() >= last);
      last = c["time_us"].get<double>();
    }
  }
}

TEST_CASE("explain --apply reports each RMSNorm example's measured gains") {
  for (const char* m : {"eager", "compiled"}) {
    const std::string dir = fresh_dir(std::string("explain_apply_") + m);
    const Invocation r =
        trnsim("explain --apply " + example(std::string("rmsnorm_") + m + ".json") +
                   " -j 2 --out " + dir + "/out",
               dir);
    INFO(m << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("measured, best first:") != std::string::npos);
  }
  const std::string dir = fresh_dir("explain_apply_bad");
  const Invocation bad = trnsim("explain --apply " + dir + "/missing.json", dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("missing.json") != std::string::npos);
}

TEST_CASE("tune --time: no budget, the search stops at its time limit") {
  const std::string dir = fresh_dir("tune_time");
  // Thousands of points: the time limit, not the space, ends the search.
  const std::string w = write_file(
      dir, "w.json", R"({"kernel": "matmul", "shape": [512, 1024, 1024], "dtype": "bf16"})");
  const Invocation r =
      trnsim("tune " + w + " --time 2s -j 2 --no-check --json --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json res = json::parse(r.out);
  CHECK(res["settings"]["budget"].is_null());
  CHECK(res["settings"]["time_limit_seconds"] == 2.0);
  CHECK(res["search"]["mode"] == "evolutionary");
  CHECK(res["search"]["stop"].get<std::string>().find("time limit") != std::string::npos);
  CHECK(res["best"]["time_us"].get<double>() <= res["default"]["time_us"].get<double>());
}
