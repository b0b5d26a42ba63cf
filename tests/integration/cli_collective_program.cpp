// Collectives as instructions (docs/chip.md, "Collectives in a program"): a program on N cores
// synchronises them with a collective whose time is CollectiveFabric's, whose data really moves
// (each op against a host reference), and whose bad operands are refused with exit 2.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "config/arch.hpp"
#include "models/collective/fabric.hpp"

using namespace trnsim;

namespace {

// A program on `cores` cores: one collective of x into y, fenced on the sync engine.
std::string program(uint32_t cores, const std::string& x_shape, const std::string& y_shape,
                    const std::string& options, const std::string& reference,
                    const std::string& dtype = "fp32") {
  return ".arch trn2\n.cores " + std::to_string(cores) + "\n.sync manual\n.tensor x " + dtype +
         " " + x_shape + " init=normal(0, 1, seed=5)\n.tensor y " + dtype + " " + y_shape +
         "\n.semaphore done\nsp.collective y[:, :], x[:, :], " + options +
         ", update=done+=1\nsp.nop wait=done>=1\n.expect y = " + reference + "(x)\n";
}

models::CollectiveRequest request_of(const nlohmann::json& c, uint32_t element_bytes) {
  models::CollectiveRequest r;
  r.op = *isa::parse_collective_op(c["op"].get<std::string>());
  r.bytes = c["bytes"].get<uint64_t>();
  r.element_bytes = element_bytes;
  for (uint32_t k = 0; k < c["ranks"].get<uint32_t>(); ++k) r.ranks.push_back({0, k});
  return r;
}

Picoseconds ps(double ns) {
  return Picoseconds(static_cast<int64_t>(std::llround(ns * 1000)));
}

// On an otherwise idle chip a collective ends when the fabric says, or, when later, when the
// memory system has carried its traffic (docs/chip.md, "Collective traffic and the kernel's
// DMA"): its HBM serves below the stack's peak and adds its access latency, a few percent.
void ends_as_the_fabric_says(const nlohmann::json& c, const models::CollectiveTiming& t,
                             Picoseconds triggered) {
  const Picoseconds end = ps(c["end_ns"].get<double>());
  CHECK(end >= t.end);
  CHECK(static_cast<double>((end - triggered).value) <=
        1.06 * static_cast<double>((t.end - triggered).value));
}

}  // namespace

TEST_CASE(
    "a collective instruction lasts what CollectiveFabric::schedule says for its request, or "
    "its traffic in the memory system") {
  struct Case {
    const char* example;
    uint32_t element_bytes;
  };
  for (const Case& k :
       {Case{"micro/collective_all_reduce.tasm", 4}, Case{"micro/collective_all_gather.tasm", 2}}) {
    const auto run = trnsim_test::run_ok(trnsim_test::example(k.example), "--no-report",
                                         std::string("cc_contract_") + (k.example + 6));
    REQUIRE(run.stats.contains("collectives"));
    REQUIRE(run.stats["collectives"].size() == 1);
    const auto& c = run.stats["collectives"][0];
    models::CollectiveFabric fabric(*config::preset("trn2"));
    const Picoseconds triggered = ps(c["trigger_ns"].get<double>());
    const models::CollectiveTiming t = fabric.schedule(request_of(c, k.element_bytes), triggered);
    INFO(k.example);
    ends_as_the_fabric_says(c, t, triggered);
    CHECK(ps(c["start_ns"].get<double>()) == t.start);
    const Picoseconds end = ps(c["end_ns"].get<double>());
    CHECK(ps(c["duration_ns"].get<double>()) == end - triggered);
    CHECK(c["algorithm"] == t.algorithm);
    CHECK(c["steps"] == t.steps);
    CHECK(run.stats["collective_time"].get<double>() ==
          Approx((end - triggered).value * 1e-12).epsilon(1e-9));
    // The run ends after the collective: the fence waits for its update.
    CHECK(run.stats["summary"]["total_time"].get<double>() >= end.value * 1e-12);
    CHECK(run.stats["check"]["status"] == "pass");
    CHECK(run.invocation.out.find("collectives 1: ") != std::string::npos);
  }
}

TEST_CASE("each collective op moves every core's data as its host reference says") {
  struct Case {
    const char* name;
    const char* op;
    std::string text;
  };
  const Case cases[] = {
      {"all_reduce_max", "all_reduce",
       program(4, "[8, 64]", "[8, 64]", "cc=all_reduce, op0=max", "all_reduce_max")},
      {"all_reduce_add_bf16", "all_reduce",
       program(4, "[8, 64]", "[8, 64]", "cc=all_reduce, op0=add", "all_reduce_add", "bf16")},
      {"all_gather", "all_gather",
       program(4, "[8, 64]", "[32, 64]", "cc=all_gather", "all_gather")},
      {"reduce_scatter_min", "reduce_scatter",
       program(4, "[32, 64]", "[8, 64]", "cc=reduce_scatter, op0=min", "reduce_scatter_min")},
      {"all_to_all", "all_to_all", program(4, "[8, 64]", "[8, 64]", "cc=all_to_all", "all_to_all")},
      {"permute", "permute", program(8, "[8, 64]", "[8, 64]", "cc=permute", "permute")},
  };
  for (const Case& c : cases) {
    const std::string dir = trnsim_test::fresh_dir(std::string("cc_op_") + c.name);
    const std::string path = trnsim_test::write_file(dir, std::string(c.name) + ".tasm", c.text);
    const auto r = trnsim_test::trnsim(path + " --out " + dir + "/out --no-report", dir);
    INFO(c.name << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    const auto stats = trnsim_test::read_json(dir + "/out/stats.json");
    CHECK(stats["check"]["status"] == "pass");
    CHECK(stats["check"]["mismatches"] == 0);
    CHECK(stats["collectives"][0]["op"] == c.op);
  }
}

TEST_CASE("the check fails when a collective's reference is another op's") {
  const std::string dir = trnsim_test::fresh_dir("cc_wrong_reference");
  const std::string path = trnsim_test::write_file(
      dir, "wrong.tasm",
      program(4, "[8, 64]", "[8, 64]", "cc=all_reduce, op0=add", "all_reduce_max"));
  const auto r = trnsim_test::trnsim(path + " --out " + dir + "/out --no-report", dir);
  CHECK(r.exit_code == 1);
  CHECK(trnsim_test::read_json(dir + "/out/stats.json")["check"]["status"] == "fail");
}

TEST_CASE("a collective on one core is a copy that still takes the fabric's time") {
  const std::string dir = trnsim_test::fresh_dir("cc_one_core");
  const std::string path = trnsim_test::write_file(
      dir, "one.tasm",
      program(1, "[8, 64]", "[8, 64]", "cc=all_reduce, op0=add", "all_reduce_add"));
  const auto r = trnsim_test::trnsim(path + " --out " + dir + "/out --no-report", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto stats = trnsim_test::read_json(dir + "/out/stats.json");
  CHECK(stats["check"]["status"] == "pass");
  CHECK(stats["collectives"][0]["ranks"] == 1);
}

TEST_CASE("a timing-only run gives a collective the same times") {
  const auto full = trnsim_test::run_ok(trnsim_test::example("micro/collective_all_reduce.tasm"),
                                        "--no-report", "cc_full");
  const auto timing = trnsim_test::run_ok(trnsim_test::example("micro/collective_all_reduce.tasm"),
                                          "--no-report --timing-only", "cc_timing");
  CHECK(full.stats["collectives"] == timing.stats["collectives"]);
  CHECK(full.stats["summary"]["total_time"] == timing.stats["summary"]["total_time"]);
}

TEST_CASE("trace.json has a Collectives lane per core with the collective's slice") {
  const auto run = trnsim_test::run_ok(trnsim_test::example("micro/collective_all_reduce.tasm"),
                                       "--no-report", "cc_trace");
  int lanes = 0, slices = 0;
  for (const auto& e : run.trace["traceEvents"]) {
    if (e.value("name", "") == "thread_name" && e["args"]["name"] == "Collectives") ++lanes;
    if (e.value("cat", "") == "collective") ++slices;
  }
  CHECK(lanes == 4);
  CHECK(slices == 4);
}

TEST_CASE("a run without collectives writes no collective fields") {
  const auto run = trnsim_test::run_ok(trnsim_test::example("micro/dma_queue_trn2.tasm"),
                                       "--no-report", "cc_none");
  CHECK_FALSE(run.stats.contains("collectives"));
  CHECK_FALSE(run.stats.contains("collective_time"));
  CHECK(run.invocation.out.find("collectives") == std::string::npos);
}

TEST_CASE("a collective with sizes that do not suit the run's cores is refused with exit 2") {
  const std::string err = trnsim_test::rejected_input(
      "cc_sizes.tasm", program(4, "[8, 64]", "[8, 64]", "cc=all_gather", "copy"));
  CHECK(err.find("SyncE instruction 0 (collective): all_gather over 4 ranks: dst holds src x 4 "
                 "= 2048 elements; it has 512") != std::string::npos);
}

TEST_CASE("a collective's expectation that does not suit the cores is refused with exit 2") {
  const std::string err = trnsim_test::rejected_input(
      "cc_expect.tasm", program(4, "[8, 64]", "[32, 64]", "cc=all_gather", "permute"));
  CHECK(err.find("permute over 4 cores") != std::string::npos);
}

TEST_CASE("a collective in SBUF or under .sync auto is refused with exit 2") {
  std::string text = program(4, "[8, 64]", "[8, 64]", "cc=all_reduce, op0=add", "all_reduce_add");
  text.replace(text.find("sp.collective y[:, :], x[:, :]"), 30, "sp.collective y[:, :], t[:, :]");
  text.insert(text.find(".semaphore"), ".buffer t sbuf fp32 [8, 64]\n");
  CHECK(trnsim_test::rejected_input("cc_sbuf.tasm", text).find("a collective moves HBM tensors") !=
        std::string::npos);
  std::string autosync =
      program(4, "[8, 64]", "[8, 64]", "cc=all_reduce, op0=add", "all_reduce_add");
  autosync.replace(autosync.find(".sync manual"), 12, ".sync auto");
  CHECK(trnsim_test::rejected_input("cc_auto.tasm", autosync)
            .find("a collective needs `.sync manual`") != std::string::npos);
}

TEST_CASE("the collective library kernel runs nccom-test's size on the workload's cores") {
  const auto run = trnsim_test::run_ok(trnsim_test::example("collective_kernel_all_reduce.json"),
                                       "--no-report", "cc_kernel");
  CHECK(run.stats["check"]["status"] == "pass");
  REQUIRE(run.stats["collectives"].size() == 1);
  const auto& c = run.stats["collectives"][0];
  CHECK(c["bytes"] == 4194304);
  CHECK(c["ranks"] == 4);
  models::CollectiveFabric fabric(*config::preset("trn2"));
  const Picoseconds triggered = ps(c["trigger_ns"].get<double>());
  ends_as_the_fabric_says(c, fabric.schedule(request_of(c, 4), triggered), triggered);
  CHECK(run.invocation.out.find("collectives 1: all_reduce 4.0 MiB") != std::string::npos);
  // Every op, in bf16, on 8 cores.
  for (const char* op : {"all_gather", "reduce_scatter", "all_to_all", "permute"}) {
    const std::string dir = trnsim_test::fresh_dir(std::string("cc_kernel_") + op);
    const std::string path =
        trnsim_test::write_file(dir, "w.json",
                                std::string(R"({"kernel": "collective", "op": ")") + op +
                                    R"(", "bytes": 65536, "cores": 8, "dtype": "bf16"})");
    const auto r = trnsim_test::trnsim(path + " --out " + dir + "/out --no-report", dir);
    INFO(op << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(trnsim_test::read_json(dir + "/out/stats.json")["check"]["status"] == "pass");
  }
}

TEST_CASE("the collective kernel refuses sizes that do not split over its cores, with exit 2") {
  CHECK(
      trnsim_test::rejected_input(
          "cc_kernel_bytes.json",
          R"({"kernel": "collective", "op": "all_gather", "bytes": 1000, "cores": 8, "dtype": "fp32"})")
          .find("a positive multiple of 32") != std::string::npos);
  CHECK(trnsim_test::rejected_input(
            "cc_kernel_reduce.json",
            R"({"kernel": "collective", "op": "permute", "bytes": 1024, "reduce": "max"})")
            .find("permute does not reduce") != std::string::npos);
  CHECK(trnsim_test::rejected_input(
            "cc_kernel_shape.json",
            R"({"kernel": "collective", "op": "all_reduce", "bytes": 1024, "shape": [1, 2]})")
            .find("collective takes no shape") != std::string::npos);
}

TEST_CASE("cores spread over chips are ranks on those chips for the fabric") {
  const std::string dir = trnsim_test::fresh_dir("cc_chips");
  const std::string path = trnsim_test::write_file(
      dir, "w.json",
      R"({"kernel": "collective", "op": "all_reduce", "bytes": 4194304, "cores": 16, "chips": 2,
          "dtype": "fp32"})");
  const auto r = trnsim_test::trnsim(path + " --out " + dir + "/out --no-report", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto stats = trnsim_test::read_json(dir + "/out/stats.json");
  CHECK(stats["check"]["status"] == "pass");
  const auto& c = stats["collectives"][0];
  CHECK(c["chips"] == 2);
  // Rank g is core g % 8 of chip g / 8.
  models::CollectiveRequest request = request_of(c, 4);
  for (uint32_t g = 0; g < 16; ++g) request.ranks[g] = {g / 8, g % 8};
  models::CollectiveFabric fabric(*config::preset("trn2"));
  const Picoseconds triggered = ps(c["trigger_ns"].get<double>());
  const models::CollectiveTiming t = fabric.schedule(request, triggered);
  ends_as_the_fabric_says(c, t, triggered);
  CHECK(c["algorithm"] == t.algorithm);
  // Not what one chip's 16 ranks would take: the request really names two chips.
  CHECK(t.steps == c["steps"].get<uint32_t>());
  CHECK(
      trnsim_test::rejected_input(
          "cc_chips_uneven.json",
          R"({"kernel": "collective", "op": "all_reduce", "bytes": 1024, "cores": 6, "chips": 4})")
          .find("/chips: 6 cores do not spread evenly over 4 chips") != std::string::npos);
  CHECK(
      trnsim_test::rejected_input(
          "cc_chips_many.json",
          R"({"kernel": "collective", "op": "all_reduce", "bytes": 1024, "cores": 18, "chips": 2})")
          .find("18 cores on 2 chips is 9 per chip; a trn2 chip has 8") != std::string::npos);
}

TEST_CASE("group=G makes groups of G consecutive cores, each its own collective") {
  const std::string text =
      ".arch trn2\n.cores 8\n.sync manual\n"
      ".tensor x fp32 [8, 64] init=normal(0, 1, seed=5)\n.tensor y fp32 [8, 64]\n"
      ".tensor z fp32 [16, 64]\n.semaphore done\n"
      "sp.collective y[:, :], x[:, :], cc=all_reduce, op0=add, group=2, update=done+=1\n"
      "sp.collective z[:, :], x[:, :], cc=all_gather, group=2, update=done+=1\n"
      "sp.nop wait=done>=2\n"
      ".expect y = all_reduce_add(x, group=2)\n.expect z = all_gather(x, group=2)\n";
  const std::string dir = trnsim_test::fresh_dir("cc_groups");
  const std::string path = trnsim_test::write_file(dir, "groups.tasm", text);
  const auto r = trnsim_test::trnsim(path + " --out " + dir + "/out --no-report", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto stats = trnsim_test::read_json(dir + "/out/stats.json");
  CHECK(stats["check"]["status"] == "pass");
  // Two collectives per core, in four groups of two: eight, each over 2 ranks.
  REQUIRE(stats["collectives"].size() == 8);
  std::set<std::pair<int, int>> seen;  // (index, first core)
  for (const auto& c : stats["collectives"]) {
    CHECK(c["ranks"] == 2);
    seen.insert({c["index"].get<int>(), c["first_core"].get<int>()});
  }
  CHECK(seen.size() == 8);
  CHECK(seen.count({0, 6}) == 1);
  // Against a reference over all 8 cores instead, the check fails.
  std::string whole = text;
  whole.replace(whole.find("all_reduce_add(x, group=2)"), 26, "all_reduce_add(x)");
  const std::string path2 = trnsim_test::write_file(dir, "whole.tasm", whole);
  CHECK(trnsim_test::trnsim(path2 + " --out " + dir + "/out2 --no-report", dir).exit_code == 1);
  // A group that does not divide the cores is refused.
  std::string three = text;
  three.replace(three.find("op0=add, group=2"), 16, "op0=add, group=3");
  CHECK(trnsim_test::rejected_input("cc_group3.tasm", three)
            .find("group=3 does not divide the run's 8 cores into groups") != std::string::npos);
  // The library kernel takes "group" too.
  const std::string kernel = trnsim_test::write_file(
      dir, "k.json",
      R"({"kernel": "collective", "op": "reduce_scatter", "bytes": 65536, "cores": 8,
          "group": 4, "dtype": "bf16", "reduce": "max"})");
  const auto k = trnsim_test::trnsim(kernel + " --out " + dir + "/k --no-report", dir);
  INFO(k.err);
  REQUIRE(k.exit_code == 0);
  const auto ks = trnsim_test::read_json(dir + "/k/stats.json");
  CHECK(ks["check"]["status"] == "pass");
  CHECK(ks["collectives"].size() == 2);
}

TEST_CASE(
    "collective traffic and the kernel's DMA share the engines and HBM: each slows the other") {
  // The example: an all-reduce of 16 MiB on 2 cores of one HBM stack while each core streams
  // 16 MiB into SBUF; against the same program without the stream and without the collective.
  const std::string text =
      trnsim_test::slurp(trnsim_test::example("micro/collective_overlap.tasm"));
  auto without = [&](const std::string& prefix) {
    std::string out;
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = text.find('\n', at);
      const std::string line = text.substr(at, end == std::string::npos ? end : end - at + 1);
      bool drop = false;
      for (size_t p = 0; p < prefix.size();) {
        const size_t bar = prefix.find('|', p);
        const std::string one = prefix.substr(p, bar == std::string::npos ? bar : bar - p);
        drop = drop || line.rfind(one, 0) == 0;
        p = bar == std::string::npos ? prefix.size() : bar + 1;
      }
      if (!drop) out += line;
      at = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
  };
  const std::string dir = trnsim_test::fresh_dir("cc_overlap_inputs");
  const auto both = trnsim_test::run_ok(trnsim_test::example("micro/collective_overlap.tasm"),
                                        "--no-report --timing-only", "cc_overlap_both");
  const auto alone =
      trnsim_test::run_ok(trnsim_test::write_file(dir, "cc_alone.tasm", without("act.|.expect")),
                          "--no-report --timing-only", "cc_overlap_cc_alone");
  const auto stream = trnsim_test::run_ok(
      trnsim_test::write_file(dir, "stream_alone.tasm", without("sp.|.expect|.semaphore reduced")),
      "--no-report --timing-only", "cc_overlap_stream_alone");
  const double cc_both = both.stats["collectives"][0]["duration_ns"].get<double>();
  const double cc_alone = alone.stats["collectives"][0]["duration_ns"].get<double>();
  const double dma_both = both.stats["summary"]["dma_active_time"].get<double>();
  const double dma_alone = stream.stats["summary"]["dma_active_time"].get<double>();
  INFO("collective " << cc_alone << " ns alone, " << cc_both << " ns with the stream; stream "
                     << dma_alone * 1e9 << " ns alone, " << dma_both * 1e9 << " with it");
  // Alone, a collective is the fabric's (the first test); with the stream both slow down.
  CHECK(cc_both > cc_alone * 1.05);
  CHECK(dma_both > dma_alone * 1.05);
  // Neither is slowed beyond both moving their bytes one after the other.
  CHECK(cc_both < cc_alone + dma_alone * 1e9);
  CHECK(dma_both * 1e9 < cc_alone + dma_alone * 1e9);
}
