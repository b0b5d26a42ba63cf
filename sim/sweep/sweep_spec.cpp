// `trnsim sweep`: reading and checking a sweep file (docs/sweeps.md), and the points it
// describes, each with the full --set list it runs with and what it is (to know it on --resume).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/json.hpp"
#include "base/names.hpp"
#include "config/arch_file.hpp"
#include "config/parameters.hpp"
#include "sim/io/input_file.hpp"
#include "sim/run/load.hpp"
#include "sim/run/nki_kernel.hpp"
#include "sim/sweep/sweep_internal.hpp"
#include "workloads/workload.hpp"

namespace trnsim::sim::sweep_internal {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

const std::vector<std::string> kRowMetrics = {"tensor_engine_active_time_percent",
                                              "vector_engine_active_time_percent",
                                              "scalar_engine_active_time_percent",
                                              "gpsimd_engine_active_time_percent",
                                              "sync_engine_active_time_percent",
                                              "dma_active_time_percent",
                                              "mbu_estimated_percent",
                                              "mfu_estimated_percent",
                                              "hbm_achieved_bytes_per_second",
                                              "dma_achieved_bytes_per_second"};
const std::vector<std::pair<std::string, std::string>> kBusyNames = {
    {"tensor_engine_active_time_percent", "TensorE"},
    {"vector_engine_active_time_percent", "VectorE"},
    {"scalar_engine_active_time_percent", "ScalarE"},
    {"gpsimd_engine_active_time_percent", "GpSimdE"},
    {"sync_engine_active_time_percent", "SyncE"},
    {"dma_active_time_percent", "DMA"}};

// Columns a plot may use as y.
std::vector<std::string> plot_metrics() {
  std::vector<std::string> m = {"total_time_us", "neuroncore_cycle_count", "speedup"};
  m.insert(m.end(), kRowMetrics.begin(), kRowMetrics.end());
  return m;
}

const std::vector<std::string>& workload_axes() {
  static const std::vector<std::string> names = {"workload.cores", "workload.chips"};
  return names;
}

bool is_workload_axis(const std::string& name) {
  const auto& n = workload_axes();
  return std::find(n.begin(), n.end(), name) != n.end();
}

const std::vector<std::string>& kernel_axes() {
  static const std::vector<std::string> names = {"kernel.lnc", "kernel.grid"};
  return names;
}

bool is_kernel_axis(const std::string& name) {
  const auto& n = kernel_axes();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::string axis_unit(const std::string& name) {
  if (name == "kernel.lnc") return "physical cores";
  if (name == "kernel.grid") return "instances";
  if (is_workload_axis(name)) return name.substr(name.find('.') + 1);
  return std::string(config::find_parameter(name)->unit);
}

namespace {

constexpr size_t kMaxPoints = 100000;
// The largest launch grid a sweep's kernel.grid may give (instances, traced one by one).
constexpr uint64_t kMaxGrid = 4096;

const std::vector<std::string> kSweepKeys = {"name",        "description", "workloads", "arch",
                                             "kernel",      "set",         "grid",      "zip",
                                             "timing_only", "plot"};
const std::vector<std::string> kKernelKeys = {"name", "inputs", "grid", "lnc"};
const std::vector<std::string> kPlotKeys = {"x", "y", "log_x", "log_y", "title"};

// A bad sweep file: "FILE: WHERE: WHAT".
[[noreturn]] void fail(const std::string& file, const std::string& where, const std::string& what) {
  throw InputError(fmt::format("{}: {}: {}", file, where, what));
}

std::string value_text(const ordered_json& v, const std::string& file, const std::string& where) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  fail(file, where, fmt::format("expected a number or true/false, got {}", v.dump()));
}

// Checks `name`=`text` as --set would, naming the place in the sweep file.
void check_assignment(const std::string& name, const std::string& text, const std::string& file,
                      const std::string& where) {
  try {
    config::ArchConfig scratch;
    config::set_parameter(scratch, name + "=" + text);
  } catch (const std::invalid_argument& e) {
    fail(file, where, e.what());
  }
}

const config::Parameter& checked_parameter(const std::string& name, const std::string& file,
                                           const std::string& where) {
  const config::Parameter* p = config::find_parameter(name);
  if (p == nullptr) fail(file, where, config::unknown_parameter_text(name));
  return *p;
}

void check_keys(const ordered_json& object, const std::vector<std::string>& known,
                const std::string& file, const std::string& where) {
  for (const auto& item : object.items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    const std::string near = base::closest_name(item.key(), known);
    fail(file, where + "/" + item.key(),
         fmt::format("unknown key; expected {}{}", fmt::join(known, ", "),
                     near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
  }
}

}  // namespace

std::string stem_of(const std::string& path) {
  return fs::path(path).stem().string();
}

namespace {

// A path in the sweep file is relative to the file's directory.
std::string resolve(const std::string& path, const std::string& sweep_file) {
  fs::path p(path);
  if (p.is_relative()) p = fs::absolute(sweep_file).parent_path() / p;
  return p.lexically_normal().string();
}

// The sweep file's "kernel" object: how its NKI kernels (.py workloads) run.
void parse_kernel(SweepSpec& s, const ordered_json& k, const std::string& file) {
  if (!k.is_object()) {
    fail(file, "/kernel",
         fmt::format("expected an object: name, inputs, grid, lnc; got {}", k.type_name()));
  }
  check_keys(k, kKernelKeys, file, "/kernel");
  if (!k.contains("name")) {
    fail(file, "/kernel/name", "missing; expected the nki.jit function to run (--kernel)");
  }
  if (!k["name"].is_string() || k["name"].get<std::string>().empty()) {
    fail(file, "/kernel/name", "expected the name of the nki.jit function to run (--kernel)");
  }
  s.kernel.name = k["name"].get<std::string>();

  // Inputs: {"NAME": "SPEC"} or ["NAME=SPEC"]; SPEC is SHAPE[:DTYPE] or a .npy file.
  std::vector<std::tuple<std::string, std::string, std::string>> inputs;  // where, name, spec
  if (k.contains("inputs")) {
    const ordered_json& in = k["inputs"];
    const char* expected =
        "expected {\"NAME\": \"SHAPE[:DTYPE]\" or \"FILE.npy\"} or a list of "
        "\"NAME=SHAPE[:DTYPE]\"";
    if (in.is_object()) {
      for (const auto& item : in.items()) {
        const std::string where = "/kernel/inputs/" + item.key();
        if (!item.value().is_string()) {
          fail(file, where,
               fmt::format("expected \"SHAPE[:DTYPE]\" (e.g. \"128x512:bfloat16\") or "
                           "\"FILE.npy\", got {}",
                           item.value().dump()));
        }
        inputs.emplace_back(where, item.key(), item.value().get<std::string>());
      }
    } else if (in.is_array()) {
      for (size_t i = 0; i < in.size(); ++i) {
        const std::string where = fmt::format("/kernel/inputs/{}", i);
        const std::string text = in[i].is_string() ? in[i].get<std::string>() : std::string();
        const size_t eq = text.find('=');
        if (eq == std::string::npos || eq == 0) {
          fail(file, where,
               fmt::format("expected \"NAME=SHAPE[:DTYPE]\" or \"NAME=FILE.npy\", got {}",
                           in[i].dump()));
        }
        inputs.emplace_back(where, text.substr(0, eq), text.substr(eq + 1));
      }
    } else {
      fail(file, "/kernel/inputs", fmt::format("{}, got {}", expected, in.type_name()));
    }
  }
  for (const auto& [where, name, spec] : inputs) {
    if (spec.size() > 4 && spec.compare(spec.size() - 4, 4, ".npy") == 0) {
      const std::string path = resolve(spec, file);
      try {
        (void)read_input_file(path, "an input array");
      } catch (const InputError& e) {
        fail(file, where, e.what());
      }
      s.kernel.inputs.push_back(name + "=" + path);
      s.kernel.npy.push_back(path);
      continue;
    }
    // SHAPE[:DTYPE]: sizes joined by x; the dtype's name is the tracer's to check.
    const std::string shape = spec.substr(0, spec.find(':'));
    bool ok = !shape.empty() && shape.front() != 'x' && shape.back() != 'x' &&
              (spec.find(':') == std::string::npos || spec.find(':') + 1 < spec.size());
    for (size_t i = 0; i < shape.size() && ok; ++i) {
      ok = std::isdigit(static_cast<unsigned char>(shape[i])) ||
           (shape[i] == 'x' && shape[i + 1] != 'x');
    }
    if (!ok) {
      fail(file, where,
           fmt::format("{}: expected SHAPE[:DTYPE], sizes joined by x (e.g. 128x512 or "
                       "128x512:bfloat16), or a .npy file",
                       spec));
    }
    s.kernel.inputs.push_back(name + "=" + spec);
  }

  // The grid: a number of instances, or a list of them per dimension.
  auto positive = [](const ordered_json& v) {
    return v.is_number_unsigned() && v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= kMaxGrid;
  };
  if (k.contains("grid")) {
    const ordered_json& g = k["grid"];
    const std::string expected = fmt::format(
        "expected the launch grid: a positive integer (at most {}) or a list of "
        "them, one per dimension",
        kMaxGrid);
    if (positive(g)) {
      s.kernel.grid = g.dump();
    } else if (g.is_array() && !g.empty() && g.size() <= 3) {
      for (size_t i = 0; i < g.size(); ++i) {
        if (!positive(g[i])) {
          fail(file, fmt::format("/kernel/grid/{}", i),
               fmt::format("{}, got {}", expected, g[i].dump()));
        }
        s.kernel.grid += (i ? "," : "") + g[i].dump();
      }
    } else {
      fail(file, "/kernel/grid", fmt::format("{}, got {}", expected, g.dump()));
    }
  }
  if (k.contains("lnc")) {
    const ordered_json& l = k["lnc"];
    if (!l.is_number_unsigned() || (l.get<uint64_t>() != 1 && l.get<uint64_t>() != 2)) {
      fail(file, "/kernel/lnc",
           fmt::format("expected 1 or 2 (physical cores per logical core, as the Neuron SDK "
                       "groups them), got {}",
                       l.dump()));
    }
    s.kernel.lnc = l.dump();
  }
}

}  // namespace

SweepSpec parse_sweep(const std::string& file) {
  const std::string text = read_input_file(file, "a sweep file");
  ordered_json doc;
  try {
    doc = base::parse_json_text<ordered_json>(text, file);
  } catch (const base::JsonError& e) {
    throw InputError(e.what());
  }
  if (!doc.is_object())
    fail(file, "/", fmt::format("expected a JSON object, got {}", doc.type_name()));
  check_keys(doc, kSweepKeys, file, "");

  SweepSpec s;
  s.file = file;
  auto string_of = [&](const char* key) {
    if (!doc[key].is_string()) {
      fail(file, fmt::format("/{}", key),
           fmt::format("expected a string, got {}", doc[key].type_name()));
    }
    return doc[key].get<std::string>();
  };
  s.name = doc.contains("name") ? string_of("name") : stem_of(file);
  if (doc.contains("description")) s.description = string_of("description");

  // Workloads: each must exist and, in the kernel form, parse.
  if (!doc.contains("workloads")) {
    fail(file, "/workloads", "missing; expected a workload file or a list of them");
  }
  const ordered_json& w = doc["workloads"];
  std::vector<std::pair<std::string, ordered_json>> listed;
  if (w.is_string()) {
    listed.emplace_back("/workloads", w);
  } else if (w.is_array()) {
    if (w.empty()) fail(file, "/workloads", "empty; expected at least one workload file");
    for (size_t i = 0; i < w.size(); ++i)
      listed.emplace_back(fmt::format("/workloads/{}", i), w[i]);
  } else {
    fail(file, "/workloads",
         fmt::format("expected a workload file or a list of them, got {}", w.type_name()));
  }
  for (const auto& [where, entry] : listed) {
    if (!entry.is_string() || entry.get<std::string>().empty()) {
      fail(file, where, "expected the path of a workload file (relative to the sweep file)");
    }
    const std::string as_written = entry.get<std::string>();
    const std::string path = resolve(as_written, file);
    if (std::find(s.workload_paths.begin(), s.workload_paths.end(), path) !=
        s.workload_paths.end()) {
      fail(file, where, fmt::format("{} is listed twice", as_written));
    }
    s.python.push_back(is_python_kernel(path));
    try {
      const std::string wtext = read_input_file(path);
      // An NKI kernel is traced by Python at each point; here it need only be readable.
      if (s.python.back()) {
        s.workloads.push_back(as_written);
        s.workload_paths.push_back(path);
        continue;
      }
      const bool program =
          path.size() > 5 && (path.compare(path.size() - 5, 5, ".tasm") == 0 ||
                              wtext.find("\"trnsim-program\"") != std::string::npos);
      if (!program) (void)workloads::parse_workload(wtext, path);
    } catch (const InputError& e) {
      fail(file, where, e.what());
    } catch (const workloads::WorkloadError& e) {
      fail(file, where, e.what());
    }
    s.workloads.push_back(as_written);
    s.workload_paths.push_back(path);
  }

  // The base arch: a preset name or an arch file relative to the sweep file.
  s.arch = doc.contains("arch") ? string_of("arch") : "trn2";
  s.arch_arg = s.arch;
  if (config::find_preset_spec(s.arch) == nullptr) {
    // A file (relative to the sweep file) if it looks like one; else an unknown preset's name,
    // which load_arch_spec refuses with the nearest preset.
    const std::string path = resolve(s.arch, file);
    std::error_code ec;
    if (s.arch.find('/') != std::string::npos || fs::path(s.arch).extension() == ".json" ||
        fs::exists(path, ec)) {
      s.arch_arg = path;
    }
  }
  try {
    s.base = load_arch_spec(s.arch_arg, {});
  } catch (const InputError& e) {
    fail(file, "/arch", e.what());
  }

  // Where the sweep file lists workload w.
  auto workload_at = [&](size_t w) {
    return doc["workloads"].is_string() ? std::string("/workloads")
                                        : fmt::format("/workloads/{}", w);
  };
  const bool any_python = std::find(s.python.begin(), s.python.end(), true) != s.python.end();
  if (doc.contains("kernel")) {
    parse_kernel(s, doc["kernel"], file);
    if (!any_python) {
      fail(file, "/kernel",
           "no workload is an NKI kernel (a .py file); \"kernel\" says how to run one");
    }
  } else if (any_python) {
    const size_t w =
        static_cast<size_t>(std::find(s.python.begin(), s.python.end(), true) - s.python.begin());
    fail(file, workload_at(w),
         fmt::format("{} is an NKI kernel: the sweep file needs \"kernel\": {{\"name\": the "
                     "nki.jit function, \"inputs\": {{\"NAME\": \"SHAPE[:DTYPE]\"}}, "
                     "\"grid\": G}} (docs/sweeps.md)",
                     s.workloads[w]));
  }

  std::map<std::string, std::string> where_of;  // parameter -> where it is set or varied
  auto claim = [&](const std::string& name, const std::string& where) {
    if (!is_key_axis(name)) (void)checked_parameter(name, file, where);
    if (where_of.count(name)) {
      fail(file, where, fmt::format("{} is already set or varied at {}", name, where_of[name]));
    }
    where_of[name] = where;
  };

  if (doc.contains("set")) {
    const ordered_json& set = doc["set"];
    if (!set.is_object()) fail(file, "/set", "expected an object of parameter: value");
    for (const auto& item : set.items()) {
      const std::string where = "/set/" + item.key();
      if (is_workload_axis(item.key())) {
        fail(file, where,
             fmt::format("{} is a workload key: write it in the workload file, or vary it in "
                         "\"grid\" or \"zip\"",
                         item.key()));
      }
      if (is_kernel_axis(item.key())) {
        fail(file, where,
             fmt::format("{} is a kernel key: write it in \"kernel\" ({}), or vary it in "
                         "\"grid\" or \"zip\"",
                         item.key(), item.key().substr(item.key().find('.') + 1)));
      }
      claim(item.key(), where);
      const std::string v = value_text(item.value(), file, where);
      check_assignment(item.key(), v, file, where);
      s.fixed_sets.push_back(item.key() + "=" + v);
      config::set_parameter(s.base, s.fixed_sets.back());
    }
  }

  // A list of values for `name`, each checked as --set would.
  auto values_of = [&](const std::string& name, const ordered_json& list,
                       const std::string& where) {
    if (!list.is_array()) {
      fail(file, where, fmt::format("expected a list of values, got {}", list.type_name()));
    }
    if (list.empty()) fail(file, where, "empty list; expected at least one value");
    std::vector<std::string> out;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = fmt::format("{}/{}", where, i);
      out.push_back(value_text(list[i], file, at));
      if (is_kernel_axis(name)) {
        const ordered_json& v = list[i];
        if (name == "kernel.lnc" &&
            (!v.is_number_unsigned() || (v.get<uint64_t>() != 1 && v.get<uint64_t>() != 2))) {
          fail(file, at,
               fmt::format("kernel.lnc: expected 1 or 2 (physical cores per logical core, as "
                           "the Neuron SDK groups them), got {}",
                           v.dump()));
        }
        if (name == "kernel.grid" &&
            (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > kMaxGrid)) {
          fail(file, at,
               fmt::format("kernel.grid: expected a positive integer (the launch grid's "
                           "instances, one dimension, at most {}), got {}",
                           kMaxGrid, v.dump()));
        }
        s.kernel_value_at.emplace(name + "=" + out.back(), at);
        continue;
      }
      if (is_workload_axis(name)) {
        const ordered_json& v = list[i];
        if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > 64) {
          fail(file, at,
               fmt::format("{}: expected a positive integer ({}, at most 64), got {}", name,
                           name == "workload.cores" ? "NeuronCores" : "chips", v.dump()));
        }
        continue;
      }
      check_assignment(name, out.back(), file, at);
    }
    return out;
  };

  if (doc.contains("grid")) {
    const ordered_json& grid = doc["grid"];
    if (!grid.is_object()) fail(file, "/grid", "expected an object of parameter: [values]");
    if (grid.empty()) fail(file, "/grid", "empty; expected at least one parameter: [values]");
    for (const auto& item : grid.items()) {
      const std::string where = "/grid/" + item.key();
      claim(item.key(), where);
      Axis a;
      a.params.push_back(item.key());
      for (const std::string& v : values_of(item.key(), item.value(), where))
        a.values.push_back({v});
      s.axes.push_back(std::move(a));
    }
  }
  if (doc.contains("zip")) {
    const ordered_json& zip = doc["zip"];
    std::vector<std::pair<std::string, const ordered_json*>> groups;
    if (zip.is_object()) {
      groups.emplace_back("/zip", &zip);
    } else if (zip.is_array()) {
      if (zip.empty()) fail(file, "/zip", "empty; expected an object of parameter: [values]");
      for (size_t i = 0; i < zip.size(); ++i)
        groups.emplace_back(fmt::format("/zip/{}", i), &zip[i]);
    } else {
      fail(file, "/zip", "expected an object of parameter: [values] (or a list of such objects)");
    }
    for (const auto& [gwhere, g] : groups) {
      if (!g->is_object()) fail(file, gwhere, "expected an object of parameter: [values]");
      if (g->empty()) fail(file, gwhere, "empty; expected at least one parameter: [values]");
      Axis a;
      size_t length = 0;
      std::string first;
      for (const auto& item : g->items()) {
        const std::string where = gwhere + "/" + item.key();
        claim(item.key(), where);
        const std::vector<std::string> vs = values_of(item.key(), item.value(), where);
        if (a.params.empty()) {
          length = vs.size();
          first = where;
          a.values.resize(length);
        } else if (vs.size() != length) {
          fail(file, where,
               fmt::format("{} value{}, but {} has {}: zipped lists go together, one value "
                           "of each per point",
                           vs.size(), vs.size() == 1 ? "" : "s", first, length));
        }
        a.params.push_back(item.key());
        for (size_t i = 0; i < length; ++i) a.values[i].push_back(vs[i]);
      }
      s.axes.push_back(std::move(a));
    }
  }
  if (s.axes.empty()) {
    fail(file, "/grid",
         "missing; a sweep varies at least one parameter (\"grid\": {\"name\": [values]} or "
         "\"zip\")");
  }
  for (const Axis& a : s.axes) s.varied.insert(s.varied.end(), a.params.begin(), a.params.end());
  // A workload axis needs workloads in the kernel or graph form: their base value is the
  // file's own. A kernel axis needs NKI kernels: their base value is the "kernel" object's (lnc
  // 1 when it has none; the grid: the axis's first value when it has none).
  for (size_t w = 0; w < s.workload_paths.size(); ++w) {
    std::map<std::string, std::string> values;
    for (const std::string& name : s.varied) {
      if (!is_key_axis(name)) continue;
      const std::string where = workload_at(w);
      if (is_kernel_axis(name)) {
        if (!s.python[w]) {
          fail(file, where,
               fmt::format("{} varies an NKI kernel's {}, which only a .py workload has; {} is "
                           "not one",
                           name, name == "kernel.lnc" ? "--lnc" : "--grid", s.workloads[w]));
        }
        if (name == "kernel.lnc") {
          values[name] = s.kernel.lnc.empty() ? "1" : s.kernel.lnc;
        } else if (s.kernel.grid.empty()) {
          for (const Axis& a : s.axes) {
            for (size_t k = 0; k < a.params.size(); ++k) {
              if (a.params[k] == name) values[name] = a.values.front()[k];
            }
          }
        } else if (s.kernel.grid.find(',') != std::string::npos) {
          fail(file, "/kernel/grid",
               fmt::format("the grid {} has several dimensions, but kernel.grid varies one "
                           "(give \"grid\" as one number, or leave it out)",
                           s.kernel.grid));
        } else {
          values[name] = s.kernel.grid;
        }
        continue;
      }
      if (s.python[w]) {
        fail(file, where,
             fmt::format("{} varies a workload key, which only a workload in the kernel form "
                         "(\"kernel\": ...) or the graph form has; {} is an NKI kernel (vary "
                         "kernel.lnc for its cores)",
                         name, s.workloads[w]));
      }
      const std::string& path = s.workload_paths[w];
      const std::string wtext = read_input_file(path);
      const bool program =
          path.size() > 5 && (path.compare(path.size() - 5, 5, ".tasm") == 0 ||
                              wtext.find("\"trnsim-program\"") != std::string::npos);
      if (program) {
        fail(file, where,
             fmt::format("{} varies a workload key, which only a workload in the kernel form "
                         "(\"kernel\": ...) or the graph form has; {} is a program",
                         name, s.workloads[w]));
      }
      // A graph has them too (its "cores" and "chips"; docs/workloads.md).
      const workloads::Workload parsed = workloads::parse_workload(wtext, path);
      values[name] = std::to_string(name == "workload.cores" ? parsed.cores : parsed.chips);
    }
    s.workload_values.push_back(std::move(values));
  }

  if (doc.contains("timing_only")) {
    if (!doc["timing_only"].is_boolean()) fail(file, "/timing_only", "expected true or false");
    s.timing_only = doc["timing_only"].get<bool>();
  }

  s.plot.x = s.varied.front();
  if (doc.contains("plot")) {
    const ordered_json& p = doc["plot"];
    if (!p.is_object()) fail(file, "/plot", "expected an object: x, y, log_x, log_y, title");
    check_keys(p, kPlotKeys, file, "/plot");
    if (p.contains("x")) {
      if (!p["x"].is_string()) fail(file, "/plot/x", "expected a varied parameter's name");
      s.plot.x = p["x"].get<std::string>();
      if (std::find(s.varied.begin(), s.varied.end(), s.plot.x) == s.varied.end()) {
        fail(file, "/plot/x",
             fmt::format("{} is not varied; expected one of {}", s.plot.x,
                         fmt::join(s.varied, ", ")));
      }
    }
    if (p.contains("y")) {
      const std::vector<std::string> m = plot_metrics();
      if (!p["y"].is_string()) fail(file, "/plot/y", "expected a metric's name");
      s.plot.y = p["y"].get<std::string>();
      if (std::find(m.begin(), m.end(), s.plot.y) == m.end()) {
        const std::string near = base::closest_name(s.plot.y, m);
        fail(file, "/plot/y",
             fmt::format("unknown metric; expected one of {}{}", fmt::join(m, ", "),
                         near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
      }
    }
    for (const char* key : {"log_x", "log_y"}) {
      if (!p.contains(key)) continue;
      if (!p[key].is_boolean()) fail(file, fmt::format("/plot/{}", key), "expected true or false");
      (std::string(key) == "log_x" ? s.plot.log_x : s.plot.log_y) = p[key].get<bool>();
    }
    if (p.contains("title")) {
      if (!p["title"].is_string()) fail(file, "/plot/title", "expected a string");
      s.plot.title = p["title"].get<std::string>();
    }
  }
  return s;
}

namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// An NKI kernel's logical core at point p on `arch`, checked as the tracer checks it
// (python/trnsim/nki: _check_lnc), so that a sweep the tracer would refuse runs nothing.
void check_lnc(const SweepSpec& s, const Point& p, const config::ArchConfig& arch,
               const std::string& lnc, const std::string& grid) {
  if (lnc == "1") return;
  // Where the value came from: the axis's value, else the kernel object.
  auto at = s.kernel_value_at.find("kernel.lnc=" + lnc);
  std::string where = at != s.kernel_value_at.end() ? at->second : "/kernel/lnc";
  where += fmt::format(" (point {})", p.id);
  const uint32_t degree = static_cast<uint32_t>(std::stoul(lnc));
  if (arch.hbm.cores_per_stack < degree) {
    fail(s.file, where,
         fmt::format("lnc={0} on {1}: {1} has no logical cores of {0} physical cores (LNC=2 is "
                     "Trainium2's: cores that share an HBM stack in pairs, "
                     "hbm.cores_per_stack={2}; trn1 runs LNC=1)",
                     lnc, arch.name, arch.hbm.cores_per_stack));
  }
  if (arch.chip_cores < degree) {
    fail(s.file, where,
         fmt::format("lnc={} but a {} chip has {} NeuronCores", lnc, arch.name, arch.chip_cores));
  }
  uint64_t instances = 1;  // a kernel without a grid runs once
  for (size_t from = 0; !grid.empty() && from <= grid.size();) {
    size_t comma = grid.find(',', from);
    if (comma == std::string::npos) comma = grid.size();
    instances *= std::stoull(grid.substr(from, comma - from));
    from = comma + 1;
  }
  if (grid.empty() || instances % degree != 0) {
    auto g = s.kernel_value_at.find("kernel.grid=" + grid);
    fail(s.file,
         g != s.kernel_value_at.end() ? fmt::format("{} (point {})", g->second, p.id) : where,
         fmt::format("lnc={} spreads the launch grid's instances over {} physical cores; the "
                     "grid {} has {} instance(s), not a multiple of {}",
                     lnc, lnc, grid.empty() ? "(none)" : grid, instances, lnc));
  }
}

}  // namespace

// The points in output order: per workload, its added base point (if any), then the grid in
// the file's order, the last axis varying fastest.
std::vector<Point> expand(const SweepSpec& s, bool timing_only) {
  size_t per_workload = 1;
  for (const Axis& a : s.axes) {
    per_workload *= a.values.size();
    if (per_workload > kMaxPoints) break;
  }
  if (per_workload * s.workloads.size() > kMaxPoints) {
    fail(s.file, "/grid", fmt::format("more than {} points; split the sweep", kMaxPoints));
  }
  const auto& table = config::parameters();
  std::vector<Point> points;
  for (size_t w = 0; w < s.workloads.size(); ++w) {
    std::vector<Point> block;
    for (size_t flat = 0; flat < per_workload; ++flat) {
      Point p;
      p.workload = w;
      size_t rest = flat;
      std::vector<size_t> steps(s.axes.size());
      for (size_t a = s.axes.size(); a-- > 0;) {
        steps[a] = rest % s.axes[a].values.size();
        rest /= s.axes[a].values.size();
      }
      for (size_t a = 0; a < s.axes.size(); ++a) {
        for (const std::string& v : s.axes[a].values[steps[a]]) p.values.push_back(v);
      }
      block.push_back(std::move(p));
    }
    // The base: the first grid point whose varied values are the base arch's, else one added.
    int base_at = -1;
    for (size_t i = 0; i < block.size() && base_at < 0; ++i) {
      bool same = true;
      for (size_t k = 0; k < s.varied.size() && same; ++k) {
        if (is_key_axis(s.varied[k])) {
          same = block[i].values[k] == s.workload_values[w].at(s.varied[k]);
          continue;
        }
        const config::Parameter& p = *config::find_parameter(s.varied[k]);
        config::ArchConfig c = s.base.config;
        config::set_parameter(c, s.varied[k] + "=" + block[i].values[k]);
        same = p.get(c) == p.get(s.base.config);
      }
      if (same) base_at = static_cast<int>(i);
    }
    if (base_at < 0) {
      Point b;
      b.workload = w;
      b.extra_base = true;
      for (const std::string& name : s.varied) {
        b.values.push_back(is_key_axis(name) ? s.workload_values[w].at(name)
                                             : config::parameter_value_text(
                                                   *config::find_parameter(name), s.base.config));
      }
      block.insert(block.begin(), std::move(b));
      base_at = 0;
    }
    block[base_at].base = true;
    for (Point& p : block) points.push_back(std::move(p));
  }

  std::vector<std::string> workload_hashes;
  for (const std::string& path : s.workload_paths) {
    workload_hashes.push_back(fmt::format("{:016x}", fnv1a(read_input_file(path))));
  }
  std::vector<std::string> npy_hashes;  // the kernel's .npy inputs, read once
  for (const std::string& f : s.kernel.npy)
    npy_hashes.push_back(fmt::format("{:016x}", fnv1a(read_input_file(f, "an input array"))));
  // Every point's full --set list, checked as the run will check it.
  for (size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    p.index = i;
    p.id = fmt::format("p{:0{}}", i, points.size() > 1000 ? 5 : 3);
    p.sets = s.fixed_sets;
    for (size_t k = 0; k < s.varied.size(); ++k) {
      // "kernel.lnc" -> the kernel's --lnc (the added base point's too: its grid may be none
      // of the kernel object's)
      if (is_kernel_axis(s.varied[k])) {
        p.kernel_sets.emplace_back(s.varied[k].substr(s.varied[k].find('.') + 1), p.values[k]);
      }
    }
    if (!p.extra_base) {
      for (size_t k = 0; k < s.varied.size(); ++k) {
        if (is_kernel_axis(s.varied[k])) continue;
        if (is_workload_axis(s.varied[k])) {
          // "workload.cores" -> the workload's "cores"
          p.workload_sets.emplace_back(s.varied[k].substr(s.varied[k].find('.') + 1), p.values[k]);
        } else {
          p.sets.push_back(s.varied[k] + "=" + p.values[k]);
        }
      }
    }
    config::ArchSpec arch = s.base;
    try {
      for (const std::string& set : p.sets) config::set_parameter(arch, set);
    } catch (const std::invalid_argument& e) {
      fail(s.file, fmt::format("point {}", p.id), e.what());
    }
    if (const std::string e = config::arch_consistency_error(arch.config); !e.empty()) {
      std::string values;
      for (size_t k = 0; k < s.varied.size() && !p.extra_base; ++k) {
        values += fmt::format(" {}={}", s.varied[k], p.values[k]);
      }
      fail(s.file, fmt::format("point {} ({})", p.id, values.empty() ? "base" : values.substr(1)),
           e);
    }
    json params = json::object();
    for (const auto& t : table)
      params[std::string(t.name)] = config::parameter_value_text(t, arch.config);
    p.definition = {{"trnsim_version", kVersion},
                    {"workload", s.workload_paths[p.workload]},
                    {"workload_fnv1a", workload_hashes[p.workload]},
                    {"arch", s.arch_arg},
                    {"sets", p.sets},
                    {"timing_only", timing_only},
                    {"arch_parameters", params}};
    if (!p.workload_sets.empty()) p.definition["workload_sets"] = p.workload_sets;
    if (s.python[p.workload]) {
      std::string lnc = s.kernel.lnc.empty() ? "1" : s.kernel.lnc, grid = s.kernel.grid;
      for (const auto& [key, value] : p.kernel_sets) (key == "lnc" ? lnc : grid) = value;
      check_lnc(s, p, arch.config, lnc, grid);
      p.definition["kernel"] = {{"name", s.kernel.name},
                                {"inputs", s.kernel.inputs},
                                {"inputs_fnv1a", npy_hashes},
                                {"grid", grid},
                                {"lnc", lnc}};
    }
  }
  return points;
}

}  // namespace trnsim::sim::sweep_internal
