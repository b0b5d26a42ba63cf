// Reading a user's file: only sim/ touches files. A file is read whole if it is a regular file
// of at most kMaxInputBytes; anything else is an InputError (exit code 2) naming the path.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace trnsim::sim {

// The input file is unusable (missing, not a regular file, too large): exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole file, if it is a regular file of at most kMaxInputBytes. `kind` is what the file
// should be ("a workload file", "an arch file", ...): a directory given instead is named so.
constexpr uint64_t kMaxInputBytes = 64ULL << 20;
std::string read_input_file(const std::string& path, const char* kind = "a workload file");
// The same, or "" when nothing exists at `path` (other problems still throw).
std::string read_input_file_if_exists(const std::string& path,
                                      const char* kind = "a workload file");

}  // namespace trnsim::sim
