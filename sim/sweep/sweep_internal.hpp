// The parts of `trnsim sweep` that its files share: the parsed sweep file and its points
// (sweep_spec.cpp), running the points in child processes (sweep_points.cpp), the results as
// CSV, JSON and a table (sweep_results.cpp), the gnuplot plot (sweep_plot.cpp); sweep.cpp ties
// them together. Internal to sim/sweep: the interface is sweep.hpp.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/arch_file.hpp"
#include "sim/sweep/sweep.hpp"

namespace trnsim::sim::sweep_internal {

using nlohmann::json;

constexpr const char* kVersion = "0.1.0";
// At most this many points run at once on a rank (-j).
constexpr int kMaxJobs = 4096;

// The stats.json metrics a row carries besides time and cycles, in column order.
extern const std::vector<std::string> kRowMetrics;
// The active-time metrics of kRowMetrics and the resource each names, for a row's "busiest".
extern const std::vector<std::pair<std::string, std::string>> kBusyNames;
// Columns a plot may use as y.
std::vector<std::string> plot_metrics();

// Workload keys a sweep may vary besides the arch's parameters (docs/sweeps.md): "workload.cores"
// runs the kernel-form workload with that many cores, "workload.chips" spreads them over that
// many chips. Each point with one runs a copy of its
// workload file with the key replaced, written in the point's directory.
const std::vector<std::string>& workload_axes();
bool is_workload_axis(const std::string& name);
// Keys of an NKI kernel (a .py workload, docs/nki.md) a sweep may vary: "kernel.lnc" (the
// child's --lnc, physical cores per logical core) and "kernel.grid" (its --grid, one dimension).
const std::vector<std::string>& kernel_axes();
bool is_kernel_axis(const std::string& name);
// A varied key that is no arch parameter (a workload or kernel axis).
inline bool is_key_axis(const std::string& name) {
  return is_workload_axis(name) || is_kernel_axis(name);
}
// The unit results.json and the plot give a varied key.
std::string axis_unit(const std::string& name);

// How the sweep runs its NKI kernels (.py workloads): the sweep file's "kernel" object.
struct KernelSpec {
  std::string name;                 // the nki.jit function (--kernel)
  std::vector<std::string> inputs;  // NAME=SHAPE[:DTYPE] or NAME=FILE.npy (the path absolute)
  std::vector<std::string> npy;     // the .npy files among them, for --resume
  std::string grid;                 // --grid ("8", "2,2"); empty: no grid
  std::string lnc;                  // --lnc ("1", "2"); empty: 1
};

struct Axis {
  std::vector<std::string> params;               // one for a grid axis, several for a zip group
  std::vector<std::vector<std::string>> values;  // values[i][k]: the i-th step of params[k]
};

struct PlotSpec {
  std::string x, y = "total_time_us", title;
  bool log_x = false, log_y = false;
};

struct SweepSpec {
  std::string file, name, description;
  std::vector<std::string> workloads;       // as written, for the results
  std::vector<std::string> workload_paths;  // absolute, for the runs
  // Per workload: each workload axis's value in the file itself (its base), e.g. cores 1.
  std::vector<std::map<std::string, std::string>> workload_values;
  std::vector<bool> python;  // per workload: an NKI kernel (.py), run with `kernel`
  KernelSpec kernel;
  // Where in the sweep file each kernel-axis value is ("kernel.lnc=2" -> "/grid/kernel.lnc/1"),
  // for a point the value does not suit.
  std::map<std::string, std::string> kernel_value_at;
  std::string arch;                     // as written
  std::string arch_arg;                 // the runs' --arch: a preset or an absolute path
  config::ArchSpec base;                // the base arch with the fixed sets applied
  std::vector<std::string> fixed_sets;  // "name=value"
  std::vector<std::string> varied;      // every varied parameter, in column order
  std::vector<Axis> axes;
  bool timing_only = true;
  PlotSpec plot;
};

struct Point {
  size_t index = 0;
  std::string id;  // p000, p001, ...
  size_t workload = 0;
  bool base = false;                // the point speedups of its workload are relative to
  bool extra_base = false;          // the base point, added because no grid point equals it
  std::vector<std::string> values;  // per spec.varied
  std::vector<std::string> sets;    // fixed then varied arch parameters, "name=value"
  // Varied workload keys (workload axes without their "workload." prefix) and their values;
  // empty when the point runs the workload file as it is.
  std::vector<std::pair<std::string, std::string>> workload_sets;
  // An NKI kernel's --lnc and --grid at this point ("lnc", "2"), the kernel object's unless
  // varied; empty for other workloads.
  std::vector<std::pair<std::string, std::string>> kernel_sets;
  json definition;  // what the point is, to know a finished one on --resume
};

std::string stem_of(const std::string& path);
// Reads and checks a sweep file (throws InputError naming the file and the place in it).
SweepSpec parse_sweep(const std::string& file);
// The points in output order: per workload, its added base point (if any), then the grid in
// the file's order, the last axis varying fastest. Throws InputError for a point the arch
// refuses.
std::vector<Point> expand(const SweepSpec& s, bool timing_only);

// Writes `text` to `path` via a temporary file (throws OutputError).
void write_file(const std::string& path, const std::string& text);

// Runs `mine` (indices into points), at most `jobs` child processes at once. Returns the rows.
std::map<size_t, json> run_points(const SweepSpec& s, const std::vector<Point>& points,
                                  const std::vector<size_t>& mine, const SweepOptions& o,
                                  bool timing_only, const std::string& out_dir, int rank,
                                  int ranks);

// A row's cell as the CSV and the table print it: nothing for null, strings bare.
std::string json_text(const json& v);
// Speedups against each workload's base point.
void add_speedups(std::vector<json>& rows);
std::string csv_text(const SweepSpec& s, const std::vector<json>& rows);
json results_json(const SweepSpec& s, bool timing_only, const std::vector<json>& rows);
std::string table_text(const SweepSpec& s, const std::vector<json>& rows);

// Writes plot.dat and plot.gp and runs gnuplot for plot.svg; returns what to tell the user.
std::string plot(const SweepSpec& s, const std::vector<json>& rows, const std::string& out_dir);

}  // namespace trnsim::sim::sweep_internal
