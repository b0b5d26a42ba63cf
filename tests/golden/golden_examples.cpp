// Golden cycle counts: every example workload (workloads/examples/, .json and .tasm) has
// tests/golden/<name>.json holding the counts it must reproduce exactly. A change to the model
// that moves them must update the golden file and say why in its commit message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "../integration/cli_support.hpp"

using namespace trnsim_test;

namespace {
std::string root() { return std::string(TRNSIM_SOURCE_DIR); }

std::vector<std::filesystem::path> examples() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root() + "/workloads/examples")) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".json" || ext == ".tasm")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

// Golden files are named after the example's stem, so stems must be unique across subfolders.
TEST_CASE("golden: every example workload has a golden file") {
  const auto all = examples();
  CHECK(all.size() >= 8);
  std::set<std::string> stems;
  for (const auto& p : all) {
    INFO("example " << p);
    CHECK(stems.insert(p.stem().string()).second);
  }
  for (const auto& p : all) {
    INFO("example " << p);
    CHECK(std::filesystem::exists(root() + "/tests/golden/" + p.stem().string() + ".json"));
  }
}

TEST_CASE("golden: every example reproduces its golden cycle counts") {
  for (const auto& p : examples()) {
    const std::string name = p.stem().string();
    const std::string golden_path = root() + "/tests/golden/" + name + ".json";
    if (!std::filesystem::exists(golden_path)) continue;  // reported by the test above
    DYNAMIC_SECTION(name) {
      const auto golden = read_json(golden_path);
      const std::string dir = fresh_dir("golden_" + name);
      const Invocation r = trnsim(root() + "/" + golden["workload"].get<std::string>() +
                                      " --timing-only --arch " + golden["arch"].get<std::string>() +
                                      " --out " + dir,
                                  dir);
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      const auto stats = read_json(dir + "/stats.json");
      for (const auto& item : golden["summary"].items()) {
        INFO("metric " << item.key());
        CHECK(stats["summary"][item.key()] == item.value());
      }
    }
  }
}
