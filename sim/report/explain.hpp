// The automatic diagnosis (`trnsim explain`, and the summary's "diagnosis" lines): from a run's
// stats.json and trace.json, the critical path across engines, DMA queues and the host, what
// bounds the run, how much time each cause costs, and the change most likely to help, each with
// the numbers behind it. See docs/metrics.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trnsim::sim {

struct Finding {
  std::string cause;        // "host launch overhead", "DMA fixed costs", "ScalarE", ...
  double cost_seconds = 0;  // time this cause costs (an upper bound of what fixing it saves)
  std::string evidence;     // the numbers behind it
  std::string suggestion;   // the concrete change most likely to help
};

// Time on the critical path per lane ("ScalarE", "DMA qLoad", "latency or idle"), in seconds,
// walking back from the last device event through each event's latest-finishing
// predecessor: the previous event of its lane, or the event on any lane that ended last
// before it started (what released its semaphore wait or triggered its transfer).
std::vector<std::pair<std::string, double>> critical_path(const nlohmann::json& trace);

// The same walk with the time grouped by the kernel's source line ("kernel.py:12", the trace
// slices' "source"; slices without one count for their lane): empty when no slice has a source
// (programs not traced from Python).
std::vector<std::pair<std::string, double>> critical_path_lines(const nlohmann::json& trace);

// Findings from stats.json (and the critical path, when given), largest cost first.
std::vector<Finding> diagnose(const nlohmann::json& stats,
                              const std::vector<std::pair<std::string, double>>& path = {});

std::string findings_text(const std::vector<Finding>& findings, size_t max_findings);

// DIR/stats.json of a finished run, checked to be one (an object with /summary/total_time);
// throws InputError saying what is wrong: no stats.json in DIR, malformed JSON (line, column),
// or another document. explain and compare read runs through it.
nlohmann::json read_run_stats(const std::string& dir);

struct ExplainOptions {
  std::string dir;  // a run's output directory (stats.json, trace.json)
  bool json = false;
};
// Prints the diagnosis of a finished run; exit code 2 when the directory holds no run.
int explain(const ExplainOptions& o);

}  // namespace trnsim::sim
