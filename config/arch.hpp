// ArchConfig: every hardware parameter the model reads. The values live in data files, not
// here: arch/trn1.json, arch/trn2.json and arch/trn3.json give each parameter's value, unit and
// source (a key of ../shared/reference/trainium.md, or "assumption: why"); the build embeds
// them (cmake/embed_arch.cmake) and isa/arch_file.cpp reads them through the parameter table
// (isa/parameters.cpp), which names every field below (a field missing from that table would
// stay zero). The fields have no default values of their own.
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

#include "config/engine.hpp"

namespace trnsim::config {

struct ArchConfig {
  std::string name;

  uint32_t chip_cores{};  // NeuronCores per chip: how many cores a run may use

  // Engine clocks in MHz, indexed by Engine.
  std::array<uint32_t, kEngineCount> engine_mhz{};
  // The profiler's "NeuronCore base clock": cycle counts in its summary use it.
  uint32_t base_mhz{};

  // On-chip memories.
  uint32_t partitions{};
  uint64_t sbuf_partition_bytes{};
  uint64_t psum_partition_bytes{};
  uint32_t psum_banks{};

  // TensorE.
  uint32_t pe_rows{};               // PE array rows: the contraction over partitions
  uint32_t pe_columns{};            // PE array columns: the widest stationary
  uint32_t matmul_moving_max{};     // widest moving free size (one PSUM bank of fp32)
  uint32_t matmul_fp32_factor{};    // an fp32 matmul costs this many times a bf16 one
  uint32_t matmul_min_cycles{};     // the 64 of max(min(64, N_stationary), N_moving)
  uint32_t matmul_fp8_rate{};       // fp8 moving rows per cycle relative to bf16
  uint32_t vector_transpose_max{};  // VectorE transposes blocks of at most this square

  // Instruction costs.
  uint32_t min_ii_cycles{};  // MIN_II, in cycles of the engine that runs the instruction
  // The issuing engine's time for a DMA trigger instruction (a small register write; D1's
  // profile shows 8 ns on trn2), converted to the engine's cycles, rounded up.
  double dma_trigger_ns{};
  uint32_t gpsimd_fixed_cycles{};     // the 150 of iota/affine_select's 150 + N
  uint32_t bn_stats_free_max{};       // bn_stats input limit, elements
  uint32_t sbuf_free_elements_max{};  // Vector/Scalar free size from SBUF
  uint32_t psum_free_elements_max{};  // ... and from PSUM

  // Engine pipelines (docs/architecture.md, "Engine pipelines"). An engine is busy for an
  // instruction's initiation interval (the cost formulas), and commits its results this many of
  // its cycles later: a dependent instruction on the same engine, and the instruction's
  // semaphore updates, wait for the results. Indexed by Engine.
  std::array<uint32_t, kEngineCount> result_latency_cycles{};
  // From a semaphore update to the waiting instruction starting: the producer on the same
  // engine, on another engine, or a DMA queue's completion (D1's completion-to-wake).
  double semaphore_local_ns{};
  double semaphore_cross_engine_ns{};
  double dma_completion_wake_ns{};

  // TensorE dI/dt throttling (X2, X4: trn2 and trn3): work starts at start_fraction of full
  // rate and ramps to full over ramp_ns; when TensorE's occupancy over the last window_ns falls
  // below threshold, the limit re-engages. start_fraction 1 turns it off.
  struct TensorThrottle {
    double start_fraction{};
    double ramp_ns{};
    double window_ns{};
    double threshold{};
  } tensor_throttle;

  // Port sharing. v2: VectorE and GpSimdE cannot reach SBUF at the same time, VectorE and
  // ScalarE cannot reach PSUM at the same time. v3 removes both, except two engines on one
  // PSUM bank, and adds VectorE performance modes (2x/4x) whose bus GpSimdE shares.
  bool shared_sbuf_psum_ports{};
  bool vector_perf_modes{};

  // DMA.
  uint32_t dma_engines{};                // DMA engines per core
  uint32_t dma_queues_per_engine{};      // queues per DMA engine
  uint32_t dma_partitions_per_engine{};  // partitions one engine takes of a transfer
  double dma_engine_bytes_per_ns{};      // one engine's theoretical bandwidth
  // Fixed cost of one descriptor (one contiguous element run) on a DMA engine.
  double dma_descriptor_overhead_ns{};
  // From a cross-engine semaphore to the DMA starting. Modelled as a pipeline latency from the
  // trigger to the first byte: it does not occupy the DMA engines.
  double dma_start_latency_ns{};
  // Setting up one transfer on each DMA engine it uses (descriptor processing, one transfer at a
  // time per engine; A1), before its data moves; it overlaps the data of the engine's previous
  // transfer. The start latency plus this is a lone transfer's trigger-to-first-byte time.
  double dma_transfer_setup_ns{};
  // Peak of the core's DMA engines together (theoretical).
  double dma_peak_bytes_per_ns() const { return dma_engines * dma_engine_bytes_per_ns; }

  // DMA engine pipeline (models/dma/dma_timing.cpp). An engine moves a transfer in chunks of at
  // most dma_chunk_bytes and re-arbitrates between its queues after each chunk; it keeps at most
  // dma_engine_outstanding_chunks chunks waiting for HBM.
  uint32_t dma_chunk_bytes{};
  uint32_t dma_engine_outstanding_chunks{};
  // Memory-system model choice: false (the default) runs the detailed model above (chunks on
  // the DMA engines, HBM pieces through FR-FCFS schedulers); true runs the flow-level (fluid)
  // model of models/dma/flow_model.hpp, whose cost is per transfer instead of per byte.
  bool dma_flow_model{};
  // A hardware-generated (DGE) DMA instruction's cost, charged to the issuing engine for a
  // dma_copy with `dge` set; 0 means the preset has no DGE.
  double dma_dge_instruction_ns{};
  // DMA transpose throughput as a fraction of a copy's, HBM->SBUF and SBUF->SBUF.
  double dma_transpose_hbm_fraction{};
  double dma_transpose_sbuf_fraction{};

  // HBM. The bandwidth is one parameter, the stack's (hbm.stack_bytes_per_ns, below), which
  // drives time and MBU's denominator, so that a what-if on the bandwidth moves both together;
  // a core's share of it is derived (hbm_bytes_per_ns()).
  uint64_t hbm_capacity_bytes{};  // the chip's HBM over its cores
  // Fixed latency of the path from a DMA engine to the HBM controller and back (network on
  // chip, controller, PHY), on top of the DRAM timing below.
  double hbm_latency_ns{};

  // One HBM stack: organisation and DRAM timing. Timing in ns.
  struct Hbm {
    uint32_t cores_per_stack{};
    double stack_bytes_per_ns{};  // peak of one stack: chip bandwidth / stacks
    uint32_t pseudo_channels{};   // independent 'channels' the controller schedules
    uint32_t bank_groups{};
    uint32_t banks_per_group{};
    uint32_t row_bytes{};         // row buffer (page) per pseudo-channel
    uint32_t burst_bytes{};       // one column access
    uint32_t interleave_bytes{};  // consecutive bytes on one pseudo-channel (address map)
    double t_rcd{}, t_rp{}, t_ras{}, t_cl{}, t_cwl{}, t_wr{}, t_rtp{};
    double t_ccd_l{};  // column to column, same bank group (0: one burst time)
    double t_rrd{}, t_faw{}, t_wtr{}, t_rtw{};
    double t_refi{};  // refresh interval
    double t_rfc{};   // refresh cycle time (of one bank when per_bank_refresh)
    bool per_bank_refresh{};
    // The pseudo-channel of an interleave unit is its position in a round over the channels,
    // permuted per round by an XOR fold of the round number (channel_hash), so that tiles whose
    // rows sit a whole number of rounds apart do not all start on one channel. Assumption:
    // Neuron's address map is not public (D2 says only that addresses are interleaved over the
    // channels); XOR-folding upper address bits into the channel select is what memory
    // controllers commonly do.
    bool channel_hash{};
    uint32_t starvation_limit{};  // FR-FCFS: times the oldest request may be bypassed
    uint32_t scheduler_window{};  // FR-FCFS looks at the oldest this many queued requests
    uint32_t banks() const { return bank_groups * banks_per_group; }
    // One burst on one pseudo-channel's data bus, in ns.
    double burst_ns() const { return burst_bytes * pseudo_channels / stack_bytes_per_ns; }
  } hbm;

  // A core's share of the HBM bandwidth (B/ns = GB/s): its stack's peak over the cores that
  // share the stack; the chip's bandwidth over its cores when every stack serves the same number
  // of cores (trn1 410, trn2 362.5, trn3 612.5): what each gets when all of them stream. (MBU
  // divides by the stacks' peak instead: a core running alone can use its whole stack.)
  double hbm_bytes_per_ns() const { return hbm.stack_bytes_per_ns / hbm.cores_per_stack; }

  // The host: PyTorch dispatching ops on the CPU (framework), the Neuron runtime launching
  // kernels (runtime), and the device starting them (docs/architecture.md, "Host model").
  struct Host {
    double framework_op_ns{};    // CPU time to dispatch one PyTorch op
    double runtime_launch_ns{};  // CPU time of one kernel launch call
    double launch_latency_ns{};  // from the launch call to the device seeing it
    double kernel_setup_ns{};    // device time to start a kernel (serial)
    double sync_ns{};            // the final synchronization's CPU time after the device
    // Kernels launched and not yet finished before the next launch call blocks (the runtime's
    // NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS queue depth).
    uint32_t max_inflight{};
    // An op that runs on the host (CPU fallback): copies between host and device memory over
    // the host link, each a runtime call of fixed cost, and the CPU's rate computing the op.
    double transfer_bytes_per_ns{};  // host link bandwidth (GB/s)
    double transfer_latency_ns{};    // fixed cost of one copy call
    double cpu_bytes_per_ns{};       // bytes a CPU op reads and writes per ns
  } host;

  // The instance around the chip and its collectives (docs/chip.md). Chips are numbered
  // row-major on a torus_x x torus_y 2-D torus with wrap-around (trn1, trn2: each chip has a
  // NeuronLink to its four neighbours), or all reach each other through a switch (switched).
  struct Instance {
    uint32_t torus_x{};
    uint32_t torus_y{};
    bool switched{};
    uint32_t chips() const { return torus_x * torus_y; }
  } instance;
  // One NeuronLink between two chips, per direction.
  struct Link {
    double bytes_per_ns{};
    double latency_ns{};  // one hop: wire, SerDes, routing
  } link;
  // Collective communication (CC cores driving DMA rings).
  struct Collective {
    double step_ns{};          // alpha: fixed cost of one algorithm step (sync, DMA start)
    double launch_ns{};        // from the trigger instruction to the first step
    double reduce_fraction{};  // a DMA reduction's throughput as a fraction of a copy's
    // The runtime's choice of algorithm by size (models/collective: collective_algorithm_for):
    // mesh below mesh_max_bytes, recursive doubling/halving below rdh_max_bytes, ring above.
    uint64_t mesh_max_bytes{};
    uint64_t rdh_max_bytes{};
  } cc;

  uint32_t semaphores{};  // semaphores a program may use
  // Instructions one kernel may hold: a bound on host memory, not a hardware figure.
  uint64_t max_instructions{};
  uint32_t dma_queues{};  // DMA queues a program may name

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

// The built-in presets (arch/*.json, embedded at build time; isa/arch_file.hpp).
ArchConfig trn1();
ArchConfig trn2();
ArchConfig trn3();
std::optional<ArchConfig> preset(std::string_view name);
std::string preset_names();  // "trn1, trn2, trn3"

}  // namespace trnsim::config
