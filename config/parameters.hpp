// Every ArchConfig parameter by name, with its unit, range and meaning: the one table that
// `--set name=value`, `trnsim params` and the "arch" section of stats.json read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/arch.hpp"

namespace trnsim::config {

struct Parameter {
  enum class Kind { integer, real, flag };
  std::string_view name;  // dotted for nested groups: hbm.t_rcd
  Kind kind;
  double min, max;
  std::string_view unit;
  std::string_view description;
  double (*get)(const ArchConfig&);
  void (*set)(ArchConfig&, double);
};

const std::vector<Parameter>& parameters();
const Parameter* find_parameter(std::string_view name);

// Applies "name=value" to `arch`: checks the name (suggesting the nearest), the type (an
// integer, a number, or true/false) and the range. Throws std::invalid_argument with a
// message naming the parameter and what was expected ("--set NAME: ...").
void set_parameter(ArchConfig& arch, const std::string& assignment);

// The checked parameter and value of "name=value"; throws as set_parameter does.
const Parameter& parse_assignment(const std::string& assignment, double& value);

// `text` as a value of `p` (true/false for flags); throws std::invalid_argument with what was
// expected (without the parameter's name).
double parse_parameter_value(const Parameter& p, const std::string& text);

// "" when `v` suits `p` (type and range), else what was expected; `text` is `v` as the user
// wrote it.
std::string check_parameter_value(const Parameter& p, double v, const std::string& text);

// "unknown parameter; did you mean X? (trnsim params lists them)"
std::string unknown_parameter_text(const std::string& name);

// "" when the parameters agree with one another, else what is wrong and what to change: the
// PE array cannot be deeper or wider than the partitions (a matmul contracts over SBUF
// partitions and writes one PSUM partition per stationary column).
std::string arch_consistency_error(const ArchConfig& arch);

std::vector<std::string> parameter_names();
// The position of `p` in parameters().
size_t parameter_index(const Parameter& p);

// The value as text: integers without a decimal point, flags as true/false.
std::string parameter_value_text(const Parameter& p, const ArchConfig& arch);

}  // namespace trnsim::config
