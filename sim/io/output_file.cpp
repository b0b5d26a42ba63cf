#include "sim/io/output_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include "sim/io/interrupt.hpp"

namespace trnsim::sim {

// The temporary name carries the process id so that two runs writing the same directory do not
// write into each other's file; the last rename wins whole.
OutputFile::OutputFile(std::string path)
    : path_(std::move(path)), temp_(fmt::format("{}.{}.tmp", path_, ::getpid())) {
  // Recorded before it exists: a signal between the two finds nothing to remove, never a
  // file it does not know.
  cleanup_slot_ = InterruptCleanup::add_file(temp_);
  file_ = std::fopen(temp_.c_str(), "wb");
  if (file_ == nullptr) {
    const int e = errno;
    InterruptCleanup::release(cleanup_slot_);
    throw OutputError(fmt::format("{}: cannot create: {}", temp_, std::strerror(e)));
  }
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(temp_.c_str());
  InterruptCleanup::release(cleanup_slot_);
}

void OutputFile::fail(const std::string& what) {
  const std::string reason = std::strerror(errno);
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  std::remove(temp_.c_str());
  InterruptCleanup::release(cleanup_slot_);
  cleanup_slot_ = -1;
  throw OutputError(fmt::format("{}: {}: {}", path_, what, reason));
}

void OutputFile::write(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) fail("write failed");
}

void OutputFile::close() {
  if (file_ == nullptr) return;
  if (std::fflush(file_) != 0) fail("write failed");
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) fail("write failed");
}

void OutputFile::commit() {
  close();
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot rename into place");
  committed_ = true;
  InterruptCleanup::release(cleanup_slot_);
  cleanup_slot_ = -1;
}

void make_output_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw OutputError(fmt::format("{}: cannot create the output directory: {}", dir,
                                  ec ? ec.message() : "a file of that name exists"));
  }
}

}  // namespace trnsim::sim
