// The search of `trnsim tune`, apart from how points are run: exhaustive for a space that fits
// the budget, else an evolutionary search on the cheap fidelity (timing only with the flow
// memory model) whose best points, the finalists, are run on the detailed model. Every point is
// checked in process first (Evaluator::check: lowered, validated), so that an invalid one (SBUF
// or PSUM overflow, a broken rule) is counted and never simulated; points that lower to the
// same program are one evaluation. Deterministic for a seed and a batch size, so that a replay
// against a table of results (the sample-efficiency test) gives the same search, and so does
// a resumed one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/tune/tune_space.hpp"

namespace trnsim::sim::tuner {

enum class Fidelity { cheap, detailed };
const char* name_of(Fidelity f);

struct Check {
  bool valid = false;
  std::string reason;   // why not
  std::string key;      // names its program: points with the same key are one evaluation
  double bound_ns = 0;  // a lower bound of its time (0: unknown)
};

struct Outcome {
  bool ok = false;
  double time_ns = 0;
  std::string error;
  bool reused = false;  // a result of an earlier, interrupted tune (--resume)
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Check check(const Point& p) = 0;
  // Runs the points at the fidelity (in parallel) and returns their outcomes, in order.
  virtual std::vector<Outcome> run(const std::vector<Point>& points, Fidelity f) = 0;
  // Seconds since the search started (for --time).
  virtual double elapsed() const { return 0; }
  // Told after every batch (progress on stderr).
  virtual void progress(const std::string& /*line*/) {}
};

struct SearchSettings {
  uint64_t budget = 100;       // evaluations (simulations of either fidelity) at most
  double time_limit = 0;       // seconds; 0: none
  bool two_fidelities = true;  // false: the detailed model only (the arch already uses flow)
  bool exhaustive = false;     // every valid point on every fidelity, whatever the budget
  uint64_t seed = 1;
  size_t batch = 8;             // points run at once; the search is deterministic for a batch size
  double finalist_share = 0.2;  // of the budget, for the detailed model's finalists
};

struct Evaluation {
  Point point;
  std::string key;
  Fidelity fidelity = Fidelity::detailed;
  Outcome outcome;
  double bound_ns = 0;
  double elapsed = 0;  // seconds since the start when it finished
};

struct SearchResult {
  std::vector<Evaluation> log;  // every simulation, in the order run
  uint64_t checked = 0;         // distinct points checked
  uint64_t invalid = 0;         // of those, rejected before simulating
  std::vector<std::pair<json, std::string>> invalid_examples;  // assignment, reason (a few)
  uint64_t duplicates = 0;  // valid points whose program another point already had
  uint64_t pruned = 0;      // valid points not run: their lower bound exceeds the best
  bool exhaustive = false;
  bool default_valid = true;
  std::string default_error;
  Point best;             // kDefault when nothing beat the default
  double best_ns = 0;     // detailed
  double default_ns = 0;  // detailed
  std::string stop;       // why the search stopped
  // Every point checked, with what the check found (exhaustive searches only: a reference
  // table lists the invalid and duplicate points too).
  std::vector<std::pair<Point, Check>> points;
  uint64_t evaluations() const { return log.size(); }
};

SearchResult run_search(const TuneSpace& space, Evaluator& ev, const SearchSettings& s);

// The detailed outcomes of the log by key, best first (the table of the top alternatives).
std::vector<const Evaluation*> ranked(const SearchResult& r, Fidelity f);

}  // namespace trnsim::sim::tuner
