#include "isa/arch.hpp"

namespace trnsim::isa {

std::string_view name_of(Engine e) {
  switch (e) {
    case Engine::tensor:
      return "TensorE";
    case Engine::vector:
      return "VectorE";
    case Engine::scalar:
      return "ScalarE";
    case Engine::gpsimd:
      return "GpSimdE";
    case Engine::sync:
      return "SyncE";
  }
  return "?";
}

std::string_view key_of(Engine e) {
  switch (e) {
    case Engine::tensor:
      return "tensor";
    case Engine::vector:
      return "vector";
    case Engine::scalar:
      return "scalar";
    case Engine::gpsimd:
      return "gpsimd";
    case Engine::sync:
      return "sync";
  }
  return "?";
}

std::optional<Engine> parse_engine(std::string_view name) {
  for (Engine e : kAllEngines) {
    if (name == key_of(e) || name == name_of(e)) return e;
  }
  return std::nullopt;
}

ArchConfig trn1() {
  ArchConfig a;
  a.name = "trn1";
  a.chip_cores = 2;  // fact sheet section 2: 2 x NC-v2
  // A1: TensorE 2.8 GHz, VectorE 1.12 GHz, ScalarE 1.4 GHz, GpSimd 1.4 GHz. The Sync engine
  // has no published clock: assumption, the base clock.
  a.engine_mhz = {2800, 1120, 1400, 1400, 1400};
  a.base_mhz = 1400;                    // X1: NeuronCore base clock 1.4 GHz on trn1
  a.sbuf_partition_bytes = 192 * 1024;  // A1: 24 MiB = 128 x 192 KiB
  a.hbm_capacity_bytes = 16ULL << 30;   // H: 32 GiB per chip, 2 cores
  a.hbm_bytes_per_ns = 820.0 / 2;       // H: 820 GB/s per chip, 2 cores ([inferred] 410)
  // HBM2e: 32 GiB in two 16 GiB stacks, one per core (assumption: the fact sheet gives the chip
  // total only). Organisation: JESD235 pseudo-channel mode, 8 channels x 2 pseudo-channels of
  // 64 bits, BL4 (32 B per column access), 1 KiB page, 4 bank groups x 4 banks (DRAMsim3
  // configs/HBM2_8Gb_x128.ini). Timing in ns from the same JESD235-derived file: tRCD 14,
  // tRP 14, tRAS 34, CL 14, CWL 4, tWR 16, tRTP_S 4, tRRD_S 4, tFAW 30, tWTR_L 8, tREFI 3900;
  // tCCD_L of 2 tCK equals one BL4 burst; per-bank refresh tRFCsb 160 ns and read-to-write
  // 3 tCK from Ramulator2 src/dram/impl/HBM2.cpp (HBM2_2Gbps preset).
  a.hbm.cores_per_stack = 1;
  a.hbm.stack_bytes_per_ns = 820.0 / 2;  // H: 820 GB/s over 2 stacks
  a.hbm.pseudo_channels = 16;
  a.hbm.t_rtw = 3;
  a.matmul_fp8_rate = 1;  // A1: cFP8 peak equals BF16 (92 TFLOPS)
  // D2 quotes 17 B/ns sustained per DMA engine on trn1 (272 GB/s a core): with 27 B/ns peak,
  // 89 ns per descriptor puts a 4 KiB run at 17.0 B/ns (derived, as for trn2's 26 ns); it also
  // agrees with P's advice that trn1 transfers want more than 32 KiB.
  a.dma_descriptor_overhead_ns = 89.0;
  a.shared_sbuf_psum_ports = true;  // A1, section 4: v2 port conflicts
  a.vector_perf_modes = false;      // the 2x/4x modes are v3 (A2)
  return a;
}

ArchConfig trn2() {
  ArchConfig a;
  a.name = "trn2";
  a.chip_cores = 8;  // fact sheet section 2: 8 x NC-v3
  // A2: TensorE 2.4 GHz, VectorE 0.96 GHz, ScalarE 1.2 GHz, GpSimd 1.2 GHz. Sync engine:
  // assumption, the base clock.
  a.engine_mhz = {2400, 960, 1200, 1200, 1200};
  a.base_mhz = 1200;                    // X1: NeuronCore base clock 1.2 GHz on trn2
  a.sbuf_partition_bytes = 224 * 1024;  // A2: 28 MiB = 128 x 224 KiB (not the glossary's 256)
  a.hbm_capacity_bytes = 12ULL << 30;   // H: 96 GiB per chip, 8 cores
  a.hbm_bytes_per_ns = 2900.0 / 8;      // H: 2.9 TB/s per chip (not A2's 3), 8 cores
  a.dma_dge_instruction_ns = 600;       // D2: a DGE DMA instruction costs ~600 ns on v3
  // HBM3: 96 GiB in 4 stacks, each shared by two cores (H, fact sheet section 2). Organisation:
  // JESD238, 16 channels x 2 pseudo-channels of 32 bits, BL8 (32 B per column access), 1 KiB
  // page, 4 bank groups x 4 banks (Ramulator2 src/dram/impl/HBM3.cpp org presets, "we refer to
  // JESD238A"). The array timings in ns (tRCD, tRP, tRAS, CL, tWR, tRRD, tFAW, tREFI, per-bank
  // tRFC 160) are HBM2's: the DRAM core did not get faster, and Ramulator2's HBM3 timing preset
  // uses the same values. tCCD_L of two bursts: assumption (BL8 at 2 tCK, tCCD_L 4 tCK).
  a.hbm.cores_per_stack = 2;
  a.hbm.stack_bytes_per_ns = 2900.0 / 4;  // H: 2.9 TB/s over 4 stacks = 725 GB/s
  a.hbm.pseudo_channels = 32;
  a.hbm.t_ccd_l = 2 * a.hbm.burst_ns();
  a.hbm.t_rtw = 3;
  a.matmul_fp8_rate = 2;             // A2: 4x128 FP8 inputs vs 2x128 BF16; 158 vs 79 TFLOPS
  a.shared_sbuf_psum_ports = false;  // A2: v3 removes the v2 port conflicts
  a.vector_perf_modes = true;        // A2: VectorE 2x/4x performance modes
  return a;
}

std::optional<ArchConfig> preset(std::string_view name) {
  if (name == "trn1") return trn1();
  if (name == "trn2") return trn2();
  return std::nullopt;
}

std::string preset_names() {
  return "trn1, trn2";
}

}  // namespace trnsim::isa
