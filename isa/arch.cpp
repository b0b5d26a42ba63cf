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
  // A1: TensorE 2.8 GHz, VectorE 1.12 GHz, ScalarE 1.4 GHz, GpSimd 1.4 GHz. The Sync engine
  // has no published clock: assumption, the base clock.
  a.engine_mhz = {2800, 1120, 1400, 1400, 1400};
  a.base_mhz = 1400;                    // X1: NeuronCore base clock 1.4 GHz on trn1
  a.sbuf_partition_bytes = 192 * 1024;  // A1: 24 MiB = 128 x 192 KiB
  a.hbm_capacity_bytes = 16ULL << 30;   // H: 32 GiB per chip, 2 cores
  a.hbm_bytes_per_ns = 820.0 / 2;       // H: 820 GB/s per chip, 2 cores ([inferred] 410)
  a.matmul_fp8_rate = 1;                // A1: cFP8 peak equals BF16 (92 TFLOPS)
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
  // A2: TensorE 2.4 GHz, VectorE 0.96 GHz, ScalarE 1.2 GHz, GpSimd 1.2 GHz. Sync engine:
  // assumption, the base clock.
  a.engine_mhz = {2400, 960, 1200, 1200, 1200};
  a.base_mhz = 1200;                    // X1: NeuronCore base clock 1.2 GHz on trn2
  a.sbuf_partition_bytes = 224 * 1024;  // A2: 28 MiB = 128 x 224 KiB (not the glossary's 256)
  a.hbm_capacity_bytes = 12ULL << 30;   // H: 96 GiB per chip, 8 cores
  a.hbm_bytes_per_ns = 2900.0 / 8;      // H: 2.9 TB/s per chip (not A2's 3), 8 cores
  a.matmul_fp8_rate = 2;                // A2: 4x128 FP8 inputs vs 2x128 BF16; 158 vs 79 TFLOPS
  a.shared_sbuf_psum_ports = false;     // A2: v3 removes the v2 port conflicts
  a.vector_perf_modes = true;           // A2: VectorE 2x/4x performance modes
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
