#include "sim/report/key_averages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <stdexcept>

namespace trnsim::sim {

namespace {

using Field = std::function<double(const KeyAveragesRow&)>;

const std::vector<std::pair<std::string, Field>>& sort_fields() {
  static const std::vector<std::pair<std::string, Field>> f = {
      {"count", [](const KeyAveragesRow& r) { return static_cast<double>(r.count); }},
      {"self_cpu_time_total", [](const KeyAveragesRow& r) { return r.self_cpu_time_total; }},
      {"cpu_time_total", [](const KeyAveragesRow& r) { return r.cpu_time_total; }},
      {"cpu_time", [](const KeyAveragesRow& r) { return r.cpu_time(); }},
      {"self_device_time_total", [](const KeyAveragesRow& r) { return r.self_device_time_total; }},
      {"device_time_total", [](const KeyAveragesRow& r) { return r.device_time_total; }},
      {"device_time", [](const KeyAveragesRow& r) { return r.device_time(); }},
      {"self_cuda_time_total", [](const KeyAveragesRow& r) { return r.self_device_time_total; }},
      {"cuda_time_total", [](const KeyAveragesRow& r) { return r.device_time_total; }},
      {"cuda_time", [](const KeyAveragesRow& r) { return r.device_time(); }},
  };
  return f;
}

std::string capitalized(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

const std::vector<std::string>& key_averages_sort_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& [name, f] : sort_fields()) k.push_back(name);
    return k;
  }();
  return keys;
}

std::string torch_time(double us) {
  if (us >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
  return fmt::format("{:.3f}us", us);
}

std::string torch_share(double part, double total) {
  if (total == 0) return "NaN";
  return fmt::format("{:.2f}%", part * 100.0 / total);
}

std::string key_averages_table(std::vector<KeyAveragesRow> rows, const KeyAveragesTableOptions& o) {
  if (rows.empty()) return "";
  if (!o.sort_by.empty()) {
    const auto& fields = sort_fields();
    const auto it = std::find_if(fields.begin(), fields.end(),
                                 [&](const auto& f) { return f.first == o.sort_by; });
    if (it == fields.end()) {
      throw std::invalid_argument(
          fmt::format("sort_by={}: not a key_averages field; expected one of: {}", o.sort_by,
                      fmt::join(key_averages_sort_keys(), ", ")));
    }
    const Field& field = it->second;
    std::stable_sort(
        rows.begin(), rows.end(),
        [&](const KeyAveragesRow& a, const KeyAveragesRow& b) { return field(a) > field(b); });
  }
  const bool has_device = std::any_of(rows.begin(), rows.end(), [](const KeyAveragesRow& r) {
    return r.self_device_time_total > 0;
  });
  size_t longest = 0;
  for (const KeyAveragesRow& r : rows) longest = std::max(longest, r.key.size());
  int64_t name_width = static_cast<int64_t>(longest) + 4;
  if (o.max_name_column_width > 0) name_width = std::min(name_width, o.max_name_column_width);

  std::vector<std::string> headers = {"Name",        "Self CPU %", "Self CPU",
                                      "CPU total %", "CPU total",  "CPU time avg"};
  if (has_device) {
    headers.push_back("Self " + o.device);
    headers.push_back("Self " + o.device + " %");
    headers.push_back(capitalized(o.device) + " total");
    headers.push_back(capitalized(o.device) + " time avg");
  }
  headers.push_back("# of Calls");
  std::vector<int64_t> widths(headers.size(), 12);
  widths[0] = name_width;
  std::string sep;
  int64_t line_length = -2;
  for (int64_t w : widths) {
    sep += std::string(static_cast<size_t>(w), '-') + "  ";
    line_length += w + 2;
  }
  sep += '\n';
  auto row_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      line += fmt::format("{:>{}}  ", cells[i], static_cast<size_t>(widths[i]));
    }
    return line + '\n';
  };

  double self_cpu = 0, self_device = 0;
  for (const KeyAveragesRow& r : rows) {
    self_cpu += r.self_cpu_time_total;
    if (r.on_device) self_device += r.self_device_time_total;
  }
  std::string out;
  if (!o.header.empty()) {
    out += std::string(static_cast<size_t>(line_length), '=') + '\n';
    out += o.header + '\n';
  }
  out += sep + row_line(headers) + sep;
  int64_t printed = 0;
  for (const KeyAveragesRow& r : rows) {
    if (printed == o.row_limit) break;
    ++printed;
    std::string name = r.key;
    if (o.max_name_column_width > 0 &&
        static_cast<int64_t>(name.size()) >= o.max_name_column_width - 3) {
      name = name.substr(0, static_cast<size_t>(o.max_name_column_width - 3)) + "...";
    }
    std::vector<std::string> cells = {name,
                                      torch_share(r.self_cpu_time_total, self_cpu),
                                      torch_time(r.self_cpu_time_total),
                                      torch_share(r.cpu_time_total, self_cpu),
                                      torch_time(r.cpu_time_total),
                                      torch_time(r.cpu_time())};
    if (has_device) {
      cells.push_back(torch_time(r.self_device_time_total));
      cells.push_back(torch_share(r.self_device_time_total, self_device));
      cells.push_back(torch_time(r.device_time_total));
      cells.push_back(torch_time(r.device_time()));
    }
    cells.push_back(std::to_string(r.count));
    out += row_line(cells);
  }
  out += sep;
  out += "Self CPU time total: " + torch_time(self_cpu) + '\n';
  if (has_device) out += "Self " + o.device + " time total: " + torch_time(self_device) + '\n';
  return out;
}

nlohmann::json key_averages_json(const std::vector<KeyAveragesRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const KeyAveragesRow& r : rows) {
    out.push_back({{"key", r.key},
                   {"count", r.count},
                   {"device_type", r.on_device ? "device" : "CPU"},
                   {"self_cpu_time_total", r.self_cpu_time_total},
                   {"cpu_time_total", r.cpu_time_total},
                   {"cpu_time", r.cpu_time()},
                   {"self_device_time_total", r.self_device_time_total},
                   {"device_time_total", r.device_time_total},
                   {"device_time", r.device_time()}});
  }
  return out;
}

std::vector<KeyAveragesRow> key_averages_from_json(const nlohmann::json& rows) {
  if (!rows.is_array()) throw std::invalid_argument("key_averages rows: expected an array");
  std::vector<KeyAveragesRow> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& j = rows[i];
    auto fail = [&](const char* field, const char* what) {
      throw std::invalid_argument(
          fmt::format("key_averages row {}: {} is missing or not {}", i, field, what));
    };
    if (!j.is_object())
      throw std::invalid_argument(fmt::format("key_averages row {}: expected an object", i));
    KeyAveragesRow r;
    if (!j.contains("key") || !j["key"].is_string()) fail("key", "a string");
    r.key = j["key"].get<std::string>();
    if (!j.contains("count") || !j["count"].is_number_unsigned()) fail("count", "a count");
    r.count = j["count"].get<uint64_t>();
    auto number = [&](const char* field) {
      if (!j.contains(field) || !j[field].is_number()) fail(field, "a number");
      return j[field].get<double>();
    };
    r.self_cpu_time_total = number("self_cpu_time_total");
    r.cpu_time_total = number("cpu_time_total");
    r.self_device_time_total = number("self_device_time_total");
    r.device_time_total = number("device_time_total");
    r.on_device = j.value("device_type", "CPU") != "CPU";
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace trnsim::sim
