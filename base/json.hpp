// Parsing JSON text from a user's file: malformed JSON, duplicate keys and nesting deeper than
// kMaxJsonDepth are errors naming the line and column (or "JSON"). Shared by the workload, arch
// and sweep readers; isa/ holds it because the arch presets (isa/arch_file.cpp) read JSON too.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace trnsim::base {

constexpr int kMaxJsonDepth = 64;

// "FILE: WHERE: WHAT"; where() and what_text() give the parts.
class JsonError : public std::runtime_error {
 public:
  JsonError(const std::string& file, const std::string& where, const std::string& what);
  const std::string& where() const { return where_; }
  const std::string& what_text() const { return what_; }

 private:
  std::string where_, what_;
};

// Keys sorted (nlohmann::json) or in the file's order (nlohmann::ordered_json).
template <typename Json>
Json parse_json_text(const std::string& text, const std::string& file);

extern template nlohmann::json parse_json_text<nlohmann::json>(const std::string&,
                                                               const std::string&);
extern template nlohmann::ordered_json parse_json_text<nlohmann::ordered_json>(const std::string&,
                                                                               const std::string&);

}  // namespace trnsim::base
