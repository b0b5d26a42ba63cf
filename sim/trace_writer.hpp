// trace.json in Chrome trace-event format (what Perfetto and chrome://tracing open), written
// as a stream while the simulation runs: one slice per instruction and per DMA transfer, a
// slice per semaphore wait, a lane per engine and per DMA queue and a lane of kernels, one
// process per NeuronCore, and counters per core: pending DMA transfers and DMA throughput
// (GB/s). With a host model, a Host process has `framework` and `runtime` lanes, and a flow
// arrow goes from each kernel launch to the kernel on the device.
#pragma once

#include <string>
#include <vector>

#include "isa/arch.hpp"
#include "isa/program.hpp"
#include "models/events.hpp"
#include "sim/output_file.hpp"

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
  void flush_if_full();
  void write_counters();

  // Counter changes, kept as the run goes (two or three per transfer) and written at the end
  // as Chrome "C" events, one per change: the count grows with transfers, not with time.
  enum class Counter : uint8_t { pending_dmas, dma_throughput };
  struct CounterStep {
    int64_t time;
    uint32_t core;
    Counter counter;
    double delta;
  };
  std::vector<CounterStep> steps_;
  uint32_t cores_;

  OutputFile file_;
  const isa::Program& program_;
  const isa::ArchConfig& arch_;
  std::string buffer_;
  std::string write_error_;  // a write that failed during the run, reported by close()
  bool first_ = true;
};

// Picoseconds as the microseconds Chrome traces use, exactly: "12.345678".
std::string trace_timestamp(Picoseconds t);

}  // namespace trnsim::sim
