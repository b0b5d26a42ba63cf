// Sequential-read stream driver for DRAMsim3 (bench/baselines: built against a DRAMsim3 tree by run.sh; not part of trnsim).
// Issues 64 B-aligned sequential READ transactions in address order, as many per DRAM
// cycle as the controllers accept (stops at the first refusal each cycle: in-order issue),
// optionally capped per cycle, and runs until every read has returned.
// usage: stream_driver CONFIG.ini TOTAL_BYTES OUTDIR [MAX_ISSUE_PER_CYCLE (0=unlimited)]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include "memory_system.h"

int main(int argc, char** argv) {
    if (argc < 4) { std::fprintf(stderr, "usage: %s CONFIG TOTAL_BYTES OUTDIR [MAX_ISSUE]\n", argv[0]); return 2; }
    std::string cfg = argv[1];
    uint64_t total = std::strtoull(argv[2], nullptr, 0);
    std::string out = argv[3];
    uint64_t max_issue = argc > 4 ? std::strtoull(argv[4], nullptr, 0) : 0;
    uint64_t done = 0;
    auto rd = [&](uint64_t) { ++done; };
    auto wr = [&](uint64_t) {};
    dramsim3::MemorySystem* ms = dramsim3::GetMemorySystem(cfg, out, rd, wr);
    const uint64_t req = (uint64_t)ms->GetBusBits() / 8 * ms->GetBurstLength();
    const uint64_t n = (total + req - 1) / req;
    uint64_t issued = 0, clk = 0;
    auto t0 = std::chrono::steady_clock::now();
    while (done < n) {
        uint64_t k = 0;
        while (issued < n && (max_issue == 0 || k < max_issue)) {
            uint64_t a = issued * req;
            if (!ms->WillAcceptTransaction(a, false)) break;
            ms->AddTransaction(a, false);
            ++issued; ++k;
        }
        ms->ClockTick();
        ++clk;
    }
    auto t1 = std::chrono::steady_clock::now();
    double tck = ms->GetTCK();
    double ns = clk * tck;
    std::printf("config=%s bytes=%llu request_bytes=%llu requests=%llu max_issue_per_cycle=%llu\n",
                cfg.c_str(), (unsigned long long)(n * req), (unsigned long long)req,
                (unsigned long long)n, (unsigned long long)max_issue);
    std::printf("dram_cycles=%llu tCK_ns=%.3f sim_time_us=%.3f bandwidth_GBps=%.2f (GB=1e9 B)\n",
                (unsigned long long)clk, tck, ns / 1e3, (double)(n * req) / ns);
    std::printf("host_loop_s=%.3f\n", std::chrono::duration<double>(t1 - t0).count());
    ms->PrintStats();
    delete ms;
    return 0;
}
