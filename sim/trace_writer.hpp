// trace.json in Chrome trace-event format (what Perfetto and chrome://tracing open), written
// as a stream while the simulation runs: one slice per instruction and per DMA transfer, a
// slice per semaphore wait, a lane per engine and per DMA queue and a lane of kernels, one
// process per NeuronCore, and counters per core: pending DMA transfers and DMA throughput
// (GB/s). With a host model, a Host process has `framework` and `runtime` lanes, and a flow
// arrow goes from each kernel launch to the kernel on the device.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "isa/arch.hpp"
#include "isa/program.hpp"
#include "models/events.hpp"
#include "sim/output_file.hpp"
#include "sim/trace_text.hpp"

namespace trnsim::sim {

class TraceWriter : public models::EventSink {
 public:
  TraceWriter(const std::string& path, const isa::Program& program, const isa::ArchConfig& arch,
              uint32_t cores = 1);
  void on_instruction(const models::InstructionRecord& r) override;
  void on_transfer(const models::TransferRecord& r) override;
  void on_kernel(const models::KernelRecord& r) override;
  void on_host(const models::HostRecord& r) override;
  // Writes the counters, closes the JSON and the file (throws OutputError), then commit()
  // moves it into place.
  void close();
  void commit() { file_.commit(); }
  ~TraceWriter() override;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Lane (thread id) of an engine and of a DMA queue within the NeuronCore process.
  static int engine_lane(isa::Engine e) { return isa::index_of(e); }
  static int queue_lane(uint16_t q) { return 100 + q; }
  // The kernels lane of a NeuronCore (the profiler's nc_exec_running), and the host's lanes.
  static constexpr int kKernelLane = 50;
  static constexpr int kHostPid = 0;
  static constexpr int kFrameworkLane = 1;
  static constexpr int kRuntimeLane = 2;

 private:
  void event(const std::string& json);
  // Starts an event in buffer_ (the separator); finish_event() flushes when the buffer is full.
  TraceText& start_event();
  void finish_event() { flush_if_full(); }
  void flush_if_full();

  // Counters (pending DMA transfers and DMA throughput per core) are written after the slices,
  // sorted by core, counter and time, one sample per distinct time. Their steps arrive out of
  // time order (a transfer's start is known when it completes), so each (core, counter) lane
  // holds the steps that may still be followed by an earlier one, and turns the rest into
  // samples as the run goes, into a temporary file. Nothing earlier than the issue of the
  // oldest transfer in flight, or than the latest instruction, can still arrive: the steps held
  // are those of the transfers in flight, not of the whole run.
  enum class Counter : uint8_t { pending_dmas, dma_throughput };
  struct CounterStep {
    int64_t time;
    uint64_t seq;  // arrival order: steps at one time are added in it
    double delta;
    bool operator>(const CounterStep& o) const {
      return time != o.time ? time > o.time : seq > o.seq;
    }
  };
  struct CounterLane {
    std::vector<CounterStep> held;  // min-heap by (time, seq)
    double value = 0;
    TraceText samples;           // written samples, each ",\n{...}", until spilled
    std::FILE* spill = nullptr;  // a temporary file (deleted on close), once samples grow
  };
  void add_step(uint32_t core, Counter counter, int64_t time, double delta);
  // Turns the held steps earlier than `before` into samples.
  void release_steps(int64_t before);
  void release_if_safe();
  void spill(CounterLane& lane);
  void write_counters();
  CounterLane& lane(uint32_t core, Counter c) { return lanes_[core * 2 + static_cast<int>(c)]; }

  std::vector<CounterLane> lanes_;  // per core: pending DMAs, DMA throughput
  uint64_t step_seq_ = 0;
  // Issue times of the DMA transfers not yet completed (count per time), and the end of the
  // latest instruction: later records cannot bring steps before the smaller of the two.
  std::map<int64_t, uint32_t> in_flight_;
  int64_t latest_instruction_ = 0;
  uint32_t cores_;

  OutputFile file_;
  const isa::Program& program_;
  const isa::ArchConfig& arch_;
  TraceText buffer_{2 << 16};  // flushed at 64 KiB
  TraceText operands_;         // an instruction's operands, before they are quoted
  std::string write_error_;    // a write that failed during the run, reported by close()
  bool first_ = true;
};

// Picoseconds as the microseconds Chrome traces use, exactly: "12.345678".
std::string trace_timestamp(Picoseconds t);

}  // namespace trnsim::sim
