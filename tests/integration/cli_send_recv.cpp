// Point-to-point send/recv between cores (docs/chip.md, "Send and recv"): the k-th send from
// core a to core b meets the k-th recv on b from a; the data moves from the sender's src to the
// receiver's dst when the fabric's single transfer (p2p) ends, both sides' updates fire then,
// and bad pairs are refused (exit 2) or end in the deadlock report.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cli_support.hpp"
#include "config/arch.hpp"
#include "models/collective/fabric.hpp"

using namespace trnsim;

namespace {

// On `cores` cores: each sends x to core + `send_peer` and receives into y from `recv_peer`,
// fenced on the sync engine; `extra` lines are appended.
std::string ring(uint32_t cores, const std::string& send, const std::string& recv,
                 const std::string& extra = "") {
  return ".arch trn2\n.cores " + std::to_string(cores) +
         "\n.sync manual\n.tensor x fp32 [8, 64] init=normal(0, 1, seed=5)\n"
         ".tensor y fp32 [8, 64]\n.tensor z fp32 [8, 32]\n.semaphore sent\n.semaphore got\n" +
         send + "\n" + recv + "\nsp.nop wait=sent>=1\nsp.nop wait=got>=1\n" + extra;
}

const char* kSend = "sp.collective x[:, :], cc=send, peer=+1, update=sent+=1";
const char* kRecv = "sp.collective y[:, :], cc=recv, peer=-1, update=got+=1";

Picoseconds ps(double ns) {
  return Picoseconds(static_cast<int64_t>(std::llround(ns * 1000)));
}

}  // namespace

TEST_CASE("send/recv: the pipeline example passes its check, one p2p record per pair") {
  const auto run = trnsim_test::run_ok(trnsim_test::example("micro/send_recv_pipeline.tasm"),
                                       "--no-report", "sr_example");
  CHECK(run.stats["check"]["status"] == "pass");
  REQUIRE(run.stats["collectives"].size() == 4);
  for (const auto& c : run.stats["collectives"]) {
    CHECK(c["op"] == "send_recv");
    CHECK(c["algorithm"] == "p2p");
    CHECK(c["ranks"] == 2);
    CHECK(c["steps"] == 1);
    CHECK(c["bytes"] == 128 * 512 * 4);
    CHECK(c["peer_core"] == (c["first_core"].get<uint32_t>() + 1) % 4);
    // No faster than the pair alone on an idle fabric (the four pairs share HBM stacks).
    models::CollectiveFabric fabric(*config::preset("trn2"));
    models::CollectiveRequest q;
    q.op = isa::CollectiveOp::send;
    q.bytes = c["bytes"].get<uint64_t>();
    q.ranks = {{0, c["first_core"].get<uint32_t>()}, {0, c["peer_core"].get<uint32_t>()}};
    const Picoseconds triggered = ps(c["trigger_ns"].get<double>());
    CHECK(ps(c["end_ns"].get<double>()) >= fabric.schedule(q, triggered).end);
  }
  CHECK(run.invocation.out.find("send_recv 256.0 KiB p2p 2 ranks") != std::string::npos);
  int slices = 0;
  for (const auto& e : run.trace["traceEvents"])
    if (e.value("cat", "") == "collective") ++slices;
  CHECK(slices == 8);  // each pair on the sender's and the receiver's lanes
}

TEST_CASE(
    "send/recv moves the peer's data, and one pair alone costs the fabric's p2p time or its "
    "traffic's") {
  const std::string dir = trnsim_test::fresh_dir("sr_two");
  const std::string path = trnsim_test::write_file(
      dir, "two.tasm", ring(2, kSend, kRecv, ".expect y = recv(x, peer=-1)\n"));
  const auto r = trnsim_test::trnsim(path + " --out " + dir + "/out --no-report", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto stats = trnsim_test::read_json(dir + "/out/stats.json");
  CHECK(stats["check"]["status"] == "pass");
  CHECK(stats["check"]["mismatches"] == 0);
  REQUIRE(stats["collectives"].size() == 2);
  // The first pair to meet runs on an idle fabric: CollectiveFabric's time, or its traffic's in
  // the memory system when that ends later (docs/chip.md, "Collective traffic and the kernel's
  // DMA": the HBM's access latency), within 10% for this small (2 KiB) transfer.
  const auto& c = stats["collectives"][0];
  models::CollectiveFabric fabric(*config::preset("trn2"));
  models::CollectiveRequest q;
  q.op = isa::CollectiveOp::send;
  q.bytes = 8 * 64 * 4;
  q.ranks = {{0, c["first_core"].get<uint32_t>()}, {0, c["peer_core"].get<uint32_t>()}};
  const Picoseconds triggered = ps(c["trigger_ns"].get<double>());
  const Picoseconds fabric_end = fabric.schedule(q, triggered).end;
  const Picoseconds end = ps(c["end_ns"].get<double>());
  CHECK(end >= fabric_end);
  CHECK(static_cast<double>((end - triggered).value) <=
        1.1 * static_cast<double>((fabric_end - triggered).value));
  // Against the other direction's reference, the check fails.
  const std::string wrong = trnsim_test::write_file(
      dir, "wrong.tasm", ring(4, kSend, kRecv, ".expect y = recv(x, peer=+1)\n"));
  CHECK(trnsim_test::trnsim(wrong + " --out " + dir + "/out2 --no-report", dir).exit_code == 1);
}

TEST_CASE("send/recv bad input is refused with exit 2 naming the place") {
  SECTION("missing peer") {
    const std::string err = trnsim_test::rejected_input(
        "sr_nopeer.tasm", ring(2, "sp.collective x[:, :], cc=send, update=sent+=1", kRecv));
    CHECK(err.find("cc=send needs its partner core: peer=P") != std::string::npos);
  }
  SECTION("peer out of range") {
    const std::string err = trnsim_test::rejected_input(
        "sr_range.tasm", ring(4, "sp.collective x[:, :], cc=send, peer=7, update=sent+=1", kRecv));
    CHECK(err.find("SyncE instruction 0 (collective): send peer=7: the run has cores 0 to 3") !=
          std::string::npos);
  }
  SECTION("to itself") {
    const std::string rel = trnsim_test::rejected_input(
        "sr_self.tasm", ring(4, "sp.collective x[:, :], cc=send, peer=+4, update=sent+=1", kRecv));
    CHECK(rel.find("send peer=+4: every core's partner is itself") != std::string::npos);
    const std::string abs = trnsim_test::rejected_input(
        "sr_self_abs.tasm",
        ring(4, "sp.collective x[:, :], cc=send, peer=1, update=sent+=1", kRecv));
    CHECK(abs.find("core 1 would send to itself") != std::string::npos);
  }
  SECTION("a send with a dst, a recv with a src") {
    const std::string send = trnsim_test::rejected_input(
        "sr_send_dst.tasm",
        ring(2, "sp.collective y[:, :], x[:, :], cc=send, peer=+1, update=sent+=1", kRecv));
    CHECK(send.find("cc=send takes one access pattern (src, what it sends), found 2") !=
          std::string::npos);
    CHECK(send.find(":9:") != std::string::npos);  // the line
    const std::string recv = trnsim_test::rejected_input(
        "sr_recv_src.tasm",
        ring(2, kSend, "sp.collective y[:, :], x[:, :], cc=recv, peer=-1, update=got+=1"));
    CHECK(recv.find("cc=recv takes one access pattern (dst, where it receives), found 2") !=
          std::string::npos);
  }
  SECTION("peer= on another collective, a send in SBUF") {
    CHECK(
        trnsim_test::rejected_input(
            "sr_peer_ar.tasm",
            ring(2,
                 "sp.collective y[:, :], x[:, :], cc=all_reduce, op0=add, peer=+1, update=sent+=1",
                 kRecv))
            .find("peer= is for cc=send and cc=recv, not all_reduce") != std::string::npos);
    std::string sbuf = ring(2, "sp.collective t[:, :], cc=send, peer=+1, update=sent+=1", kRecv);
    sbuf.insert(sbuf.find(".semaphore"), ".buffer t sbuf fp32 [8, 64]\n");
    CHECK(trnsim_test::rejected_input("sr_sbuf.tasm", sbuf).find("a send moves HBM tensors") !=
          std::string::npos);
  }
}

TEST_CASE("send/recv whose sizes disagree exits 2 naming both cores, no outputs") {
  const std::string err = trnsim_test::rejected_input(
      "sr_sizes.tasm", ring(2, kSend, "sp.collective z[:, :], cc=recv, peer=-1, update=got+=1"));
  // Whichever pair meets first: both disagree the same way.
  const bool forward =
      err.find(
          "send/recv #0 from core 0 to core 1: the cores disagree: core 0 "
          "sends fp32 512 elements, core 1 receives fp32 256 elements") != std::string::npos;
  const bool backward =
      err.find(
          "send/recv #0 from core 1 to core 0: the cores disagree: core 1 "
          "sends fp32 512 elements, core 0 receives fp32 256 elements") != std::string::npos;
  CHECK((forward || backward));
}

TEST_CASE("a send without its recv ends in the deadlock report naming the cores and engines") {
  const std::string dir = trnsim_test::fresh_dir("sr_deadlock");
  const std::string path = trnsim_test::write_file(
      dir, "lonely.tasm",
      ".arch trn2\n.cores 2\n.sync manual\n.tensor x fp32 [8, 64]\n.semaphore sent\n"
      "sp.collective x[:, :], cc=send, peer=+1, update=sent+=1\nsp.nop wait=sent>=1\n");
  const auto r = trnsim_test::trnsim(path + " --timing-only --out " + dir + "/out", dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the program deadlocked") != std::string::npos);
  CHECK(r.err.find("SyncE stopped at instruction 1 (nop): waits for semaphore 0 (sent)") !=
        std::string::npos);
  CHECK(r.err.find("waits for send #0 from core 0 to core 1: core 0 (SyncE) sent, core 1 never "
                   "received it") != std::string::npos);
  CHECK(r.err.find("waits for send #0 from core 1 to core 0: core 1 (SyncE) sent, core 0 never "
                   "received it") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out/stats.json"));
}
