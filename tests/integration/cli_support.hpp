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

// Runs `trnsim ARGS` (ARGS are passed through the shell as written).
inline Invocation trnsim(const std::string& args, const std::string& scratch) {
  const std::string out = scratch + "/stdout.txt";
  const std::string err = scratch + "/stderr.txt";
  const std::string cmd =
      std::string(TRNSIM_BINARY) + " " + args + " >" + out + " 2>" + err + " </dev/null";
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

}  // namespace trnsim_test
