#include "sim/report/trace_filter.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "sim/io/input_file.hpp"

namespace trnsim::sim {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return parts;
}

// "250us", "1.5ms", "800ns", "2s" (a unit is required) in picoseconds.
int64_t parse_time(std::string_view term, std::string_view text) {
  const auto bad = [&] {
    return InputError(fmt::format(
        "--trace-filter '{}': '{}' is not a time; expected a number with a unit (ns, us, ms, s), "
        "e.g. window=100us:250us",
        term, text));
  };
  size_t unit = text.size();
  while (unit > 0 && std::isalpha(static_cast<unsigned char>(text[unit - 1]))) --unit;
  const std::string number(text.substr(0, unit));
  const std::string_view suffix = text.substr(unit);
  double scale = 0;
  if (suffix == "ns") scale = 1e3;
  if (suffix == "us") scale = 1e6;
  if (suffix == "ms") scale = 1e9;
  if (suffix == "s") scale = 1e12;
  if (scale == 0 || number.empty()) throw bad();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  if (used != number.size() || !std::isfinite(v) || v < 0 || v * scale > 9e18) throw bad();
  return static_cast<int64_t>(std::llround(v * scale));
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative matcher with one backtrack point (the last `*`): linear in practice.
  size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  const auto same = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  };
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || same(pattern[p], name[n]))) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool TraceFilter::keeps_lane(std::string_view name) const {
  if (lane_patterns.empty()) return true;
  for (const std::string& p : lane_patterns) {
    if (glob_match(p, name)) return true;
  }
  return false;
}

TraceFilter parse_trace_filter(const std::vector<std::string>& specs) {
  TraceFilter f;
  bool window = false;
  for (const std::string& spec : specs) {
    for (const std::string_view term : split(spec, ';')) {
      if (term.empty()) continue;
      const size_t eq = term.find('=');
      const std::string_view key = trim(term.substr(0, eq));
      if (eq == std::string_view::npos || (key != "lanes" && key != "window")) {
        throw InputError(fmt::format(
            "--trace-filter '{}': expected lanes=PATTERN[,PATTERN...] or window=START:END "
            "(e.g. 'lanes=TensorE,DMA*;window=100us:250us')",
            term));
      }
      const std::string_view value = trim(term.substr(eq + 1));
      if (key == "lanes") {
        for (const std::string_view p : split(value, ',')) {
          if (p.empty()) {
            throw InputError(
                fmt::format("--trace-filter '{}': an empty lane pattern; expected names or "
                            "patterns with * and ? separated by commas",
                            term));
          }
          f.lane_patterns.emplace_back(p);
        }
      } else {
        const size_t colon = value.find(':');
        if (colon == std::string_view::npos) {
          throw InputError(fmt::format(
              "--trace-filter '{}': expected window=START:END (either may be empty), e.g. "
              "window=100us:250us",
              term));
        }
        if (window) {
          throw InputError(fmt::format("--trace-filter '{}': a second window; give one", term));
        }
        window = true;
        const std::string_view from = trim(value.substr(0, colon));
        const std::string_view to = trim(value.substr(colon + 1));
        if (!from.empty()) f.from_ps = parse_time(term, from);
        if (!to.empty()) f.to_ps = parse_time(term, to);
        if (f.from_ps > f.to_ps) {
          throw InputError(
              fmt::format("--trace-filter '{}': the window ends before it starts", term));
        }
      }
      if (!f.text.empty()) f.text += ';';
      f.text += std::string(term);
    }
  }
  return f;
}

void check_trace_filter(const TraceFilter& filter, const std::vector<std::string>& lanes) {
  for (const std::string& p : filter.lane_patterns) {
    bool any = false;
    for (const std::string& l : lanes) any = any || glob_match(p, l);
    if (!any) {
      std::string names;
      for (const std::string& l : lanes) names += (names.empty() ? "" : ", ") + l;
      throw InputError(fmt::format(
          "--trace-filter: lane pattern '{}' matches no lane of this run; its lanes are: {}", p,
          names));
    }
  }
}

}  // namespace trnsim::sim
