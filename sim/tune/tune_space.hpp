// The space `trnsim tune` searches: a workload's declared parameters (workloads::space_of, or a
// Python NKI kernel's declared ones) with the values each is tried at. Options that change
// which parameters exist (matmul's strategy, a graph's mode) split the space into branches, one
// per combination of option values, each with its own parameters; a point is a branch and a
// value of each of its parameters.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/arch.hpp"
#include "workloads/kernels/param_space.hpp"

namespace trnsim::sim::tuner {

using nlohmann::json;

struct TuneParam {
  std::string name;
  workloads::ParamRole role = workloads::ParamRole::other;
  bool ordinal = false;      // integers: a neighbour by position is a similar choice
  std::vector<json> values;  // the values tried
  json default_value;        // null: chosen by the lowering
  std::string meaning, range, default_text;
};

struct Branch {
  std::vector<size_t> option_at;  // per TuneSpace::options, the index of its value
  std::vector<TuneParam> params;  // the "/params" keys of this branch
  uint64_t size() const;          // the product of the values' counts
};

struct TuneSpace {
  std::string title;               // "matmul [4096, 8192, 8192] bf16 on trn1"
  std::vector<TuneParam> options;  // top-level options whose values select a branch
  std::vector<Branch> branches;    // every combination of the options' values
  std::vector<std::string> constraints;
  uint64_t size() const;           // points over all branches (saturating)
  bool empty() const;              // no parameter has more than one value... and none declared
  size_t parameter_count() const;  // distinct names over options and branches
};

// A point: a branch and, per parameter of that branch, the index of its value. The default
// point (the workload as given, which need not be a point of the space) has branch kDefault.
constexpr uint32_t kDefault = UINT32_MAX;
struct Point {
  uint32_t branch = kDefault;
  std::vector<uint32_t> at;
  bool is_default() const { return branch == kDefault; }
  bool operator<(const Point& o) const {
    return branch != o.branch ? branch < o.branch : at < o.at;
  }
  bool operator==(const Point& o) const { return branch == o.branch && at == o.at; }
};

// The point's values by name (options, then params); null for the default point.
json assignment(const TuneSpace& s, const Point& p);
// "strategy=4 block_m=2048 bufs=2" (in the space's order), or "default".
std::string label(const TuneSpace& s, const json& assignment);
// Every parameter name: the options, then each branch's params, in declaration order.
std::vector<std::string> parameter_names(const TuneSpace& s);
// The index-th point in enumeration order (branch by branch, the last parameter fastest).
Point point_at(const TuneSpace& s, uint64_t index);
// The point of `values` (a name -> value object), or kDefault when the space has no such point.
Point point_of(const TuneSpace& s, const json& values);

// A parameter pinned to one value (--fix NAME=VALUE): the branches that do not declare it are
// dropped, and it is tried at that value only. The value must be one the declaration accepts.
struct Fix {
  std::string name;
  json value;
};
// Parses "name=value" (value as JSON when it reads as JSON, else as a string); throws
// InputError for a malformed one.
Fix parse_fix(const std::string& text);

// The space of a workload document (the kernel or graph form) on `arch`, with `fixes` applied.
// Throws InputError for a fix that names no parameter or a value the parameter does not accept,
// or a workload option the declaration refuses (workloads::WorkloadError).
TuneSpace workload_space(const json& doc, const std::string& file, const config::ArchConfig& arch,
                         const std::vector<Fix>& fixes);

// The space a Python NKI kernel declares (python/trnsim/nki: nki.tunable), given as JSON:
// {"kernel": NAME, "params": [{"name", "values", "default", "meaning"}...]}.
TuneSpace declared_space(const json& declaration, const std::string& title,
                         const std::vector<Fix>& fixes);

// `doc` with the point's options at the top level and its params as "params" (replacing any);
// the default point leaves `doc` as it is.
json workload_of(const json& doc, const TuneSpace& s, const Point& p);

// What `trnsim tune --list` prints: each parameter, where it is given, its range, default and
// the values tried, per branch, the constraints, and the size.
std::string space_text(const TuneSpace& s);
json space_json(const TuneSpace& s);
// The space space_json wrote (a reference table's).
TuneSpace space_from_json(const json& j);

}  // namespace trnsim::sim::tuner
