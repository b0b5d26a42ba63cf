// Workload loader: the happy path and every error it reports, with its place in the file.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

#include <string>

#include "config/arch.hpp"
#include "workloads/kernels/rmsnorm.hpp"
#include "workloads/workload.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::workloads::closest_name;
using trnsim::workloads::parse_rmsnorm_choices;
using trnsim::workloads::parse_workload;
using trnsim::workloads::Workload;
using trnsim::workloads::WorkloadError;

namespace {

// The WorkloadError message for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_workload(text, "w.json");
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

std::string choices_error_of(const std::string& params) {
  const Workload w = parse_workload(
      R"({"kernel": "rmsnorm", "shape": [256, 1024], "params": )" + params + "}", "w.json");
  try {
    parse_rmsnorm_choices(w, trnsim::config::trn2());
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("parse_workload reads every field", "[unit][workload]") {
  const Workload w = parse_workload(R"({"name": "n", "kernel": "rmsnorm", "variant": "fused",
      "shape": [2048, 4096], "dtype": "fp32", "eps": 0.001, "seed": 7,
      "params": {"bufs": 3}})",
                                    "dir/file.json");
  CHECK(w.file == "dir/file.json");
  CHECK(w.name == "n");
  CHECK(w.kernel == "rmsnorm");
  CHECK(w.variant == "fused");
  CHECK(w.shape == std::vector<int64_t>{2048, 4096});
  CHECK(w.dtype == trnsim::isa::DType::fp32);
  CHECK(w.eps == 0.001);
  CHECK(w.seed == 7);
  CHECK(w.params.at("bufs") == 3);
}

TEST_CASE("parse_workload defaults the optional fields", "[unit][workload]") {
  const Workload w = parse_workload(R"({"kernel": "rmsnorm", "shape": [1, 2]})", "a/b/rms.json");
  CHECK(w.name == "rms");  // the file's stem
  CHECK(w.variant == "fused");
  CHECK(w.dtype == trnsim::isa::DType::bf16);
  CHECK(w.eps == 1e-6);
  CHECK(w.seed == 0);
  CHECK(w.params.is_object());
  CHECK(w.params.empty());
}

TEST_CASE("the example workload parses", "[unit][workload]") {
  // This file is tests/unit/workload_test.cpp in the source tree. Reading files is sim/'s job
  // (a missing file is tested in tests/integration/cli_errors.cpp).
  const std::string here = __FILE__;
  const std::string path =
      here.substr(0, here.rfind("tests/unit/")) + "workloads/examples/rmsnorm.json";
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Workload w = trnsim::workloads::parse_workload(text, path);
  CHECK(w.kernel == "rmsnorm");
  CHECK(w.shape == std::vector<int64_t>{2048, 4096});
}

TEST_CASE("duplicate keys are rejected", "[unit][workload]") {
  try {
    parse_workload(R"({"kernel": "rmsnorm", "shape": [128, 64], "shape": [4, 4]})", "dup.json");
    FAIL("no error");
  } catch (const WorkloadError& e) {
    CHECK_THAT(e.what(), Contains("duplicate key \"shape\""));
  }
}

TEST_CASE("JSON nested deeper than 64 levels is rejected without a crash", "[unit][workload]") {
  std::string deep = R"({"kernel": "rmsnorm", "shape": [4, 8], "params": )";
  for (int i = 0; i < 20000; ++i) deep += R"({"a":)";
  deep += "1";
  for (int i = 0; i < 20000; ++i) deep += "}";
  deep += "}";
  try {
    parse_workload(deep, "deep.json");
    FAIL("no error");
  } catch (const WorkloadError& e) {
    CHECK_THAT(e.what(), Contains("nesting deeper than 64 levels"));
  }
}

TEST_CASE("malformed workload JSON reports line and column", "[unit][workload]") {
  // The stray ']' is the 18th character of line 3.
  const std::string msg = error_of("{\n  \"kernel\": \"rmsnorm\",\n  \"shape\": [1, 2,]\n}");
  CHECK_THAT(msg, StartsWith("w.json: line 3, column 18: malformed JSON"));
  // On the first line, a missing value at column 11.
  CHECK_THAT(error_of("{\"eps\": 1,}"), StartsWith("w.json: line 1, column 11: malformed JSON"));
  // A second '}' after the object closed: line 2, column 4.
  CHECK_THAT(error_of("{\"eps\": 1 \n  }}"), StartsWith("w.json: line 2, column 4:"));
}

TEST_CASE("a workload that is not an object names /", "[unit][workload]") {
  CHECK_THAT(error_of("[1, 2]"), StartsWith("w.json: /: expected a JSON object, got array"));
}

TEST_CASE("an unknown workload key suggests the nearest", "[unit][workload]") {
  const std::string msg = error_of(R"({"kernel": "rmsnorm", "shpe": [1, 2]})");
  CHECK_THAT(msg, StartsWith("w.json: /shpe: unknown key"));
  CHECK_THAT(msg, Contains("did you mean \"shape\"?"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "sed": 1})"),
             Contains("did you mean \"seed\"?"));
  // Nothing close: no suggestion.
  const std::string far = error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "zzzzzzzz": 1})");
  CHECK_THAT(far, StartsWith("w.json: /zzzzzzzz: unknown key"));
  CHECK_THAT(far, !Contains("did you mean"));
}

TEST_CASE("an unknown kernel is reported with the known ones", "[unit][workload]") {
  const std::string typo = error_of(R"({"kernel": "rmsnrom", "shape": [1, 2]})");
  CHECK_THAT(typo, StartsWith("w.json: /kernel: unknown kernel \"rmsnrom\"; expected one of: "
                              "rmsnorm"));
  CHECK_THAT(typo, Contains("did you mean \"rmsnorm\"?"));
  const std::string other = error_of(R"({"kernel": "conv2d", "shape": [1, 2]})");
  CHECK_THAT(other, StartsWith("w.json: /kernel: unknown kernel \"conv2d\""));
  CHECK_THAT(other, !Contains("did you mean"));
  CHECK_THAT(error_of(R"({"kernel": 3, "shape": [1, 2]})"),
             StartsWith("w.json: /kernel: expected a string"));
  CHECK_THAT(error_of(R"({"shape": [1, 2]})"), StartsWith("w.json: /kernel: missing"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "variant": "fuzed", "shape": [1, 2]})"),
             StartsWith("w.json: /variant: unknown variant \"fuzed\""));
}

TEST_CASE("a shape that is not 2 positive integers names the element", "[unit][workload]") {
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [128, 0]})"),
             StartsWith("w.json: /shape/1: expected a positive integer, got 0"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [128, -5]})"),
             StartsWith("w.json: /shape/1: expected a positive integer, got -5"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [128, 1.5]})"),
             StartsWith("w.json: /shape/1: expected a positive integer, got 1.5"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": ["128", 64]})"),
             StartsWith("w.json: /shape/0: expected a positive integer"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [128]})"),
             StartsWith("w.json: /shape: expected an array of 2 positive integers"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2, 3]})"),
             StartsWith("w.json: /shape: expected an array of 2"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": "128x64"})"),
             StartsWith("w.json: /shape: expected an array of 2"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm"})"), StartsWith("w.json: /shape: missing"));
}

TEST_CASE("a bad dtype lists the known ones", "[unit][workload]") {
  const std::string names = trnsim::isa::dtype_names();
  CHECK_THAT(names, StartsWith("fp32, bf16"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "dtype": "fp64"})"),
             StartsWith("w.json: /dtype: expected one of " + names + ", got \"fp64\""));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "dtype": 16})"),
             StartsWith("w.json: /dtype: expected one of " + names + ", got 16"));
}

TEST_CASE("eps, seed, params and name are checked", "[unit][workload]") {
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "eps": -1})"),
             StartsWith("w.json: /eps: expected a number in [0, 1]"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "eps": "small"})"),
             StartsWith("w.json: /eps: "));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "seed": -1})"),
             StartsWith("w.json: /seed: expected a non-negative integer, got -1"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "params": [1]})"),
             StartsWith("w.json: /params: expected an object, got array"));
  CHECK_THAT(error_of(R"({"kernel": "rmsnorm", "shape": [1, 2], "name": 5})"),
             StartsWith("w.json: /name: expected a string"));
}

TEST_CASE("rmsnorm params out of range name /params/<key>", "[unit][workload]") {
  CHECK(choices_error_of(R"({"bufs": 3, "tile_rows": 64, "scale_engine": "vector"})") == "");
  CHECK_THAT(choices_error_of(R"({"bufs": 0})"),
             StartsWith("w.json: /params/bufs: expected an integer in [1, 8], got 0"));
  CHECK_THAT(choices_error_of(R"({"bufs": 9})"),
             StartsWith("w.json: /params/bufs: expected an integer in [1, 8], got 9"));
  CHECK_THAT(choices_error_of(R"({"bufs": 2.5})"), StartsWith("w.json: /params/bufs: "));
  CHECK_THAT(choices_error_of(R"({"tile_rows": 129})"),
             StartsWith("w.json: /params/tile_rows: expected an integer in [1, 128], got 129"));
  CHECK_THAT(choices_error_of(R"({"scale_engine": "gpsimd"})"),
             StartsWith("w.json: /params/scale_engine: expected \"scalar\" or \"vector\""));
  const std::string typo = choices_error_of(R"({"buf": 2})");
  CHECK_THAT(typo, StartsWith("w.json: /params/buf: unknown rmsnorm parameter"));
  CHECK_THAT(typo, Contains("did you mean \"bufs\"?"));
}

TEST_CASE("closest_name picks the nearest known name within a small edit distance",
          "[unit][workload]") {
  const std::vector<std::string> keys = {"name", "kernel", "variant", "shape", "dtype"};
  CHECK(closest_name("shpe", keys) == "shape");
  CHECK(closest_name("kernal", keys) == "kernel");
  CHECK(closest_name("dtpye", keys) == "dtype");
  CHECK(closest_name("variants", keys) == "variant");
  CHECK(closest_name("completely_different", keys) == "");
  CHECK(closest_name("x", {}) == "");
}
