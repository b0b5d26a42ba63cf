// ArchConfig: every hardware parameter the model reads, with the presets built from the public
// Neuron documentation. Source keys (A1, A2, D2, I1, X1, ...) refer to
// ../shared/reference/trainium.md; "assumption" marks a value no public page gives (see
// docs/architecture.md, "Assumptions").
//
// ArchConfig lives in isa/ rather than sim/ (where the design brief puts presets) because
// validation (isa/), lowering (workloads/) and the models all read it, and dependencies must
// point one way: isa <- models <- sim, isa <- workloads <- sim.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trnsim::isa {

enum class Engine : uint8_t { tensor = 0, vector = 1, scalar = 2, gpsimd = 3, sync = 4 };
constexpr int kEngineCount = 5;
constexpr std::array<Engine, kEngineCount> kAllEngines = {
    Engine::tensor, Engine::vector, Engine::scalar, Engine::gpsimd, Engine::sync};
constexpr int index_of(Engine e) {
  return static_cast<int>(e);
}
// The profiler's names: TensorE, VectorE, ScalarE, GpSimdE, SyncE.
std::string_view name_of(Engine e);
// Short names used in stats.json keys, as the profiler's metric names spell them
// (tensor_engine_active_time, ...): tensor, vector, scalar, gpsimd, sync.
std::string_view key_of(Engine e);
std::optional<Engine> parse_engine(std::string_view name);

struct ArchConfig {
  std::string name;

  uint32_t chip_cores = 1;  // NeuronCores per chip (fact sheet section 2): how many a run may use

  // Engine clocks in MHz, indexed by Engine.
  std::array<uint32_t, kEngineCount> engine_mhz{};
  // The profiler's "NeuronCore base clock": cycle counts in its summary use it (X1).
  uint32_t base_mhz = 0;

  // On-chip memories.
  uint32_t partitions = 128;                  // A1, A2: 128 partitions
  uint64_t sbuf_partition_bytes = 0;          // per preset
  uint64_t psum_partition_bytes = 16 * 1024;  // A1: 16 KiB per partition
  uint32_t psum_banks = 8;                    // A1: 8 banks of 2 KiB per partition

  // TensorE.
  uint32_t pe_rows = 128;              // A1: 128x128 PE array (contraction over partitions)
  uint32_t pe_columns = 128;           // A1: stationary at most 128 columns
  uint32_t matmul_moving_max = 512;    // I1: moving free size at most 512 (one PSUM bank of fp32)
  uint32_t matmul_fp32_factor = 4;     // I1: fp32 matmul costs 4x
  uint32_t matmul_min_cycles = 64;     // I1: max(min(64, N_stationary), N_moving)
  uint32_t matmul_fp8_rate = 1;        // per preset: fp8 moving rows per cycle relative to bf16
  uint32_t vector_transpose_max = 32;  // A1: VectorE transposes 32x32 blocks

  // Instruction costs (I1).
  uint32_t min_ii_cycles = 64;  // I1: MIN_II, about 64 cycles of the engine that runs it
  // A1: "small or dependent back-to-back instructions pay about 100 cycles of static overhead"
  // (quoted for VectorE; applied to every engine for an instruction that carries a semaphore
  // wait: assumption).
  uint32_t dependent_overhead_cycles = 100;
  // Cycles the issuing engine spends on a DMA trigger instruction. Assumption: one MIN_II; the
  // descriptors are prepared ahead, as the compiler does on v2.
  uint32_t dma_trigger_cycles = 64;
  uint32_t gpsimd_fixed_cycles = 150;       // I1: iota, affine_select cost 150 + N
  uint32_t bn_stats_free_max = 512;         // section 4: bn_stats at most 512 elements
  uint32_t sbuf_free_elements_max = 65536;  // section 4: Vector/Scalar free size from SBUF
  uint32_t psum_free_elements_max = 4096;   // section 4: ... and from PSUM

  // Port sharing. v2 (A1, section 4): VectorE and GpSimdE cannot reach SBUF at the same time,
  // VectorE and ScalarE cannot reach PSUM at the same time. v3 (A2) removes both, except two
  // engines on one PSUM bank, and adds VectorE performance modes (2x/4x) whose bus GpSimdE
  // shares. Per preset.
  bool shared_sbuf_psum_ports = false;
  bool vector_perf_modes = false;

  // DMA (D1, D2).
  uint32_t dma_engines = 16;               // D1: 16 DMA engines per core
  uint32_t dma_queues_per_engine = 16;     // D1: 16 queues per engine
  uint32_t dma_partitions_per_engine = 8;  // D1: usually 8 partitions per engine (128 / 16)
  double dma_engine_bytes_per_ns = 27.0;   // D2: 27 GB/s per engine, theoretical (v2/v3)
  // Fixed cost of one descriptor (one contiguous element run) on a DMA engine. Assumption,
  // derived from D2's component-level figures: with 27 B/ns, 26 ns per descriptor makes a
  // 4 KiB run reach 85.4% of peak (D2's sustained 23 of 27 B/ns is 85.2%), 2 KiB 74.5%, and a
  // 256 B run 26.7% ("badly overhead-bound").
  double dma_descriptor_overhead_ns = 26.0;
  // D2: about 1.3 us from a cross-engine semaphore to the DMA starting. Modelled as a pipeline
  // latency from the trigger to the first byte: it does not occupy the DMA engines.
  double dma_start_latency_ns = 1300.0;
  // Peak of the core's DMA engines together (theoretical, D2).
  double dma_peak_bytes_per_ns() const { return dma_engines * dma_engine_bytes_per_ns; }

  // DMA engine pipeline (models/dma/dma_timing.cpp). An engine moves a transfer in chunks of at
  // most dma_chunk_bytes and re-arbitrates between its queues after each chunk; it keeps at most
  // dma_engine_outstanding_chunks chunks waiting for HBM. Assumptions: no public figure; 2 KiB is
  // D2's recommended minimum transfer per partition, and 4 chunks cover the HBM latency at the
  // engine's 27 B/ns.
  uint32_t dma_chunk_bytes = 2048;
  uint32_t dma_engine_outstanding_chunks = 4;
  // D2: a hardware-generated (DGE) DMA instruction costs about 600 ns on v3. Charged to the
  // issuing engine for a dma_copy with `dge` set; 0 means the preset has no DGE (v2).
  double dma_dge_instruction_ns = 0;
  // Fact sheet section 3: DMA transpose runs at up to 90% of copy throughput HBM->SBUF and 50%
  // SBUF->SBUF (trn2).
  double dma_transpose_hbm_fraction = 0.9;
  double dma_transpose_sbuf_fraction = 0.5;

  // HBM. hbm_bytes_per_ns is the core's share of the chip's bandwidth (the MBU denominator);
  // the detailed model below is per stack, shared by hbm.cores_per_stack cores.
  uint64_t hbm_capacity_bytes = 0;  // per preset: the chip's HBM over its cores
  double hbm_bytes_per_ns = 0;      // per preset: the chip's HBM bandwidth over its cores
  // Fixed latency of the path from a DMA engine to the HBM controller and back (network on
  // chip, controller, PHY), on top of the DRAM timing below. Assumption: chosen so that an idle
  // row-miss read takes about 100 ns, the usual HBM2e/HBM3 figure; no AWS figure.
  double hbm_latency_ns = 70.0;

  // One HBM stack: organisation and DRAM timing. Timing in ns. Sources per preset in arch.cpp.
  struct Hbm {
    uint32_t cores_per_stack = 1;
    double stack_bytes_per_ns = 0;  // peak of one stack: chip bandwidth / stacks
    uint32_t pseudo_channels = 16;  // independent 'channels' the controller schedules
    uint32_t bank_groups = 4;
    uint32_t banks_per_group = 4;
    uint32_t row_bytes = 1024;        // row buffer (page) per pseudo-channel
    uint32_t burst_bytes = 32;        // one column access
    uint32_t interleave_bytes = 256;  // consecutive bytes on one pseudo-channel (address map)
    double t_rcd = 14, t_rp = 14, t_ras = 34, t_cl = 14, t_cwl = 4, t_wr = 16, t_rtp = 4;
    double t_ccd_l = 0;  // column to column, same bank group (0: one burst time)
    double t_rrd = 4, t_faw = 30, t_wtr = 8, t_rtw = 4;
    double t_refi = 3900;  // refresh interval
    double t_rfc = 160;    // refresh cycle time (of one bank when per_bank_refresh)
    bool per_bank_refresh = true;
    uint32_t starvation_limit = 16;  // FR-FCFS: times the oldest request may be bypassed
    uint32_t scheduler_window = 16;  // FR-FCFS looks at the oldest this many queued requests
    uint32_t banks() const { return bank_groups * banks_per_group; }
    // One burst on one pseudo-channel's data bus, in ns.
    double burst_ns() const { return burst_bytes * pseudo_channels / stack_bytes_per_ns; }
  } hbm;

  // The host: PyTorch dispatching ops on the CPU (framework), the Neuron runtime launching
  // kernels (runtime), and the device starting them. No public figure gives these costs; all
  // are assumptions (docs/architecture.md, "Host model"), to be set per system with --set.
  struct Host {
    double framework_op_ns = 10000;    // assumption: CPU time to dispatch one PyTorch op
    double runtime_launch_ns = 15000;  // assumption: CPU time of one kernel launch call
    double launch_latency_ns = 5000;   // assumption: from the launch call to the device seeing it
    double kernel_setup_ns = 2000;     // assumption: device time to start a kernel (serial)
    double sync_ns = 10000;  // assumption: the final synchronization's CPU time after the device
    // Kernels launched and not yet finished before the next launch call blocks (the runtime's
    // NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS queue depth; assumption).
    uint32_t max_inflight = 4;
  } host;

  uint32_t semaphores = 64;  // section 6: count not public; assumption
  // Instructions one kernel may hold: a bound on host memory, not a hardware figure. An
  // Instruction takes about 1.1 KiB and lowering holds two copies, so a million keep a kernel
  // near 2 GiB (4 million needed over 5 GiB, in timing-only mode too).
  uint64_t max_instructions = 1'000'000;
  uint32_t dma_queues = 16;  // DMA queues a program may name; D1 gives 16 per engine

  uint32_t mhz(Engine e) const { return engine_mhz[index_of(e)]; }
  // DMA engines a transfer over `partitions` partitions is spread across (D1): one per
  // dma_partitions_per_engine partitions, at most all of them. The queue's semaphore rises by
  // this number when the transfer completes.
  uint32_t dma_engines_for(uint32_t partitions) const {
    const uint32_t n = (partitions + dma_partitions_per_engine - 1) / dma_partitions_per_engine;
    return n < dma_engines ? (n == 0 ? 1 : n) : dma_engines;
  }
  uint64_t sbuf_bytes() const { return sbuf_partition_bytes * partitions; }
  // Dense TensorE peak in FLOP/s for bf16: rows x columns x 2 FLOP x clock ([inferred] A1).
  double tensor_peak_flops_bf16() const {
    return 2.0 * pe_rows * pe_columns * mhz(Engine::tensor) * 1e6;
  }
};

ArchConfig trn1();
ArchConfig trn2();
std::optional<ArchConfig> preset(std::string_view name);
std::string preset_names();  // "trn1, trn2"

}  // namespace trnsim::isa
