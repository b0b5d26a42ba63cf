#include "models/estimate/estimate.hpp"

#include "models/dma/dma_plan.hpp"
#include "models/neuroncore/cost.hpp"

namespace trnsim::models::estimate {

Picoseconds instruction_time(const isa::Instruction& in, const config::ArchConfig& arch) {
  return models::instruction_time(in, arch);
}

double instruction_ns(const isa::Instruction& in, const config::ArchConfig& arch) {
  return static_cast<double>(instruction_cycles(in, arch).value) * 1000.0 / arch.mhz(in.engine);
}

double matmul_ns(uint32_t stationary_columns, uint32_t moving_columns, isa::DType dtype,
                 const config::ArchConfig& arch) {
  isa::Instruction mm;
  mm.opcode = isa::Opcode::matmul;
  mm.engine = Engine::tensor;
  mm.src[0] = isa::sbuf_ap(dtype, 0, 1, 0, {{1, stationary_columns}});
  mm.src[1] = isa::sbuf_ap(dtype, 0, 1, 0, {{1, moving_columns}});
  mm.dst = isa::psum_ap(isa::DType::fp32, 0, stationary_columns, 0, {{1, moving_columns}});
  return instruction_ns(mm, arch);
}

Picoseconds dma_time(const isa::Instruction& dma, const config::ArchConfig& arch) {
  return from_ns(arch.dma_start_latency_ns) + plan_transfer(dma, arch).engine_time;
}

double dma_stream_ns(double bytes, double run_bytes, const config::ArchConfig& arch) {
  const double per_descriptor_ns =
      arch.dma_descriptor_overhead_ns + run_bytes / arch.dma_engine_bytes_per_ns;
  return bytes / (arch.dma_engines * run_bytes / per_descriptor_ns);
}

}  // namespace trnsim::models::estimate
