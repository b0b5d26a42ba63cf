// --stream-from: a program that large is lowered while it runs. The outputs are the same as
// when it is lowered whole.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "../support/report_page.hpp"
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

TEST_CASE("a streamed run's report.html labels every event as the whole program's does") {
  // 24,832 instructions with about 9,000 distinct labels: the streamed label table grows past
  // its first 1,024 slots several times, and labels repeat (the stores, the matmuls).
  const std::string file =
      std::string(TRNSIM_SOURCE_DIR) + "/bench/cases/matmul_s1_1024x8192x8192.json";
  const std::string args = "--timing-only --set dma_flow_model=true";
  const auto whole = run_ok(file, args, "stream_report_whole");
  const auto streamed = run_ok(file, args + " --stream-from 0", "stream_report");
  const auto w = trnsim_test::read_report_page(slurp(whole.out + "/report.html"));
  const auto s = trnsim_test::read_report_page(slurp(streamed.out + "/report.html"));
  REQUIRE(s.events == w.events);
  CHECK(s.block["labels"].size() == w.block["labels"].size());
  CHECK(s.block["labels"].size() > 4096);
  CHECK(s.block["labels_cut"] == false);
  size_t labelled = 0;
  for (size_t i = 0; i < w.events; ++i) {
    const std::string label = w.label(i);
    if (s.label(i) != label)
      FAIL_CHECK("event " << i << ": '" << s.label(i) << "' for '" << label << "'");
    labelled += !label.empty();
  }
  CHECK(labelled > w.events / 2);
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
