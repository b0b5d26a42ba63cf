// The profile of a multi-kernel run, as the PyTorch profiler and the Neuron profiler show it:
// the host's time (framework dispatch, runtime launches, the final synchronization), each
// kernel's device time and what kept it busy, and a key_averages table per op name
// (torch.profiler.profile(...).key_averages().table(sort_by="device_time_total")).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/arch.hpp"
#include "isa/program.hpp"
#include "models/records/records.hpp"
#include "sim/report/key_averages.hpp"

namespace trnsim::sim {

struct KernelProfile {
  std::string name;
  std::string op;  // the host op that launched it ("" without a host model)
  Picoseconds arrived, start,
      end;  // core 0's; with several cores, the earliest start and latest end
  bool seen = false;
  uint32_t cores = 0;  // cores that ran it (one kernel record each)
  std::array<Picoseconds, kEngineCount> engine_active{};  // summed over its cores
  std::array<uint64_t, kEngineCount> instructions{};
  Picoseconds dma_busy;  // union of its transfers
  Picoseconds dma_covered_to;
  uint64_t dma_bytes = 0, dma_transfers = 0;
  Picoseconds duration() const { return end - start; }
  // The engine (or "DMA") busiest during the kernel, and its share of the kernel's time: an
  // engine's active time averaged over the cores (so at most 100%), DMA's union of transfers.
  std::pair<std::string, double> bound() const;
};

struct OpProfile {
  std::string name;
  uint64_t calls = 0;
  Picoseconds self_cpu;   // framework dispatch (and, for an op run on the host, its computation)
  Picoseconds cpu_total;  // dispatch, launch calls, and launch calls blocked on a full queue
                          // (an op run on the host: its computation and copies)
  Picoseconds device_total;
  uint64_t kernels = 0;
  Picoseconds launch;  // its launch calls, blocked time included
  Picoseconds copies;  // an op run on the host: its copies to and from the device
  Picoseconds first_start;
};

// The key_averages row names of what is not an op: the runtime's launch call (the Neuron
// runtime's nrt_execute), the copies of an op run on the host (named as torch.profiler names
// CUDA's), and the final synchronization.
inline constexpr const char* kLaunchRow = "nrt_execute";
inline constexpr const char* kToHostRow = "Memcpy DtoH (Device -> Host)";
inline constexpr const char* kToDeviceRow = "Memcpy HtoD (Host -> Device)";
inline constexpr const char* kSynchronizeRow = "synchronize";

// A kernel's row in key_averages: its name without the tensor it computes ("pow(x2)" -> "pow"),
// so that the kernels of one kind add up as torch adds up calls of one CUDA kernel.
std::string kernel_row_name(const std::string& kernel);

class ProfileCollector : public models::EventSink {
 public:
  ProfileCollector(const isa::Program& program, const config::ArchConfig& arch);
  void on_instruction(const models::InstructionRecord& r) override;
  void on_transfer(const models::TransferRecord& r) override;
  void on_kernel(const models::KernelRecord& r) override;
  void on_host(const models::HostRecord& r) override;

  bool has_host() const { return !program_.host_ops.empty(); }
  const std::vector<KernelProfile>& kernels() const { return kernels_; }
  // Per op name, sorted by device time, longest first.
  std::vector<OpProfile> key_averages() const;
  // torch.profiler's key_averages(): a row per op name, per runtime call (launches, copies, the
  // final synchronization) and per kernel name (the device's rows), in the order of their first
  // start, in microseconds.
  std::vector<KeyAveragesRow> profiler_rows() const;
  Picoseconds host_cpu() const { return host_cpu_; }          // framework + runtime, waits excluded
  Picoseconds host_copies() const { return host_copies_; }    // ops run on the host: copies
  Picoseconds host_blocked() const { return host_blocked_; }  // launch calls on a full queue
  Picoseconds sync_wait() const { return sync_; }             // the final synchronization
  Picoseconds device_busy() const;                            // sum of kernel durations
  Picoseconds first_kernel_start() const;

  // stats.json's "host", "key_averages" and "kernels" sections.
  nlohmann::json json(Picoseconds total) const;
  // The summary's tables (empty for a one-kernel run without a host model).
  std::string text(Picoseconds total) const;

 private:
  const isa::Program& program_;
  std::vector<KernelProfile> kernels_;
  std::vector<OpProfile> ops_;  // per host op (index), merged by name in key_averages()
  Picoseconds host_cpu_, host_blocked_, sync_, host_copies_;
  Picoseconds sync_start_;
  uint64_t launches_ = 0, to_host_ = 0, to_device_ = 0;
  Picoseconds launch_total_, to_host_total_, to_device_total_;
  Picoseconds first_launch_, first_to_host_, first_to_device_;
};

}  // namespace trnsim::sim
