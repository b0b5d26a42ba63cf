// --stream-from: a program that large is lowered while it runs. The outputs are the same as
// when it is lowered whole.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cli_support.hpp"

using trnsim_test::example;
using trnsim_test::run_ok;
using trnsim_test::slurp;

namespace {

// What a run printed, with its --out directory's name taken out.
std::string printed(const trnsim_test::Run& run) {
  std::string s = run.invocation.out;
  for (size_t at = s.find(run.out); at != std::string::npos; at = s.find(run.out, at)) {
    s.replace(at, run.out.size(), "OUT");
  }
  return s;
}

}  // namespace

TEST_CASE("a kernel streamed with --stream-from 0 gives the whole program's stats and trace") {
  const std::string name =
      GENERATE("matmul_s1", "matmul_s2", "matmul_s3", "matmul_s4", "mlp_gelu", "engine_stream");
  const std::string file =
      name == "engine_stream"
          ? trnsim_test::write_file(trnsim_test::fresh_dir("stream_workload"), "engine_stream.json",
                                    R"({"kernel": "engine_stream", "shape": [128, 512], )"
                                    R"("engine": "scalar", "instructions": 9000})")
          : example(name + ".json");
  const auto whole = run_ok(file, "--timing-only -v", "stream_whole_" + name);
  const auto streamed = run_ok(file, "--timing-only -v --stream-from 0", "stream_" + name);
  CHECK(whole.invocation.err.find("is streamed") == std::string::npos);
  CHECK(streamed.invocation.err.find("is streamed") != std::string::npos);
  CHECK(printed(streamed) == printed(whole));
  CHECK(streamed.stats == whole.stats);
  CHECK(slurp(streamed.out + "/trace.json") == slurp(whole.out + "/trace.json"));
}

TEST_CASE("a functional matmul streamed with --stream-from 0 passes its check as the whole one") {
  const auto whole = run_ok(example("matmul_s1.json"), "", "stream_whole_functional");
  const auto streamed = run_ok(example("matmul_s1.json"), "--stream-from 0", "stream_functional");
  CHECK(streamed.invocation.out.find("PASS") != std::string::npos);
  CHECK(printed(streamed) == printed(whole));
  CHECK(streamed.stats == whole.stats);
}

TEST_CASE("a stream-from that is not a count of instructions is refused") {
  for (const std::string bad : {"lots", "-5", "1.5", "99999999999999999999999"}) {
    INFO(bad);
    const std::string dir = trnsim_test::fresh_dir("stream_from_bad");
    const auto r = trnsim_test::trnsim(
        example("matmul_s1.json") + " --out " + dir + "/out --stream-from " + bad, dir);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("--stream-from") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/out"));
  }
}
