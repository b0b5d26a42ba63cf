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

TEST_CASE("a matmul streamed with --stream-from 0 gives the whole program's stats and trace") {
  const std::string strategy = GENERATE("1", "2", "3", "4");
  const std::string file = example("matmul_s" + strategy + ".json");
  const auto whole = run_ok(file, "--timing-only -v", "stream_whole_s" + strategy);
  const auto streamed = run_ok(file, "--timing-only -v --stream-from 0", "stream_s" + strategy);
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
