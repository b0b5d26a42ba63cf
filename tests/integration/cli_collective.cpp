// `trnsim collective`: an nccom-test-like table of the collective model, its JSON, and the
// errors for bad input (exit 2, naming what was expected, no output file).
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "cli_support.hpp"

namespace {

// The table's data rows: the lines that start with a size.
std::vector<std::vector<std::string>> rows(const std::string& out) {
  std::vector<std::vector<std::string>> r;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0][0]))) r.push_back(w);
  }
  return r;
}

}  // namespace

TEST_CASE("trnsim collective prints size, time, algbw, busbw, algorithm and steps per size") {
  const std::string dir = trnsim_test::fresh_dir("collective_table");
  const auto r = trnsim_test::trnsim(
      "collective all_reduce --ranks 16 --chips 16 --sizes 1KiB:1GiB:x4 --json " + dir + "/r.json",
      dir);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("# trnsim collective all_reduce: 16 ranks on 16 chips (1 per chip) of trn2 "
                   "(4x4 torus)") != std::string::npos);
  CHECK(r.out.find("size(B)") != std::string::npos);
  const auto t = rows(r.out);
  REQUIRE(t.size() == 11);
  CHECK(t.front()[0] == "1024");
  CHECK(t.back()[0] == "1073741824");
  // The runtime's choice by size: mesh below 1 MiB, rdh to 56 MiB, ring above.
  CHECK(t[0][4] == "mesh");
  CHECK(t[5][4] == "rdh");
  CHECK(t[10][4] == "ring");
  CHECK(t[10][5] == "30");
  const nlohmann::json j = trnsim_test::read_json(dir + "/r.json");
  CHECK(j["op"] == "all_reduce");
  CHECK(j["ranks"] == 16);
  CHECK(j["chips"] == 16);
  REQUIRE(j["results"].size() == 11);
  const auto& last = j["results"][10];
  CHECK(last["size_bytes"] == 1073741824);
  CHECK(last["algorithm"] == "ring");
  CHECK(last["channels"] == 4);
  // busbw = algbw x 2 (p-1)/p for all_reduce, as nccom-test computes it.
  CHECK(last["busbw_gbps"].get<double>() ==
        Approx(last["algbw_gbps"].get<double>() * 2 * 15 / 16).epsilon(1e-12));
  CHECK(last["algbw_gbps"].get<double>() ==
        Approx(1073741824 / (last["time_us"].get<double>() * 1e3)).epsilon(1e-12));
}

TEST_CASE("trnsim collective takes a size list, a forced algorithm, --arch and --set") {
  const std::string dir = trnsim_test::fresh_dir("collective_options");
  const auto r = trnsim_test::trnsim(
      "collective all_gather --ranks 8 --sizes 4KiB,64MB --algorithm ring --arch trn1 "
      "--set cc.step_ns=1000",
      dir);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("8 ranks on 4 chips (2 per chip) of trn1") != std::string::npos);
  const auto t = rows(r.out);
  REQUIRE(t.size() == 2);
  CHECK(t[0][0] == "4096");
  CHECK(t[1][0] == "64000000");
  CHECK(t[0][4] == "ring");
  CHECK(t[0][5] == "7");
  // A step costs what --set says: doubling it adds 7 us at 4 KiB.
  const auto slow = trnsim_test::trnsim(
      "collective all_gather --ranks 8 --sizes 4KiB --algorithm ring --arch trn1 "
      "--set cc.step_ns=2000",
      dir);
  REQUIRE(slow.exit_code == 0);
  CHECK(std::stod(rows(slow.out)[0][1]) == Approx(std::stod(t[0][1]) + 7).margin(0.011));
}

TEST_CASE("trnsim collective refuses bad input with exit 2 and what was expected") {
  const std::string dir = trnsim_test::fresh_dir("collective_errors");
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"allreduce --ranks 4",
       "unknown collective 'allreduce': expected all_reduce, all_gather, reduce_scatter, "
       "all_to_all or permute"},
      {"all_reduce --ranks 129", "--ranks 129: trn2 has 16 chips of 8 cores (128 ranks at most)"},
      {"all_reduce --ranks 6 --chips 4",
       "--ranks 6 --chips 4: expected the same number of ranks on every chip, at most 8"},
      {"all_reduce --ranks 0", "--ranks: expected at least 1 rank"},
      {"all_reduce --ranks 4 --sizes 1XB", "--sizes: '1XB' is not a size"},
      {"all_reduce --ranks 4 --sizes 1KiB:1MiB",
       "--sizes: '1KiB:1MiB': expected START:END:xFACTOR"},
      {"all_reduce --ranks 4 --sizes 1KiB:1MiB:x1",
       "factor 'x1' must be a whole number of at least 2"},
      {"all_reduce --ranks 4 --sizes 1MiB:1KiB:x2", "starts above its end"},
      {"all_reduce --ranks 4 --sizes 0:1KiB:x2", "starts at 0 bytes"},
      {"all_reduce --ranks 6 --algorithm rdh",
       "--algorithm rdh: rdh (recursive doubling and halving) needs a power-of-two number of "
       "ranks, got 6"},
      {"all_reduce --ranks 4 --algorithm tree", "unknown algorithm 'tree'"},
      {"permute --ranks 4 --algorithm mesh",
       "permute is one step to the next rank (ring), not mesh"},
      {"all_reduce --ranks 4 --set cc.nope=1", "cc.nope"},
      {"all_reduce", "--ranks is required"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto r = trnsim_test::trnsim(
        std::string("collective ") + c.args + " --json " + dir + "/out.json", dir);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.out.empty());
    CHECK_FALSE(std::filesystem::exists(dir + "/out.json"));
  }
}
