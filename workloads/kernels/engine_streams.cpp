#include "workloads/kernels/engine_streams.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <stdexcept>

#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/thread_feed.hpp"

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

void WaitedFor::seal() {
  before_.assign(words_.size(), 0);
  int64_t n = 0;
  for (size_t w = 0; w < words_.size(); ++w) {
    before_[w] = n;
    n += __builtin_popcountll(words_[w]);
  }
}

int64_t WaitedFor::rank(uint64_t n) const {
  const uint64_t w = n / 64, bit = n % 64;
  // Bits 0..bit of the word (bit 0 of word 0, number 0, is never set).
  const uint64_t mask = bit == 63 ? ~uint64_t{0} : (uint64_t{1} << (bit + 1)) - 1;
  return before_[w] + __builtin_popcountll(words_[w] & mask);
}

EngineStreams::EngineStreams(isa::Program& program, const config::ArchConfig& arch,
                             std::string file, Mode mode)
    : program_(program), arch_(arch), file_(std::move(file)), mode_(mode) {
  engine_semaphore_.fill(-1);
}

EngineStreams::EngineStreams(isa::Program& program, const config::ArchConfig& arch,
                             std::string file, Replay replay)
    : program_(program),
      arch_(arch),
      file_(std::move(file)),
      mode_(Mode::replay),
      replay_(std::move(replay)) {
  engine_semaphore_ = replay_.numbering->engine_semaphore;
  queue_total_.resize(program_.queues.size(), 0);
  for (Engine e : kAllEngines) {
    if (replay_.numbering->instructions[index_of(e)] == 0) replay_.end_of(e);
  }
}

uint16_t EngineStreams::add_queue(const std::string& name) {
  if (mode_ == Mode::replay) {
    throw std::logic_error("EngineStreams: a queue added while replaying");
  }
  const uint16_t q = program_.add_queue(name);
  queue_total_.resize(program_.queues.size(), 0);
  return q;
}

void EngineStreams::reserve(Engine engine, uint64_t n) {
  if (mode_ != Mode::store) return;  // nothing is kept in the program
  auto& stream = program_.stream(engine);
  const uint64_t want = stream.size() + std::min<uint64_t>(n, arch_.max_instructions);
  try {
    stream.reserve(static_cast<size_t>(want));
  } catch (const std::bad_alloc&) {  // NOLINT: a hint; the stream grows as it is filled instead
  }
}

Completion EngineStreams::emit(isa::Instruction in, const Completions& after) {
  const bool dma = isa::is_dma(in.opcode);
  const Completion done = account(in.engine, in.opcode, dma ? in.dma_queue : 0,
                                  dma ? in.dst->partitions : 0, after, &in.waits);
  const int e = index_of(in.engine);
  if (mode_ == Mode::replay) {
    const StreamNumbering& numbering = *replay_.numbering;
    const Engine engine = in.engine;
    finalize(in, e, dma ? 0 : signalled_[e], numbering.waited_for);
    replay_.append(std::move(in));
    if (per_engine_[e] == numbering.instructions[e]) replay_.end_of(engine);
  } else if (mode_ == Mode::store) {
    program_.stream(in.engine).push_back(std::move(in));
  }
  return done;
}

Completion EngineStreams::count(Engine engine, isa::Opcode opcode, const Completions& after,
                                uint16_t dma_queue, uint32_t dma_partitions) {
  if (mode_ != Mode::count) {
    throw std::logic_error("EngineStreams::count: only a counting pass may skip the instruction");
  }
  if (isa::is_dma(opcode) && dma_partitions == 0) {
    throw std::logic_error("EngineStreams::count: a DMA needs its destination's partitions");
  }
  return account(engine, opcode, dma_queue, dma_partitions, after, nullptr);
}

Completion EngineStreams::account(Engine engine, isa::Opcode opcode, uint16_t dma_queue,
                                  uint32_t dma_partitions, const Completions& after,
                                  base::SmallVector<isa::SemaphoreWait, 1>* waits) {
  // The limit bounds the memory of a program held whole; a streamed one is not held.
  if (++instructions_ > arch_.max_instructions && mode_ == Mode::store) {
    throw WorkloadError(file_, "/shape",
                        fmt::format("the kernel lowers to more than {} instructions, the most one "
                                    "kernel may hold; use larger tiles or blocks (params)",
                                    arch_.max_instructions));
  }
  const int e = index_of(engine);
  auto& known = known_[e];
  known.resize(program_.semaphores.size(), 0);
  const bool replaying = mode_ == Mode::replay;
  for (const Completion& c : after.items()) {
    // The engine's own instructions complete in stream order.
    if (static_cast<int32_t>(c.semaphore) == engine_semaphore_[e]) continue;
    if (known[c.semaphore] >= c.value) continue;
    known[c.semaphore] = c.value;
    if (waits != nullptr) waits->push_back(isa::SemaphoreWait{c.semaphore, c.value});
    if (replaying) continue;  // the counting pass found what is waited for
    for (int x = 0; x < kEngineCount; ++x) {
      if (static_cast<int32_t>(c.semaphore) == engine_semaphore_[x]) {
        waited_for_[x].set(static_cast<uint64_t>(c.value));
      }
    }
  }
  Completion done;
  if (isa::is_dma(opcode)) {
    auto& total = queue_total_[dma_queue];
    total += arch_.dma_engines_for(dma_partitions);
    done = Completion{program_.queues[dma_queue].semaphore, total};
  } else {
    if (engine_semaphore_[e] < 0) {
      engine_semaphore_[e] = program_.add_semaphore(fmt::format("{}_done", key_of(engine)));
    }
    done = Completion{static_cast<uint16_t>(engine_semaphore_[e]), ++signalled_[e]};
    if (!replaying) waited_for_[e].push_back();
  }
  ++per_engine_[e];
  // Records, transfers and the engines index a stream with 32 bits; a streamed program is not
  // held to max_instructions, so this is its bound.
  if (per_engine_[e] > UINT32_MAX) {
    throw WorkloadError(file_, "/shape",
                        fmt::format("the kernel lowers to more than {} instructions on {}, the "
                                    "most a stream can index; use larger tiles or blocks (params)",
                                    UINT32_MAX, name_of(engine)));
  }
  collectives_ = collectives_ || isa::is_collective(opcode);
  if (replaying) {
    const StreamNumbering& numbering = *replay_.numbering;
    // The replay must emit what the counting pass counted, or the numbers are wrong.
    if (per_engine_[e] > numbering.instructions[e] ||
        static_cast<uint64_t>(signalled_[e]) >= numbering.waited_for[e].size()) {
      throw std::logic_error(fmt::format(
          "EngineStreams: the replay emits more {} instructions than the counting pass ({})",
          name_of(engine), numbering.instructions[e]));
    }
  }
  return done;
}

void EngineStreams::finalize(isa::Instruction& in, int e, int64_t n,
                             const std::array<WaitedFor, kEngineCount>& waited_for) const {
  if (n > 0 && waited_for[e][static_cast<uint64_t>(n)]) {
    in.updates.push_back(isa::SemaphoreUpdate{static_cast<uint16_t>(engine_semaphore_[e])});
  }
  for (auto& w : in.waits) {
    for (int x = 0; x < kEngineCount; ++x) {
      if (static_cast<int32_t>(w.semaphore) == engine_semaphore_[x]) {
        w.value = waited_for[x].rank(static_cast<uint64_t>(w.value));
      }
    }
  }
}

void EngineStreams::finish(std::function<void(EngineStreams&)> emit_again) {
  if (mode_ == Mode::replay) return;
  if (mode_ == Mode::count) {
    if (!emit_again)
      throw std::logic_error("EngineStreams::finish: a counting pass needs its replay");
    program_.feed = std::make_shared<ThreadFeed>([emit_again = std::move(emit_again),
                                                  counted = numbering(), meta = program_,
                                                  arch = arch_, file = file_](ThreadFeed& feed) {
      isa::Program program = meta;  // the semaphores and queues; no instructions
      EngineStreams replay(program, arch, file,
                           Replay{counted, [&](isa::Instruction in) { feed.append(std::move(in)); },
                                  [&](Engine e) { feed.end_of(e); }});
      emit_again(replay);
      replay.check_replayed();
    });
    program_.feed->expected_instructions = instructions_;
    program_.feed->collectives = collectives_;
    return;
  }
  for (auto& w : waited_for_) w.seal();
  for (Engine engine : kAllEngines) {
    const int e = index_of(engine);
    int64_t provisional = 0;
    for (auto& in : program_.stream(engine)) {
      finalize(in, e, isa::is_dma(in.opcode) ? 0 : ++provisional, waited_for_);
    }
  }
}

void EngineStreams::check_replayed() const {
  for (int e = 0; e < kEngineCount; ++e) {
    if (per_engine_[e] != replay_.numbering->instructions[e]) {
      throw std::logic_error(
          fmt::format("EngineStreams: the replay emitted {} {} instructions, the counting pass {}",
                      per_engine_[e], name_of(kAllEngines[e]), replay_.numbering->instructions[e]));
    }
  }
}

std::shared_ptr<const StreamNumbering> EngineStreams::numbering() {
  auto n = std::make_shared<StreamNumbering>();
  for (int e = 0; e < kEngineCount; ++e) {
    waited_for_[e].seal();
    n->waited_for[e] = std::move(waited_for_[e]);
    waited_for_[e] = WaitedFor();
  }
  n->engine_semaphore = engine_semaphore_;
  n->instructions = per_engine_;
  n->total = instructions_;
  return n;
}

}  // namespace trnsim::workloads
