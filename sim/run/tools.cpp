#include "sim/run/tools.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "compiler/synchronize.hpp"
#include "config/arch_file.hpp"
#include "config/parameters.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/metrics.hpp"
#include "sim/run/load.hpp"
#include "sim/run/run.hpp"
#include "workloads/lowering.hpp"

namespace trnsim::sim {

namespace {

// Loads, synchronizes and validates a program file; throws the input errors.
isa::Assembly ready_program(const std::string& input, const std::string& arch_name,
                            config::ArchConfig& arch) {
  arch = configured_arch(arch_name.empty() ? "trn2" : arch_name, {});
  isa::Assembly a = load_program_file(input, arch);
  if (arch_name.empty() && !a.arch.empty() && a.arch != arch.name) {
    arch = configured_arch(a.arch, {});
    a = load_program_file(input, arch);
  }
  if (!a.sequence.empty()) {
    a.program = a.auto_sync ? compiler::synchronize(a.sequence, a.program, arch)
                            : compiler::distribute(a.sequence, a.program);
  }
  isa::validate(a.program, arch);
  return a;
}

int emit(const std::string& out, const std::string& text) {
  if (out == "-") {
    std::cout << text << std::flush;
    return kSuccess;
  }
  OutputFile f(out);
  f.write(text);
  f.commit();
  return kSuccess;
}

template <typename Fn>
int guarded(const std::string& input, const std::string& arch, Fn&& fn) {
  try {
    if (!arch.empty()) (void)configured_arch(arch, {});
    return fn();
  } catch (const isa::AssemblyError& e) {
    spdlog::error("{}", e.what());
  } catch (const isa::ValidationError& e) {
    spdlog::error("{}: the program is invalid: {}", input, e.what());
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
  } catch (const OutputError& e) {
    spdlog::error("{}", e.what());
  } catch (const workloads::WorkloadError& e) {
    spdlog::error("{}", e.what());
  } catch (const std::exception& e) {
    spdlog::error("{}: {}", input, e.what());
  }
  return kBadInput;
}

}  // namespace

int assemble(const std::string& input, const std::string& out, const std::string& arch_name) {
  return guarded(input, arch_name, [&] {
    config::ArchConfig arch;
    const isa::Assembly a = ready_program(input, arch_name, arch);
    nlohmann::json j = isa::to_json(a.program, a.buffers, a.inits, a.expectations);
    if (!a.arch.empty()) j["arch"] = a.arch;  // the program's own preset travels with it
    if (a.chips > 1) j["chips"] = a.chips;
    if (a.cores > 1) j["cores"] = a.cores;  // and its cores (the ranks of its collectives)
    return emit(out, j.dump(1) + "\n");
  });
}

int disassemble(const std::string& input, const std::string& out, const std::string& arch_name) {
  return guarded(input, arch_name, [&] {
    config::ArchConfig arch;
    const isa::Assembly a = ready_program(input, arch_name, arch);
    std::string text = print_assembly(a.program, a.buffers, a.inits, a.expectations);
    if (a.chips > 1) text = fmt::format(".chips {}\n", a.chips) + text;
    if (a.cores > 1) text = fmt::format(".cores {}\n", a.cores) + text;
    if (!a.arch.empty()) text = fmt::format(".arch {}\n", a.arch) + text;
    return emit(out, text);
  });
}

std::string isa_table(bool markdown) {
  std::string s;
  auto engines = [markdown](const isa::OpcodeInfo& row) {
    std::string e;
    for (Engine x : kAllEngines) {
      if (!isa::runs_on(row.opcode, x)) continue;
      if (!e.empty()) e += markdown ? ", " : ",";
      e += std::string(assembler_name_of(x));
    }
    return e;
  };
  if (markdown) {
    s += "| opcode | engines | profiler name | operands | semantics | cost (cycles) | source |\n";
    s += "|---|---|---|---|---|---|---|\n";
    for (const auto& row : isa::opcode_table()) {
      s += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", row.name, engines(row),
                       row.profiler_name, row.operands, row.semantics, row.cost, row.source);
    }
    return s;
  }
  for (const auto& row : isa::opcode_table()) {
    s += fmt::format("{:<22} {:<18} {}\n", row.name, engines(row), row.semantics);
    s += fmt::format("{:<22} {:<18} operands: {}\n", "", "", row.operands);
    s += fmt::format("{:<22} {:<18} cost: {} [{}]\n", "", "", row.cost, row.source);
  }
  return s;
}

int list_params(const std::string& arch_name, const std::vector<std::string>& sets, bool as_json) {
  try {
    const config::ArchSpec spec = load_arch_spec(arch_name, sets);
    if (as_json) {
      std::cout << config::arch_document(spec) << std::flush;
      return kSuccess;
    }
    const config::ArchConfig& arch = spec.config;
    std::string out = fmt::format("parameters of {}: {}{}\n", arch.name, spec.origin,
                                  spec.base.empty() ? "" : fmt::format(", based on {}", spec.base));
    if (!spec.description.empty()) out += spec.description + "\n";
    out += "(--set name=value overrides one; --json prints them as an arch file)\n";
    const auto& table = config::parameters();
    size_t width = 0;
    for (const auto& p : table) width = std::max(width, p.description.size());
    out += fmt::format("{:<30} {:>14} {:<12} {:<{}} {}\n", "name", "value", "unit", "description",
                       width, "source");
    for (size_t i = 0; i < table.size(); ++i) {
      const config::Parameter& p = table[i];
      out += fmt::format("{:<30} {:>14} {:<12} {:<{}} {}\n", p.name,
                         config::parameter_value_text(p, arch), p.unit, p.description, width,
                         i < spec.sources.size() ? spec.sources[i] : std::string());
    }
    for (const auto& note : spec.notes) out += "note: " + note + "\n";
    std::cout << out << std::flush;
    return kSuccess;
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return kBadInput;
  }
}

int list_isa(bool markdown) {
  std::cout << isa_table(markdown) << std::flush;
  return kSuccess;
}

int list_metrics(bool markdown, bool as_json) {
  if (markdown && as_json) {
    spdlog::error("--markdown and --json: expected one of them");
    return kBadInput;
  }
  std::cout << (as_json ? metric_table_json().dump(2) + "\n" : metrics_listing(markdown))
            << std::flush;
  return kSuccess;
}

}  // namespace trnsim::sim
