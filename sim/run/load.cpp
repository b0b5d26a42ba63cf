#include "sim/run/load.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "base/names.hpp"
#include "config/arch_file.hpp"
#include "config/parameters.hpp"
#include "isa/text/assembly.hpp"
#include "workloads/graph/npy.hpp"
#include "workloads/program.hpp"

namespace trnsim::sim {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A JSON document in the program form? (Checked without a full parse when it clearly is not.)
bool is_program_json(const std::string& text) {
  return text.find("\"trnsim-program\"") != std::string::npos;
}

}  // namespace

namespace {

// {"programs": [...]} without a "kernel": one program per core.
bool is_program_set(const std::string& text) {
  if (text.find("\"programs\"") == std::string::npos) return false;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  return doc.is_object() && doc.contains("programs") && !doc.contains("kernel");
}

// Core c's inputs (or references) from its program: a program written for the whole set
// (`.cores N`, N the set's size) has per-core data (seed + c, references over every core's
// inputs) and core c takes the c-th; a one-core program's are its own.
std::vector<workloads::HostTensor> take_core_data(
    std::vector<std::vector<workloads::HostTensor>>& per_core,
    std::vector<workloads::HostTensor>& own, size_t c, size_t cores, const std::string& where,
    const std::string& file) {
  if (per_core.empty()) return std::move(own);
  if (per_core.size() != cores) {
    throw InputError(fmt::format("{}: {} is written for {} cores (.cores); the set has {}", where,
                                 file, per_core.size(), cores));
  }
  return std::move(per_core[c]);
}

// A program set: core c runs the c-th program; every program declares the same HBM tensors
// (names, dtypes, shapes, places), and each core has its own HBM with its own program's inputs
// and checks (docs/chip.md, "A program per core").
LoadedWorkload load_program_set(const std::string& path, const std::string& text,
                                const std::string& arch_name, const std::vector<std::string>& sets,
                                bool functional) {
  const nlohmann::json doc = workloads::parse_json(text, path);
  for (const auto& item : doc.items()) {
    if (item.key() != "programs") {
      throw InputError(fmt::format("{}: /{}: unknown key; a program set has only \"programs\"",
                                   path, item.key()));
    }
  }
  const nlohmann::json& list = doc["programs"];
  if (!list.is_array() || list.size() < 2) {
    throw InputError(fmt::format(
        "{}: /programs: expected a list of at least two program files (.tasm or JSON program "
        "form), one per core, got {}",
        path, list.dump()));
  }
  const std::string dir = path.find('/') == std::string::npos
                              ? std::string()
                              : path.substr(0, path.find_last_of('/') + 1);
  LoadedWorkload out;
  std::vector<std::vector<workloads::HostTensor>> inputs, expected;  // per core
  for (size_t c = 0; c < list.size(); ++c) {
    const std::string where = fmt::format("{}: /programs/{}", path, c);
    if (!list[c].is_string() || list[c].get<std::string>().empty()) {
      throw InputError(where + ": expected the path of a program file (relative to the set)");
    }
    std::string file = list[c].get<std::string>();
    if (file.front() != '/') file = dir + file;
    const std::string ftext = read_input_file(file);
    if (!ends_with(file, ".tasm") && !is_program_json(ftext)) {
      throw InputError(
          fmt::format("{}: {} is not a program (.tasm or the JSON program form)", where, file));
    }
    LoadedWorkload one = load_workload_file(file, arch_name, sets, functional);
    if (c > 0 && one.arch.name != out.arch.name) {
      throw InputError(
          fmt::format("{}: {} is for {}, the first program for {}: the cores of a "
                      "chip are of one kind",
                      where, file, one.arch.name, out.arch.name));
    }
    if (c == 0) {
      inputs.push_back(
          take_core_data(one.kernel.core_inputs, one.kernel.inputs, 0, list.size(), where, file));
      expected.push_back(take_core_data(one.kernel.core_expected, one.kernel.expected, 0,
                                        list.size(), where, file));
      out = std::move(one);
      out.shared_hbm = false;
      out.workload.name = path.substr(path.find_last_of('/') + 1);
      out.workload.name = out.workload.name.substr(0, out.workload.name.rfind(".json"));
      continue;
    }
    const auto& mine = one.kernel.program.dram_tensors;
    const auto& first = out.kernel.program.dram_tensors;
    bool same = mine.size() == first.size();
    for (size_t i = 0; same && i < mine.size(); ++i) {
      same = mine[i].name == first[i].name && mine[i].dtype == first[i].dtype &&
             mine[i].shape == first[i].shape && mine[i].address == first[i].address;
    }
    if (!same) {
      throw InputError(fmt::format(
          "{}: {} declares other HBM tensors than {}: every core's program declares the same "
          "tensors (names, dtypes, shapes, in the same order); each core has its own copy",
          where, file, list[0].get<std::string>()));
    }
    out.core_programs.push_back(std::move(one.kernel.program));
    inputs.push_back(
        take_core_data(one.kernel.core_inputs, one.kernel.inputs, c, list.size(), where, file));
    expected.push_back(
        take_core_data(one.kernel.core_expected, one.kernel.expected, c, list.size(), where, file));
  }
  if (functional) {
    out.kernel.core_inputs = std::move(inputs);
    out.kernel.core_expected = std::move(expected);
  }
  return out;
}

// An --arch value names a file when it has a slash or ends in .json, or when a file of that
// name exists; otherwise a preset.
bool names_a_file(const std::string& arch) {
  struct stat st {};
  return arch.find('/') != std::string::npos || ends_with(arch, ".json") ||
         ::stat(arch.c_str(), &st) == 0;
}

}  // namespace

config::ArchSpec load_arch_spec(const std::string& name, const std::vector<std::string>& sets) {
  config::ArchSpec spec;
  if (const config::ArchSpec* p = config::find_preset_spec(name)) {
    spec = *p;
  } else if (!name.empty() && names_a_file(name)) {
    try {
      spec = config::parse_arch_document(read_input_file(name, "an arch file"), name);
    } catch (const config::ArchFileError& e) {
      throw InputError(e.what());
    }
  } else {
    const std::string near = base::closest_name(name, config::preset_name_list());
    throw InputError(fmt::format(
        "--arch {}: unknown preset; expected one of {}, or an arch JSON file{}", name,
        config::preset_names(), near.empty() ? "" : fmt::format(" (did you mean {}?)", near)));
  }
  for (const auto& s : sets) {
    try {
      config::set_parameter(spec, s);
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
  }
  if (const std::string e = config::arch_consistency_error(spec.config); !e.empty()) {
    throw InputError(fmt::format("--arch {}{}: {}", name.empty() ? "trn2" : name,
                                 sets.empty() ? "" : " with --set", e));
  }
  return spec;
}

config::ArchConfig configured_arch(const std::string& name, const std::vector<std::string>& sets) {
  return load_arch_spec(name, sets).config;
}

isa::Assembly load_program_file(const std::string& path, const config::ArchConfig& arch) {
  const std::string text = read_input_file(path, "a program file");
  if (ends_with(path, ".tasm")) return isa::parse_assembly(text, path, arch);
  nlohmann::json doc;
  try {
    doc = workloads::parse_json(text, path);
  } catch (const workloads::WorkloadError& e) {
    // Its message names the file already: "PATH: line 1, column 1: malformed JSON ...".
    std::string what = e.what();
    if (what.rfind(path + ": ", 0) == 0) what.erase(0, path.size() + 2);
    throw isa::AssemblyError(path, 0, 0, what);
  }
  return isa::from_json(doc, path);
}

namespace {

// A JSON program's "data" files (.npy, relative to the program file) as the kernel's inputs.
void add_data_files(const std::string& path, const isa::Assembly& a, workloads::LoweredKernel& k) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  for (const auto& [name, file] : a.data_files) {
    const std::string full = !file.empty() && file[0] == '/' ? file : dir + file;
    const isa::DramTensor* t = k.program.find_dram_tensor(name);
    workloads::NpyArray arr;
    try {
      arr = workloads::parse_npy(read_input_file(full, "a .npy file"));
    } catch (const workloads::NpyError& e) {
      throw InputError(fmt::format("{}: tensor {}: {}: {}", path, name, full, e.what()));
    }
    // The same shape, not only as many elements: a transposed or flattened array would
    // otherwise fill the tensor in the wrong order and the run would look fine.
    if (arr.shape != t->shape) {
      throw InputError(
          fmt::format("{}: tensor {}: {} holds shape [{}]; the tensor is declared [{}]", path, name,
                      full, fmt::join(arr.shape, ", "), fmt::join(t->shape, ", ")));
    }
    for (float& v : arr.values) v = isa::round_to(t->dtype, v);
    k.inputs.push_back(workloads::HostTensor{name, t->dtype, t->shape, std::move(arr.values)});
  }
}

}  // namespace

LoadedWorkload load_workload_file(const std::string& path, const std::string& arch_name,
                                  const std::vector<std::string>& sets, bool functional,
                                  uint64_t stream_from) {
  // Overrides are checked before the file is read: a bad --set fails before anything runs.
  config::ArchConfig arch = configured_arch(arch_name.empty() ? "trn2" : arch_name, sets);
  const std::string text = read_input_file(path);
  if (ends_with(path, ".tasm") || is_program_json(text)) {
    isa::Assembly a;
    if (ends_with(path, ".tasm")) {
      a = isa::parse_assembly(text, path, arch);
      if (arch_name.empty() && !a.arch.empty() && a.arch != arch.name) {
        arch = configured_arch(a.arch, sets);
        a = isa::parse_assembly(text, path, arch);
      }
    } else {
      a = isa::from_json(workloads::parse_json(text, path), path);
      if (arch_name.empty() && !a.arch.empty()) arch = configured_arch(a.arch, sets);
    }
    LoadedWorkload loaded{workloads::describe_assembly(a),
                          workloads::lower_assembly(a, arch, functional),
                          arch,
                          a.outputs,
                          {}};
    // An empty program would run in 0 ns and exit 0, as if it had done something.
    if (loaded.kernel.program.instruction_count() == 0) {
      throw isa::AssemblyError(path, 0, 0,
                               "no instructions; a program needs at least one (docs/isa.md)");
    }
    if (functional) add_data_files(path, a, loaded.kernel);
    return loaded;
  }
  if (is_program_set(text)) return load_program_set(path, text, arch_name, sets, functional);
  workloads::Workload w = workloads::parse_workload(text, path);
  w.stream_from = w.cores == 1 ? stream_from : workloads::kNeverStreamed;
  workloads::LoweredKernel k = workloads::lower(w, arch, functional);
  return {std::move(w), std::move(k), arch, {}, {}};
}

}  // namespace trnsim::sim
