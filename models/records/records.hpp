// What the models report as they run: one record per instruction and per DMA transfer. The
// records are plain structs of numbers (no strings, no allocation); sim/ turns them into
// statistics and traces.
#pragma once

#include <cstdint>

#include "base/units.hpp"
#include "config/arch.hpp"

namespace trnsim::models {

constexpr int32_t kNoSemaphore = -1;

struct InstructionRecord {
  int core = 0;
  uint32_t kernel = 0;  // which kernel of the program (isa::Program::kernels), 0 if one
  Engine engine = Engine::sync;
  uint32_t index = 0;     // position in the engine's stream
  Picoseconds ready;      // the previous instruction of the engine finished
  Picoseconds start;      // every semaphore wait was met and the shared ports were free
  Picoseconds port_wait;  // part of [ready, start) spent waiting for a shared port
  // Part of [ready, start) before the port wait spent on the pipeline: waiting for a producer's
  // results on the same engine, or for a met semaphore to wake the engine.
  Picoseconds pipeline_wait;
  Picoseconds end;      // the engine can issue its next instruction (initiation interval)
  Picoseconds results;  // its results are committed and its semaphore updates fire (>= end)
  Cycles cycles;        // cost in the engine's clock
  int32_t blocked_on = kNoSemaphore;  // the last semaphore the instruction waited for
};

// What a sink may ask while it handles a transfer record: no transfer record still to come
// starts before later_starts_from(). (A sink that keeps intervals to take their union can sum
// and drop the ones that end by then.)
class TransferHorizon {
 public:
  virtual Picoseconds later_starts_from() const = 0;

 protected:
  ~TransferHorizon() = default;
};

struct TransferRecord {
  int core = 0;
  uint32_t kernel = 0;
  uint16_t queue = 0;
  Engine issuer = Engine::sync;
  uint32_t index = 0;  // the DMA instruction's position in the issuer's stream
  Picoseconds issued;  // trigger completed on the issuing engine
  Picoseconds start;   // first DMA engine starts
  Picoseconds end;     // semaphore raised
  uint64_t bytes = 0;
  uint32_t engines = 0;
  uint64_t descriptors = 0;
  const TransferHorizon* horizon = nullptr;  // valid during the on_transfer call only
};

// One collective of the program (its k-th on every rank), from the last rank's trigger to the
// end of its last step (models/collective/fabric.hpp). Numbers only: op is an
// isa::CollectiveOp, algorithm an index into models::collective_algorithms().
struct CollectiveRecord {
  uint32_t index = 0;       // the k-th collective each rank triggered
  uint32_t first_core = 0;  // its ranks are cores first_core .. first_core + ranks - 1
  uint8_t op = 0;
  uint8_t algorithm = 0;
  uint32_t ranks = 0;
  uint32_t chips = 1;  // the ranks' chips
  uint32_t steps = 0;
  uint64_t bytes = 0;         // nccom-test's size (isa/collective.hpp)
  Picoseconds first_trigger;  // the first rank triggered it
  Picoseconds triggered;      // the last rank triggered it: the fabric is asked then
  Picoseconds start;          // the first step starts
  Picoseconds end;            // every rank's output is in place; the updates fire
  // A send/recv pair (op send, algorithm p2p, 2 ranks): first_core sent to peer_core.
  bool point_to_point = false;
  uint32_t peer_core = 0;
};

// The cores of a collective: first_core .. first_core + ranks - 1, or a send/recv's two.
inline bool collective_has_core(const CollectiveRecord& r, uint32_t core) {
  if (r.point_to_point) return core == r.first_core || core == r.peer_core;
  return core >= r.first_core && core < r.first_core + r.ranks;
}

// One transfer of a collective's traffic in the memory system (docs/chip.md, "Collective
// traffic and the kernel's DMA"): what one rank sends in one step, moved by its core's DMA
// engines on the collectives' own queue.
struct CollectiveTransferRecord {
  int core = 0;
  uint32_t collective = 0;      // the collective's index (CollectiveRecord::index)
  uint32_t first_core = 0;      // of the collective's group; a send/recv's sender
  bool point_to_point = false;  // a send/recv pair's (collective is then its k)
  Picoseconds issued;           // submitted to the memory system
  Picoseconds start;            // its data started moving
  Picoseconds end;              // completed
  uint64_t bytes = 0;
};

// One kernel on one core, from its start (the previous kernel drained, the launch arrived and
// the device set it up) to its end (every engine finished and every transfer completed).
struct KernelRecord {
  int core = 0;
  uint32_t kernel = 0;
  Picoseconds arrived;  // the launch reached the device (0 without a host model)
  Picoseconds start;
  Picoseconds end;
};

// Host activity (only with a host model, isa::Program::host_ops).
enum class HostLane : uint8_t { framework, runtime };
enum class HostActivity : uint8_t {
  dispatch,     // framework: the op's CPU time
  launch,       // runtime: a kernel launch call
  queue_full,   // runtime: the launch call blocked until an earlier kernel finished
  synchronize,  // runtime: waiting for the device at the end, then the sync's own cost
  // An op with no lowering, run on the host (isa::HostOp::on_host):
  to_host,       // runtime: copying one input to the host, after waiting for the device
  host_compute,  // framework: the op computed by the CPU
  to_device,     // runtime: copying one result back to the device
};
struct HostRecord {
  HostLane lane = HostLane::framework;
  HostActivity activity = HostActivity::dispatch;
  uint32_t op = 0;      // index into isa::Program::host_ops
  int32_t kernel = -1;  // the kernel launched (launch, queue_full), else -1
  int32_t copy = -1;    // to_host, to_device: the index into the op's to_host or to_device list
  Picoseconds start;
  Picoseconds end;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_instruction(const InstructionRecord& r) = 0;
  virtual void on_transfer(const TransferRecord& r) = 0;
  virtual void on_kernel(const KernelRecord&) {}
  virtual void on_host(const HostRecord&) {}
  virtual void on_collective(const CollectiveRecord&) {}
  virtual void on_collective_transfer(const CollectiveTransferRecord&) {}
};

}  // namespace trnsim::models
