// The listing tools of the command line: `trnsim asm`, `trnsim disasm`, `trnsim isa`, `trnsim
// params`, `trnsim metrics`.
#pragma once

#include <string>
#include <vector>

namespace trnsim::sim {

// Assembles a .tasm file (adding synchronization when it is written sequentially) and writes
// the JSON program form to `out` ("-" for stdout). Returns the exit code.
int assemble(const std::string& input, const std::string& out, const std::string& arch);

// Prints a program (.tasm or JSON program form) as .tasm with its per-engine streams and
// semaphores, to `out` ("-" for stdout).
int disassemble(const std::string& input, const std::string& out, const std::string& arch);

// Lists the instruction set from the opcode table: text, or Markdown for docs/isa.md.
int list_isa(bool markdown);

// Lists every hardware parameter of the preset or arch file (with overrides): name, value, unit,
// meaning and source; with `as_json`, the same as a complete arch file (config::arch_document).
int list_params(const std::string& arch, const std::vector<std::string>& sets, bool as_json);
std::string isa_table(bool markdown);

// Lists the metric table (sim/report/metrics.hpp): text, Markdown for docs/metrics.md, or JSON.
int list_metrics(bool markdown, bool as_json);

}  // namespace trnsim::sim
