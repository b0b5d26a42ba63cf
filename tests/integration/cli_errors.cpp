// Bad input: a one-line message naming the file, the place and what was expected; exit code 2;
// no output files.
#include <catch2/catch.hpp>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {
// Runs a workload given as text; checks exit 2, no outputs, and returns stderr.
std::string rejected(const std::string& name, const std::string& workload,
                     const std::string& extra = "") {
  return rejected_input(name + ".json", workload, extra);
}
}  // namespace

TEST_CASE("malformed JSON exits 2 naming the line and column") {
  const std::string err =
      rejected("malformed", "{\n  \"kernel\": \"rmsnorm\",\n  \"shape\": [2048 4096]\n}\n");
  CHECK(err.find("line 3") != std::string::npos);
  CHECK(err.find("malformed JSON") != std::string::npos);
}

TEST_CASE("an unknown kernel exits 2 naming /kernel and the known kernels") {
  const std::string err =
      rejected("unknown_kernel", R"({"kernel": "rmsnrom", "shape": [128, 64]})");
  CHECK(err.find("/kernel") != std::string::npos);
  CHECK(err.find("did you mean \"rmsnorm\"") != std::string::npos);
}

TEST_CASE("an unknown key exits 2 and suggests the nearest") {
  const std::string err =
      rejected("unknown_key", R"({"kernel": "rmsnorm", "shape": [128, 64], "dtpye": "bf16"})");
  CHECK(err.find("/dtpye") != std::string::npos);
  CHECK(err.find("did you mean \"dtype\"") != std::string::npos);
}

TEST_CASE("a shape that does not fit SBUF exits 2 naming /shape") {
  const std::string err =
      rejected("too_wide", R"({"kernel": "rmsnorm", "shape": [128, 60000], "dtype": "bf16"})");
  CHECK(err.find("/shape") != std::string::npos);
  CHECK(err.find("SBUF") != std::string::npos);
}

TEST_CASE("a negative dimension exits 2 naming /shape/1") {
  const std::string err = rejected("negative", R"({"kernel": "rmsnorm", "shape": [128, -4]})");
  CHECK(err.find("/shape/1") != std::string::npos);
  CHECK(err.find("positive integer") != std::string::npos);
}

TEST_CASE("an unknown dtype exits 2 naming /dtype") {
  const std::string err =
      rejected("dtype", R"({"kernel": "rmsnorm", "shape": [128, 64], "dtype": "fp64"})");
  CHECK(err.find("/dtype") != std::string::npos);
}

TEST_CASE("an out-of-range lowering parameter exits 2 naming it") {
  const std::string err =
      rejected("bufs", R"({"kernel": "rmsnorm", "shape": [128, 64], "params": {"bufs": 0}})");
  CHECK(err.find("/params/bufs") != std::string::npos);
}

TEST_CASE("an unknown arch preset exits 2 and lists the presets") {
  const std::string dir = fresh_dir("err_arch");
  const Invocation r = trnsim(example("rmsnorm.json") + " --arch trn9 --out " + dir + "/out", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("trn1, trn2") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out/stats.json"));
}

TEST_CASE("a missing workload file exits 2 naming it") {
  const std::string dir = fresh_dir("err_missing");
  const Invocation r = trnsim(dir + "/nope.json --out " + dir + "/out", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("nope.json") != std::string::npos);
}

TEST_CASE("no arguments exits 2 with a usage line") {
  const std::string dir = fresh_dir("err_usage");
  const Invocation r = trnsim("", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("usage: trnsim") != std::string::npos);
}

TEST_CASE("an output directory that cannot be created exits 2") {
  const std::string dir = fresh_dir("err_outdir");
  write_file(dir, "blocker", "a file where the directory should go");
  const Invocation r =
      trnsim(example("rmsnorm.json") + " --timing-only --out " + dir + "/blocker/x", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("blocker") != std::string::npos);
}

TEST_CASE("a bad dma micro-benchmark exits 2 naming the field") {
  CHECK(rejected("dma_odd", R"({"kernel": "dma", "bytes_per_partition": 3})")
            .find("/bytes_per_partition: expected an even number") != std::string::npos);
  CHECK(rejected("dma_big", R"({"kernel": "dma", "direction": "sbuf_to_psum",
                               "bytes_per_partition": 65536})")
            .find("/bytes_per_partition: expected an integer in [2, 16384]") != std::string::npos);
  CHECK(rejected("dma_key", R"({"kernel": "dma", "patern": "random"})")
            .find("did you mean \"pattern\"") != std::string::npos);
  CHECK(rejected("dma_dir", R"({"kernel": "dma", "direction": "hbm_to_sbuff"})")
            .find("/direction: expected one of") != std::string::npos);
  CHECK(rejected("dma_pattern", R"({"kernel": "dma", "direction": "sbuf_to_sbuf",
                                   "pattern": "strided"})")
            .find("/pattern") != std::string::npos);
  CHECK(rejected("dma_dge_trn1", R"({"kernel": "dma", "dge": true})", "--arch trn1").find("/dge") !=
        std::string::npos);
}

TEST_CASE("more cores than the chip has exits 2 naming /cores") {
  CHECK(rejected("cores", R"({"kernel": "dma", "cores": 9})").find("/cores: 9 cores") !=
        std::string::npos);
  CHECK(rejected("cores_trn1", R"({"kernel": "dma", "cores": 3})", "--arch trn1")
            .find("a trn1 chip has 2") != std::string::npos);
}

TEST_CASE("an unknown matmul strategy exits 2 naming /strategy and the four strategies") {
  const std::string err = rejected(
      "matmul_strategy", R"({"kernel": "matmul", "strategy": 5, "shape": [512, 1024, 1024]})");
  CHECK(err.find("/strategy: unknown matmul strategy 5") != std::string::npos);
  CHECK(err.find("4 (blocked all dimensions)") != std::string::npos);
}

TEST_CASE("matmul blocks that do not fit SBUF exit 2 naming the param, before the host limit") {
  // Also too large for a functional run: the SBUF error, which --timing-only does not lift,
  // comes first.
  const std::string err = rejected("matmul_blocks",
                                   R"({"kernel": "matmul", "strategy": 4, "shape": [16384, 16384,
                                       16384], "params": {"block_m": 16384, "block_k": 16384}})");
  CHECK(err.find("/params/block_k") != std::string::npos);
  CHECK(err.find("bytes per partition of SBUF") != std::string::npos);
}

TEST_CASE("an mlp without an activation exits 2 naming /activation") {
  const std::string err =
      rejected("mlp_activation", R"({"kernel": "mlp", "shape": [512, 1024, 4096]})");
  CHECK(err.find("/activation: missing; expected one of: gelu, gelu_tanh, silu") !=
        std::string::npos);
}
