// Item 5 of issue 20: the progress line on stderr (sim/io/progress.hpp). Forced on it appears
// on stderr, drawn over itself and erased, and nowhere else; by default, with stderr not a
// terminal (a file here, as in CI, sweeps and tune), there is none.
#include <catch2/catch.hpp>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {

// `text` with every `path` in it replaced by OUT.
std::string without(std::string text, const std::string& path) {
  for (size_t at = text.find(path); at != std::string::npos; at = text.find(path, at)) {
    text.replace(at, path.size(), "OUT");
  }
  return text;
}

}  // namespace

TEST_CASE("progress: --progress draws one line on stderr, never on stdout or in the outputs") {
  const std::string dir = fresh_dir("progress_on");
  const Invocation on =
      trnsim(example("rmsnorm.json") + " --progress --no-report --out " + dir + "/on", dir);
  REQUIRE(on.exit_code == 0);
  // Drawn from the start of the line, cleared to its end, and erased when the run ends.
  CHECK(on.err.find("\rtrnsim: ") != std::string::npos);
  CHECK(on.err.find("instructions") != std::string::npos);
  CHECK(on.err.find("simulated") != std::string::npos);
  CHECK(on.err.size() >= 4);
  CHECK(on.err.substr(on.err.size() - 4) == "\r\033[K");
  CHECK(on.err.find('\n') == std::string::npos);
  CHECK(on.out.find('\r') == std::string::npos);
  CHECK(on.out.find("instructions (") == std::string::npos);

  const std::string off_dir = fresh_dir("progress_off");
  const Invocation off = trnsim(
      example("rmsnorm.json") + " --no-progress --no-report --out " + off_dir + "/off", off_dir);
  REQUIRE(off.exit_code == 0);
  CHECK(off.err.empty());
  // The same summary and the same files, byte for byte.
  CHECK(without(on.out, dir + "/on") == without(off.out, off_dir + "/off"));
  CHECK(slurp(dir + "/on/stats.json") == slurp(off_dir + "/off/stats.json"));
  CHECK(slurp(dir + "/on/trace.json") == slurp(off_dir + "/off/trace.json"));
}

TEST_CASE("progress: silent by default when stderr is not a terminal") {
  const std::string dir = fresh_dir("progress_default");
  const Invocation r = trnsim(example("rmsnorm.json") + " --no-report --out " + dir + "/out", dir);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
}

TEST_CASE("progress: an error after the line was drawn starts a line of its own") {
  const std::string dir = fresh_dir("progress_error");
  const std::string bad = write_file(dir, "bad.json", R"({"kernel": "rmsnorm", "shape": [7]})");
  const Invocation r = trnsim(bad + " --progress --out " + dir + "/out", dir);
  CHECK(r.exit_code == 2);
  // The line is erased before the message, which is whole on a line of its own.
  const size_t at = r.err.find("trnsim: error: ");
  REQUIRE(at != std::string::npos);
  CHECK(at >= 4);
  CHECK(r.err.substr(at - 4, 4) == "\r\033[K");
  CHECK(r.err.back() == '\n');
}

TEST_CASE("progress: --progress and --no-progress together are refused") {
  const std::string dir = fresh_dir("progress_both");
  const Invocation r = trnsim(example("rmsnorm.json") + " --progress --no-progress", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--no-progress") != std::string::npos);
}
