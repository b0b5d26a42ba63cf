// An output file that appears whole or not at all: written to a temporary name beside the
// target and renamed on commit(). If the run fails before commit() (bad input, deadlock, a
// full disk), the temporary file is removed and no partial output is left behind; so it is
// when the process is interrupted (sim/io/interrupt.hpp).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace trnsim::sim {

// An output could not be written: the CLI reports it with exit code 2.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view text);
  // Flushes and closes the temporary file; throws OutputError (a full disk shows here). Close
  // every output of a run before committing any, so that a failure leaves none behind.
  void close();
  void commit();  // close() if still open, then rename into place; throws OutputError
  const std::string& path() const { return path_; }

 private:
  void fail(const std::string& what);
  std::string path_;
  std::string temp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
  int cleanup_slot_ = -1;  // the temporary file's record for an interruption (interrupt.hpp)
};

// Creates the directory (and parents) if needed; throws OutputError.
void make_output_directory(const std::string& dir);

}  // namespace trnsim::sim
