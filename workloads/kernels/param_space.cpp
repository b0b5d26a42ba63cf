#include "workloads/kernels/param_space.hpp"

#include "workloads/kernels/kernel_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace trnsim::workloads {

using nlohmann::json;

const char* name_of(ParamRole role) {
  switch (role) {
    case ParamRole::engine:
      return "engine";
    case ParamRole::buffers:
      return "buffers";
    case ParamRole::tile:
      return "tile";
    case ParamRole::block:
      return "block";
    case ParamRole::algorithm:
      return "algorithm";
    case ParamRole::fusion:
      return "fusion";
    default:
      return "other";
  }
}

namespace {

std::string with_value(std::string text, const json& v) {
  const std::string got = v.dump();
  for (size_t at = text.find("{got}"); at != std::string::npos; at = text.find("{got}", at)) {
    text.replace(at, 5, got);
    at += got.size();
  }
  return text;
}

// The choice `s` names (itself, or the choice an alias stands for), or "".
std::string canonical(const ParamDecl& d, const std::string& s) {
  if (std::find(d.choices.begin(), d.choices.end(), s) != d.choices.end()) return s;
  for (const auto& [spelling, choice] : d.aliases) {
    if (spelling == s) return choice;
  }
  return "";
}

// The checked value of `v` for `d` (a choice's canonical spelling), or throws.
json checked(const Workload& w, const ParamDecl& d, const json& v) {
  switch (d.kind) {
    case ParamDecl::Kind::integer: {
      const bool integer = v.is_number_integer();
      const int64_t n = integer ? v.get<int64_t>() : 0;
      if (!integer || n < d.lo || n > d.hi) {
        throw WorkloadError(w.file, d.where(),
                            d.range_error.empty()
                                ? fmt::format("expected an integer in [{}, {}]{}, got {}", d.lo,
                                              d.hi, d.range_note, v.dump())
                                : with_value(d.range_error, v));
      }
      if (d.multiple > 1 && n % d.multiple != 0) {
        throw WorkloadError(
            w.file, d.where(),
            with_value(d.multiple_error.empty() ? d.range_error : d.multiple_error, v));
      }
      return n;
    }
    case ParamDecl::Kind::flag:
      if (!v.is_boolean()) {
        throw WorkloadError(w.file, d.where(),
                            fmt::format("expected true or false, got {}", v.dump()));
      }
      return v;
    case ParamDecl::Kind::choice:
      break;
  }
  if (v.is_string()) {
    const std::string c = canonical(d, v.get<std::string>());
    if (!c.empty()) return c;
  }
  throw WorkloadError(
      w.file, d.where(),
      fmt::format("expected {}, got {}{}", quoted_list(d.choices), v.dump(),
                  d.suggest && v.is_string() ? did_you_mean(v.get<std::string>(), d.choices) : ""));
}

}  // namespace

json read_value(const Workload& w, const ParamDecl& d) {
  const json& from = d.option ? w.options : w.params;
  return from.contains(d.name) ? checked(w, d, from[d.name]) : json();
}

std::string ParamDecl::where() const {
  return (option ? "/" : "/params/") + name;
}

std::string ParamDecl::range_text() const {
  switch (kind) {
    case Kind::integer:
      return multiple > 1 ? fmt::format("{}..{}, multiples of {}", lo, hi, multiple)
                          : fmt::format("{}..{}", lo, hi);
    case Kind::flag:
      return "true | false";
    case Kind::choice:
      break;
  }
  return fmt::format("{}", fmt::join(choices, " | "));
}

std::string ParamDecl::default_text() const {
  const std::string value = default_value.is_null()     ? "auto"
                            : default_value.is_string() ? default_value.get<std::string>()
                                                        : default_value.dump();
  return default_note.empty() ? value : fmt::format("{} ({})", value, default_note);
}

bool ParamDecl::accepts(const json& v) const {
  switch (kind) {
    case Kind::integer: {
      if (!v.is_number_integer()) return false;
      const int64_t n = v.get<int64_t>();
      return n >= lo && n <= hi && (multiple <= 1 || n % multiple == 0);
    }
    case Kind::flag:
      return v.is_boolean();
    case Kind::choice:
      return v.is_string() && !canonical(*this, v.get<std::string>()).empty();
  }
  return false;
}

const ParamDecl* ParamSpace::find(const std::string& name) const {
  for (const ParamDecl& d : params) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::vector<std::string> ParamSpace::param_names() const {
  std::vector<std::string> names;
  for (const ParamDecl& d : params) {
    if (!d.option) names.push_back(d.name);
  }
  return names;
}

uint64_t ParamSpace::points() const {
  uint64_t n = 1;
  for (const ParamDecl& d : params) {
    if (__builtin_mul_overflow(n, std::max<uint64_t>(1, d.tried.size()), &n)) return UINT64_MAX;
  }
  return n;
}

ParamDecl& ParamSpace::integer(std::string name, int64_t lo, int64_t hi, json default_value,
                               std::string meaning) {
  ParamDecl d;
  d.name = std::move(name);
  d.kind = ParamDecl::Kind::integer;
  d.lo = lo;
  d.hi = hi;
  d.default_value = std::move(default_value);
  d.meaning = std::move(meaning);
  d.tried = integer_values({}, lo, hi, d.default_value);
  params.push_back(std::move(d));
  return params.back();
}

ParamDecl& ParamSpace::choice(std::string name, std::vector<std::string> choices,
                              json default_value, std::string meaning) {
  ParamDecl d;
  d.name = std::move(name);
  d.kind = ParamDecl::Kind::choice;
  d.choices = std::move(choices);
  d.default_value = std::move(default_value);
  d.meaning = std::move(meaning);
  for (const std::string& c : d.choices) d.tried.push_back(c);
  params.push_back(std::move(d));
  return params.back();
}

ParamDecl& ParamSpace::flag(std::string name, json default_value, std::string meaning) {
  ParamDecl d;
  d.name = std::move(name);
  d.kind = ParamDecl::Kind::flag;
  d.default_value = std::move(default_value);
  d.meaning = std::move(meaning);
  d.tried = {false, true};
  params.push_back(std::move(d));
  return params.back();
}

ParamValues::ParamValues(const Workload& w, const ParamSpace& space) : space_(space) {
  for (const ParamDecl& d : space.params) {
    if (d.option && w.options.contains(d.name)) values_[d.name] = checked(w, d, w.options[d.name]);
  }
  const std::vector<std::string> names = space.param_names();
  for (const auto& item : w.params.items()) {
    const ParamDecl* d = space.find(item.key());
    if (d != nullptr && !d->option) continue;
    throw WorkloadError(w.file, "/params/" + item.key(),
                        fmt::format("{}; expected one of: {}{}", space.unknown,
                                    fmt::join(names, ", "), did_you_mean(item.key(), names)));
  }
  for (const ParamDecl& d : space.params) {
    if (!d.option && w.params.contains(d.name)) values_[d.name] = checked(w, d, w.params[d.name]);
  }
}

const ParamDecl& ParamValues::decl(const std::string& name) const {
  const ParamDecl* d = space_.find(name);
  if (d == nullptr) throw std::logic_error("ParamValues: " + name + " is not declared");
  return *d;
}

bool ParamValues::given(const std::string& name) const {
  decl(name);
  return values_.contains(name);
}

int64_t ParamValues::integer(const std::string& name) const {
  const ParamDecl& d = decl(name);
  if (values_.contains(name)) return values_[name].get<int64_t>();
  return d.default_value.is_number_integer() ? d.default_value.get<int64_t>() : 0;
}

std::string ParamValues::choice(const std::string& name) const {
  const ParamDecl& d = decl(name);
  if (values_.contains(name)) return values_[name].get<std::string>();
  return d.default_value.is_string() ? canonical(d, d.default_value.get<std::string>()) : "";
}

bool ParamValues::flag(const std::string& name) const {
  const ParamDecl& d = decl(name);
  if (values_.contains(name)) return values_[name].get<bool>();
  return d.default_value.is_boolean() && d.default_value.get<bool>();
}

std::vector<json> doubling_values(int64_t unit, int64_t hi, int64_t cover) {
  std::vector<json> out;
  unit = std::max<int64_t>(1, unit);
  for (int64_t v = unit; v <= hi; v *= 2) {
    out.push_back(v);
    if (v >= cover || v > INT64_MAX / 2) break;
  }
  if (out.empty()) out.push_back(std::min(unit, hi));
  return out;
}

std::vector<json> integer_values(std::vector<int64_t> values, int64_t lo, int64_t hi,
                                 const json& extra) {
  if (extra.is_number_integer()) values.push_back(extra.get<int64_t>());
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<json> out;
  for (int64_t v : values) {
    if (v >= lo && v <= hi) out.push_back(v);
  }
  return out;
}

std::vector<json> covering(std::vector<json> values, int64_t cover) {
  std::vector<json> out;
  for (const json& v : values) {
    out.push_back(v);
    if (v.get<int64_t>() >= cover) break;
  }
  return out;
}

}  // namespace trnsim::workloads
