// Delegated cognition (design brief): every lowering takes its choices as named, bounded
// parameters. A kernel declares them once, as a ParamSpace: each parameter's name, where a
// workload gives it ("/params/<name>", or a top-level option such as matmul's "/strategy"),
// its range or allowed values, its default, what it means, what it trades (its role, which
// `trnsim explain --apply` maps findings to) and the values `trnsim tune` tries. The lowering
// reads a workload's params through the declaration (ParamValues: the range checks and their
// messages) and sim/tune enumerates and searches the same declaration: one list per kernel,
// not two that can drift.
//
// What a range cannot say (the buffers fit SBUF, the accumulation groups fit PSUM, the
// instruction cap) the lowering checks when it runs; `constraints` names those checks, and the
// tuner rejects a point that fails them before simulating it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

// What changing a parameter trades; `trnsim explain --apply` tries the parameters whose role
// answers a finding (an engine-bound kernel: its engine choices; no overlap: its buffers).
enum class ParamRole {
  other,
  engine,     // which engine runs a step: moves work between engines
  buffers,    // tiles or blocks in flight: overlap of DMA and compute
  tile,       // rows or elements per tile: the size of each transfer
  block,      // loop blocking: reuse of loaded data, fewer bytes moved
  algorithm,  // a strategy or method of the whole kernel
  fusion,     // which ops share a kernel (a graph's execution mode)
};
const char* name_of(ParamRole role);

struct ParamDecl {
  enum class Kind { integer, choice, flag };
  std::string name;
  Kind kind = Kind::integer;
  bool option = false;  // a top-level key ("/strategy") rather than "/params/<name>"
  ParamRole role = ParamRole::other;
  std::string meaning;
  // integer: the accepted range; a value must also be a multiple of `multiple`.
  int64_t lo = 0, hi = 0, multiple = 1;
  std::string range_note;      // follows "expected an integer in [lo, hi]" in the message
  std::string range_error;     // replaces the range message when set ("{got}": the value)
  std::string multiple_error;  // a value that is no multiple ("{got}"); else range_error's
  // choice: the accepted values, and other spellings accepted for them.
  std::vector<std::string> choices;
  std::vector<std::pair<std::string, std::string>> aliases;  // spelling -> choice
  bool suggest = true;  // a misspelt choice gets "did you mean"
  // The value when the workload gives none; null when the lowering chooses it (default_note
  // says how), e.g. the buffers that fit SBUF.
  nlohmann::json default_value;
  std::string default_note;
  // The values `trnsim tune` tries: ascending for integers, the choices for a choice.
  std::vector<nlohmann::json> tried;

  std::string where() const;         // "/params/bufs", "/strategy"
  std::string range_text() const;    // "1..8", "128..16384, multiples of 128", "scalar | vector"
  std::string default_text() const;  // "2", "\"scalar\"", "auto (the most of 3 that fit SBUF)"
  // Whether `v` is accepted (the range check without a message).
  bool accepts(const nlohmann::json& v) const;

  // Fluent setters for the declarations.
  ParamDecl& with_role(ParamRole r) {
    role = r;
    return *this;
  }
  ParamDecl& with_tried(std::vector<nlohmann::json> values) {
    tried = std::move(values);
    return *this;
  }
  ParamDecl& as_option() {
    option = true;
    return *this;
  }
};

struct ParamSpace {
  std::string kernel;  // "rmsnorm", "matmul strategy 4 (blocked all dimensions)"
  std::string
      unknown;  // the start of the message for an undeclared key: "unknown rmsnorm parameter"
  std::vector<ParamDecl> params;         // the options first, then "/params" keys
  std::vector<std::string> constraints;  // what the lowering checks beyond the ranges

  const ParamDecl* find(const std::string& name) const;
  // The names of the "/params" keys, in declaration order (the "expected one of" list).
  std::vector<std::string> param_names() const;
  // The number of points the tuner's values span (the product of each parameter's tried values).
  uint64_t points() const;

  ParamDecl& integer(std::string name, int64_t lo, int64_t hi, nlohmann::json default_value,
                     std::string meaning);
  ParamDecl& choice(std::string name, std::vector<std::string> choices,
                    nlohmann::json default_value, std::string meaning);
  ParamDecl& flag(std::string name, nlohmann::json default_value, std::string meaning);
};

// The declared parameters a workload gives, checked against its space when constructed: a
// "/params" key the space does not declare, or a value outside its range, throws WorkloadError
// naming "/params/<key>" (or the option's "/<key>") and what was expected. Options are read
// from Workload::options; a graph's mode, parsed with the graph, is not checked here.
// The value `w` gives for `d` (options from Workload::options, else its params), checked, or
// null when it gives none.
nlohmann::json read_value(const Workload& w, const ParamDecl& d);

class ParamValues {
 public:
  ParamValues(const Workload& w, const ParamSpace& space);
  bool given(const std::string& name) const;
  // The value given, else the declared default (0, "" or false when the lowering chooses).
  int64_t integer(const std::string& name) const;
  std::string choice(const std::string& name) const;  // aliases resolved to their choice
  bool flag(const std::string& name) const;

 private:
  const ParamDecl& decl(const std::string& name) const;
  const ParamSpace& space_;
  nlohmann::json values_ = nlohmann::json::object();
};

// The values a tuner tries for a size: `unit` times 1, 2, 4, ... up to `hi`, stopping at the
// first one that reaches `cover` (larger ones would only be clamped to the same size); `unit`
// at least, and `hi` at most.
std::vector<nlohmann::json> doubling_values(int64_t unit, int64_t hi, int64_t cover);
// `values`, without those outside [lo, hi], with `extra` added (a default), ascending.
std::vector<nlohmann::json> integer_values(std::vector<int64_t> values, int64_t lo, int64_t hi,
                                           const nlohmann::json& extra = nullptr);
// Ascending integer `values` up to the first that reaches `cover`: a tile or block of a size
// beyond it is clamped to the same one.
std::vector<nlohmann::json> covering(std::vector<nlohmann::json> values, int64_t cover);

}  // namespace trnsim::workloads
