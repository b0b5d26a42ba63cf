#include "sim/io/input_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace trnsim::sim {

std::string read_input_file(const std::string& path, const char* kind) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory, not {}", path, kind));
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: is not a regular file", path));
  if (static_cast<uint64_t>(st.st_size) > kMaxInputBytes) {
    throw InputError(fmt::format("{}: is {} bytes; input files are at most {} bytes", path,
                                 st.st_size, kMaxInputBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: read error", path));
  return text.str();
}

std::string read_input_file_if_exists(const std::string& path, const char* kind) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return {};
  return read_input_file(path, kind);
}

}  // namespace trnsim::sim
