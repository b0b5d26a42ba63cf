#include "config/arch_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/json.hpp"
#include "base/names.hpp"

namespace trnsim::config {

namespace {

using nlohmann::json;

const std::vector<std::string> kDocumentKeys = {"name", "description", "notes", "base",
                                                "parameters"};
const std::vector<std::string> kEntryKeys = {"value", "unit", "source"};

[[noreturn]] void fail(const std::string& file, const std::string& where, const std::string& what) {
  throw ArchFileError(fmt::format("{}: {}: {}", file, where, what));
}

void check_keys(const json& object, const std::vector<std::string>& known, const std::string& file,
                const std::string& where) {
  for (const auto& item : object.items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    const std::string near = base::closest_name(item.key(), known);
    fail(file, where + "/" + item.key(),
         fmt::format("unknown key; expected {}{}", fmt::join(known, ", "),
                     near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
  }
}

std::string string_at(const json& doc, const char* key, const std::string& file) {
  if (!doc.contains(key)) return {};
  if (!doc[key].is_string()) {
    fail(file, fmt::format("/{}", key),
         fmt::format("expected a string, got {}", doc[key].type_name()));
  }
  return doc[key].get<std::string>();
}

// The value of one parameter entry, checked against the table.
double entry_value(const Parameter& p, const json& v, const std::string& file,
                   const std::string& where) {
  if (p.kind == Parameter::Kind::flag) {
    if (!v.is_boolean()) fail(file, where, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>() ? 1 : 0;
  }
  if (!v.is_number()) {
    fail(file, where,
         fmt::format("expected {}, got {}",
                     p.kind == Parameter::Kind::integer ? "an integer" : "a number", v.dump()));
  }
  const double d = v.get<double>();
  const std::string problem = check_parameter_value(p, d, v.dump());
  if (!problem.empty()) fail(file, where, problem);
  return d;
}

std::string stem_of(const std::string& file) {
  std::string s = file;
  const auto slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0) s.resize(s.size() - 5);
  return s;
}

ArchSpec parse_document(const std::string& text, const std::string& file, bool allow_base) {
  json doc;
  try {
    doc = base::parse_json_text<json>(text, file);
  } catch (const base::JsonError& e) {
    throw ArchFileError(e.what());
  }
  if (!doc.is_object())
    fail(file, "/", fmt::format("expected a JSON object, got {}", doc.type_name()));
  check_keys(doc, kDocumentKeys, file, "");

  ArchSpec spec;
  const std::string base = string_at(doc, "base", file);
  if (!base.empty()) {
    if (!allow_base) fail(file, "/base", "a built-in preset gives every parameter; no base");
    const ArchSpec* b = find_preset_spec(base);
    if (b == nullptr) {
      const std::string near = trnsim::base::closest_name(base, preset_name_list());
      fail(file, "/base",
           fmt::format("unknown preset \"{}\"; expected one of {}{}", base, preset_names(),
                       near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    spec = *b;
    spec.base = base;
    spec.description.clear();  // the preset's own words are not the file's
    spec.notes.clear();
  } else if (doc.contains("base")) {
    fail(file, "/base", "expected a preset name, got \"\"");
  }
  spec.origin = file;
  spec.sources.resize(parameters().size());
  spec.config.name = doc.contains("name") ? string_at(doc, "name", file) : stem_of(file);
  if (spec.config.name.empty()) fail(file, "/name", "expected a non-empty name");
  if (doc.contains("description")) spec.description = string_at(doc, "description", file);
  if (doc.contains("notes")) {
    const json& n = doc["notes"];
    if (!n.is_array()) fail(file, "/notes", "expected an array of strings");
    spec.notes.clear();
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].is_string()) fail(file, fmt::format("/notes/{}", i), "expected a string");
      spec.notes.push_back(n[i].get<std::string>());
    }
  }

  if (!doc.contains("parameters")) {
    fail(file, "/parameters", "missing; expected an object of parameter name: value");
  }
  const json& params = doc["parameters"];
  if (!params.is_object()) {
    fail(file, "/parameters",
         fmt::format("expected an object of parameter name: value, got {}", params.type_name()));
  }
  std::vector<bool> given(parameters().size(), false);
  for (const auto& item : params.items()) {
    const std::string where = "/parameters/" + item.key();
    const Parameter* p = find_parameter(item.key());
    if (p == nullptr) fail(file, where, unknown_parameter_text(item.key()));
    const size_t index = parameter_index(*p);
    const json& entry = item.value();
    double value = 0;
    std::string source;
    if (entry.is_object()) {
      check_keys(entry, kEntryKeys, file, where);
      if (!entry.contains("value")) fail(file, where + "/value", "missing");
      value = entry_value(*p, entry["value"], file, where + "/value");
      if (entry.contains("unit")) {
        if (!entry["unit"].is_string() || entry["unit"].get<std::string>() != p->unit) {
          fail(file, where + "/unit",
               fmt::format("expected \"{}\" (the unit trnsim reads), got {}", p->unit,
                           entry["unit"].dump()));
        }
      } else if (base.empty()) {
        fail(file, where + "/unit", fmt::format("missing; expected \"{}\"", p->unit));
      }
      if (entry.contains("source")) {
        if (!entry["source"].is_string() || entry["source"].get<std::string>().empty()) {
          fail(file, where + "/source",
               "expected a non-empty string: a fact-sheet key or \"assumption: why\"");
        }
        source = entry["source"].get<std::string>();
      } else if (base.empty()) {
        fail(file, where + "/source",
             "missing; expected where the value comes from (a fact-sheet key, or \"assumption: "
             "why\")");
      }
    } else if (!base.empty()) {
      value = entry_value(*p, entry, file, where);
    } else {
      fail(file, where,
           "expected {\"value\": ..., \"unit\": ..., \"source\": ...} (a file without \"base\" "
           "gives every parameter's unit and source)");
    }
    p->set(spec.config, value);
    spec.sources[index] = source.empty() ? file : source;
    given[index] = true;
  }
  if (base.empty()) {
    std::vector<std::string> missing;
    for (size_t i = 0; i < given.size(); ++i) {
      if (!given[i]) missing.emplace_back(parameters()[i].name);
    }
    if (!missing.empty()) {
      const size_t shown = std::min<size_t>(missing.size(), 5);
      fail(file, "/parameters",
           fmt::format("{} parameter{} missing ({}{}); a file without \"base\" gives every "
                       "parameter, or name a preset as \"base\" (one of {})",
                       missing.size(), missing.size() == 1 ? " is" : "s are",
                       fmt::join(missing.begin(), missing.begin() + shown, ", "),
                       missing.size() > shown ? ", ..." : "", preset_names()));
    }
  }
  return spec;
}

std::vector<ArchSpec> load_presets() {
  std::vector<ArchSpec> specs;
  for (const EmbeddedArchFile& f : embedded_arch_files()) {
    const std::string file = fmt::format("arch/{}.json", f.name);
    try {
      ArchSpec s = parse_document(std::string(f.text), file, false);
      if (s.config.name != f.name) {
        throw ArchFileError(
            fmt::format("{}: /name: \"{}\" is not the file's name", file, s.config.name));
      }
      s.origin = fmt::format("built-in preset {} ({})", f.name, file);
      specs.push_back(std::move(s));
    } catch (const ArchFileError& e) {
      throw std::logic_error(fmt::format("built-in preset {}", e.what()));
    }
  }
  std::sort(specs.begin(), specs.end(),
            [](const ArchSpec& a, const ArchSpec& b) { return a.config.name < b.config.name; });
  return specs;
}

}  // namespace

ArchSpec parse_arch_document(const std::string& text, const std::string& file) {
  return parse_document(text, file, true);
}

const std::vector<ArchSpec>& preset_specs() {
  static const std::vector<ArchSpec> specs = load_presets();
  return specs;
}

const ArchSpec* find_preset_spec(std::string_view name) {
  for (const ArchSpec& s : preset_specs()) {
    if (s.config.name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> preset_name_list() {
  std::vector<std::string> names;
  for (const ArchSpec& s : preset_specs()) names.push_back(s.config.name);
  return names;
}

void set_parameter(ArchSpec& spec, const std::string& assignment) {
  double v = 0;
  const Parameter& p = parse_assignment(assignment, v);
  p.set(spec.config, v);
  spec.sources.resize(parameters().size());
  spec.sources[parameter_index(p)] = "--set";
}

std::string arch_document(const ArchSpec& spec) {
  std::string out = "{\n";
  out += fmt::format("  \"name\": {},\n", json(spec.config.name).dump());
  if (!spec.description.empty()) {
    out += fmt::format("  \"description\": {},\n", json(spec.description).dump());
  }
  if (!spec.notes.empty()) {
    out += "  \"notes\": [\n";
    for (size_t i = 0; i < spec.notes.size(); ++i) {
      out += fmt::format("    {}{}\n", json(spec.notes[i]).dump(),
                         i + 1 < spec.notes.size() ? "," : "");
    }
    out += "  ],\n";
  }
  out += "  \"parameters\": {\n";
  const auto& table = parameters();
  for (size_t i = 0; i < table.size(); ++i) {
    const Parameter& p = table[i];
    const std::string source =
        i < spec.sources.size() && !spec.sources[i].empty() ? spec.sources[i] : spec.origin;
    out += fmt::format("    {}: {{\"value\": {}, \"unit\": {}, \"source\": {}}}{}\n",
                       json(std::string(p.name)).dump(), parameter_value_text(p, spec.config),
                       json(std::string(p.unit)).dump(), json(source).dump(),
                       i + 1 < table.size() ? "," : "");
  }
  out += "  }\n}\n";
  return out;
}

}  // namespace trnsim::config
