// report.html read back without a browser: the run's block of JSON, and its event columns
// (base64 of the deflated little-endian columns, sim/report/report_html.hpp). Shared by the
// tests of the writer (sim_report) and of the pages trnsim writes (cli_stream).
#pragma once

#include <zlib.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim_test {

inline std::vector<unsigned char> base64_decode(const std::string& text) {
  std::vector<unsigned char> out;
  uint32_t bits = 0;
  int have = 0;
  for (const char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '+') v = 62;
    if (c == '/') v = 63;
    if (v < 0) continue;  // line breaks and padding
    bits = (bits << 6) | static_cast<uint32_t>(v);
    have += 6;
    if (have >= 8) {
      have -= 8;
      out.push_back(static_cast<unsigned char>((bits >> have) & 0xff));
    }
  }
  return out;
}

// Value i of the column that starts at byte `offset`.
template <typename T>
T column(const std::vector<unsigned char>& bytes, size_t offset, size_t i) {
  T v;
  std::memcpy(&v, bytes.data() + offset + i * sizeof(T), sizeof(T));
  return v;
}

struct ReportPage {
  nlohmann::json block;              // the run's block of JSON
  size_t events = 0;                 // block["events"]
  std::vector<unsigned char> bytes;  // the columns, 39 bytes per event
  size_t packed_bytes = 0;           // their deflated size
  // Event i's label: its text, or "" where it has none.
  std::string label(size_t i) const {
    const auto id = column<uint32_t>(bytes, 28 * events, i);
    return id == 0xffffffffu ? std::string() : block["labels"][id].get<std::string>();
  }
};

// The first run of a page (throws std::runtime_error when it is not there or does not decode).
inline ReportPage read_report_page(const std::string& page) {
  const std::string run_open = "<script type=\"application/json\" class=\"trnsim-run\">\n";
  const size_t at = page.find(run_open);
  if (at == std::string::npos) throw std::runtime_error("report: no run block");
  const size_t json_end = page.find('\n', at + run_open.size());
  ReportPage r;
  r.block =
      nlohmann::json::parse(page.substr(at + run_open.size(), json_end - at - run_open.size()));
  r.events = r.block["events"];
  const std::string events_open =
      "<script type=\"application/octet-stream\" class=\"trnsim-events\">\n";
  const size_t events_at = page.find(events_open, json_end);
  if (events_at == std::string::npos) throw std::runtime_error("report: no events block");
  const size_t from = events_at + events_open.size();
  const std::vector<unsigned char> packed =
      base64_decode(page.substr(from, page.find("</script>", from) - from));
  r.packed_bytes = packed.size();
  r.bytes.resize(39 * r.events);
  uLongf size = r.bytes.size();
  if (uncompress(r.bytes.data(), &size, packed.data(), packed.size()) != Z_OK ||
      size != r.bytes.size()) {
    throw std::runtime_error("report: the events do not inflate to 39 bytes each");
  }
  return r;
}

}  // namespace trnsim_test
