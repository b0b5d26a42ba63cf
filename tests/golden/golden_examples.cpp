// Golden cycle counts: every example workload has tests/golden/<name>.json holding the counts
// it must reproduce exactly. A change to the model that moves them must update the golden
// file and say why in its commit message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "../integration/cli_support.hpp"

using namespace trnsim_test;

namespace {
void check_golden(const std::string& name) {
  const std::string golden_path =
      std::string(TRNSIM_SOURCE_DIR) + "/tests/golden/" + name + ".json";
  REQUIRE(std::filesystem::exists(golden_path));
  const auto golden = read_json(golden_path);
  const std::string dir = fresh_dir("golden_" + name);
  const std::string workload =
      std::string(TRNSIM_SOURCE_DIR) + "/" + golden["workload"].get<std::string>();
  const Invocation r = trnsim(
      workload + " --timing-only --arch " + golden["arch"].get<std::string>() + " --out " + dir,
      dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto stats = read_json(dir + "/stats.json");
  for (const auto& item : golden["summary"].items()) {
    INFO("metric " << item.key());
    CHECK(stats["summary"][item.key()] == item.value());
  }
}
}  // namespace

// Every workload under workloads/examples/ (subfolders included, e.g. micro/) has a golden
// file named after its stem; stems are unique so that the names do not collide.
TEST_CASE("golden: every example workload has a golden file") {
  std::set<std::string> stems;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::string(TRNSIM_SOURCE_DIR) + "/workloads/examples")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    const std::string stem = entry.path().stem().string();
    INFO("example " << entry.path().string());
    CHECK(stems.insert(stem).second);
    CHECK(std::filesystem::exists(std::string(TRNSIM_SOURCE_DIR) + "/tests/golden/" + stem +
                                  ".json"));
  }
}

// Every golden file's counts, one test per file (the list is fixed when the tests build).
TEST_CASE("golden: every golden file's counts are reproduced") {
  std::vector<std::string> names;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TRNSIM_SOURCE_DIR) + "/tests/golden")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    DYNAMIC_SECTION("golden " << name) {
      check_golden(name);
    }
  }
}
