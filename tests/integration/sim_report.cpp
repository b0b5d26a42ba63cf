// report.html's event block, read back without a browser: the base64 of the deflated columns
// holds every record the writer was given, in order, with the values the page shows (more
// records than one 64 KiB chunk, so the temporary file is written and read back).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../support/report_page.hpp"
#include "config/arch.hpp"
#include "isa/program.hpp"
#include "models/neuroncore/cost.hpp"
#include "sim/report/report_html.hpp"
#include "sim/report/trace_lanes.hpp"
#include "workloads/kernels/instruction_builder.hpp"

using namespace trnsim;
using trnsim_test::column;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A VectorE copy of 128 x 64 bf16 in SBUF.
isa::Instruction vector_copy(const std::string& label) {
  return workloads::tensor_copy(Engine::vector,
                                isa::sbuf_ap(isa::DType::bf16, 0, 128, 128, {{1, 64}}),
                                isa::sbuf_ap(isa::DType::bf16, 0, 128, 0, {{1, 64}}), label);
}

}  // namespace

TEST_CASE("report.html's events block holds every record, in order, as deflated columns") {
  isa::Program p;
  p.name = "report";
  const uint16_t q = p.add_queue("qLoad");
  constexpr uint32_t kInstructions = 5000;  // 40-byte records: three 64 KiB chunks and a tail
  for (uint32_t i = 0; i < kInstructions; ++i) {
    p.stream(Engine::vector).push_back(vector_copy(i % 2 ? "copy " + std::to_string(i) : ""));
  }
  p.stream(Engine::sync)
      .push_back(workloads::dma_copy(q, isa::sbuf_ap(isa::DType::bf16, 0, 128, 0, {{1, 64}}),
                                     isa::hbm_ap(isa::DType::bf16, 0, 128, 64, {{1, 64}}), "load"));
  const config::ArchConfig arch = config::trn2();
  const std::string dir = "sim-report";  // under the test's working directory
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/report.html";
  {
    sim::ReportWriter w(path, p, arch, 1);
    for (uint32_t i = 0; i < kInstructions; ++i) {
      models::InstructionRecord r;
      r.engine = Engine::vector;
      r.index = i;
      r.ready = r.start = Picoseconds(1000 * int64_t{i});
      r.end = Picoseconds(1000 * int64_t{i} + 700);
      r.cycles = Cycles(100 + i);
      w.on_instruction(r);
    }
    models::TransferRecord t;
    t.queue = q;
    t.issuer = Engine::sync;
    t.start = Picoseconds(5);
    t.end = Picoseconds(9'000'000'000'000);  // 9 s: more than 32 bits of picoseconds
    t.bytes = 16384;
    t.engines = 16;
    w.on_transfer(t);
    w.on_kernel({0, 0, Picoseconds(0), Picoseconds(0), Picoseconds(5'000'000)});
    CHECK(w.events() == kInstructions + 2);
    w.close({{"workload", {{"name", "report"}}}, {"summary", {{"total_time_ps", 5'000'000}}}}, dir);
    w.commit();
  }
  const trnsim_test::ReportPage page = trnsim_test::read_report_page(slurp(path));
  const nlohmann::json& block = page.block;
  CHECK(block["format"] == sim::kReportFormat);
  CHECK(block["encoding"] == "deflate");
  const size_t n = page.events;
  REQUIRE(n == kInstructions + 2);
  // The lanes are trace_lanes()'s, in order.
  const std::vector<sim::TraceLane> lanes = sim::trace_lanes(p, arch, 1);
  REQUIRE(block["lanes"].size() == lanes.size());
  for (size_t l = 0; l < lanes.size(); ++l) CHECK(block["lanes"][l]["name"] == lanes[l].name);
  const std::vector<unsigned char>& bytes = page.bytes;
  const sim::TimelineLanes at_lane(p, 1);
  for (uint32_t i = 0; i < kInstructions; ++i) {
    INFO("instruction " << i);
    CHECK(column<double>(bytes, 0, i) == 1000.0 * i);
    CHECK(column<double>(bytes, 8 * n, i) == 700.0);
    CHECK(column<double>(bytes, 16 * n, i) ==
          static_cast<double>(models::instruction_flops(p.stream(Engine::vector)[i])));
    const uint32_t name = column<uint32_t>(bytes, 24 * n, i);
    CHECK(block["opcodes"][name] == "tensor_copy");
    const uint32_t label = column<uint32_t>(bytes, 28 * n, i);
    if (i % 2) {
      REQUIRE(label != sim::kNoLabel);
      CHECK(block["labels"][label] == "copy " + std::to_string(i));
    } else {
      CHECK(label == sim::kNoLabel);
    }
    CHECK(column<uint32_t>(bytes, 32 * n, i) == 100 + i);
    CHECK(column<uint16_t>(bytes, 36 * n, i) == at_lane.engine(0, Engine::vector));
    CHECK(bytes[38 * n + i] == static_cast<uint8_t>(sim::ReportEventKind::instruction));
  }
  const size_t t = kInstructions;  // the transfer, exact past 32 bits
  CHECK(column<double>(bytes, 0, t) == 5.0);
  CHECK(column<double>(bytes, 8 * n, t) == 9'000'000'000'000.0 - 5.0);
  CHECK(column<double>(bytes, 16 * n, t) == 16384.0);
  CHECK(block["labels"][column<uint32_t>(bytes, 28 * n, t)] == "load");
  CHECK(column<uint32_t>(bytes, 32 * n, t) == 16);
  CHECK(column<uint16_t>(bytes, 36 * n, t) == at_lane.queue(0, q));
  CHECK(bytes[38 * n + t] == static_cast<uint8_t>(sim::ReportEventKind::transfer));
  const size_t k = kInstructions + 1;  // the kernel
  CHECK(block["names"][column<uint32_t>(bytes, 24 * n, k)] == "report");
  CHECK(column<uint16_t>(bytes, 36 * n, k) == at_lane.kernels(0));
  CHECK(bytes[38 * n + k] == static_cast<uint8_t>(sim::ReportEventKind::kernel));
  // The columns (195 KB) deflate well: rising starts, repeated durations and names.
  CHECK(page.packed_bytes * 4 < 39 * n);
}

TEST_CASE(
    "report.html's labels are escaped for a script element, as JSON with bad UTF-8 replaced") {
  isa::Program p;
  p.name = "labels";
  const std::vector<std::string> labels = {"a </script> b", "<!-- x", "bad \xff utf8", "q\"uote\\"};
  for (const std::string& l : labels) {
    p.stream(Engine::vector).push_back(vector_copy(l));
  }
  const config::ArchConfig arch = config::trn2();
  const std::string dir = "sim-report-labels";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/report.html";
  {
    sim::ReportWriter w(path, p, arch, 1);
    for (uint32_t i = 0; i < labels.size(); ++i) {
      models::InstructionRecord r;
      r.engine = Engine::vector;
      r.index = i;
      r.ready = r.start = Picoseconds(1000 * int64_t{i});
      r.end = Picoseconds(1000 * int64_t{i} + 700);
      w.on_instruction(r);
    }
    w.close({{"workload", {{"name", "labels"}}}}, dir);
    w.commit();
  }
  const std::string text = slurp(path);
  CHECK(text.find("a </script> b") == std::string::npos);
  CHECK(text.find("<!-- x") == std::string::npos);
  const trnsim_test::ReportPage page = trnsim_test::read_report_page(text);
  REQUIRE(page.events == labels.size());
  CHECK(page.label(0) == labels[0]);
  CHECK(page.label(1) == labels[1]);
  CHECK(page.label(2) == "bad \xef\xbf\xbd utf8");  // U+FFFD for the invalid byte
  CHECK(page.label(3) == labels[3]);
}
