// `trnsim explain --apply WORKLOAD`: the diagnosis's closed loop. The workload runs as given;
// each finding's suggestion is mapped to the changes of the workload's declared parameters it
// names (a buffer count up, a tile or block larger, another engine, another execution mode);
// each change is checked in this process (an invalid one is reported, never simulated) and run
// as its own workload file, and the findings come back with their measured gains, best first.
#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <set>

#include "sim/io/exit_codes.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/output_file.hpp"
#include "sim/run/load.hpp"
#include "sim/tune/tune.hpp"
#include "sim/tune/tune_internal.hpp"
#include "workloads/workload.hpp"

namespace trnsim::sim {

using namespace tuner;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;
using workloads::ParamRole;

constexpr double kNever = std::numeric_limits<double>::infinity();

// The parameters a finding's suggestion talks about, by role (sim/report/explain.cpp writes the
// suggestions; these are the same words as parameters).
std::vector<ParamRole> roles_of(const Finding& f) {
  const std::string& cause = f.cause;
  // "run the graph with \"mode\": \"compile\"" (an eager graph of several launches); a single
  // launch's overhead ("give each launch more work") names no parameter.
  if (cause == "host launch overhead") {
    if (f.suggestion.find("\"compile\"") == std::string::npos) return {};
    return {ParamRole::fusion};
  }
  if (cause == "HBM round trips between kernels") return {ParamRole::fusion};
  if (cause == "serialization (no overlap)") return {ParamRole::buffers};  // "params.bufs"
  if (cause == "DMA fixed costs (small transfers)") {
    return {ParamRole::tile, ParamRole::block};  // "larger tiles, or more rows per partition"
  }
  if (cause == "DMA bandwidth") {
    return {ParamRole::fusion, ParamRole::block};  // "fuse", "block the loops"
  }
  if (cause == "ScalarE" || cause == "VectorE" || cause == "GpSimdE") {
    return {ParamRole::engine};  // "move an elementwise step from ScalarE to VectorE"
  }
  if (cause == "TensorE") return {ParamRole::block};  // "larger moving tiles"
  return {};
}

// Roles whose suggestion is "more" or "larger": the next value up and the largest tried;
// the others (an engine, a mode, a strategy) try every other value.
bool grows(ParamRole r) {
  return r == ParamRole::buffers || r == ParamRole::tile || r == ParamRole::block;
}

struct Change {
  std::string name;  // "mode" (an option) or a params key
  bool option = false;
  json value;
  std::string text() const {
    return fmt::format("{}{}={}", option ? "" : "params.", name,
                       value.is_string() ? value.get<std::string>() : value.dump());
  }
};

struct Tried {
  Change change;
  std::string status;  // "ok", "invalid" (rejected before simulating), "failed"
  std::string error;
  double time_ns = kNever;
  std::string file;  // the changed workload, to run on its own
};

json current_value(const json& doc, const TuneParam& p, bool option) {
  if (option) return doc.contains(p.name) ? doc[p.name] : p.default_value;
  const json& params = doc.value("params", json::object());
  return params.is_object() && params.contains(p.name) ? params[p.name] : p.default_value;
}

// The values of `p` worth trying for a suggestion about its role.
std::vector<json> values_to_try(const TuneParam& p, const json& now, ParamRole role) {
  std::vector<json> out;
  if (!grows(role)) {
    for (const json& v : p.values) {
      if (v != now) out.push_back(v);
    }
    return out;
  }
  std::vector<json> larger;
  for (const json& v : p.values) {
    if (!v.is_number()) continue;
    if (now.is_number() ? v.get<double>() > now.get<double>() : true) larger.push_back(v);
  }
  if (larger.empty()) return out;
  if (now.is_number()) out.push_back(larger.front());
  if (larger.back() != larger.front() || !now.is_number()) out.push_back(larger.back());
  if (!now.is_number() && larger.size() > 1) out.insert(out.begin(), larger[larger.size() - 2]);
  return out;
}

// The changes that a finding's suggestion names, in the workload's own space.
std::vector<Change> changes_of(const Finding& f, const json& doc, const TuneSpace& s) {
  std::vector<Change> out;
  const std::vector<ParamRole> roles = roles_of(f);
  if (roles.empty()) return out;
  // The branch the workload is in: its options' values as given (or their defaults).
  const Branch* branch = nullptr;
  for (const Branch& b : s.branches) {
    bool same = true;
    for (size_t i = 0; i < s.options.size() && same; ++i) {
      same = s.options[i].values[b.option_at[i]] == current_value(doc, s.options[i], true);
    }
    if (same) branch = &b;
  }
  for (ParamRole role : roles) {
    for (const TuneParam& o : s.options) {
      if (o.role != role) continue;
      for (const json& v : values_to_try(o, current_value(doc, o, true), role)) {
        out.push_back({o.name, true, v});
      }
    }
    if (branch == nullptr) continue;
    for (const TuneParam& p : branch->params) {
      if (p.role != role) continue;
      for (const json& v : values_to_try(p, current_value(doc, p, false), role)) {
        out.push_back({p.name, false, v});
      }
    }
  }
  return out;
}

json changed(json doc, const Change& c) {
  if (c.option) {
    doc[c.name] = c.value;
  } else {
    if (!doc.contains("params") || !doc["params"].is_object()) doc["params"] = json::object();
    doc["params"][c.name] = c.value;
  }
  return doc;
}

// A graph's .npy inputs by absolute path, so that the changed file runs from its own directory.
json with_absolute_inputs(json doc, const std::string& dir) {
  if (!doc.contains("inputs") || !doc["inputs"].is_object()) return doc;
  for (auto& item : doc["inputs"].items()) {
    json& in = item.value();
    if (in.is_object() && in.contains("npy") && in["npy"].is_string()) {
      const fs::path npy = in["npy"].get<std::string>();
      if (npy.is_relative()) in["npy"] = (fs::path(dir) / npy).lexically_normal().string();
    }
  }
  return doc;
}

std::vector<std::string> common_args(const ApplyOptions& o) {
  std::vector<std::string> args;
  if (!o.arch.empty()) {
    args.push_back("--arch");
    args.push_back(o.arch);
  }
  for (const std::string& s : o.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  // Times only: the gains are the timing model's, and each run can be repeated as it is.
  args.push_back("--timing-only");
  args.push_back("--no-report");
  return args;
}

std::string us_text(double ns) {
  return fmt::format("{:.2f} us", ns / 1e3);
}

std::string gain_text(double given, double t) {
  const double pct = 100.0 * (given - t) / given;
  if (t < given) return fmt::format("{:.2f} us faster ({:.1f}%)", (given - t) / 1e3, pct);
  if (t == given) return "does not help: the same time";
  return fmt::format("does not help: {:.2f} us slower ({:.1f}%)", (t - given) / 1e3, -pct);
}

}  // namespace

int explain_apply(const ApplyOptions& o) {
  json doc;
  TuneSpace space;
  config::ArchConfig arch;
  std::string out;
  try {
    if (fs::path(o.workload).extension() == ".tasm") {
      throw InputError(fmt::format(
          "{}: a program (.tasm) fixes every instruction and declares no choices; {} takes a "
          "workload JSON (kernel or graph form, docs/tune.md)",
          o.workload, "explain --apply"));
    }
    if (is_python_kernel(o.workload)) {
      throw InputError(fmt::format(
          "{}: explain --apply takes a workload JSON; an NKI kernel declares no parameters it "
          "could change (docs/tune.md)",
          o.workload));
    }
    if (!o.nki.kernel.empty() || !o.nki.inputs.empty() || !o.nki.grid.empty()) {
      throw InputError("--kernel, --input and --grid are for NKI kernels (a .py file)");
    }
    if (o.jobs < 1 || o.jobs > 4096) {
      throw InputError(fmt::format("-j {}: expected 1 to 4096", o.jobs));
    }
    const std::string text = read_input_file(o.workload);
    doc = workloads::parse_json(text, o.workload);
    const workloads::Workload w = workloads::parse_workload(text, o.workload);
    if (doc.is_object() && !doc.contains("name")) doc["name"] = w.name;
    arch = configured_arch(o.arch.empty() ? "trn2" : o.arch, o.sets);
    space = workload_space(doc, o.workload, arch, {});
    out = o.out.empty() ? "trnsim-explain/" + fs::path(o.workload).stem().string() : o.out;
    std::error_code ec;
    fs::remove_all(out + "/apply", ec);
    make_output_directory(out + "/apply");
  } catch (const workloads::WorkloadError& e) {
    spdlog::error("{}", e.what());
    return kBadInput;
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return kBadInput;
  } catch (const OutputError& e) {
    spdlog::error("{}", e.what());
    return kBadInput;
  }

  const std::string exe = self_executable();
  std::vector<std::string> args = {"run", o.workload};
  for (const std::string& a : common_args(o)) args.push_back(a);
  const FinalRun given = final_run(exe, args, out + "/given");
  const double given_ns = given.stats.is_object() ? total_time_ns(given.stats) : -1;
  if (given.exit_code != 0 || given_ns <= 0) {
    spdlog::error("{}: the workload as given did not run: {}", o.workload,
                  given.error.empty() ? "no total_time in its stats.json" : given.error);
    return given.exit_code == 0 || given.exit_code == 1 ? kBadInput : given.exit_code;
  }

  // Every distinct change any finding names: checked here, the valid ones run at once.
  std::map<std::string, Tried> tried;
  std::vector<std::vector<std::string>> per_finding;
  std::vector<PointRun> runs;
  std::vector<std::string> run_of;
  const std::string dir = fs::absolute(fs::path(o.workload).parent_path()).string();
  for (const Finding& f : given.findings) {
    std::vector<std::string> keys;
    for (const Change& c : changes_of(f, doc, space)) {
      const std::string key = c.text();
      keys.push_back(key);
      if (tried.count(key)) continue;
      Tried t;
      t.change = c;
      const json d = changed(doc, c);
      const Check check = check_workload(d, o.workload, arch);
      if (!check.valid) {
        t.status = "invalid";
        t.error = check.reason;
      } else {
        const std::string n = fmt::format("{}", runs.size() + 1);
        t.file = out + "/apply/" + n + ".json";
        OutputFile file(t.file);
        file.write(with_absolute_inputs(d, dir).dump(2) + "\n");
        file.commit();
        PointRun r;
        r.dir = out + "/apply/" + n;
        make_output_directory(r.dir);
        r.args = {"run", t.file};
        for (const std::string& a : common_args(o)) r.args.push_back(a);
        r.args.push_back("--out");
        r.args.push_back(r.dir);
        runs.push_back(r);
        run_of.push_back(key);
      }
      tried.emplace(key, t);
    }
    per_finding.push_back(keys);
  }
  const std::vector<ChildResult> done = run_children(exe, runs, o.jobs);
  for (size_t i = 0; i < runs.size(); ++i) {
    Tried& t = tried.at(run_of[i]);
    const json stats = read_json(runs[i].dir + "/stats.json");
    const double ns = stats.is_object() ? total_time_ns(stats) : -1;
    if (done[i].exit_code == 0 && ns > 0) {
      t.status = "ok";
      t.time_ns = ns;
    } else {
      t.status = "failed";
      t.error = done[i].error.empty() ? "no total_time in its stats.json" : done[i].error;
    }
  }

  // The findings with their changes, best first: a finding by its best measured change, the
  // ones with none after them in the diagnosis's order.
  struct Row {
    const Finding* finding;
    std::vector<const Tried*> changes;
    double best = kNever;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < given.findings.size(); ++i) {
    Row r{&given.findings[i], {}, kNever};
    for (const std::string& k : per_finding[i]) r.changes.push_back(&tried.at(k));
    std::stable_sort(r.changes.begin(), r.changes.end(),
                     [](const Tried* a, const Tried* b) { return a->time_ns < b->time_ns; });
    if (!r.changes.empty()) r.best = r.changes.front()->time_ns;
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.best < b.best; });

  const Tried* best = nullptr;
  for (const auto& [k, t] : tried) {
    if (t.status == "ok" && t.time_ns < given_ns &&
        (best == nullptr || t.time_ns < best->time_ns)) {
      best = &t;
    }
  }
  if (o.json) {
    json j;
    j["workload"] = o.workload;
    j["arch"] = o.arch.empty() ? "trn2" : o.arch;
    j["given"] = {{"time_us", given_ns / 1e3}, {"dir", given.dir}};
    json fs_ = json::array();
    for (const Row& r : rows) {
      json changes = json::array();
      for (const Tried* t : r.changes) {
        json c = {{"change", t->change.text()},
                  {"name", t->change.name},
                  {"where", t->change.option ? "option" : "params"},
                  {"value", t->change.value},
                  {"status", t->status}};
        if (t->status == "ok") {
          c["time_us"] = t->time_ns / 1e3;
          c["gain_us"] = (given_ns - t->time_ns) / 1e3;
          c["gain_percent"] = 100.0 * (given_ns - t->time_ns) / given_ns;
          c["helps"] = t->time_ns < given_ns;
          c["workload_file"] = t->file;
        } else {
          c["error"] = t->error;
        }
        changes.push_back(c);
      }
      fs_.push_back({{"cause", r.finding->cause},
                     {"cost_seconds", r.finding->cost_seconds},
                     {"evidence", r.finding->evidence},
                     {"suggestion", r.finding->suggestion},
                     {"changes", changes}});
    }
    j["findings"] = fs_;
    j["best"] = best == nullptr ? json()
                                : json{{"change", best->change.text()},
                                       {"time_us", best->time_ns / 1e3},
                                       {"workload_file", best->file}};
    std::cout << j.dump(2) << "\n";
    return kSuccess;
  }
  std::string text = fmt::format("trnsim explain --apply {}: as given {} ({}/)\n", o.workload,
                                 us_text(given_ns), given.dir);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Finding& f = *rows[i].finding;
    text += fmt::format("{}. {} (costs up to {})\n   evidence: {}\n   suggestion: {}\n", i + 1,
                        f.cause, us_text(f.cost_seconds * 1e9), f.evidence, f.suggestion);
    if (rows[i].changes.empty()) {
      text += "   measured: no declared parameter maps to this suggestion\n";
      continue;
    }
    text += "   measured, best first:\n";
    for (const Tried* t : rows[i].changes) {
      if (t->status == "ok") {
        text += fmt::format("     {:<32} {:>12}  {}  ({})\n", t->change.text(), us_text(t->time_ns),
                            gain_text(given_ns, t->time_ns), t->file);
      } else {
        text += fmt::format("     {:<32} {:>12}  {}\n", t->change.text(),
                            t->status == "invalid" ? "not run" : "failed",
                            t->status == "invalid" ? "invalid: " + t->error : t->error);
      }
    }
  }
  if (best != nullptr) {
    text += fmt::format("best measured change: {}, {} -> {} ({}); run it: trnsim {}\n",
                        best->change.text(), us_text(given_ns), us_text(best->time_ns),
                        gain_text(given_ns, best->time_ns), best->file);
    text += fmt::format("(trnsim tune {} searches every declared choice together)\n", o.workload);
  } else {
    text += "no suggested change made the run faster\n";
  }
  std::cout << text << std::flush;
  return kSuccess;
}

}  // namespace trnsim::sim
