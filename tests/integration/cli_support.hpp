// Runs the trnsim binary as a user would and captures what it prints.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace trnsim_test {

struct Invocation {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(slurp(path));
}

// A fresh directory under the build tree for one test's outputs.
inline std::string fresh_dir(const std::string& name) {
  const std::string dir = std::string(TRNSIM_TEST_OUT) + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string example(const std::string& name) {
  return std::string(TRNSIM_SOURCE_DIR) + "/workloads/examples/" + name;
}

// Runs `trnsim ARGS` (ARGS are passed through the shell as written), or `PROGRAM ARGS`.
inline Invocation trnsim(const std::string& args, const std::string& scratch,
                         const std::string& program = TRNSIM_BINARY) {
  const std::string out = scratch + "/stdout.txt";
  const std::string err = scratch + "/stderr.txt";
  const std::string cmd = program + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(cmd.c_str());
  Invocation r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Writes `text` to DIR/NAME and returns the path.
inline std::string write_file(const std::string& dir, const std::string& name,
                              const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// `trnsim WORKLOAD EXTRA --out DIR/out` in a fresh directory named after `tag`, required to
// succeed; its stdout and the stats.json and trace.json it wrote.
struct Run {
  std::string dir;  // the scratch directory
  std::string out;  // DIR/out, the run's --out
  Invocation invocation;
  nlohmann::json stats, trace;
};
inline Run run_ok(const std::string& workload, const std::string& extra, const std::string& tag) {
  Run run;
  run.dir = fresh_dir(tag);
  run.out = run.dir + "/out";
  run.invocation = trnsim(workload + " --out " + run.out + " " + extra, run.dir);
  INFO(run.invocation.err);
  REQUIRE(run.invocation.exit_code == 0);
  run.stats = read_json(run.out + "/stats.json");
  run.trace = read_json(run.out + "/trace.json");
  return run;
}

// Runs trnsim on `text` written to a fresh directory as NAME (its extension picks the form) and
// checks what every rejected input gets: exit 2, nothing on stdout, no output file (nor a
// temporary one) and a message naming the file. Returns stderr.
inline std::string rejected_input(const std::string& name, const std::string& text,
                                  const std::string& extra = "") {
  const std::string dir = fresh_dir("err_" + name);
  const std::string path = write_file(dir, name, text);
  const Invocation r = trnsim(path + " --out " + dir + "/out " + extra, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  if (std::filesystem::exists(dir + "/out")) CHECK(std::filesystem::is_empty(dir + "/out"));
  CHECK(r.err.find(path) != std::string::npos);  // names the file
  return r.err;
}

}  // namespace trnsim_test
