#include "workloads/kernels/engine_streams.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>

#include "workloads/kernels/kernel.hpp"

namespace trnsim::workloads {

void Completions::add(Completion c) {
  if (c.value <= 0) return;
  for (auto& item : items_) {
    if (item.semaphore == c.semaphore) {
      item.value = std::max(item.value, c.value);
      return;
    }
  }
  items_.push_back(c);
}

void Completions::add(const Completions& other) {
  for (const auto& c : other.items_) add(c);
}

EngineStreams::EngineStreams(isa::Program& program, const config::ArchConfig& arch,
                             std::string file)
    : program_(program), arch_(arch), file_(std::move(file)) {
  engine_semaphore_.fill(-1);
}

uint16_t EngineStreams::add_queue(const std::string& name) {
  const uint16_t q = program_.add_queue(name);
  queue_total_.resize(program_.queues.size(), 0);
  return q;
}

void EngineStreams::reserve(Engine engine, uint64_t n) {
  auto& stream = program_.stream(engine);
  const uint64_t want = stream.size() + std::min<uint64_t>(n, arch_.max_instructions);
  try {
    stream.reserve(static_cast<size_t>(want));
  } catch (const std::bad_alloc&) {  // NOLINT: a hint; the stream grows as it is filled instead
  }
}

Completion EngineStreams::emit(isa::Instruction in, const Completions& after) {
  if (++instructions_ > arch_.max_instructions) {
    throw WorkloadError(file_, "/shape",
                        fmt::format("the kernel lowers to more than {} instructions, the most one "
                                    "kernel may hold; use larger tiles or blocks (params)",
                                    arch_.max_instructions));
  }
  const int e = index_of(in.engine);
  auto& known = known_[e];
  known.resize(program_.semaphores.size(), 0);
  for (const Completion& c : after.items()) {
    // The engine's own instructions complete in stream order.
    if (static_cast<int32_t>(c.semaphore) == engine_semaphore_[e]) continue;
    if (known[c.semaphore] >= c.value) continue;
    known[c.semaphore] = c.value;
    in.waits.push_back(isa::SemaphoreWait{c.semaphore, c.value});
    for (int x = 0; x < kEngineCount; ++x) {
      if (static_cast<int32_t>(c.semaphore) == engine_semaphore_[x]) {
        waited_for_[x][static_cast<size_t>(c.value)] = true;
      }
    }
  }
  Completion done;
  if (isa::is_dma(in.opcode)) {
    auto& total = queue_total_[in.dma_queue];
    total += arch_.dma_engines_for(in.dst->partitions);
    done = Completion{program_.queues[in.dma_queue].semaphore, total};
  } else {
    if (engine_semaphore_[e] < 0) {
      engine_semaphore_[e] = program_.add_semaphore(fmt::format("{}_done", key_of(in.engine)));
      waited_for_[e].assign(1, false);  // numbers start at 1
    }
    done = Completion{static_cast<uint16_t>(engine_semaphore_[e]), ++signalled_[e]};
    waited_for_[e].push_back(false);
  }
  program_.stream(in.engine).push_back(std::move(in));
  return done;
}

void EngineStreams::finish() {
  // Final number of each provisional number: how many waited-for instructions up to it.
  std::array<std::vector<int64_t>, kEngineCount> renumber;
  for (int e = 0; e < kEngineCount; ++e) {
    renumber[e].assign(waited_for_[e].size(), 0);
    int64_t n = 0;
    for (size_t i = 1; i < waited_for_[e].size(); ++i) {
      if (waited_for_[e][i]) ++n;
      renumber[e][i] = n;
    }
  }
  for (Engine engine : kAllEngines) {
    const int e = index_of(engine);
    int64_t provisional = 0;
    for (auto& in : program_.stream(engine)) {
      if (!isa::is_dma(in.opcode)) {
        ++provisional;
        if (waited_for_[e][static_cast<size_t>(provisional)]) {
          in.updates.push_back(isa::SemaphoreUpdate{static_cast<uint16_t>(engine_semaphore_[e])});
        }
      }
      for (auto& w : in.waits) {
        for (int x = 0; x < kEngineCount; ++x) {
          if (static_cast<int32_t>(w.semaphore) == engine_semaphore_[x]) {
            w.value = renumber[x][static_cast<size_t>(w.value)];
          }
        }
      }
    }
  }
}

}  // namespace trnsim::workloads
