// `trnsim tune`'s outputs: results.json and results.csv (every evaluation), the convergence plot
// (gnuplot), and the printed report: the winner against the default and the roofline, the top
// alternatives, what the search did, and why the winner wins (the diagnosis of both).
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "sim/io/output_file.hpp"
#include "sim/tune/tune_internal.hpp"

namespace trnsim::sim::tuner {

using nlohmann::json;

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string value_text(const json& v) {
  if (v.is_null()) return "";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

json finding_json(const Finding& f) {
  return {{"cause", f.cause},
          {"cost_seconds", f.cost_seconds},
          {"evidence", f.evidence},
          {"suggestion", f.suggestion}};
}

std::string gnuplot_path() {
  const char* path = std::getenv("PATH");
  const std::string p = path ? path : "";
  size_t from = 0;
  while (from <= p.size()) {
    size_t colon = p.find(':', from);
    if (colon == std::string::npos) colon = p.size();
    const std::string dir = p.substr(from, colon - from);
    from = colon + 1;
    if (dir.empty()) continue;
    const std::string candidate = dir + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

double percent_faster(double from, double to) {
  return from > 0 ? 100.0 * (from - to) / from : 0.0;
}

}  // namespace

std::string time_text(double ns) {
  if (!(ns < kNever)) return "-";
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.2f} us", ns / 1e3);
}

json results_json(const TuneRecord& t) {
  const SearchResult& r = t.result;
  const TuneSpace& s = *t.space;
  json out;
  out["workload"] = t.options->workload;
  out["arch"] = t.options->arch.empty() ? "trn2" : t.options->arch;
  out["sets"] = t.options->sets;
  out["fixes"] = t.options->fixes;
  out["space"] = {{"title", s.title},
                  {"points", s.size()},
                  {"branches", s.branches.size()},
                  {"parameters", parameter_names(s)}};
  out["settings"] = {{"budget", t.settings.budget == UINT64_MAX ? json() : json(t.settings.budget)},
                     {"time_limit_seconds", t.settings.time_limit},
                     {"seed", t.settings.seed},
                     {"batch", t.settings.batch},
                     {"jobs", t.options->jobs},
                     {"two_fidelities", t.settings.two_fidelities},
                     {"model", t.model}};
  uint64_t cheap = 0, detailed = 0, reused = 0;
  for (const Evaluation& e : r.log) {
    (e.fidelity == Fidelity::cheap ? cheap : detailed)++;
    reused += e.outcome.reused;
  }
  json invalid = json::array();
  for (const auto& [a, why] : r.invalid_examples)
    invalid.push_back({{"params", a}, {"reason", why}});
  out["search"] = {{"mode", r.exhaustive ? "exhaustive" : "evolutionary"},
                   {"evaluations", r.evaluations()},
                   {"flow_evaluations", cheap},
                   {"detailed_evaluations", detailed},
                   {"reused_evaluations", reused},
                   {"checked", r.checked},
                   {"invalid", r.invalid},
                   {"invalid_examples", invalid},
                   {"duplicates", r.duplicates},
                   {"pruned", r.pruned},
                   {"stop", r.stop},
                   {"seconds", t.search_seconds}};
  const double best = t.winner_ns > 0 ? t.winner_ns : r.best_ns;
  out["default"] = {{"time_us", r.default_ns / 1e3}};
  out["best"] = {{"params", assignment(s, t.winner)},
                 {"label", label(s, assignment(s, t.winner))},
                 {"time_us", best / 1e3},
                 {"speedup", best > 0 ? r.default_ns / best : 0.0},
                 {"runnable", t.runnable},
                 {"check", t.best_run.check}};
  json failed = json::array();
  for (const auto& [l, why] : t.failed_checks) failed.push_back({{"label", l}, {"error", why}});
  out["best"]["failed_checks"] = failed;
  const Roofline& rl = t.roofline;
  out["roofline"] = {{"compute_us", rl.compute_ns / 1e3},
                     {"compute", rl.compute_what},
                     {"memory_us", rl.memory_ns / 1e3},
                     {"memory", rl.memory_what},
                     {"binds", rl.binds()},
                     {"bound_us", rl.bound_ns() / 1e3},
                     {"best_percent_of_roofline", best > 0 ? 100.0 * rl.bound_ns() / best : 0.0},
                     {"default_percent_of_roofline",
                      r.default_ns > 0 ? 100.0 * rl.bound_ns() / r.default_ns : 0.0}};
  json top = json::array();
  for (const Evaluation* e : ranked(r, Fidelity::detailed)) {
    if (top.size() >= t.options->top) break;
    top.push_back({{"params", assignment(s, e->point)},
                   {"label", label(s, assignment(s, e->point))},
                   {"time_us", e->outcome.time_ns / 1e3},
                   {"speedup", r.default_ns / e->outcome.time_ns}});
  }
  out["top"] = top;
  json evals = json::array();
  size_t n = 0;
  for (const Evaluation& e : r.log) {
    evals.push_back({{"n", ++n},
                     {"params", assignment(s, e.point)},
                     {"label", label(s, assignment(s, e.point))},
                     {"fidelity", name_of(e.fidelity)},
                     {"status", e.outcome.ok ? "ok" : "failed"},
                     {"time_us", e.outcome.ok ? json(e.outcome.time_ns / 1e3) : json()},
                     {"bound_us", e.bound_ns / 1e3},
                     {"elapsed_seconds", e.elapsed},
                     {"reused", e.outcome.reused},
                     {"key", e.key},
                     {"error", e.outcome.error}});
  }
  out["evaluations"] = evals;
  json why = {{"default", json::array()}, {"best", json::array()}};
  for (const Finding& f : t.default_run.findings) why["default"].push_back(finding_json(f));
  for (const Finding& f : t.best_run.findings) why["best"].push_back(finding_json(f));
  out["why"] = why;
  out["wall_seconds"] = t.total_seconds;
  return out;
}

std::string results_csv(const TuneRecord& t) {
  const std::vector<std::string> names = parameter_names(*t.space);
  std::string out = "n,fidelity,status,time_us,bound_us,elapsed_s,reused";
  for (const std::string& n : names) out += "," + csv_cell(n);
  out += ",label,key,error\n";
  size_t n = 0;
  for (const Evaluation& e : t.result.log) {
    const json a = assignment(*t.space, e.point);
    out += fmt::format("{},{},{},{},{:.6f},{:.3f},{}", ++n, name_of(e.fidelity),
                       e.outcome.ok ? "ok" : "failed",
                       e.outcome.ok ? fmt::format("{:.6f}", e.outcome.time_ns / 1e3) : "",
                       e.bound_ns / 1e3, e.elapsed, e.outcome.reused ? "yes" : "no");
    for (const std::string& name : names) {
      out += "," + (a.is_object() && a.contains(name) ? csv_cell(value_text(a[name])) : "");
    }
    out +=
        fmt::format(",{},{},{}\n", csv_cell(label(*t.space, a)), e.key, csv_cell(e.outcome.error));
  }
  return out;
}

std::string run_gnuplot(const std::string& dir, const std::string& script, const std::string& svg) {
  const std::string gnuplot = gnuplot_path();
  if (gnuplot.empty()) {
    return fmt::format(
        "plot: gnuplot is not installed, so no {0} (apt-get install gnuplot-nox; then gnuplot "
        "{1} in {2})",
        svg, script, dir);
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    const int null = ::open("/dev/null", O_RDWR);
    const int log = ::open("plot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
    }
    if (log >= 0) ::dup2(log, 2);
    ::execl(gnuplot.c_str(), "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fmt::format("plot: gnuplot failed on {0}/{1} (see {0}/plot.log); no {2}", dir, script,
                       svg);
  }
  return fmt::format("{}/{}", dir, svg);
}

std::string convergence_plot(const TuneRecord& t) {
  // Per evaluation: its time on its fidelity, and the best so far on each.
  std::string dat = "# n fidelity(0 flow, 1 detailed) time_us best_flow_us best_detailed_us\n";
  double best[2] = {kNever, kNever};
  size_t n = 0;
  for (const Evaluation& e : t.result.log) {
    const int f = e.fidelity == Fidelity::cheap ? 0 : 1;
    ++n;
    if (!e.outcome.ok) continue;
    best[f] = std::min(best[f], e.outcome.time_ns / 1e3);
    auto cell = [](double v) { return v < kNever ? fmt::format("{:.6f}", v) : std::string("NaN"); };
    dat += fmt::format("{} {} {:.6f} {} {}\n", n, f, e.outcome.time_ns / 1e3, cell(best[0]),
                       cell(best[1]));
  }
  std::string gp;
  gp += "# Generated by trnsim tune: gnuplot convergence.gp (in this directory) redraws it.\n";
  gp += "set terminal svg size 800,500 dynamic font 'Helvetica,13' background rgb 'white'\n";
  gp += "set output 'convergence.svg'\nset termoption noenhanced\n";
  gp += fmt::format("set title \"trnsim tune {}: best time found against evaluations\"\n",
                    t.space->title);
  gp += "set xlabel \"evaluations (simulations)\"\nset ylabel \"total time (us)\"\n";
  gp += "set grid\nset key outside bottom center horizontal\nset yrange [0:*]\n";
  if (t.roofline.bound_ns() > 0) {
    gp += fmt::format("roofline = {:.6f}\n", t.roofline.bound_ns() / 1e3);
  }
  gp +=
      "plot 'convergence.dat' using 1:($2 == 0 ? $3 : NaN) with points pt 7 ps 0.5 lc rgb "
      "'#9ecae1' title 'a point, flow model', \\\n"
      "     'convergence.dat' using 1:($2 == 1 ? $3 : NaN) with points pt 7 ps 0.7 lc rgb "
      "'#fdae6b' title 'a point, detailed model', \\\n"
      "     'convergence.dat' using 1:4 with steps lw 2 lc rgb '#3182bd' title 'best so far, "
      "flow', \\\n"
      "     'convergence.dat' using 1:5 with steps lw 2 lc rgb '#e6550d' title 'best so far, "
      "detailed'";
  if (t.roofline.bound_ns() > 0)
    gp += ", \\\n     roofline with lines dt 2 lc rgb '#636363' title 'roofline'";
  gp += "\n";
  OutputFile d(t.out + "/convergence.dat");
  d.write(dat);
  d.commit();
  OutputFile g(t.out + "/convergence.gp");
  g.write(gp);
  g.commit();
  return run_gnuplot(t.out, "convergence.gp", "convergence.svg");
}

json exhaustive_json(const TuneRecord& t) {
  const TuneSpace& s = *t.space;
  std::map<std::string, std::map<Fidelity, double>> times;
  for (const Evaluation& e : t.result.log) {
    if (e.outcome.ok) times[e.key][e.fidelity] = e.outcome.time_ns;
  }
  auto time_at = [&](const std::string& key, Fidelity f) {
    const auto it = times.find(key);
    if (it == times.end() || !it->second.count(f)) return json();
    return json(it->second.at(f));
  };
  const std::vector<std::string> names = parameter_names(s);
  json columns = names;
  for (const char* c : {"valid", "key", "bound_ns", "flow_ns", "detailed_ns", "reason"}) {
    columns.push_back(c);
  }
  json rows = json::array();
  std::string default_key;
  for (const Evaluation& e : t.result.log) {
    if (e.point.is_default()) default_key = e.key;
  }
  for (const auto& [p, c] : t.result.points) {
    const json a = assignment(s, p);
    json row = json::array();
    for (const std::string& n : names) row.push_back(a.contains(n) ? a[n] : json());
    row.push_back(c.valid);
    row.push_back(c.key);
    row.push_back(c.valid ? json(c.bound_ns) : json());
    row.push_back(c.valid ? time_at(c.key, Fidelity::cheap) : json());
    row.push_back(c.valid ? time_at(c.key, Fidelity::detailed) : json());
    row.push_back(c.reason);
    rows.push_back(row);
  }
  return {{"workload", t.options->workload},
          {"arch", t.options->arch.empty() ? "trn2" : t.options->arch},
          {"space", space_json(s)},
          {"default",
           {{"key", default_key},
            {"flow_ns", time_at(default_key, Fidelity::cheap)},
            {"detailed_ns", time_at(default_key, Fidelity::detailed)}}},
          {"columns", columns},
          {"rows", rows}};
}

std::string report_text(const TuneRecord& t) {
  const SearchResult& r = t.result;
  const TuneSpace& s = *t.space;
  const double best = t.winner_ns > 0 ? t.winner_ns : r.best_ns;
  std::string out;
  const std::string winner = label(s, assignment(s, t.winner));
  out += fmt::format("tune {}: {}\n", s.title,
                     t.winner.is_default() ? "the default is the best found" : "best " + winner);
  out += fmt::format("  best       {:>12}  ({} model)\n", time_text(best), t.model);
  out += fmt::format("  default    {:>12}  the best is {:.3f}x faster ({:.1f}% less time)\n",
                     time_text(r.default_ns), best > 0 ? r.default_ns / best : 0.0,
                     percent_faster(r.default_ns, best));
  const Roofline& rl = t.roofline;
  if (rl.bound_ns() > 0) {
    out += fmt::format(
        "  roofline   {:>12}  {} binds; the best reaches {:.1f}% of it (the default {:.1f}%)\n",
        time_text(rl.bound_ns()), rl.binds(), 100.0 * rl.bound_ns() / best,
        100.0 * rl.bound_ns() / r.default_ns);
    out += fmt::format("    compute  {:>12}  {}\n", time_text(rl.compute_ns), rl.compute_what);
    out += fmt::format("    memory   {:>12}  {}\n", time_text(rl.memory_ns), rl.memory_what);
  }
  const std::vector<const Evaluation*> top = ranked(r, Fidelity::detailed);
  out += fmt::format("top {} ({} model):\n", std::min(top.size(), t.options->top), t.model);
  out += fmt::format("  {:>3}  {:>12}  {:>10}  {}\n", "#", "time", "vs default", "params");
  for (size_t i = 0; i < top.size() && i < t.options->top; ++i) {
    const Evaluation& e = *top[i];
    out += fmt::format("  {:>3}  {:>12}  {:>9.3f}x  {}\n", i + 1, time_text(e.outcome.time_ns),
                       r.default_ns / e.outcome.time_ns, label(s, assignment(s, e.point)));
  }
  uint64_t cheap = 0, detailed = 0, reused = 0;
  for (const Evaluation& e : r.log) {
    (e.fidelity == Fidelity::cheap ? cheap : detailed)++;
    reused += e.outcome.reused;
  }
  out += fmt::format(
      "search: {} of {} points, {} evaluations ({} on the flow model, {} on the {} model{}); {} "
      "invalid points rejected before simulating, {} duplicate programs, {} pruned by their "
      "lower bound; {}; {:.1f} s\n",
      r.exhaustive ? "exhaustive" : "evolutionary", s.size(), r.evaluations(), cheap, detailed,
      t.model, reused ? fmt::format(", {} reused from an earlier run", reused) : "", r.invalid,
      r.duplicates, r.pruned, r.stop, t.search_seconds);
  for (const auto& [a, why] : r.invalid_examples) {
    out += fmt::format("  invalid, e.g. {}: {}\n", label(*t.space, a), why);
    break;
  }
  // Why the winner wins: the diagnosis of both runs, finding by finding.
  const auto& dfs = t.default_run.findings;
  const auto& bfs = t.best_run.findings;
  if (!dfs.empty() || !bfs.empty()) {
    out += "why (trnsim explain of each, the default | the best):\n";
    for (size_t i = 0; i < std::max(dfs.size(), bfs.size()) && i < 3; ++i) {
      auto line = [](const std::vector<Finding>& f, size_t i) {
        if (i >= f.size()) return std::string("-");
        const Finding& x = f[i];
        return x.cost_seconds > 0
                   ? fmt::format("{} (up to {})", x.cause, time_text(x.cost_seconds * 1e9))
                   : x.cause;
      };
      out += fmt::format("  {}. {:<44} | {}\n", i + 1, line(dfs, i), line(bfs, i));
    }
    if (!dfs.empty()) out += fmt::format("  default: {}\n", dfs.front().evidence);
    if (!bfs.empty()) out += fmt::format("  best:    {}\n", bfs.front().evidence);
  }
  for (const auto& [l, why] : t.failed_checks) {
    out += fmt::format("functional check FAILED for {}: {}\n", l, why);
  }
  out += fmt::format("functional check of the best: {}\n",
                     t.best_run.check.empty() ? "not run" : t.best_run.check);
  out += fmt::format(
      "best: {} (run it: trnsim {}; keep it as a golden: trnsim check {} --golden "
      "GOLDEN.json --update)\n",
      t.runnable, t.runnable, t.runnable);
  out += fmt::format("results: {0}/results.csv, {0}/results.json; {1}\n", t.out, t.plot_note);
  return out;
}

}  // namespace trnsim::sim::tuner
