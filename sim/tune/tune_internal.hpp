// What the parts of `trnsim tune` share: the finished search and what was run after it
// (tune.cpp), the result files and the printed report (tune_results.cpp). Internal to sim/tune.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/report/explain.hpp"
#include "sim/tune/search.hpp"
#include "sim/tune/tune.hpp"
#include "sim/tune/tune_runner.hpp"

namespace trnsim::sim::tuner {

// A finished run of the default or the winner with its outputs (stats.json, trace.json).
struct FinalRun {
  std::string dir;
  int exit_code = -1;
  std::string error;
  nlohmann::json stats;
  std::vector<Finding> findings;
  std::string check;  // "pass", "fail", "skipped", or why it was not checked
};

// A JSON file, or null when it is missing or unreadable.
nlohmann::json read_json(const std::string& path);

// Runs `trnsim ARGS --out DIR` (a fresh DIR) and reads what explain finds in its outputs.
FinalRun final_run(const std::string& exe, std::vector<std::string> args, const std::string& dir);

struct TuneRecord {
  const TuneOptions* options = nullptr;
  std::string out;
  const TuneSpace* space = nullptr;
  Roofline roofline;
  SearchSettings settings;
  SearchResult result;
  double search_seconds = 0;
  std::string model;  // the detailed fidelity's memory model: "detailed" or "flow"
  Point winner;       // the best that passed its check (or the best, when none could run)
  double winner_ns = 0;
  std::vector<std::pair<std::string, std::string>> failed_checks;  // label, what failed
  FinalRun default_run, best_run;
  std::string runnable;  // best.json
  std::string plot_note;
  double total_seconds = 0;
};

nlohmann::json results_json(const TuneRecord& t);
std::string results_csv(const TuneRecord& t);
// Writes convergence.dat and convergence.gp and runs gnuplot for convergence.svg.
std::string convergence_plot(const TuneRecord& t);
std::string report_text(const TuneRecord& t);
// An exhaustive search's table: the space (space_json) and every point with its check and its
// time on each model, so that a search can be replayed against it without simulating
// (tests/tune: the sample-efficiency test).
nlohmann::json exhaustive_json(const TuneRecord& t);

// "12.3 us", "4.56 ms".
std::string time_text(double ns);
// Runs gnuplot on `script` in `dir`; returns what to tell the user about `svg`.
std::string run_gnuplot(const std::string& dir, const std::string& script, const std::string& svg);

}  // namespace trnsim::sim::tuner
