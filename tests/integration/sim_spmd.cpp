// SPMD over a logical core (docs/chip.md "Logical cores (LNC) and SPMD grids"): one program per
// core, the cores sharing one HBM address space and keeping their own SBUF and PSUM.
#include <catch2/catch.hpp>

#include <cstring>

#include "compiler/deadlock.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "sim_support.hpp"
#include "workloads/lowering.hpp"
#include "workloads/program.hpp"

using namespace trnsim;

namespace {

// Both programs declare the same HBM tensors and queues (so one HBM layout); each core works
// on its own half of x and y, with a different instruction stream.
const std::string kTensors = R"tasm(
.tensor x fp32 [256, 512] init=uniform(-1, 1, seed=5)
.tensor y fp32 [256, 512]
.queue q_in
.queue q_out
.buffer t sbuf fp32 [128, 512]
.buffer u sbuf fp32 [128, 512]
)tasm";
// Core 0: y[0:128] = x[0:128] + 1.
const std::string kCore0 = kTensors + R"tasm(
sp.dma_copy t[:, :], x[0:128, :], queue=q_in
dve.tensor_scalar u[:, :], t[:, :], op0=add, operand0=1
sp.dma_copy y[0:128, :], u[:, :], queue=q_out
)tasm";
// Core 1: y[128:256] = 2 (x[128:256] - 3), in two steps on two engines.
const std::string kCore1 = kTensors + R"tasm(
sp.dma_copy t[:, :], x[128:256, :], queue=q_in
dve.tensor_scalar u[:, :], t[:, :], op0=subtract, operand0=3
pool.tensor_scalar t[:, :], u[:, :], op0=multiply, operand0=2
sp.dma_copy y[128:256, :], t[:, :], queue=q_out
)tasm";

workloads::LoweredKernel lowered(const std::string& text, const std::string& file) {
  const config::ArchConfig arch = config::trn2();
  const isa::Assembly a = isa::parse_assembly(text, file, arch);
  workloads::LoweredKernel k = workloads::lower_assembly(a, arch, true);
  isa::validate(k.program, arch);
  REQUIRE(compiler::find_deadlock(k.program, arch).empty());
  return k;
}

std::vector<float> tensor(const workloads::LoweredKernel& k, const isa::MemoryImage& m,
                          const std::string& name) {
  const isa::DramTensor* t = k.program.find_dram_tensor(name);
  REQUIRE(t != nullptr);
  std::vector<float> v(t->elements());
  std::memcpy(v.data(), m.hbm_bytes().data() + t->address, t->bytes());
  return v;
}

}  // namespace

TEST_CASE("spmd: two cores run different programs on one shared HBM, each on its own slice") {
  const config::ArchConfig arch = config::trn2();
  const auto k0 = lowered(kCore0, "core0.tasm");
  const auto k1 = lowered(kCore1, "core1.tasm");
  REQUIRE(k0.program.dram_bytes() == k1.program.dram_bytes());
  REQUIRE(k0.program.find_dram_tensor("y")->address == k1.program.find_dram_tensor("y")->address);
  isa::MemoryImage m0(arch, k0.program.dram_bytes());
  workloads::load_inputs(k0, m0);
  isa::MemoryImage m1(arch, 0);
  m1.share_hbm(m0);
  CHECK(m1.hbm.empty());
  CHECK(&m1.hbm_bytes() == &m0.hbm);
  const std::vector<float> x = tensor(k0, m0, "x");
  trnsim_test::Recorder rec;
  const auto result = models::simulate({&k0.program, &k1.program}, arch, {&m0, &m1}, rec);
  INFO(result.deadlock);
  REQUIRE(result.completed);
  CHECK(result.cores == 2);
  // Core 0's half and core 1's half, both in the one HBM image (core 0's).
  const std::vector<float> y = tensor(k0, m0, "y");
  for (size_t i = 0; i < 128 * 512; ++i) REQUIRE(y[i] == Approx(x[i] + 1));
  for (size_t i = 128 * 512; i < 256 * 512; ++i) REQUIRE(y[i] == Approx(2 * (x[i] - 3)));
  // Each core ran its own stream: core 1's records name instructions of k1's streams.
  size_t core0 = 0, core1 = 0, pool1 = 0;
  for (const auto& r : rec.instructions) {
    (r.core == 0 ? core0 : core1) += 1;
    if (r.core == 1 && r.engine == Engine::gpsimd) ++pool1;
    if (r.core == 0) CHECK(r.engine != Engine::gpsimd);
  }
  CHECK(core0 == k0.program.instruction_count());
  CHECK(core1 == k1.program.instruction_count());
  CHECK(pool1 == k1.program.stream(Engine::gpsimd).size());
  // Both cores' DMA went to the memory system at the same time (one stack on trn2).
  CHECK(result.hbm_stacks == 1);
  CHECK(result.dma_engine_busy.size() == 2);
}

TEST_CASE("spmd: one program per core needs one memory image per core, or none") {
  const config::ArchConfig arch = config::trn2();
  const auto k0 = lowered(kCore0, "core0.tasm");
  isa::MemoryImage m0(arch, k0.program.dram_bytes());
  trnsim_test::Recorder rec;
  CHECK_THROWS_AS(models::simulate({&k0.program, &k0.program}, arch, {&m0}, rec),
                  std::invalid_argument);
}
