// Automatic synchronization under simulation: programs written in one sequential order, whose
// engines and DMA queues race on SBUF, PSUM and HBM, compute what running them one instruction
// at a time in program order computes (a sequential reference with isa::execute). Without the
// added waits they do not. One simulation per test case (one process each).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "isa/semantics.hpp"
#include "isa/text/assembly.hpp"
#include "isa/validate.hpp"
#include "models/chip/simulate.hpp"
#include "workloads/lowering.hpp"
#include "workloads/program.hpp"

using namespace trnsim;

namespace {

struct Discard : models::EventSink {
  void on_instruction(const models::InstructionRecord&) override {}
  void on_transfer(const models::TransferRecord&) override {}
};

struct Outcome {
  isa::MemoryImage::Bytes simulated_hbm;
  isa::MemoryImage::Bytes reference_hbm;  // program order, one instruction at a time
  workloads::CheckResult check;
  size_t waits = 0;
};

// Assembles, lowers (adding synchronization unless `.sync manual`), simulates, and runs the
// same sequence in program order on a second memory image.
Outcome run(const std::string& text, const std::string& file = "autosync.tasm") {
  const config::ArchConfig arch = config::trn2();
  const isa::Assembly a = isa::parse_assembly(text, file, arch);
  const workloads::LoweredKernel k = workloads::lower_assembly(a, arch, true);
  isa::validate(k.program, arch);
  REQUIRE(compiler::find_deadlock(k.program, arch).empty());
  Outcome o;
  for (const auto& s : k.program.streams)
    for (const auto& in : s) o.waits += in.waits.size();

  isa::MemoryImage memory(arch, k.program.dram_bytes());
  workloads::load_inputs(k, memory);
  Discard sink;
  const auto result = models::simulate(k.program, arch, &memory, sink);
  INFO(result.deadlock);
  REQUIRE(result.completed);
  o.simulated_hbm = memory.hbm;
  if (!k.expected.empty()) o.check = workloads::check_outputs(k, memory);

  isa::MemoryImage reference(arch, k.program.dram_bytes());
  workloads::load_inputs(k, reference);
  for (const auto& in : a.sequence) isa::execute(in, reference);
  o.reference_hbm = reference.hbm;
  return o;
}

// fp32 values of HBM tensor `name` in an image's HBM bytes.
std::vector<float> values(const std::string& text, const isa::MemoryImage::Bytes& hbm,
                          const std::string& name) {
  const isa::Assembly a = isa::parse_assembly(text, "v.tasm", config::trn2());
  const isa::DramTensor* t = a.program.find_dram_tensor(name);
  REQUIRE(t != nullptr);
  REQUIRE(t->dtype == isa::DType::fp32);
  std::vector<float> v(t->elements());
  std::memcpy(v.data(), hbm.data() + t->address, t->bytes());
  return v;
}

// RAW, WAR and WAW on SBUF and PSUM between all five engines and three DMA queues.
const std::string kOnChip = R"tasm(
.tensor x fp32 [128, 512] init=normal(0, 1, seed=11)
.tensor w bf16 [128, 128] init=normal(0, 1, seed=12)
.tensor y fp32 [128, 512]
.tensor z fp32 [128, 512]
.queue q_in
.queue q_mid
.queue q_out
.buffer t sbuf fp32 [128, 512]
.buffer u sbuf fp32 [128, 512]
.buffer v sbuf bf16 [128, 512]
.buffer ws sbuf bf16 [128, 128]
.buffer acc psum fp32 [128, 512]

"load x": sp.dma_copy t[:, :], x[:, :], queue=q_in
"load w": act.dma_copy ws[:, :], w[:, :], queue=q_mid
"square": act.activation u[:, :], t[:, :], func=square                     # RAW t: q_in -> act
"t = u + 1": dve.tensor_scalar t[:, :], u[:, :], op0=add, operand0=1       # RAW u, WAR t
"v = bf16(t)": pool.tensor_copy v[:, :], t[:, :]                           # RAW t: dve -> pool
"mm": pe.matmul acc[:, :], ws[:, :], v[:, :], start, stop                  # RAW v, ws (q_mid)
"u = acc": act.tensor_copy u[:, :], acc[:, :]                              # RAW PSUM, WAR u
"store y": sp.dma_copy y[:, :], u[:, :], queue=q_out                       # RAW u: act -> DMA
"acc = 2t": dve.tensor_scalar acc[:, :], t[:, :], op0=multiply, operand0=2  # WAW, WAR on PSUM
"u = acc + 3": act.activation u[:, :], acc[:, :], func=identity, bias=3    # WAR u with q_out
"store z": pool.dma_copy z[:, :], u[:, :], queue=q_out
)tasm";

// RAW, WAR and WAW on HBM between DMA queues (including an HBM-to-HBM transfer).
const std::string kHbm = R"tasm(
.tensor x fp32 [128, 2048] init=uniform(-1, 1, seed=5)
.tensor y fp32 [128, 2048]
.tensor z fp32 [128, 2048]
.queue qa
.queue qb
.queue qc
.buffer t sbuf fp32 [128, 2048]
.buffer s sbuf fp32 [128, 256]

"load": sp.dma_copy t[:, :], x[:, :], queue=qa
"exp": act.activation t[:, :], t[:, :], func=exp
"store y": sp.dma_copy y[:, :], t[:, :], queue=qa                # HBM write, 1 MiB
"z = y": act.dma_copy z[:, :], y[:, :], queue=qb                 # HBM RAW across queues
"s = 7": dve.memset s[:, :], value=7
"y[:, :256] = s": pool.dma_copy y[:, 0:256], s[:, :], queue=qc    # HBM WAW (qa) and WAR (qb)
"reload": sp.dma_copy t[:, 0:256], y[:, 1792:2048], queue=qc      # HBM RAW, SBUF WAW and WAR
"z[:, :256] = t": act.dma_copy z[:, 0:256], t[:, 0:256], queue=qb  # HBM WAW with "z = y"
)tasm";

// A copy through one SBUF tile reused four times: each load must wait for the previous store.
const std::string kCopy = R"tasm(
.tensor x bf16 [512, 1024] init=normal(0, 1, seed=4)
.tensor y bf16 [512, 1024]
.expect y = copy(x)
.queue q_in
.queue q_out
.buffer t sbuf bf16 [128, 1024]
sp.dma_copy t[:, :], x[0:128, :], queue=q_in
act.dma_copy y[0:128, :], t[:, :], queue=q_out
sp.dma_copy t[:, :], x[128:256, :], queue=q_in
act.dma_copy y[128:256, :], t[:, :], queue=q_out
sp.dma_copy t[:, :], x[256:384, :], queue=q_in
act.dma_copy y[256:384, :], t[:, :], queue=q_out
sp.dma_copy t[:, :], x[384:512, :], queue=q_in
act.dma_copy y[384:512, :], t[:, :], queue=q_out
)tasm";

// The same copy staged through ScalarE. With waits removed, the activation reads the tile before
// its load lands. (kCopy alone no longer races without waits: each DMA engine serves its
// transfers one at a time in the order they were triggered, so a store triggered after a load
// on the same engines also moves its data after it.)
const std::string kStagedCopy = R"tasm(
.tensor x bf16 [512, 1024] init=normal(0, 1, seed=4)
.tensor y bf16 [512, 1024]
.expect y = copy(x)
.queue q_in
.queue q_out
.buffer t sbuf bf16 [128, 1024]
.buffer u sbuf bf16 [128, 1024]
sp.dma_copy t[:, :], x[0:128, :], queue=q_in
act.activation u[:, :], t[:, :], func=identity
act.dma_copy y[0:128, :], u[:, :], queue=q_out
sp.dma_copy t[:, :], x[128:256, :], queue=q_in
act.activation u[:, :], t[:, :], func=identity
act.dma_copy y[128:256, :], u[:, :], queue=q_out
sp.dma_copy t[:, :], x[256:384, :], queue=q_in
act.activation u[:, :], t[:, :], func=identity
act.dma_copy y[256:384, :], u[:, :], queue=q_out
sp.dma_copy t[:, :], x[384:512, :], queue=q_in
act.activation u[:, :], t[:, :], func=identity
act.dma_copy y[384:512, :], u[:, :], queue=q_out
)tasm";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("autosync: SBUF and PSUM dependencies across engines and queues match program order") {
  const Outcome o = run(kOnChip);
  CHECK(o.waits >= 8);
  CHECK(o.simulated_hbm == o.reference_hbm);
  // Not vacuous: y and z hold data that depends on the loads.
  const auto y = values(kOnChip, o.simulated_hbm, "y");
  const auto z = values(kOnChip, o.simulated_hbm, "z");
  CHECK(std::count(y.begin(), y.end(), 0.0f) < 10);
  // z = 2 (x^2 + 1) + 3 >= 5 everywhere.
  CHECK(*std::min_element(z.begin(), z.end()) >= 5.0f);
}

TEST_CASE("autosync: HBM dependencies between DMA queues match program order") {
  const Outcome o = run(kHbm);
  CHECK(o.simulated_hbm == o.reference_hbm);
  const auto y = values(kHbm, o.simulated_hbm, "y");
  const auto z = values(kHbm, o.simulated_hbm, "z");
  // y[:, 0:256] = 7 (the later, smaller write wins); y[:, 256:] = exp(x) in (1/e, e).
  CHECK(y[0] == 7.0f);
  CHECK(y[255] == 7.0f);
  CHECK(y[256] > 0.3f);
  CHECK(y[256] < 2.8f);
  // z[:, 0:256] = y[:, 1792:2048] reloaded, z[:, 256:] = y before the write of 7s.
  CHECK(z[0] == y[1792]);
  CHECK(z[300] == y[300]);
}

TEST_CASE("autosync: a reused SBUF tile between two DMA queues passes the copy check") {
  const Outcome o = run(kCopy);
  CHECK(o.check.status == workloads::CheckResult::Status::pass);
  CHECK(o.check.elements == 512 * 1024);
  CHECK(o.check.mismatches == 0);
  CHECK(o.simulated_hbm == o.reference_hbm);
}

TEST_CASE("autosync: the tiled matmul example passes its .expect check") {
  const std::string here = __FILE__;
  const std::string path =
      here.substr(0, here.rfind("tests/integration/")) + "workloads/examples/matmul_tiled.tasm";
  const std::string text = slurp(path);
  REQUIRE_FALSE(text.empty());
  const Outcome o = run(text, path);
  CHECK(o.check.status == workloads::CheckResult::Status::pass);
  CHECK(o.check.elements == 256 * 512);
  CHECK(o.simulated_hbm == o.reference_hbm);
}

TEST_CASE(
    "autosync: without the waits (.sync manual) the on-chip program computes a different result") {
  const Outcome o = run(".sync manual\n" + kOnChip);
  CHECK(o.waits == 0);
  CHECK(o.simulated_hbm != o.reference_hbm);
}

TEST_CASE("autosync: the reused-tile copy staged through ScalarE passes its check") {
  const Outcome o = run(kStagedCopy);
  CHECK(o.waits > 0);
  CHECK(o.check.status == workloads::CheckResult::Status::pass);
}

TEST_CASE("autosync: without the waits (.sync manual) the reused-tile copy fails its check") {
  const Outcome o = run(".sync manual\n" + kStagedCopy);
  CHECK(o.waits == 0);
  CHECK(o.check.status == workloads::CheckResult::Status::fail);
  CHECK(o.check.mismatches > 0);
  // Compared as a flag: Catch would print both megabyte buffers on failure.
  const bool differs = o.simulated_hbm != o.reference_hbm;
  CHECK(differs);
}
