#include "sim/tune/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "workloads/kernels/kernel.hpp"

namespace trnsim::sim::tuner {

const char* name_of(Fidelity f) {
  return f == Fidelity::cheap ? "flow" : "detailed";
}

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// With --time and no --budget: the largest space run exhaustively (the default budget, 100
// evaluations), and the random points the evolutionary search starts from.
constexpr uint64_t kUnboundedFits = 100;
constexpr uint64_t kUnboundedStart = 64;

class Search {
 public:
  Search(const TuneSpace& space, Evaluator& ev, const SearchSettings& s)
      : space_(space), ev_(ev), s_(s), rng_(s.seed * 0x9e3779b97f4a7c15ULL + 1) {}

  SearchResult run() {
    const Point def;
    const Check& d = check(def);
    if (!d.valid) {
      r_.default_valid = false;
      r_.default_error = d.reason;
      r_.stop = "the workload as given cannot be lowered";
      return std::move(r_);
    }
    default_key_ = d.key;
    const uint64_t size = space_.size();
    // With no budget (--time alone), a space "fits" when it is no larger than the default
    // budget; a larger one is searched until the time is up.
    const uint64_t fits = s_.budget == UINT64_MAX ? kUnboundedFits : s_.budget;
    r_.exhaustive = s_.exhaustive || (size != UINT64_MAX && size + 1 <= fits);
    if (r_.exhaustive) {
      // Every point is checked anyway: a space with no valid point runs nothing at all.
      bool any = false;
      for (uint64_t i = 0; i < size; ++i) any = check(point_at(space_, i)).valid || any;
      if (!any) {
        r_.stop = "every point of the space is invalid";
        return std::move(r_);
      }
    }
    run_points({def}, Fidelity::detailed);
    if (r_.exhaustive) {
      exhaustive();
    } else {
      evolve();
    }
    finish();
    return std::move(r_);
  }

 private:
  // ---- bookkeeping ----

  const Check& check(const Point& p) {
    const auto it = checked_.find(p);
    if (it != checked_.end()) return it->second;
    Check c = ev_.check(p);
    if (!p.is_default()) {
      ++r_.checked;
      if (!c.valid) {
        ++r_.invalid;
        if (r_.invalid_examples.size() < 5) {
          r_.invalid_examples.emplace_back(assignment(space_, p), c.reason);
        }
      } else if (first_of_key_.count(c.key)) {
        ++r_.duplicates;
      }
    }
    if (c.valid) first_of_key_.emplace(c.key, p);
    return checked_.emplace(p, std::move(c)).first->second;
  }

  bool has_result(const std::string& key, Fidelity f) const {
    const auto it = results_.find(key);
    return it != results_.end() && it->second.count(f);
  }

  double time_of(const std::string& key, Fidelity f) const {
    const auto it = results_.find(key);
    if (it == results_.end()) return kNever;
    const auto o = it->second.find(f);
    return o == it->second.end() || !o->second.ok ? kNever : o->second.time_ns;
  }

  double best_at(Fidelity f) const {
    double best = kNever;
    for (const auto& [key, by] : results_) {
      const auto o = by.find(f);
      if (o != by.end() && o->second.ok) best = std::min(best, o->second.time_ns);
    }
    return best;
  }

  // Runs valid points whose programs have no result at `f` yet, `batch` at a time.
  void run_points(std::vector<Point> points, Fidelity f) {
    std::vector<Point> todo;
    std::set<std::string> keys;
    for (const Point& p : points) {
      const Check& c = check(p);
      if (!c.valid || has_result(c.key, f) || !keys.insert(c.key).second) continue;
      todo.push_back(p);
    }
    for (size_t from = 0; from < todo.size(); from += s_.batch) {
      const std::vector<Point> chunk(todo.begin() + from,
                                     todo.begin() + std::min(todo.size(), from + s_.batch));
      const std::vector<Outcome> out = ev_.run(chunk, f);
      for (size_t i = 0; i < chunk.size(); ++i) {
        const Check& c = check(chunk[i]);
        Evaluation e;
        e.point = chunk[i];
        e.key = c.key;
        e.fidelity = f;
        e.outcome = i < out.size() ? out[i] : Outcome{false, 0, "no outcome", false};
        e.bound_ns = c.bound_ns;
        e.elapsed = ev_.elapsed();
        results_[c.key][f] = e.outcome;
        r_.log.push_back(std::move(e));
      }
      report(f);
    }
  }

  void report(Fidelity f) {
    const double best = best_at(f);
    std::string line = fmt::format("{} evaluations, {} invalid, {} duplicate, {} pruned",
                                   r_.log.size(), r_.invalid, r_.duplicates, r_.pruned);
    if (best < kNever) {
      std::string who = "default";
      for (const auto& [key, by] : results_) {
        const auto o = by.find(f);
        if (o != by.end() && o->second.ok && o->second.time_ns == best) {
          who = label(space_, assignment(space_, first_of_key_.at(key)));
          break;
        }
      }
      line += fmt::format("; best ({}) {:.3f} us: {}", name_of(f), best / 1e3, who);
    }
    ev_.progress(line);
  }

  uint64_t used() const { return r_.log.size(); }

  // ---- exhaustive ----

  void exhaustive() {
    const uint64_t size = space_.size();
    std::vector<Point> valid;
    for (uint64_t i = 0; i < size; ++i) {
      const Point p = point_at(space_, i);
      if (check(p).valid) valid.push_back(p);
    }
    if (s_.exhaustive && s_.two_fidelities) {
      std::vector<Point> with_default = valid;
      with_default.insert(with_default.begin(), Point{});
      run_points(with_default, Fidelity::cheap);
    }
    run_points(valid, Fidelity::detailed);
    for (uint64_t i = 0; i < size; ++i) {
      const Point p = point_at(space_, i);
      r_.points.emplace_back(p, check(p));
    }
    r_.stop = fmt::format("every valid point of the {} was run", size == 1 ? "one" : "space");
  }

  // ---- evolutionary search ----

  uint64_t random_below(uint64_t n) { return n == 0 ? 0 : rng_.next() % n; }
  double random_unit() { return rng_.uniform(); }

  Point random_point() {
    // A branch in proportion to its points, then every value uniformly: uniform over points.
    uint64_t index = random_below(space_.size());
    return point_at(space_, index);
  }

  // The index of `v` in `values`, or the closest one by number, or the default's, or 0.
  static uint32_t nearest(const TuneParam& p, const json& v) {
    const auto& vs = p.values;
    const auto it = std::find(vs.begin(), vs.end(), v);
    if (it != vs.end()) return static_cast<uint32_t>(it - vs.begin());
    if (v.is_number()) {
      uint32_t best = 0;
      double gap = kNever;
      for (uint32_t i = 0; i < vs.size(); ++i) {
        if (!vs[i].is_number()) continue;
        const double g = std::abs(vs[i].get<double>() - v.get<double>());
        if (g < gap) gap = g, best = i;
      }
      if (gap < kNever) return best;
    }
    const auto d = std::find(vs.begin(), vs.end(), p.default_value);
    return d == vs.end() ? 0 : static_cast<uint32_t>(d - vs.begin());
  }

  Point mutate(const Point& parent) {
    const Branch& b = space_.branches[parent.branch];
    // Genes: the options with a choice, then the branch's params with one.
    std::vector<int> genes;
    for (size_t i = 0; i < space_.options.size(); ++i) {
      if (space_.options[i].values.size() > 1) genes.push_back(-1 - static_cast<int>(i));
    }
    for (size_t i = 0; i < b.params.size(); ++i) {
      if (b.params[i].values.size() > 1) genes.push_back(static_cast<int>(i));
    }
    if (genes.empty()) return parent;
    const double u = random_unit();
    const size_t changes = std::min<size_t>(genes.size(), u < 0.6 ? 1 : u < 0.9 ? 2 : 3);
    Point child = parent;
    for (size_t c = 0; c < changes; ++c) {
      const int g = genes[random_below(genes.size())];
      if (g < 0) {
        child = switch_branch(child, static_cast<size_t>(-1 - g));
        continue;
      }
      const Branch& cb = space_.branches[child.branch];
      if (static_cast<size_t>(g) >= cb.params.size() || cb.params[g].name != b.params[g].name) {
        continue;  // the branch changed under this gene
      }
      const TuneParam& p = cb.params[g];
      const auto n = static_cast<int64_t>(p.values.size());
      int64_t at = child.at[g];
      if (p.ordinal) {
        const int64_t step = random_unit() < 0.75 ? 1 : 2;
        int64_t next = at + (random_unit() < 0.5 ? -step : step);
        if (next < 0 || next >= n) next = at + (next < 0 ? step : -step);
        at = std::clamp<int64_t>(next, 0, n - 1);
      } else {
        at = (at + 1 + static_cast<int64_t>(random_below(static_cast<uint64_t>(n - 1)))) % n;
      }
      child.at[g] = static_cast<uint32_t>(at);
    }
    return child;
  }

  // The same point with option `o` at another value: the params keep their values by name
  // where the new branch has them, else the nearest.
  Point switch_branch(const Point& p, size_t o) {
    const Branch& from = space_.branches[p.branch];
    std::vector<size_t> want = from.option_at;
    const size_t n = space_.options[o].values.size();
    want[o] = (want[o] + 1 + random_below(n - 1)) % n;
    for (uint32_t b = 0; b < space_.branches.size(); ++b) {
      const Branch& to = space_.branches[b];
      if (to.option_at != want) continue;
      Point q;
      q.branch = b;
      for (const TuneParam& tp : to.params) {
        json v = tp.default_value;
        for (size_t i = 0; i < from.params.size(); ++i) {
          if (from.params[i].name == tp.name) v = from.params[i].values[p.at[i]];
        }
        q.at.push_back(nearest(tp, v));
      }
      return q;
    }
    return p;  // that combination was dropped (a fix)
  }

  // Whether `p` is worth running at `f`: valid, a program not run (or chosen) yet, and a lower
  // bound under the best time so far.
  bool fresh(const Point& p, Fidelity f, std::set<std::string>& chosen) {
    if (!proposed_.insert(p).second) return false;
    const Check& c = check(p);
    if (!c.valid || has_result(c.key, f) || chosen.count(c.key)) return false;
    if (c.bound_ns > 0 && c.bound_ns >= best_at(f)) {
      ++r_.pruned;
      return false;
    }
    chosen.insert(c.key);
    return true;
  }

  // A parent: the best of three evaluated points of the space, drawn at random.
  const Point* tournament(Fidelity f) const {
    if (parents_.empty()) return nullptr;
    const Point* best = nullptr;
    double best_time = kNever;
    for (int i = 0; i < 3; ++i) {
      const Point& p = parents_[rng_.next() % parents_.size()];
      const double t = time_of(checked_.at(p).key, f);
      if (best == nullptr || t < best_time) best = &p, best_time = t;
    }
    return best;
  }

  void add_parents(size_t from, Fidelity f) {
    for (size_t i = from; i < r_.log.size(); ++i) {
      const Evaluation& e = r_.log[i];
      if (e.fidelity == f && e.outcome.ok && !e.point.is_default()) parents_.push_back(e.point);
    }
  }

  bool out_of_time(double share) const {
    return s_.time_limit > 0 && ev_.elapsed() >= share * s_.time_limit;
  }

  void evolve() {
    const Fidelity f = s_.two_fidelities ? Fidelity::cheap : Fidelity::detailed;
    if (s_.two_fidelities && used() < s_.budget) run_points({Point{}}, Fidelity::cheap);
    const uint64_t remaining = s_.budget > used() ? s_.budget - used() : 0;
    uint64_t finalists = 0;
    if (s_.two_fidelities) {
      finalists = std::min<uint64_t>(
          remaining,
          std::max<uint64_t>(2, static_cast<uint64_t>(std::llround(
                                    s_.finalist_share * static_cast<double>(s_.budget)))));
    }
    const uint64_t screen_end = used() + (remaining - finalists);
    // Tries before a search gives up on finding a fresh point: the space may be mostly invalid
    // or already run.
    const uint64_t max_tries = 200 + 50 * std::min<uint64_t>(s_.budget, 100000);
    uint64_t tries = 0;
    std::set<std::string> chosen;

    // A random start: a quarter of the screening budget.
    uint64_t start = std::max<uint64_t>(1, (screen_end - std::min(screen_end, used())) / 4);
    if (s_.budget == UINT64_MAX) start = std::min<uint64_t>(start, kUnboundedStart);
    std::vector<Point> first;
    while (first.size() < start && tries < max_tries && used() < screen_end) {
      ++tries;
      const Point p = random_point();
      if (fresh(p, f, chosen)) first.push_back(p);
    }
    size_t log_from = r_.log.size();
    run_points(first, f);
    add_parents(log_from, f);
    r_.stop = fmt::format("the budget of {} evaluations was spent", s_.budget);
    bool exhausted = false;
    while (used() < screen_end && !exhausted) {
      if (out_of_time(0.7)) {
        r_.stop = fmt::format("the time limit ({:.0f} s) was reached", s_.time_limit);
        break;
      }
      const uint64_t want = std::min<uint64_t>(s_.batch, screen_end - used());
      std::vector<Point> children;
      while (children.size() < want) {
        bool found = false;
        for (int t = 0; t < 40 && !found && tries < max_tries; ++t, ++tries) {
          const Point* parent = tournament(f);
          const Point child = parent != nullptr ? mutate(*parent) : random_point();
          if (fresh(child, f, chosen)) {
            children.push_back(child);
            found = true;
          }
        }
        for (int t = 0; t < 200 && !found && tries < max_tries; ++t, ++tries) {
          const Point p = random_point();
          if (fresh(p, f, chosen)) {
            children.push_back(p);
            found = true;
          }
        }
        if (!found) {
          exhausted = true;
          break;
        }
      }
      if (children.empty()) break;
      log_from = r_.log.size();
      run_points(children, f);
      add_parents(log_from, f);
    }
    if (exhausted) r_.stop = "no fresh valid point was left to try";
    if (!s_.two_fidelities) return;
    // The finalists: the best programs of the screening, on the detailed model.
    std::vector<std::pair<double, std::string>> order;
    for (const auto& [key, by] : results_) {
      const double t = time_of(key, Fidelity::cheap);
      if (t < kNever && !has_result(key, Fidelity::detailed)) order.emplace_back(t, key);
    }
    std::sort(order.begin(), order.end());
    const size_t n = std::min<size_t>(order.size(), finalists);
    for (size_t from = 0; from < n; from += s_.batch) {
      if (from > 0 && out_of_time(1.0)) {
        r_.stop += fmt::format("; the time limit ({:.0f} s) cut the finalists", s_.time_limit);
        break;
      }
      std::vector<Point> batch;
      for (size_t i = from; i < std::min(n, from + s_.batch); ++i) {
        batch.push_back(first_of_key_.at(order[i].second));
      }
      run_points(batch, Fidelity::detailed);
    }
  }

  void finish() {
    r_.default_ns = time_of(default_key_, Fidelity::detailed);
    double best = kNever;
    std::string best_key;
    for (const auto& [key, by] : results_) {
      const double t = time_of(key, Fidelity::detailed);
      if (t < best || (t == best && key == default_key_)) best = t, best_key = key;
    }
    r_.best_ns = best;
    r_.best = best_key.empty() ? Point{} : first_of_key_.at(best_key);
  }

  const TuneSpace& space_;
  Evaluator& ev_;
  const SearchSettings& s_;
  mutable workloads::SeededRandom rng_;
  SearchResult r_;
  std::map<Point, Check> checked_;
  std::map<std::string, std::map<Fidelity, Outcome>> results_;
  std::map<std::string, Point> first_of_key_;
  std::set<Point> proposed_;
  std::vector<Point> parents_;
  std::string default_key_;
};

}  // namespace

SearchResult run_search(const TuneSpace& space, Evaluator& ev, const SearchSettings& s) {
  SearchSettings settings = s;
  settings.batch = std::max<size_t>(1, settings.batch);
  return Search(space, ev, settings).run();
}

std::vector<const Evaluation*> ranked(const SearchResult& r, Fidelity f) {
  std::vector<const Evaluation*> out;
  std::set<std::string> keys;
  for (const Evaluation& e : r.log) {
    if (e.fidelity == f && e.outcome.ok && keys.insert(e.key).second) out.push_back(&e);
  }
  std::stable_sort(out.begin(), out.end(), [](const Evaluation* a, const Evaluation* b) {
    return a->outcome.time_ns < b->outcome.time_ns;
  });
  return out;
}

}  // namespace trnsim::sim::tuner
