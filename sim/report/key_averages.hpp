// torch.profiler's key_averages() table, for the command line's summary and for the Python
// profiler (trnsim.torch) alike: one formatter, so that both print what
// `prof.key_averages().table(sort_by=..., row_limit=...)` prints, with the simulated host and
// device times. The layout follows torch's _build_table (torch/autograd/profiler_util.py,
// 1.13 and later): right-aligned columns of width 12 (the name column as wide as the longest
// key + 4, at most 55; longer keys cut to 52 characters and "..."), two blanks after every
// column, a dashed separator, times as torch prints them (3 decimals, us/ms/s), shares with 2
// decimals ("NaN" when the total is 0), and the footer "Self CPU time total: ..." and, when a
// row has device time, "Self <device> time total: ...". The device's columns are named after
// `device` ("Self device", "Self device %", "Device total", "Device time avg" by default;
// "CUDA" gives torch 1.13's "Self CUDA", "CUDA total", ...).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trnsim::sim {

// One row: what torch's FunctionEventAvg holds for one key, times in microseconds.
struct KeyAveragesRow {
  std::string key;  // "aten::mul", "nrt_execute", a kernel's name, ...
  uint64_t count = 0;
  double self_cpu_time_total = 0;  // us
  double cpu_time_total = 0;       // us: itself and what it called
  double self_device_time_total = 0;
  double device_time_total = 0;
  // A device row (a kernel), whose self device time counts in "Self device time total" (torch:
  // an event whose device_type is the device's); CPU rows carry their kernels' device time too.
  bool on_device = false;
  double cpu_time() const { return count ? cpu_time_total / static_cast<double>(count) : 0.0; }
  double device_time() const {
    return count ? device_time_total / static_cast<double>(count) : 0.0;
  }
};

struct KeyAveragesTableOptions {
  // A row attribute to sort by, largest first (stable: ties keep the rows' order), or "" to keep
  // the order. torch's names: count, self_cpu_time_total, cpu_time_total, cpu_time,
  // self_device_time_total, device_time_total, device_time, and torch 1.13's self_cuda_time_total,
  // cuda_time_total, cuda_time for the device's.
  std::string sort_by;
  int64_t row_limit = 100;  // rows printed; -1 prints all (torch's rule: stop when it is reached)
  std::string device = "device";
  int64_t max_name_column_width = 55;
  std::string header;  // printed above the table between '=' lines, as torch's `header`
};

// The names sort_by accepts, for messages.
const std::vector<std::string>& key_averages_sort_keys();

// The table, every line ending in '\n' ("" for no rows). Throws std::invalid_argument for an
// unknown sort_by, naming the known ones.
std::string key_averages_table(std::vector<KeyAveragesRow> rows,
                               const KeyAveragesTableOptions& options = {});

// torch's time and share formats: 7.000us, 22.170ms, 1.288s; 12.34%, NaN.
std::string torch_time(double us);
std::string torch_share(double part, double total);

// Rows as stats.json keeps them (torch's field names, microseconds, and device_type "CPU" or
// "device"), and back (the Python profiler reads them). from_json throws std::invalid_argument
// naming the row and field that is missing or not a number.
nlohmann::json key_averages_json(const std::vector<KeyAveragesRow>& rows);
std::vector<KeyAveragesRow> key_averages_from_json(const nlohmann::json& rows);

}  // namespace trnsim::sim
