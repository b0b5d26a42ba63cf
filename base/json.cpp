#include "base/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace trnsim::base {

JsonError::JsonError(const std::string& file, const std::string& where, const std::string& what)
    : std::runtime_error(fmt::format("{}: {}: {}", file, where, what)),
      where_(where),
      what_(what) {}

namespace {

std::pair<size_t, size_t> line_and_column(const std::string& text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

template <typename Json>
Json parse_json_text(const std::string& text, const std::string& file) {
  // Keys seen per open object, to reject duplicates (nlohmann keeps the last silently), and
  // the depth, to reject nesting deep enough to exhaust the stack when the document is copied.
  std::vector<std::vector<std::string>> keys;
  std::string problem;
  auto callback = [&](int depth, typename Json::parse_event_t event, Json& parsed) {
    if (!problem.empty()) return false;
    if (depth > kMaxJsonDepth) {
      problem = fmt::format("nesting deeper than {} levels", kMaxJsonDepth);
      return false;
    }
    switch (event) {
      case Json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Json::parse_event_t::key: {
        const std::string k = parsed.template get<std::string>();
        auto& seen = keys.back();
        if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
          problem = fmt::format("duplicate key \"{}\"", k);
          return false;
        }
        seen.push_back(k);
        break;
      }
      default:
        break;
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text, callback);
  } catch (const typename Json::parse_error& e) {
    const auto [line, column] = line_and_column(text, e.byte);
    std::string what = e.what();
    const auto pos = what.find("syntax error");
    throw JsonError(
        file, fmt::format("line {}, column {}", line, column),
        fmt::format("malformed JSON ({})", pos == std::string::npos ? what : what.substr(pos)));
  } catch (const typename Json::out_of_range& e) {
    // A number no double holds (1e400): nlohmann reports no position for it.
    std::string what = e.what();
    const auto pos = what.find("number overflow");
    throw JsonError(file, "JSON", pos == std::string::npos ? what : what.substr(pos));
  }
  if (!problem.empty()) throw JsonError(file, "JSON", problem);
  return doc;
}

template nlohmann::json parse_json_text<nlohmann::json>(const std::string&, const std::string&);
template nlohmann::ordered_json parse_json_text<nlohmann::ordered_json>(const std::string&,
                                                                        const std::string&);

}  // namespace trnsim::base
