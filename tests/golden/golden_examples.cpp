// Golden cycle counts: every example workload (workloads/examples/, .json and .tasm) has
// tests/golden/<name>.json holding the counts it must reproduce (tests/CMakeLists.txt runs
// `trnsim check --golden` on each as its own test). A change to the model that moves them must
// update the golden file (tests/golden/update-golden) and say why in its commit message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "../integration/cli_support.hpp"

using namespace trnsim_test;

namespace {
std::string root() {
  return std::string(TRNSIM_SOURCE_DIR);
}

// Every example workload; examples/sweeps/ holds sweep files (docs/sweeps.md), not workloads, and
// examples/scale/ full-size models that bench/ measures (seconds each, too slow for the suite;
// decoder_layer_small.json is their golden-counted reduced size).
std::vector<std::filesystem::path> examples() {
  std::vector<std::filesystem::path> out;
  const std::string sweeps = root() + "/workloads/examples/sweeps";
  const std::string scale = root() + "/workloads/examples/scale";
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(root() + "/workloads/examples")) {
    const auto ext = e.path().extension();
    if (e.path().string().rfind(sweeps, 0) == 0) continue;
    if (e.path().string().rfind(scale, 0) == 0) continue;
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
