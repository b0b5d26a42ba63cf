#include "compiler/synchronize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>

#include "isa/instruction.hpp"

namespace trnsim::compiler {

using isa::AccessPattern;
using isa::Instruction;
using isa::Memory;
using isa::Opcode;
using isa::Program;
using isa::Region;
using isa::region_of;
using isa::SemaphoreUpdate;
using isa::SemaphoreUpdateKind;
using isa::SemaphoreWait;

namespace {

struct Footprint {
  std::vector<Region> reads, writes;
};

Footprint footprint(const Instruction& in) {
  Footprint f;
  for_each_operand(in, [&](const AccessPattern& ap, bool written) {
    if (ap.present()) (written ? f.writes : f.reads).push_back(region_of(ap));
  });
  // An accumulation group reads what it adds to; copy_predicated keeps part of dst.
  if (isa::reads_dst(in) && in.dst->present()) f.reads.push_back(region_of(in.dst));
  return f;
}

bool conflicts(const Footprint& a, const Footprint& b) {
  for (const auto& w : a.writes) {
    for (const auto& r : b.reads)
      if (w.overlaps(r)) return true;
    for (const auto& x : b.writes)
      if (w.overlaps(x)) return true;
  }
  for (const auto& r : a.reads) {
    for (const auto& x : b.writes)
      if (r.overlaps(x)) return true;
  }
  return false;
}

}  // namespace

Program distribute(const std::vector<Instruction>& sequence, Program program) {
  for (auto& s : program.streams) s.clear();
  for (const auto& in : sequence) program.stream(in.engine).push_back(in);
  return program;
}

Program synchronize(const std::vector<Instruction>& sequence, Program program,
                    const config::ArchConfig& arch) {
  const size_t n = sequence.size();
  const size_t queues = program.queues.size();
  const size_t executors = kEngineCount + queues;  // engines, then DMA queues
  // Where each instruction's data access happens, and its position there.
  std::vector<size_t> exec(n), pos(n);
  std::vector<size_t> count(executors, 0);
  std::vector<Footprint> fp(n);
  for (size_t i = 0; i < n; ++i) {
    const Instruction& in = sequence[i];
    exec[i] =
        is_dma(in.opcode) ? kEngineCount + in.dma_queue : static_cast<size_t>(index_of(in.engine));
    pos[i] = count[exec[i]]++;
    fp[i] = footprint(in);
  }
  // known[x][y]: executor x knows executor y has completed its items up to position known-1.
  std::vector<std::vector<int64_t>> known(executors, std::vector<int64_t>(executors, 0));
  // What an executor knew when each of its items completed.
  std::vector<std::vector<std::vector<int64_t>>> snapshot(executors);
  std::vector<std::vector<std::pair<size_t, size_t>>> waits(n);  // (executor, position)
  std::vector<bool> signals(n, false);
  // Instructions per executor in order, to find j from (executor, position).
  std::vector<std::vector<size_t>> items(executors);
  for (size_t i = 0; i < n; ++i) items[exec[i]].push_back(i);

  auto merge = [](std::vector<int64_t>& into, const std::vector<int64_t>& from) {
    for (size_t k = 0; k < into.size(); ++k) into[k] = std::max(into[k], from[k]);
  };

  std::vector<size_t> done(executors, 0);  // items of each executor before instruction i
  for (size_t i = 0; i < n; ++i) {
    const Instruction& in = sequence[i];
    const size_t engine = static_cast<size_t>(index_of(in.engine));
    // The latest conflicting earlier instruction on each other executor, among those the
    // engine does not already know have completed (earlier ones would add no wait): the scan
    // stays short once engines synchronize, instead of going back to the program's start.
    std::vector<int64_t> need(executors, -1);
    for (size_t x = 0; x < executors; ++x) {
      if (x == engine || x == exec[i]) continue;
      const auto floor = static_cast<size_t>(std::max<int64_t>(known[engine][x], 0));
      for (size_t p = done[x]; p-- > floor;) {
        const size_t j = items[x][p];
        if (conflicts(fp[j], fp[i]) || conflicts(fp[i], fp[j])) {
          need[x] = static_cast<int64_t>(j);
          break;
        }
      }
    }
    ++done[exec[i]];
    // The issuing engine waits; its own stream and (for a DMA) its queue's order are implied,
    // and so is whatever the engine already knows.
    std::vector<std::pair<size_t, size_t>> candidates;  // (executor, position)
    for (size_t x = 0; x < executors; ++x) {
      if (need[x] < 0 || x == engine || x == exec[i]) continue;
      const size_t j = static_cast<size_t>(need[x]);
      if (known[engine][x] > static_cast<int64_t>(pos[j])) continue;
      candidates.emplace_back(x, pos[j]);
    }
    // A candidate that another candidate's completion already implies needs no wait of its own.
    for (const auto& [x, p] : candidates) {
      bool implied = false;
      for (const auto& [x2, p2] : candidates) {
        if (x2 != x && snapshot[x2][p2][x] > static_cast<int64_t>(p)) implied = true;
      }
      if (implied) continue;
      waits[i].emplace_back(x, p);
      signals[items[x][p]] = true;
      merge(known[engine], snapshot[x][p]);
    }
    if (exec[i] == engine) {
      // Later instructions of the engine know this one finished (the stream is in order).
      known[engine][engine] = static_cast<int64_t>(pos[i]) + 1;
      snapshot[engine].push_back(known[engine]);
    } else {
      // A transfer starts after its trigger, so it knows what the engine knew; the queue
      // completes in order, so it knows every earlier transfer of the queue.
      const size_t q = exec[i];
      merge(known[q], known[engine]);
      known[q][q] = static_cast<int64_t>(pos[i]) + 1;
      snapshot[q].push_back(known[q]);
    }
  }

  // Engine semaphores, only for engines that others wait on; tickets count signalling items.
  std::vector<int32_t> engine_sem(kEngineCount, -1);
  std::vector<std::vector<int64_t>> ticket(executors);
  for (size_t x = 0; x < executors; ++x) {
    int64_t t = 0;
    for (size_t j : items[x]) {
      if (x < static_cast<size_t>(kEngineCount)) {
        if (signals[j]) ++t;
      } else {
        t += arch.dma_engines_for(sequence[j].dst->partitions);  // hardware counts DMA engines
      }
      ticket[x].push_back(t);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (signals[i] && exec[i] < static_cast<size_t>(kEngineCount) && engine_sem[exec[i]] < 0) {
      engine_sem[exec[i]] = program.add_semaphore(
          fmt::format("{}_sync", assembler_name_of(static_cast<Engine>(exec[i]))));
    }
  }
  for (auto& s : program.streams) s.clear();
  std::array<size_t, kEngineCount> per_engine{};
  for (const auto& in : sequence) ++per_engine[index_of(in.engine)];
  for (Engine e : kAllEngines) program.stream(e).reserve(per_engine[index_of(e)]);
  for (size_t i = 0; i < n; ++i) {
    Instruction in = sequence[i];
    for (const auto& [x, p] : waits[i]) {
      const uint16_t sem = x < static_cast<size_t>(kEngineCount)
                               ? static_cast<uint16_t>(engine_sem[x])
                               : program.queues[x - kEngineCount].semaphore;
      in.waits.push_back(SemaphoreWait{sem, ticket[x][p]});
    }
    if (signals[i] && exec[i] < static_cast<size_t>(kEngineCount)) {
      in.updates.push_back(SemaphoreUpdate{static_cast<uint16_t>(engine_sem[exec[i]])});
    }
    program.stream(in.engine).push_back(std::move(in));
  }
  (void)queues;
  return program;
}

}  // namespace trnsim::compiler
