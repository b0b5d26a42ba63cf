// --trace-filter: which lanes and which time window trace.json keeps. Everything else of the
// run (stats.json, the summary) is unchanged: the filter only makes the trace smaller.
//
//   --trace-filter 'lanes=TensorE,DMA*'        lanes (and counters) whose name matches a pattern
//   --trace-filter 'window=100us:250us'        slices overlapping the window, samples within it
//   --trace-filter 'lanes=VectorE;window=:1ms' both (terms separated by ';'; the option repeats)
//
// Patterns are case-insensitive with `*` and `?`, matched against the names trace.json gives
// its lanes (framework, runtime, Kernels, TensorE, VectorE, ScalarE, GpSimdE, SyncE,
// "DMA <queue>") and counters ("pending DMAs", "DMA throughput", "HBM read bandwidth",
// "HBM write bandwidth", "TensorE utilization", "SBUF in use").
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::sim {

struct TraceFilter {
  std::vector<std::string> lane_patterns;  // empty: every lane
  int64_t from_ps = std::numeric_limits<int64_t>::min();
  int64_t to_ps = std::numeric_limits<int64_t>::max();
  std::string text;  // the terms as given, recorded in trace.json's otherData

  bool keeps_everything() const { return text.empty(); }
  bool keeps_lane(std::string_view name) const;
  // A slice [start, end] is kept when it overlaps the window; an instant when it is inside.
  bool keeps_span(int64_t start_ps, int64_t end_ps) const {
    return end_ps >= from_ps && start_ps <= to_ps;
  }
};

// Parses the --trace-filter terms; throws InputError naming the term and what was expected.
TraceFilter parse_trace_filter(const std::vector<std::string>& specs);

// Throws InputError when a lane pattern matches none of `lanes` (the names the trace will
// have), listing them.
void check_trace_filter(const TraceFilter& filter, const std::vector<std::string>& lanes);

// Case-insensitive glob match with `*` (any run) and `?` (one character).
bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace trnsim::sim
