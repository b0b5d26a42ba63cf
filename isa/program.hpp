// A Program: one in-order instruction stream per engine, the semaphores and DMA queues they
// synchronize through, and the HBM tensors they read and write. A Program is one kernel
// launch on one NeuronCore, or a sequence of kernels (`kernels`) that share the HBM tensors
// and run one after another, each started by the host (`host_ops`).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "isa/instruction.hpp"
#include "isa/instruction_stream.hpp"

namespace trnsim::isa {

struct Semaphore {
  std::string name;
};

// A DMA queue completes its transfers in order and raises its own semaphore by the number of
// DMA engines that took part in each (D1), so the semaphore is named after the queue.
struct DmaQueue {
  std::string name;
  uint16_t semaphore = 0;
};

struct DramTensor {
  std::string name;
  DType dtype = DType::fp32;
  std::vector<int64_t> shape;
  uint64_t address = 0;
  uint64_t elements() const;
  uint64_t bytes() const { return elements() * size_of(dtype); }
};

// One kernel of a multi-kernel program: where it begins in each engine's stream. A kernel
// starts when the previous one has finished on every engine and all its DMA transfers have
// completed; the semaphores are reset to zero between kernels, as a new launch starts them.
struct KernelSpan {
  std::string name;
  std::array<uint32_t, kEngineCount> first{};  // first instruction of each engine's stream
};

// One framework-level op on the host (a PyTorch op call, or a compiled graph's call): it is
// dispatched on the CPU, then launches its kernels (indices into Program::kernels) in order.
// An op with no kernels is a view (metadata only: dispatched, nothing launched) or, with
// on_host, an op that runs on the host as a device backend's CPU fallback runs it: the host
// waits for the device, copies the op's inputs to the host, computes, and copies its results
// back (docs/workloads.md, "Ops that run on the host").
struct HostCopy {
  std::string tensor;
  uint64_t bytes = 0;
};
struct HostOp {
  HostOp() = default;
  HostOp(std::string op_name, std::vector<uint32_t> launched)
      : name(std::move(op_name)), kernels(std::move(launched)) {}
  std::string name;
  std::vector<uint32_t> kernels;
  bool on_host = false;
  std::vector<HostCopy> to_host;    // inputs copied device -> host
  std::vector<HostCopy> to_device;  // results copied host -> device
  uint64_t host_bytes = 0;          // bytes the CPU reads and writes computing the op
};

// A lowering that appends a program's instructions while the run reads them, so that a long
// program is never held whole (a streamed program; docs/performance.md, "Flat memory"). The
// readers ask for an instruction before they read it (Program::has), and tell how far they no
// longer need the stream (passed), so that the blocks behind them can be freed. A streamed
// program is one kernel (Program::kernels empty) on one core.
struct Program;
class StreamFeed {
 public:
  virtual ~StreamFeed() = default;
  // Lowers on, into `program` (the one being read: a Program moves between its lowering and
  // its run), until engine e's stream holds instruction i or the lowering has ended; returns
  // whether the stream holds it.
  virtual bool fill(Program& program, Engine e, size_t i) = 0;
  // Whether the lowering has ended (every stream is whole, though its start may be freed).
  virtual bool ended() const = 0;
  // Rethrows the lowering's error if it failed (a bad instruction, a workload error): the
  // readers then found the streams ending early.
  virtual void rethrow_error() const = 0;
  // Called for every instruction as it is appended, with its engine stream position; throws
  // for a bad one (the run sets isa::validate_instruction here).
  std::function<void(const Instruction&, size_t)> check;
  // Whether the program triggers collectives (known before its instructions are).
  bool collectives = false;
  // About how many instructions the lowering will append (for progress), 0: not known.
  uint64_t expected_instructions = 0;
};

struct Program {
  std::string name;
  std::array<InstructionStream, kEngineCount> streams;
  std::vector<Semaphore> semaphores;
  std::vector<DmaQueue> queues;
  std::vector<DramTensor> dram_tensors;
  // Empty: the whole program is one kernel. Otherwise kernels[k] covers the stream positions
  // from kernels[k].first up to kernels[k + 1].first.
  std::vector<KernelSpan> kernels;
  // Empty: no host model; the (first) kernel starts at time 0. Otherwise the host dispatches
  // these ops in order and every kernel is launched by exactly one of them, in kernel order.
  std::vector<HostOp> host_ops;
  // Source locations ("kernel.py:12") of instructions traced from a kernel written in Python:
  // Instruction::source is 1 + an index into this table (kept once per program, not per
  // instruction).
  std::vector<std::string> sources;

  // Set for a streamed program, whose streams fill while the run reads them (null: whole).
  // Copies share it: copy a streamed program only once its lowering has ended.
  std::shared_ptr<StreamFeed> feed;

  // Whether engine e's stream holds instruction i: lowering on to it if the program is streamed.
  // The run holds its program const; a streamed program's streams still fill and drain while it
  // is read, through these two only.
  bool has(Engine e, size_t i) const {
    return i < stream(e).size() ||
           (feed != nullptr && feed->fill(const_cast<Program&>(*this), e, i));
  }
  // No reader needs engine e's instructions below i any more: a streamed program frees them.
  void passed(Engine e, size_t i) const {
    if (feed != nullptr) const_cast<Program&>(*this).stream(e).release_below(i);
  }
  InstructionStream& stream(Engine e) { return streams[index_of(e)]; }
  const InstructionStream& stream(Engine e) const { return streams[index_of(e)]; }
  uint16_t add_semaphore(std::string name);
  uint16_t add_queue(std::string name);  // also adds the queue's semaphore
  // Places a tensor in HBM after the ones already there, aligned to 64 bytes; returns it.
  const DramTensor& add_dram_tensor(std::string name, DType dtype, std::vector<int64_t> shape);
  const DramTensor* find_dram_tensor(const std::string& name) const;
  uint64_t dram_bytes() const;  // end of the highest tensor
  uint64_t instruction_count() const;
  size_t kernel_count() const { return kernels.empty() ? 1 : kernels.size(); }
  // [begin, end) of kernel k in engine e's stream.
  std::pair<uint32_t, uint32_t> kernel_range(size_t k, Engine e) const;
  // "kernel.py:12" for an instruction's source, or "" when it has none.
  const std::string& source_of(const Instruction& in) const;
};

// Appends `kernel` (a one-kernel program) to `whole` as kernel `name`. Semaphores and queues
// are shared by name (they are reset between kernels). Every HBM tensor of `kernel` is bound
// to a tensor of `whole`: binding maps the kernel's tensor name to the whole program's (a name
// missing from `binding` maps to itself); the tensors must exist in `whole` with the same
// number of bytes, and the kernel's DMA addresses are moved onto them. Throws
// std::invalid_argument when a tensor is missing or differs in size.
void append_kernel(Program& whole, const Program& kernel, const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& binding = {});

// Kernel k of `program` as a program of its own (same semaphores, queues and tensors).
Program kernel_program(const Program& program, size_t k);

}  // namespace trnsim::isa
