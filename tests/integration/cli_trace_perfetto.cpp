// --trace-format perfetto: trace.pftrace, decoded here with a minimal protobuf walker (no
// protobuf library), holds the same lanes, slices (names, categories, times, arguments),
// counters and flow arrows as trace.json of the same run, and its slices nest as Perfetto
// reads them (events sorted by time, ties in file order, a stack per track).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <vector>

#include "cli_support.hpp"

using trnsim_test::example;
using trnsim_test::fresh_dir;
using trnsim_test::Invocation;
using trnsim_test::read_json;
using trnsim_test::slurp;

namespace {

// One field of a protobuf message: a varint or fixed64 value, or length-delimited bytes.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t value = 0;
  std::string_view bytes;
};

uint64_t varint(std::string_view b, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= b.size()) throw std::runtime_error("a varint runs past the end");
    const auto c = static_cast<uint8_t>(b[i++]);
    v |= uint64_t{c & 0x7fu} << shift;
    if (c < 0x80) return v;
  }
  throw std::runtime_error("a varint longer than ten bytes");
}

std::vector<Field> fields(std::string_view b) {
  std::vector<Field> out;
  size_t i = 0;
  while (i < b.size()) {
    Field f;
    const uint64_t key = varint(b, i);
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    if (f.wire == 0) {
      f.value = varint(b, i);
    } else if (f.wire == 1) {
      if (i + 8 > b.size()) throw std::runtime_error("a fixed64 runs past the end");
      for (int k = 0; k < 8; ++k) f.value |= uint64_t{static_cast<uint8_t>(b[i + k])} << (8 * k);
      i += 8;
    } else if (f.wire == 2) {
      const uint64_t n = varint(b, i);
      if (i + n > b.size()) throw std::runtime_error("a length-delimited field runs past the end");
      f.bytes = b.substr(i, n);
      i += n;
    } else {
      throw std::runtime_error(fmt::format("wire type {} (not written by trnsim)", f.wire));
    }
    out.push_back(f);
  }
  return out;
}

double as_double(uint64_t bits) {
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// A slice as both formats can say it: its lane (process id and lane name), name, category,
// start and duration in ns, and its arguments as text.
using SliceKey = std::tuple<int, std::string, std::string, std::string, int64_t, int64_t,
                            std::map<std::string, std::string>>;
// A counter sample: process, counter, ns, value (the JSON's rounding).
struct Sample {
  int pid;
  std::string name;
  int64_t ns;
  double value;
};
// A flow end: id, start or end, lane, ns.
using FlowEnd = std::tuple<uint64_t, bool, int, std::string, int64_t>;

struct Decoded {
  std::set<std::pair<int, std::string>> processes, lanes;
  std::vector<SliceKey> slices;
  std::vector<Sample> samples;
  std::set<FlowEnd> flows;
  size_t misnested = 0;  // ends that do not close the slice begun just before them in the file
};

int64_t ns_of_us(const nlohmann::json& us) {
  // As the writer rounds: picoseconds to the nearest ns, halves up.
  const auto ps = static_cast<int64_t>(std::llround(us.get<double>() * 1e6));
  return (ps + 500) / 1000;  // times are not negative
}

std::string arg_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.6f}", v.get<double>());
  return std::to_string(v.get<int64_t>());
}

Decoded from_json(const nlohmann::json& trace) {
  Decoded d;
  std::map<std::pair<int, int>, std::string> lane_name;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "M") continue;
    const int pid = e["pid"].get<int>();
    const std::string name =
        e["args"]["name"].is_string() ? e["args"]["name"].get<std::string>() : "";
    if (e["name"] == "process_name") d.processes.insert({pid, name});
    if (e["name"] == "thread_name") {
      lane_name[{pid, e["tid"].get<int>()}] = name;
      d.lanes.insert({pid, name});
    }
  }
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    const int pid = e["pid"].get<int>();
    const auto lane = [&] { return lane_name.at({pid, e["tid"].get<int>()}); };
    if (ph == "X") {
      std::map<std::string, std::string> args;
      for (const auto& [k, v] : e["args"].items()) args[k] = arg_text(v);
      d.slices.emplace_back(pid, lane(), e["name"].get<std::string>(), e["cat"].get<std::string>(),
                            ns_of_us(e["ts"]), ns_of_us(e["dur"]), args);
    } else if (ph == "C") {
      d.samples.push_back(
          {pid, e["name"].get<std::string>(), ns_of_us(e["ts"]), e["args"].front().get<double>()});
    } else if (ph == "s" || ph == "f") {
      d.flows.emplace(e["id"].get<uint64_t>(), ph == "s", pid, lane(), ns_of_us(e["ts"]));
    }
  }
  return d;
}

Decoded from_perfetto(std::string_view file) {
  Decoded d;
  std::map<uint64_t, std::string> names, categories, arg_names;  // interned, by iid
  std::map<uint64_t, int> process_of_uuid;                       // process tracks' pids
  struct Track {
    uint64_t parent = 0;
    std::string name;
    bool counter = false;
  };
  std::map<uint64_t, Track> tracks;
  struct Event {
    uint64_t ts;
    size_t order;
    uint64_t type, track;
    std::string name, category;
    std::map<std::string, std::string> args;
    double counter = 0;
    std::vector<std::pair<bool, uint64_t>> flows;
  };
  std::vector<Event> events;
  bool first = true;
  for (const Field& packet : fields(file)) {
    REQUIRE(packet.number == 1);  // Trace.packet
    REQUIRE(packet.wire == 2);
    Event ev{};
    ev.order = events.size();
    bool has_event = false;
    uint64_t sequence = 0, flags = 0;
    for (const Field& f : fields(packet.bytes)) {
      if (f.number == 8) ev.ts = f.value;
      if (f.number == 10) sequence = f.value;
      if (f.number == 13) flags = f.value;
      if (f.number == 12) {  // InternedData
        for (const Field& table : fields(f.bytes)) {
          uint64_t iid = 0;
          std::string name;
          for (const Field& e : fields(table.bytes)) {
            if (e.number == 1) iid = e.value;
            if (e.number == 2) name = std::string(e.bytes);
          }
          auto& index = table.number == 1 ? categories : table.number == 2 ? names : arg_names;
          REQUIRE(index.count(iid) == 0);  // an iid is never redefined
          index[iid] = name;
        }
      }
      if (f.number == 60) {  // TrackDescriptor
        uint64_t uuid = 0;
        Track t;
        for (const Field& g : fields(f.bytes)) {
          if (g.number == 1) uuid = g.value;
          if (g.number == 2) t.name = std::string(g.bytes);
          if (g.number == 5) t.parent = g.value;
          if (g.number == 8) t.counter = true;
          if (g.number == 3) {  // ProcessDescriptor
            int pid = -1;
            std::string name;
            for (const Field& p : fields(g.bytes)) {
              if (p.number == 1) pid = static_cast<int>(p.value);
              if (p.number == 6) name = std::string(p.bytes);
            }
            process_of_uuid[uuid] = pid;
            d.processes.insert({pid, name});
          }
        }
        REQUIRE(tracks.count(uuid) == 0);
        tracks[uuid] = t;
      }
      if (f.number == 11) {  // TrackEvent
        has_event = true;
        for (const Field& g : fields(f.bytes)) {
          if (g.number == 9) ev.type = g.value;
          if (g.number == 11) ev.track = g.value;
          if (g.number == 10) ev.name = names.at(g.value);
          if (g.number == 23) ev.name = std::string(g.bytes);
          if (g.number == 3) ev.category = categories.at(g.value);
          if (g.number == 44) ev.counter = as_double(g.value);
          if (g.number == 47 || g.number == 48) ev.flows.emplace_back(g.number == 47, g.value);
          if (g.number == 4) {  // DebugAnnotation
            std::string name, value;
            for (const Field& a : fields(g.bytes)) {
              if (a.number == 1) name = arg_names.at(a.value);
              if (a.number == 4) value = std::to_string(static_cast<int64_t>(a.value));
              if (a.number == 5) value = fmt::format("{:.6f}", as_double(a.value));
              if (a.number == 6) value = std::string(a.bytes);
            }
            ev.args[name] = value;
          }
        }
      }
    }
    if (first) CHECK(flags == 1);  // SEQ_INCREMENTAL_STATE_CLEARED
    first = false;
    if (has_event) {
      CHECK(sequence == 1);
      CHECK(flags == 2);  // SEQ_NEEDS_INCREMENTAL_STATE
      events.push_back(ev);
    }
  }
  const auto pid_of = [&](uint64_t track) { return process_of_uuid.at(tracks.at(track).parent); };
  for (const auto& [uuid, t] : tracks) {
    if (t.parent != 0 && !t.counter) d.lanes.insert({pid_of(uuid), t.name});
  }
  // As Perfetto imports it: by time, ties in file order; slices nest by a stack per track.
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  std::map<uint64_t, std::vector<const Event*>> open;
  for (const Event& e : events) {
    const Track& t = tracks.at(e.track);
    if (e.type == 1) {
      open[e.track].push_back(&e);
    } else if (e.type == 2) {
      REQUIRE(!open[e.track].empty());
      const Event& b = *open[e.track].back();
      open[e.track].pop_back();
      d.misnested += b.order + 1 != e.order;
      d.slices.emplace_back(pid_of(e.track), t.name, b.name, b.category, static_cast<int64_t>(b.ts),
                            static_cast<int64_t>(e.ts - b.ts), b.args);
    } else if (e.type == 3) {
      REQUIRE(e.flows.size() == 1);
      d.flows.emplace(e.flows[0].second, e.flows[0].first, pid_of(e.track), t.name,
                      static_cast<int64_t>(e.ts));
    } else if (e.type == 4) {
      REQUIRE(t.counter);
      d.samples.push_back({pid_of(e.track), t.name, static_cast<int64_t>(e.ts), e.counter});
    }
  }
  for (const auto& [track, stack] : open) CHECK(stack.empty());
  return d;
}

void check_same(const std::string& workload, const std::string& extra, const std::string& tag) {
  const std::string dir = fresh_dir("pftrace_" + tag);
  for (const char* format : {"json", "perfetto"}) {
    const Invocation r =
        trnsim_test::trnsim(example(workload) + " --timing-only --no-report --out " + dir + "/" +
                                format + " --trace-format " + format + " " + extra,
                            dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  // The run is the same: stats.json does not depend on the trace's format.
  CHECK(slurp(dir + "/json/stats.json") == slurp(dir + "/perfetto/stats.json"));
  CHECK(!std::filesystem::exists(dir + "/perfetto/trace.json"));
  // explain's critical path reads trace.json: it says why there is none.
  const Invocation explain = trnsim_test::trnsim("explain " + dir + "/perfetto", dir);
  CHECK(explain.exit_code == 0);
  CHECK(explain.out.find("no trace.json, only trace.pftrace") != std::string::npos);
  const Decoded j = from_json(read_json(dir + "/json/trace.json"));
  const Decoded p = from_perfetto(slurp(dir + "/perfetto/trace.pftrace"));
  CHECK(p.processes == j.processes);
  CHECK(p.lanes == j.lanes);
  CHECK(p.misnested == 0);
  std::vector<SliceKey> js = j.slices, ps = p.slices;
  std::sort(js.begin(), js.end());
  std::sort(ps.begin(), ps.end());
  REQUIRE(!js.empty());
  CHECK(ps.size() == js.size());
  CHECK(ps == js);
  CHECK(p.flows == j.flows);
  // Counters: the same samples; the JSON's values have 2 or 3 decimals.
  const auto order = [](const Sample& a, const Sample& b) {
    return std::tie(a.pid, a.name, a.ns) < std::tie(b.pid, b.name, b.ns);
  };
  std::vector<Sample> jc = j.samples, pc = p.samples;
  std::stable_sort(jc.begin(), jc.end(), order);
  std::stable_sort(pc.begin(), pc.end(), order);
  REQUIRE(pc.size() == jc.size());
  size_t differ = 0;
  for (size_t i = 0; i < jc.size(); ++i) {
    differ += jc[i].pid != pc[i].pid || jc[i].name != pc[i].name || jc[i].ns != pc[i].ns ||
              std::abs(jc[i].value - pc[i].value) > 0.0051;
  }
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("trace.pftrace has trace.json's lanes, slices, arguments, counters and flows") {
  check_same("rmsnorm.json", "", "rmsnorm");
  // A host model (framework and runtime lanes, launch arrows) and several kernels.
  check_same("gelu_mlp_eager.json", "", "gelu_eager");
  // DMA sub-lanes (overlapping transfers of one queue), the flow memory model.
  check_same("attention.json", "--set dma_flow_model=true", "attention");
  // A Collectives lane on each of 4 cores.
  check_same("micro/collective_all_reduce.tasm", "", "collective");
}

TEST_CASE("trace.pftrace follows --trace-filter as trace.json does") {
  check_same("rmsnorm.json", "--trace-filter 'lanes=TensorE,DMA*,pending*;window=10us:60us'",
             "filtered");
}

TEST_CASE("no trace with --trace-format none, and a bad --trace-format is refused before the run") {
  const std::string dir = fresh_dir("trace_format_none");
  Invocation r = trnsim_test::trnsim(example("rmsnorm.json") +
                                         " --timing-only --no-report --trace-format none --out " +
                                         dir + "/out",
                                     dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(std::filesystem::exists(dir + "/out/stats.json"));
  CHECK(!std::filesystem::exists(dir + "/out/trace.json"));
  CHECK(!std::filesystem::exists(dir + "/out/trace.pftrace"));
  CHECK(r.out.find("outputs: " + dir + "/out/{stats.json}") != std::string::npos);
  r = trnsim_test::trnsim(
      example("rmsnorm.json") + " --timing-only --trace-format protobuf --out " + dir + "/bad",
      dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--trace-format") != std::string::npos);
  CHECK(!std::filesystem::exists(dir + "/bad"));
}
