// The layernorm, softmax and attention kernels as a user runs them: the examples pass their
// functional check and report their choices; bad options exit 2 naming the key.
#include <catch2/catch.hpp>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {
// Runs an example in full (functional) mode; returns stats.json.
nlohmann::json run_example(const std::string& name) {
  const std::string dir = fresh_dir("kernels_" + name);
  const Invocation r = trnsim(example(name + ".json") + " --out " + dir, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("check: PASS") != std::string::npos);
  return read_json(dir + "/stats.json");
}
}  // namespace

TEST_CASE("the layernorm example (bn_stats) passes and reports its choices") {
  const auto stats = run_example("layernorm");
  CHECK(stats["choices"]["method"] == "bn_stats");
  CHECK(stats["choices"]["bn_stats_chunks"] == 8);
  CHECK(stats["choices"]["bufs"] == 3);
}

TEST_CASE("the two-pass layernorm example passes") {
  CHECK(run_example("layernorm_two_pass")["choices"]["method"] == "two_pass");
}

TEST_CASE("the softmax example passes") {
  CHECK(run_example("softmax")["choices"]["scale_engine"] == "vector");
}

TEST_CASE("the attention example passes and counts its FLOPs") {
  const auto stats = run_example("attention");
  CHECK(stats["choices"]["kv_block"] == 1024);
  CHECK(stats["choices"]["qk_transpose"] == "dma");
  CHECK(stats["summary"]["model_flops"] == 4ULL * 4 * 1024 * 1024 * 128);
}

TEST_CASE("a head_dim over 128 exits 2 naming /shape/2") {
  const std::string err = rejected_input(
      "head_dim.json", R"({"kernel": "attention", "shape": [2, 256, 256], "dtype": "bf16"})");
  CHECK(err.find("/shape/2: head_dim 256 exceeds the 128 partitions") != std::string::npos);
}

TEST_CASE("an unknown layernorm method exits 2 naming /method") {
  const std::string err = rejected_input(
      "method.json", R"({"kernel": "layernorm", "shape": [128, 64], "method": "welford"})");
  CHECK(err.find("/method: expected \"bn_stats\" or \"two_pass\", got \"welford\"") !=
        std::string::npos);
}

TEST_CASE("a kv_block whose buffers overflow PSUM exits 2 naming /params/kv_block") {
  const std::string err = rejected_input(
      "kv_block.json",
      R"({"kernel": "attention", "shape": [1, 4096, 128], "params": {"kv_block": 2048}})");
  CHECK(err.find("/params/kv_block: kv_block 2048 with 2 buffers needs 14 PSUM banks") !=
        std::string::npos);
}

TEST_CASE("attention at seq 8192 runs in timing-only mode") {
  const std::string dir = fresh_dir("kernels_attention_8192");
  const std::string w = write_file(
      dir, "a.json", R"({"kernel": "attention", "shape": [2, 8192, 128], "causal": true})");
  const Invocation r = trnsim(w + " --timing-only --out " + dir + "/out", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto stats = read_json(dir + "/out/stats.json");
  CHECK(stats["summary"]["model_flops"] == 2ULL * 2 * 8192 * 8192 * 128);
  CHECK(stats["summary"]["mfu_estimated_percent"].get<double>() > 30.0);
}
