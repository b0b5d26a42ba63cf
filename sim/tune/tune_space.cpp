#include "sim/tune/tune_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/names.hpp"
#include "sim/io/input_file.hpp"
#include "workloads/lowering.hpp"
#include "workloads/workload.hpp"

namespace trnsim::sim::tuner {

namespace {

using workloads::ParamDecl;

TuneParam param_of(const ParamDecl& d) {
  TuneParam p;
  p.name = d.name;
  p.role = d.role;
  p.ordinal = d.kind == ParamDecl::Kind::integer;
  p.values = d.tried;
  if (p.values.empty()) p.values.push_back(d.default_value);
  p.default_value = d.default_value;
  p.meaning = d.meaning;
  p.range = d.range_text();
  p.default_text = d.default_text();
  return p;
}

std::string value_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

// Applies the fixes to a branch's parameters: false when the branch lacks a fixed one.
bool fix_branch(std::vector<TuneParam>& params, const std::vector<Fix>& fixes,
                const std::vector<std::string>& option_names) {
  for (const Fix& f : fixes) {
    if (std::find(option_names.begin(), option_names.end(), f.name) != option_names.end()) {
      continue;
    }
    auto it = std::find_if(params.begin(), params.end(),
                           [&](const TuneParam& p) { return p.name == f.name; });
    if (it == params.end()) return false;
    it->values = {f.value};
  }
  return true;
}

}  // namespace

uint64_t Branch::size() const {
  uint64_t n = 1;
  for (const TuneParam& p : params) n = saturating_mul(n, p.values.size());
  return n;
}

uint64_t TuneSpace::size() const {
  uint64_t n = 0;
  for (const Branch& b : branches) {
    const uint64_t s = b.size();
    n = n > UINT64_MAX - s ? UINT64_MAX : n + s;
  }
  return n;
}

size_t TuneSpace::parameter_count() const {
  std::set<std::string> names;
  for (const TuneParam& o : options) names.insert(o.name);
  for (const Branch& b : branches) {
    for (const TuneParam& p : b.params) names.insert(p.name);
  }
  return names.size();
}

bool TuneSpace::empty() const {
  return parameter_count() == 0 || branches.empty();
}

json assignment(const TuneSpace& s, const Point& p) {
  if (p.is_default()) return json();
  json a = json::object();
  const Branch& b = s.branches.at(p.branch);
  for (size_t i = 0; i < s.options.size(); ++i) {
    a[s.options[i].name] = s.options[i].values.at(b.option_at[i]);
  }
  for (size_t i = 0; i < b.params.size(); ++i) a[b.params[i].name] = b.params[i].values.at(p.at[i]);
  return a;
}

std::vector<std::string> parameter_names(const TuneSpace& s) {
  std::vector<std::string> names;
  for (const TuneParam& o : s.options) {
    if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
  }
  // The branches' orders merged: the largest branch first, then each name another branch adds
  // after the name it follows there.
  std::vector<const Branch*> by_size;
  for (const Branch& b : s.branches) by_size.push_back(&b);
  std::stable_sort(by_size.begin(), by_size.end(), [](const Branch* a, const Branch* b) {
    return a->params.size() > b->params.size();
  });
  const size_t first = names.size();
  for (const Branch* b : by_size) {
    size_t at = first;
    for (const TuneParam& p : b->params) {
      const auto it = std::find(names.begin(), names.end(), p.name);
      if (it != names.end()) {
        at = static_cast<size_t>(it - names.begin()) + 1;
        continue;
      }
      names.insert(names.begin() + static_cast<std::ptrdiff_t>(at), p.name);
      ++at;
    }
  }
  return names;
}

std::string label(const TuneSpace& s, const json& a) {
  if (a.is_null()) return "default";
  std::string out;
  std::set<std::string> done;
  auto add = [&](const std::string& name) {
    if (!a.contains(name) || !done.insert(name).second) return;
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value_text(a[name]));
  };
  for (const std::string& name : parameter_names(s)) add(name);
  for (const auto& item : a.items()) add(item.key());
  return out.empty() ? "(no parameters)" : out;
}

Point point_at(const TuneSpace& s, uint64_t index) {
  for (uint32_t b = 0; b < s.branches.size(); ++b) {
    const uint64_t n = s.branches[b].size();
    if (index >= n) {
      index -= n;
      continue;
    }
    Point p;
    p.branch = b;
    const auto& params = s.branches[b].params;
    p.at.assign(params.size(), 0);
    for (size_t i = params.size(); i-- > 0;) {
      p.at[i] = static_cast<uint32_t>(index % params[i].values.size());
      index /= params[i].values.size();
    }
    return p;
  }
  return Point{};
}

Point point_of(const TuneSpace& s, const json& values) {
  if (!values.is_object()) return Point{};
  for (uint32_t b = 0; b < s.branches.size(); ++b) {
    const Branch& br = s.branches[b];
    bool match = true;
    for (size_t i = 0; i < s.options.size() && match; ++i) {
      const auto it = values.find(s.options[i].name);
      match = it != values.end() && *it == s.options[i].values[br.option_at[i]];
    }
    Point p;
    p.branch = b;
    for (size_t i = 0; i < br.params.size() && match; ++i) {
      const auto it = values.find(br.params[i].name);
      const auto& vs = br.params[i].values;
      const auto at = it == values.end() ? vs.end() : std::find(vs.begin(), vs.end(), *it);
      match = at != vs.end();
      if (match) p.at.push_back(static_cast<uint32_t>(at - vs.begin()));
    }
    if (match && values.size() == s.options.size() + br.params.size()) return p;
  }
  return Point{};
}

Fix parse_fix(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw InputError(fmt::format("--fix {}: expected NAME=VALUE, e.g. --fix bufs=2", text));
  }
  Fix f;
  f.name = text.substr(0, eq);
  const std::string v = text.substr(eq + 1);
  try {
    f.value = json::parse(v);
  } catch (const json::exception&) {
    f.value = v;
  }
  return f;
}

TuneSpace workload_space(const json& doc, const std::string& file, const config::ArchConfig& arch,
                         const std::vector<Fix>& fixes) {
  const workloads::Workload w = workloads::parse_workload(doc.dump(), file);
  const workloads::ParamSpace top = workloads::space_of(w, arch);
  TuneSpace s;
  s.title = top.kernel;
  s.constraints = top.constraints;
  // Every name a fix may use: the options and each branch's params.
  std::vector<std::string> option_names;
  for (const ParamDecl& d : top.params) {
    if (!d.option) continue;
    s.options.push_back(param_of(d));
    option_names.push_back(d.name);
  }
  // The option values tried: a fix pins one (checked by the declaration).
  std::map<std::string, std::vector<std::string>> names_by_branch;
  for (const Fix& f : fixes) {
    for (size_t i = 0; i < s.options.size(); ++i) {
      if (s.options[i].name != f.name) continue;
      const ParamDecl& d = *top.find(f.name);
      if (!d.accepts(f.value)) {
        throw InputError(fmt::format("--fix {}={}: {} accepts {}", f.name, value_text(f.value),
                                     f.name, d.range_text()));
      }
      s.options[i].values = {f.value};
    }
  }
  // Every combination of option values is a branch, with the params its workload declares.
  std::vector<size_t> at(s.options.size(), 0);
  std::set<std::string> all_names(option_names.begin(), option_names.end());
  std::vector<std::pair<std::string, ParamDecl>> decls;  // for checking fixes
  while (true) {
    json d = doc;
    for (size_t i = 0; i < s.options.size(); ++i) d[s.options[i].name] = s.options[i].values[at[i]];
    d.erase("params");
    const workloads::Workload wb = workloads::parse_workload(d.dump(), file);
    const workloads::ParamSpace space = workloads::space_of(wb, arch);
    Branch b;
    b.option_at = at;
    for (const ParamDecl& pd : space.params) {
      if (pd.option) continue;
      b.params.push_back(param_of(pd));
      all_names.insert(pd.name);
      decls.emplace_back(pd.name, pd);
    }
    if (s.constraints.empty()) s.constraints = space.constraints;
    if (fix_branch(b.params, fixes, option_names)) s.branches.push_back(std::move(b));
    size_t i = s.options.size();
    while (i > 0 && ++at[i - 1] == s.options[i - 1].values.size()) at[--i] = 0;
    if (i == 0) break;
  }
  for (const Fix& f : fixes) {
    if (!all_names.count(f.name)) {
      const std::vector<std::string> names(all_names.begin(), all_names.end());
      const std::string near = base::closest_name(f.name, names);
      throw InputError(fmt::format(
          "--fix {}: {} has no parameter {}; its parameters: {}{}", f.name, s.title, f.name,
          names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")),
          near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    for (const auto& [name, pd] : decls) {
      if (name == f.name && !pd.accepts(f.value)) {
        throw InputError(fmt::format("--fix {}={}: {} accepts {}", f.name, value_text(f.value),
                                     f.name, pd.range_text()));
      }
    }
  }
  // The title: the kernel, its shape and dtype, the preset.
  const std::string kernel = w.graph ? fmt::format("graph {}", w.name) : w.kernel;
  s.title = fmt::format("{} [{}] {} on {}", kernel, fmt::join(w.shape, ", "), isa::name_of(w.dtype),
                        arch.name);
  return s;
}

TuneSpace declared_space(const json& declaration, const std::string& title,
                         const std::vector<Fix>& fixes) {
  TuneSpace s;
  s.title = title;
  Branch b;
  std::vector<std::string> names;
  for (const json& d : declaration.value("params", json::array())) {
    TuneParam p;
    p.name = d.value("name", "");
    p.values = d.value("values", json::array()).get<std::vector<json>>();
    p.default_value = d.value("default", json());
    p.meaning = d.value("meaning", "");
    p.ordinal = !p.values.empty() && std::all_of(p.values.begin(), p.values.end(),
                                                 [](const json& v) { return v.is_number(); });
    std::vector<std::string> texts;
    for (const json& v : p.values) texts.push_back(value_text(v));
    p.range = fmt::format("{}", fmt::join(texts, " | "));
    p.default_text = p.default_value.is_null() ? "none" : value_text(p.default_value);
    names.push_back(p.name);
    b.params.push_back(std::move(p));
  }
  for (const Fix& f : fixes) {
    auto it = std::find_if(b.params.begin(), b.params.end(),
                           [&](const TuneParam& p) { return p.name == f.name; });
    if (it == b.params.end()) {
      const std::string near = base::closest_name(f.name, names);
      throw InputError(fmt::format(
          "--fix {}: {} declares no parameter {}; its parameters: {}{}", f.name, title, f.name,
          names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")),
          near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    it->values = {f.value};
  }
  s.branches.push_back(std::move(b));
  return s;
}

json workload_of(const json& doc, const TuneSpace& s, const Point& p) {
  if (p.is_default()) return doc;
  json d = doc;
  const Branch& b = s.branches.at(p.branch);
  for (size_t i = 0; i < s.options.size(); ++i)
    d[s.options[i].name] = s.options[i].values[b.option_at[i]];
  json params = json::object();
  for (size_t i = 0; i < b.params.size(); ++i)
    params[b.params[i].name] = b.params[i].values[p.at[i]];
  d["params"] = params;
  return d;
}

namespace {

std::string values_text(const TuneParam& p) {
  std::vector<std::string> v;
  for (const json& x : p.values) v.push_back(value_text(x));
  return fmt::format("{}", fmt::join(v, ", "));
}

std::string param_lines(const std::vector<TuneParam>& params, bool option) {
  std::string out;
  for (const TuneParam& p : params) {
    out += fmt::format("  {:<22} {}\n", (option ? "/" : "") + p.name, p.meaning);
    out += fmt::format("  {:<22} range {}; default {}; role {}\n", "", p.range, p.default_text,
                       workloads::name_of(p.role));
    out += fmt::format("  {:<22} tried: {} ({} value{})\n", "", values_text(p), p.values.size(),
                       p.values.size() == 1 ? "" : "s");
  }
  return out;
}

}  // namespace

std::string space_text(const TuneSpace& s) {
  std::string out = fmt::format("{}: {} points", s.title, s.size());
  if (s.branches.size() > 1) out += fmt::format(" in {} branches", s.branches.size());
  out += "\n";
  if (s.empty()) return out + "  no tunable parameters\n";
  if (!s.options.empty()) {
    out += "options (top-level keys; each combination is a branch with its own params):\n";
    out += param_lines(s.options, true);
  }
  for (size_t b = 0; b < s.branches.size(); ++b) {
    const Branch& br = s.branches[b];
    std::string head;
    for (size_t i = 0; i < s.options.size(); ++i) {
      head += fmt::format("{}{}={}", head.empty() ? "" : " ", s.options[i].name,
                          value_text(s.options[i].values[br.option_at[i]]));
    }
    out += fmt::format("{} ({} points):\n", head.empty() ? "params" : "params with " + head,
                       br.size());
    if (br.params.empty()) out += "  none\n";
    out += param_lines(br.params, false);
  }
  if (!s.constraints.empty()) {
    out += "constraints (a point that breaks one is rejected before it is simulated):\n";
    for (const std::string& c : s.constraints) out += "  - " + c + "\n";
  }
  return out;
}

json space_json(const TuneSpace& s) {
  auto param = [](const TuneParam& p) {
    return json{{"name", p.name},
                {"meaning", p.meaning},
                {"range", p.range},
                {"default", p.default_value},
                {"default_text", p.default_text},
                {"role", workloads::name_of(p.role)},
                {"ordinal", p.ordinal},
                {"tried", p.values}};
  };
  json j = {{"title", s.title},
            {"points", s.size()},
            {"options", json::array()},
            {"branches", json::array()},
            {"constraints", s.constraints}};
  for (const TuneParam& o : s.options) j["options"].push_back(param(o));
  for (const Branch& b : s.branches) {
    json options = json::object();
    for (size_t i = 0; i < s.options.size(); ++i) {
      options[s.options[i].name] = s.options[i].values[b.option_at[i]];
    }
    json params = json::array();
    for (const TuneParam& p : b.params) params.push_back(param(p));
    j["branches"].push_back({{"options", options}, {"points", b.size()}, {"params", params}});
  }
  return j;
}

TuneSpace space_from_json(const json& j) {
  auto param = [](const json& d) {
    TuneParam p;
    p.name = d.at("name").get<std::string>();
    p.meaning = d.value("meaning", "");
    p.range = d.value("range", "");
    p.default_value = d.value("default", json());
    p.default_text = d.value("default_text", "");
    p.ordinal = d.value("ordinal", false);
    p.values = d.at("tried").get<std::vector<json>>();
    const std::string role = d.value("role", "other");
    for (auto r : {workloads::ParamRole::engine, workloads::ParamRole::buffers,
                   workloads::ParamRole::tile, workloads::ParamRole::block,
                   workloads::ParamRole::algorithm, workloads::ParamRole::fusion}) {
      if (role == workloads::name_of(r)) p.role = r;
    }
    return p;
  };
  TuneSpace s;
  s.title = j.value("title", "");
  s.constraints = j.value("constraints", std::vector<std::string>{});
  for (const json& o : j.at("options")) s.options.push_back(param(o));
  for (const json& b : j.at("branches")) {
    Branch br;
    for (const TuneParam& o : s.options) {
      const json& v = b.at("options").at(o.name);
      const auto at = std::find(o.values.begin(), o.values.end(), v);
      br.option_at.push_back(static_cast<size_t>(at - o.values.begin()));
    }
    for (const json& p : b.at("params")) br.params.push_back(param(p));
    s.branches.push_back(std::move(br));
  }
  return s;
}

}  // namespace trnsim::sim::tuner
