// trace.json's flow arrows, counters and --trace-filter, checked against stats.json and the
// trace's own slices.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "cli_support.hpp"

using Catch::Matchers::Contains;
using trnsim_test::example;
using trnsim_test::fresh_dir;
using trnsim_test::Invocation;
using trnsim_test::slurp;

namespace {

using trnsim_test::Run;

Run run(const std::string& workload, const std::string& extra, const std::string& tag) {
  return trnsim_test::run_ok(example(workload), "--timing-only " + extra, "trace_" + tag);
}

// Microsecond timestamps (six decimals) as picoseconds.
int64_t ps(const nlohmann::json& us) {
  return static_cast<int64_t>(std::llround(us.get<double>() * 1e6));
}

struct Slice {
  int64_t start, end;
  std::string cat;
};
using Lane = std::pair<int, int>;  // pid, tid

std::map<Lane, std::vector<Slice>> slices(const nlohmann::json& trace) {
  std::map<Lane, std::vector<Slice>> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    out[{e["pid"], e["tid"]}].push_back(
        {ps(e["ts"]), ps(e["ts"]) + ps(e["dur"]), e["cat"].get<std::string>()});
  }
  return out;
}

const Slice* slice_at(const std::map<Lane, std::vector<Slice>>& all, const Lane& lane, int64_t t,
                      const std::string& cat) {
  const auto it = all.find(lane);
  if (it == all.end()) return nullptr;
  for (const Slice& s : it->second) {
    if (s.cat == cat && s.start <= t && t <= s.end) return &s;
  }
  return nullptr;
}

// The integral over time of a counter (a step function of its samples), in value x seconds.
double integral(const nlohmann::json& trace, const std::string& name, const std::string& arg) {
  std::vector<std::pair<int64_t, double>> samples;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == name) samples.push_back({ps(e["ts"]), e["args"][arg]});
  }
  double sum = 0;
  for (size_t i = 0; i + 1 < samples.size(); ++i) {
    sum += samples[i].second * static_cast<double>(samples[i + 1].first - samples[i].first) * 1e-12;
  }
  return sum;
}

}  // namespace

TEST_CASE("every semaphore wait has a flow arrow from the update that released it") {
  const Run r = run("rmsnorm.json", "", "flows");
  const auto all = slices(r.trace);
  size_t waits = 0;
  for (const auto& [lane, list] : all) {
    for (const Slice& s : list) waits += s.cat == "semaphore";
  }
  std::map<uint64_t, nlohmann::json> starts, ends;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] == "s" && e["cat"] == "semaphore") starts[e["id"]] = e;
    if (e["ph"] == "f" && e["cat"] == "semaphore") ends[e["id"]] = e;
  }
  REQUIRE(waits > 0);
  CHECK(starts.size() == waits);
  REQUIRE(ends.size() == starts.size());
  for (const auto& [id, s] : starts) {
    const nlohmann::json& f = ends.at(id);
    INFO("flow " << id);
    // The arrow starts inside the updater's slice (an instruction or a DMA transfer) and ends
    // inside the waiter's instruction, which starts no earlier than the updater ended. One of
    // the waiter lane's semaphore waits ends at the update: a DMA's end, or an instruction's
    // results (its end plus the engine's pipeline latency), before the waiter starts.
    const Slice* from = slice_at(all, {s["pid"], s["tid"]}, ps(s["ts"]), "instruction");
    if (from == nullptr) from = slice_at(all, {s["pid"], s["tid"]}, ps(s["ts"]), "dma");
    const Slice* to = slice_at(all, {f["pid"], f["tid"]}, ps(f["ts"]), "instruction");
    REQUIRE(from != nullptr);
    REQUIRE(to != nullptr);
    CHECK(from->end <= to->start);
    bool wait_ends_at_update = false;
    for (const Slice& w : all.at({f["pid"], f["tid"]})) {
      wait_ends_at_update = wait_ends_at_update ||
                            (w.cat == "semaphore" && w.end >= from->end && w.end <= to->start &&
                             (from->cat == "instruction" || w.end == from->end));
    }
    CHECK(wait_ends_at_update);
  }
}

TEST_CASE("the TensorE utilization counter integrates to the run's HFU") {
  const Run r = run("matmul_s4.json", "", "tensor_util");
  const double total = r.stats["summary"]["total_time"];
  const double hfu = r.stats["summary"]["hfu_estimated_percent"];
  REQUIRE(hfu > 0);
  // percent x seconds / T = the time-weighted mean utilization.
  CHECK(integral(r.trace, "TensorE utilization", "percent") / total == Approx(hfu).epsilon(0.01));
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "TensorE utilization") {
      CHECK(e["args"]["percent"].get<double>() >= 0);
      CHECK(e["args"]["percent"].get<double>() <= 100);
    }
  }
}

TEST_CASE("the HBM bandwidth counters integrate to the HBM bytes read and written") {
  const Run r = run("rmsnorm.json", "", "hbm_bw");
  // GB/s x seconds = GB.
  CHECK(integral(r.trace, "HBM read bandwidth", "GB/s") * 1e9 ==
        Approx(r.stats["summary"]["hbm_read_bytes"].get<double>()).epsilon(0.001));
  CHECK(integral(r.trace, "HBM write bandwidth", "GB/s") * 1e9 ==
        Approx(r.stats["summary"]["hbm_write_bytes"].get<double>()).epsilon(0.001));
}

TEST_CASE("the SBUF in use counter holds each kernel's buffers while it runs, within SBUF") {
  const Run r = run("rmsnorm_eager.json", "", "sbuf");
  std::vector<double> kib;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "SBUF in use") kib.push_back(e["args"]["KiB per partition"]);
  }
  REQUIRE(kib.size() >= 2);
  const double partition_kib =
      r.stats["arch"]["parameters"]["sbuf_partition_bytes"].get<double>() / 1024.0;
  for (double v : kib) {
    CHECK(v >= 0);
    CHECK(v <= partition_kib);
  }
  CHECK(*std::max_element(kib.begin(), kib.end()) > 0);
  CHECK(kib.back() == 0);  // released when the last kernel ends
}

TEST_CASE("a trace filter on lanes keeps only the lanes named, and stats.json does not change") {
  const Run all = run("rmsnorm.json", "", "filter_all");
  const Run some = run("rmsnorm.json", "--trace-filter 'lanes=VectorE,DMA q*'", "filter_lanes");
  std::set<std::string> lanes, counters;
  for (const auto& e : some.trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") lanes.insert(e["args"]["name"]);
    if (e["ph"] == "C") counters.insert(e["name"]);
  }
  CHECK(lanes == std::set<std::string>{"VectorE", "DMA qSyncIn", "DMA qSyncIn #2", "DMA qSyncOut"});
  CHECK(counters.empty());
  CHECK(some.trace["otherData"]["trace_filter"] == "lanes=VectorE,DMA q*");
  CHECK(some.stats["summary"] == all.stats["summary"]);
  size_t vector_all = 0, vector_some = 0;
  for (const auto& e : all.trace["traceEvents"]) vector_all += e["ph"] == "X" && e["tid"] == 1;
  for (const auto& e : some.trace["traceEvents"]) vector_some += e["ph"] == "X" && e["tid"] == 1;
  CHECK(vector_some == vector_all);
}

TEST_CASE(
    "a trace filter on a time window keeps the slices that overlap it and the counters within it") {
  const Run all = run("rmsnorm.json", "", "window_all");
  const double end_us = all.stats["summary"]["total_time"].get<double>() * 1e6;
  const int64_t from = static_cast<int64_t>(end_us * 0.25 * 1e6);
  const int64_t to = static_cast<int64_t>(end_us * 0.5 * 1e6);
  const Run some =
      run("rmsnorm.json", fmt::format("--trace-filter 'window={}ns:{}ns'", from / 1000, to / 1000),
          "window_some");
  size_t kept = 0, overlapping = 0;
  for (const auto& e : all.trace["traceEvents"]) {
    if (e["ph"] == "X" && ps(e["ts"]) + ps(e["dur"]) >= from / 1000 * 1000 &&
        ps(e["ts"]) <= to / 1000 * 1000) {
      ++overlapping;
    }
  }
  for (const auto& e : some.trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++kept;
      CHECK(ps(e["ts"]) + ps(e["dur"]) >= from / 1000 * 1000);
      CHECK(ps(e["ts"]) <= to / 1000 * 1000);
    }
    if (e["ph"] == "C") {
      CHECK(ps(e["ts"]) >= from / 1000 * 1000);
      CHECK(ps(e["ts"]) <= to / 1000 * 1000);
    }
  }
  CHECK(kept == overlapping);
  CHECK(kept > 0);
  CHECK(kept < all.trace["traceEvents"].size() / 2);
}

TEST_CASE("a bad --trace-filter fails before the run with the term and what was expected") {
  const std::string dir = fresh_dir("trace_filter_bad");
  struct Case {
    std::string filter, says;
  };
  for (const Case& c : {Case{"lanes=TensorX", "matches no lane of this run; its lanes are"},
                        Case{"window=10:20us", "'10' is not a time"},
                        Case{"window=20us:10us", "ends before it starts"},
                        Case{"engines=TensorE", "expected lanes=PATTERN"},
                        Case{"lanes=,", "an empty lane pattern"}}) {
    INFO(c.filter);
    const Invocation r = trnsim_test::trnsim(example("rmsnorm.json") + " --timing-only --out " +
                                                 dir + "/out --trace-filter '" + c.filter + "'",
                                             dir);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(c.says) && Contains("--trace-filter"));
    CHECK(slurp(dir + "/out/trace.json").empty());
  }
}

namespace {

// Slices on one lane (pid, tid) that partially overlap: one starts inside another and ends
// after it. The trace format requires the slices of a thread to nest; Perfetto drops or
// misplaces those that do not. `perfetto` reads the times as Perfetto does: "ts" and "dur"
// each rounded to whole nanoseconds (llround(us * 1000)), the end their sum.
std::vector<std::string> partial_overlaps(const nlohmann::json& trace, bool perfetto) {
  std::map<Lane, std::vector<std::tuple<int64_t, int64_t, std::string>>> lanes;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int64_t ts = perfetto ? std::llround(e["ts"].get<double>() * 1000.0) : ps(e["ts"]);
    const int64_t dur = perfetto ? std::llround(e["dur"].get<double>() * 1000.0) : ps(e["dur"]);
    lanes[{e["pid"], e["tid"]}].emplace_back(ts, ts + dur, e["name"].get<std::string>());
  }
  std::vector<std::string> found;
  for (auto& [lane, list] : lanes) {
    // By start, the longer first at one start: each slice must end within every open one.
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                              : std::get<1>(a) > std::get<1>(b);
    });
    std::vector<const std::tuple<int64_t, int64_t, std::string>*> open;
    for (const auto& s : list) {
      while (!open.empty() && std::get<1>(*open.back()) <= std::get<0>(s)) open.pop_back();
      if (!open.empty() && std::get<1>(s) > std::get<1>(*open.back())) {
        found.push_back(fmt::format("lane {}/{}: {} [{}, {}] and {} [{}, {}]", lane.first,
                                    lane.second, std::get<2>(*open.back()),
                                    std::get<0>(*open.back()), std::get<1>(*open.back()),
                                    std::get<2>(s), std::get<0>(s), std::get<1>(s)));
      }
      open.push_back(&s);
    }
  }
  return found;
}

}  // namespace

TEST_CASE("trace: slices on one lane nest in every example, also on Perfetto's nanoseconds") {
  // Overlapping DMA transfers of one queue go on the queue's sub-lanes ("DMA q #2"), and times
  // are written on whole nanoseconds (1 ns overlaps appeared where Perfetto rounded ts and dur
  // separately).
  std::vector<std::string> examples;
  for (const char* dir : {"", "micro/"}) {
    for (const auto& f : std::filesystem::directory_iterator(std::string(TRNSIM_SOURCE_DIR) +
                                                             "/workloads/examples/" + dir)) {
      const std::string ext = f.path().extension().string();
      if (ext == ".json" || ext == ".tasm") examples.push_back(dir + f.path().filename().string());
    }
  }
  std::sort(examples.begin(), examples.end());
  REQUIRE(examples.size() >= 40);
  size_t sublanes = 0;
  for (const std::string& name : examples) {
    INFO(name);
    const Run r = run(name, "--no-report", "nest");
    for (const bool perfetto : {false, true}) {
      const std::vector<std::string> found = partial_overlaps(r.trace, perfetto);
      INFO((perfetto ? "as Perfetto reads it: " : "exact: ")
           << found.size() << " partial overlaps, first "
           << (found.empty() ? std::string("none") : found.front()));
      CHECK(found.empty());
    }
    for (const auto& e : r.trace["traceEvents"]) {
      sublanes += e["ph"] == "M" && e["name"] == "thread_name" &&
                  e["args"]["name"].get<std::string>().find(" #") != std::string::npos;
    }
  }
  CHECK(sublanes > 0);  // the examples do overlap transfers in a queue
}
