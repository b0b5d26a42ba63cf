// The trace's counters (pending DMAs, DMA throughput) are released as the run goes instead of
// being sorted at the end: the samples are the same, and the steps held stay bounded.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "sim/io/output_file.hpp"
#include "sim/report/trace_writer.hpp"

using namespace trnsim;

namespace {

isa::Program one_dma_program() {
  isa::Program p;
  p.name = "counters";
  const uint16_t q = p.add_queue("q");
  isa::Instruction in;
  in.opcode = isa::Opcode::dma_copy;
  in.engine = Engine::sync;
  in.src[0] = isa::hbm_ap(isa::DType::bf16, 0, 128, 64, {{1, 64}});
  in.dst = isa::sbuf_ap(isa::DType::bf16, 0, 128, 0, {{1, 64}});
  in.dma_queue = q;
  p.stream(Engine::sync).push_back(in);
  return p;
}

struct Transfer {
  int64_t issued, start, end;
  uint64_t bytes;
};

// The counter lines as the writer produced them before it streamed: every step kept, sorted by
// counter then time (stable), one sample per distinct time.
std::vector<std::string> counters_sorted_at_the_end(const std::vector<Transfer>& ts) {
  struct Step {
    int64_t time;
    int counter;
    double delta;
  };
  std::vector<Step> steps;
  // In record order: each issue (instruction end), then each completion.
  std::vector<std::pair<int64_t, int>> records;  // (time, index), issue = +, completion = -
  for (size_t i = 0; i < ts.size(); ++i) {
    records.push_back({ts[i].issued, static_cast<int>(i) + 1});
    records.push_back({ts[i].end, -static_cast<int>(i) - 1});
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [time, who] : records) {
    if (who > 0) {
      steps.push_back({time, 0, 1.0});
      continue;
    }
    const Transfer& t = ts[-who - 1];
    steps.push_back({t.end, 0, -1.0});
    if (t.end > t.start) {
      const double rate = static_cast<double>(t.bytes) / ((t.end - t.start) / 1e3);
      steps.push_back({t.start, 1, rate});
      steps.push_back({t.end, 1, -rate});
    }
  }
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    return a.counter != b.counter ? a.counter < b.counter : a.time < b.time;
  });
  std::vector<std::string> lines;
  double value = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i == 0 || steps[i].counter != steps[i - 1].counter) value = 0;
    value += steps[i].delta;
    if (i + 1 < steps.size() && steps[i + 1].time == steps[i].time &&
        steps[i + 1].counter == steps[i].counter) {
      continue;
    }
    if (std::abs(value) < 1e-9) value = 0;
    const bool pending = steps[i].counter == 0;
    lines.push_back(fmt::format(
        R"({{"ph":"C","pid":1,"ts":{},"name":"{}","args":{{"{}":{}}}}})",
        sim::trace_timestamp(Picoseconds(steps[i].time)),
        pending ? "pending DMAs" : "DMA throughput", pending ? "transfers" : "GB/s",
        pending ? fmt::format("{}", static_cast<int64_t>(value)) : fmt::format("{:.3f}", value)));
  }
  return lines;
}

// Feeds the records in time order, as the simulation does: an instruction record when a DMA
// is issued, a transfer record when it completes.
size_t feed(sim::TraceWriter& w, const std::vector<Transfer>& ts) {
  std::vector<std::pair<int64_t, int>> records;
  for (size_t i = 0; i < ts.size(); ++i) {
    records.push_back({ts[i].issued, static_cast<int>(i) + 1});
    records.push_back({ts[i].end, -static_cast<int>(i) - 1});
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t most_held = 0;
  for (const auto& [time, who] : records) {
    if (who > 0) {
      models::InstructionRecord r;
      r.engine = Engine::sync;
      r.ready = r.start = Picoseconds(time - 10);
      r.end = Picoseconds(time);
      w.on_instruction(r);
    } else {
      const Transfer& t = ts[-who - 1];
      models::TransferRecord r;
      r.issuer = Engine::sync;
      r.issued = Picoseconds(t.issued);
      r.start = Picoseconds(t.start);
      r.end = Picoseconds(t.end);
      r.bytes = t.bytes;
      w.on_transfer(r);
    }
    most_held = std::max(most_held, w.held_counter_steps());
  }
  return most_held;
}

// The pending-DMA and DMA-throughput samples (the HBM bandwidth counters follow the same
// transfers and are checked in sim_trace.cpp).
std::vector<std::string> counter_lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(f, line)) {
    if (line.find(R"("ph":"C")") == std::string::npos) continue;
    if (line.find(R"("name":"pending DMAs")") == std::string::npos &&
        line.find(R"("name":"DMA throughput")") == std::string::npos) {
      continue;
    }
    if (!line.empty() && line.back() == ',') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string scratch(const std::string& name) {
  const std::string dir = "sim-trace-counters-" + name;
  sim::make_output_directory(dir);
  return dir + "/trace.json";
}

}  // namespace

TEST_CASE(
    "trace counters released during the run are the samples of sorting every step at "
    "the end") {
  // Transfers on several queues overlap and complete out of issue order; some start and end at
  // the same instant as others, and one takes no time.
  std::vector<Transfer> ts;
  uint64_t x = 12345;
  auto next = [&](int64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(n));
  };
  for (int i = 0; i < 400; ++i) {
    const int64_t issued = 1000 * (i / 3) + 10 * next(3);
    const int64_t start = issued + 1300 + 100 * next(5);
    const int64_t end = start + (i % 37 == 0 ? 0 : 100 * (1 + next(40)));
    ts.push_back({issued, start, end, static_cast<uint64_t>(2048 * (1 + next(64)))});
  }
  const isa::Program p = one_dma_program();
  const std::string path = scratch("same");
  {
    sim::TraceWriter w(path, p, config::trn2());
    feed(w, ts);
    w.close();
    w.commit();
  }
  const std::vector<std::string> got = counter_lines(path);
  const std::vector<std::string> want = counters_sorted_at_the_end(ts);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("sample " << i);
    CHECK(got[i] == want[i]);
  }
}

TEST_CASE("trace counter steps held during the run stay bounded by the transfers in flight") {
  // 100,000 transfers, at most four in flight at once: the writer holds a few steps, not
  // three per transfer of the run.
  std::vector<Transfer> ts;
  for (int64_t i = 0; i < 100000; ++i) {
    const int64_t issued = 1000 * i;
    ts.push_back({issued, issued + 1300, issued + 4000, 65536});
  }
  const isa::Program p = one_dma_program();
  const std::string path = scratch("bounded");
  sim::TraceWriter w(path, p, config::trn2());
  const size_t most_held = feed(w, ts);
  CHECK(most_held <= 32);
  w.close();
  w.commit();
  CHECK(counter_lines(path).size() == counters_sorted_at_the_end(ts).size());
}

TEST_CASE("trace timestamps are microseconds with six decimals, also negative and large") {
  CHECK(sim::trace_timestamp(Picoseconds(0)) == "0.000000");
  CHECK(sim::trace_timestamp(Picoseconds(1)) == "0.000001");
  CHECK(sim::trace_timestamp(Picoseconds(12345678)) == "12.345678");
  CHECK(sim::trace_timestamp(Picoseconds(1000000)) == "1.000000");
  CHECK(sim::trace_timestamp(Picoseconds(999999)) == "0.999999");
  CHECK(sim::trace_timestamp(Picoseconds(-1500)) == "-0.001500");
  CHECK(sim::trace_timestamp(Picoseconds(-98765432100)) == "-98765.432100");
  CHECK(sim::trace_timestamp(Picoseconds(INT64_MAX)) == "9223372036854.775807");
  // Every fraction digit position, against the text printf gives.
  for (int64_t v : {int64_t{10}, int64_t{203}, int64_t{4050}, int64_t{60708}, int64_t{123456},
                    int64_t{7000009}, int64_t{52841010554000}}) {
    CHECK(sim::trace_timestamp(Picoseconds(v)) ==
          fmt::format("{}.{:06}", v / 1000000, v % 1000000));
  }
}
