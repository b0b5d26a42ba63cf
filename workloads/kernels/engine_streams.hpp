// Hand synchronization for lowerings that emit many instructions. isa::synchronize finds the
// dependencies itself but compares every instruction with every earlier one, which is too slow
// for the hundreds of thousands of instructions a large matmul lowers to. Here the lowering
// says what each instruction must wait for (the completions of the instructions and transfers
// that last touched its operands), and EngineStreams turns that into semaphore waits and
// updates, as a compiler does:
//   - an instruction on an engine completes when the engine's semaphore reaches its number
//     among that engine's signalling instructions; a DMA transfer when its queue's semaphore
//     reaches the running total of DMA engines of the queue's transfers (D1);
//   - a wait is left out when the engine's own stream order implies it, or when the engine
//     already waited for that semaphore to reach as much (a wait met by a late update costs
//     the engine the semaphore's wake latency, pipeline.semaphore_*_ns);
//   - finish() keeps updates only on the instructions someone waits for, and renumbers.
// A streamed program (isa::StreamFeed) cannot wait for finish(): its instructions are read
// while later ones are lowered. Its lowering runs twice. The first pass counts (Mode::count:
// it keeps no instruction, only which are waited for and how many each engine has); the
// second (a Replay) writes each instruction final as it is emitted, with the same updates and
// numbers finish() would give, and says when an engine's stream has ended. Both passes emit
// the same instructions in the same order, so a streamed program equals the whole one.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/small_vector.hpp"
#include "config/arch.hpp"
#include "isa/program.hpp"

namespace trnsim::workloads {

// "Semaphore `semaphore` has reached `value`": an instruction or transfer has completed.
struct Completion {
  uint16_t semaphore = 0;
  int64_t value = 0;  // 0: nothing to wait for
};

// A set of completions, at most one per semaphore (the highest value). Kept inline: a
// lowering builds one or more for every instruction, and an instruction waits for a few
// semaphores at most.
class Completions {
 public:
  Completions() = default;
  Completions(Completion c) { add(c); }  // NOLINT: a single completion is a set of one
  void add(Completion c);
  void add(const Completions& other);
  bool empty() const { return items_.empty(); }
  const base::SmallVector<Completion, 4>& items() const { return items_; }

 private:
  base::SmallVector<Completion, 4> items_;
};

inline Completions operator+(Completions a, const Completions& b) {
  a.add(b);
  return a;
}

// The accesses to one on-chip region (an SBUF tile, a PSUM bank) that a new access must wait
// for: a reader waits for the last write (read after write); a writer waits for the reads since
// that write (write after read), which themselves waited for the write, or for the write when
// nothing has read it (write after write).
class RegionAccesses {
 public:
  Completions before_read() const { return write_; }
  Completions before_write() const { return reads_.empty() ? write_ : reads_; }
  Completions before_update() const { return write_ + reads_; }  // read-modify-write
  void read(Completion c) { reads_.add(c); }
  void wrote(const Completions& c) {
    write_ = c;
    reads_ = Completions();
  }

 private:
  Completions write_;
  Completions reads_;
};

// Which of an engine's signalling instructions are waited for, by provisional number (from
// 1), and each one's final number: how many waited-for ones there are up to it. One bit per
// instruction and a count per 64, so that a pass over millions of instructions stays small.
class WaitedFor {
 public:
  WaitedFor() { push_back(); }  // number 0: nothing
  void push_back() {
    if (size_ % 64 == 0) words_.push_back(0);
    ++size_;
  }
  void set(uint64_t n) { words_[n / 64] |= uint64_t{1} << (n % 64); }
  uint64_t size() const { return size_; }  // numbers 0 .. size() - 1
  bool operator[](uint64_t n) const { return (words_[n / 64] >> (n % 64) & 1) != 0; }
  // Call after the last set(): rank() needs the counts before each word.
  void seal();
  // How many of 1..n are waited for: n's final number.
  int64_t rank(uint64_t n) const;

 private:
  uint64_t size_ = 0;
  std::vector<uint64_t> words_;
  std::vector<int64_t> before_;  // set bits in the words before each
};

// What a counting pass found, for the pass that streams (EngineStreams::Replay).
struct StreamNumbering {
  std::array<WaitedFor, kEngineCount> waited_for;
  std::array<int32_t, kEngineCount> engine_semaphore{};  // -1: the engine signals nothing
  std::array<uint64_t, kEngineCount> instructions{};     // each engine's stream, DMA included
  uint64_t total = 0;
};

class EngineStreams {
 public:
  enum class Mode {
    store,   // into the program's streams; finish() then puts the updates in and renumbers
    count,   // keep nothing: a first pass for a streamed program (numbering())
    replay,  // hand each instruction on final (the Replay constructor)
  };
  // A second pass that hands each instruction on final, as it is emitted.
  struct Replay {
    std::shared_ptr<const StreamNumbering> numbering;
    std::function<void(isa::Instruction)> append;
    std::function<void(Engine)> end_of;  // the engine's stream has ended
  };

  // Instructions beyond arch.max_instructions are refused with a WorkloadError naming
  // `file` /shape, in Mode::store only (the limit bounds the memory of a program held whole).
  EngineStreams(isa::Program& program, const config::ArchConfig& arch, std::string file,
                Mode mode = Mode::store);
  // `program` holds the semaphores and queues the counting pass left (no instructions are
  // added to it). Engines that have no instructions are ended at once.
  EngineStreams(isa::Program& program, const config::ArchConfig& arch, std::string file,
                Replay replay);

  // Adds a DMA queue (and its semaphore) to the program.
  uint16_t add_queue(const std::string& name);

  // Appends `in` to its engine's stream after the waits `after` needs; returns its completion
  // (the transfer's, for a DMA trigger).
  Completion emit(isa::Instruction in, const Completions& after);

  // A counting pass keeps no instruction, so a lowering need not build them: count() is emit()
  // for an instruction known only by what the pass reads of it (its engine and opcode; for a
  // DMA, its queue and destination partitions, which it must give). Mode::count only
  // (std::logic_error otherwise).
  bool counting() const { return mode_ == Mode::count; }
  Completion count(Engine engine, isa::Opcode opcode, const Completions& after,
                   uint16_t dma_queue = 0, uint32_t dma_partitions = 0);

  uint64_t instructions() const { return instructions_; }

  // Makes room in `engine`'s stream for about `n` more instructions before the first emit(), so
  // that a long stream is written once into its final place instead of being copied (and its
  // fresh pages zeroed) at every doubling. A hint only: an estimate too low or too high changes
  // no instruction, and a reservation the system refuses is skipped. Room that is never written
  // costs address space, not memory (a large stream is its own mapping, LargePageAllocator).
  void reserve(Engine engine, uint64_t n);

  // Call once, after the last emit(). Mode::store: puts semaphore updates on the instructions
  // that are waited for, and numbers the waits accordingly. Mode::count: makes the program
  // streamed; its feed (ThreadFeed) runs `emit_again` on a Replay as the run reads the program.
  // `emit_again` must emit the very instructions of this pass, in the same order, and own
  // everything it uses (it runs after the lowering has returned).
  void finish(std::function<void(EngineStreams&)> emit_again = nullptr);

  // Mode::count, after the last emit(), once (finish() calls it): what a Replay needs.
  std::shared_ptr<const StreamNumbering> numbering();
  // A Replay, after the last emit(): throws std::logic_error unless it emitted, engine by engine,
  // as many instructions as the counting pass (more is refused by emit() itself).
  void check_replayed() const;

 private:
  // What emit() and count() share: the waits `after` needs on `engine` (appended to `waits`
  // unless null), the completion, and each pass's bookkeeping.
  Completion account(Engine engine, isa::Opcode opcode, uint16_t dma_queue, uint32_t dma_partitions,
                     const Completions& after, base::SmallVector<isa::SemaphoreWait, 1>* waits);
  // An update on `in` if it is waited for (provisional number n on engine e), and the waits'
  // final numbers.
  void finalize(isa::Instruction& in, int e, int64_t n,
                const std::array<WaitedFor, kEngineCount>& waited_for) const;

  isa::Program& program_;
  const config::ArchConfig& arch_;
  std::string file_;
  Mode mode_ = Mode::store;
  Replay replay_;  // Mode::replay
  uint64_t instructions_ = 0;
  std::array<uint64_t, kEngineCount> per_engine_{};
  bool collectives_ = false;  // a collective was emitted (a streamed program says so)
  std::array<int32_t, kEngineCount> engine_semaphore_;
  // Provisional numbering: the n-th non-DMA instruction of an engine completes as n.
  std::array<int64_t, kEngineCount> signalled_{};
  std::array<WaitedFor, kEngineCount> waited_for_;  // by provisional number
  std::vector<int64_t> queue_total_;                // by queue
  // known_[engine][semaphore]: the value the engine has already waited for.
  std::array<std::vector<int64_t>, kEngineCount> known_;
};

}  // namespace trnsim::workloads
