// The limits of issue 8: inputs that do not fit the hardware or the host, dtypes an operation
// does not take, access patterns out of bounds, programs that deadlock, and a disk that fills
// while the outputs are written. Each gets exit code 2, one line naming the file, the place and
// what was expected, and no output file. docs/errors.md lists what each prints.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {

// rejected_input() plus: the message is one line and contains `what`.
void rejected_with(const std::string& name, const std::string& text, const std::string& what,
                   const std::string& extra = "") {
  const std::string err = rejected_input(name, text, extra);
  INFO(err);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK(err.find(what) != std::string::npos);
}

// Runs trnsim with the file size limited to `kib` KiB and SIGXFSZ ignored, so that a write past
// it fails with EFBIG as on a full disk.
Invocation with_file_limit(int kib, const std::string& args, const std::string& dir) {
  return trnsim("-c 'trap \"\" XFSZ; ulimit -f " + std::to_string(kib) + "; exec " + TRNSIM_BINARY +
                    " " + args + "'",
                dir, "bash");
}

}  // namespace

TEST_CASE("limits: on-chip buffers larger than SBUF or PSUM exit 2 at the buffer") {
  rejected_with("sbuf.tasm", ".buffer big sbuf fp32 [128, 100000]\n",
                ":1:9: buffer big needs 400000 bytes per partition at offset 0; SBUF has");
  rejected_with("psum.tasm", ".buffer acc psum fp32 [128, 8192]\n",
                ":1:9: buffer acc needs 32768 bytes per partition at offset 0; PSUM has 16384");
}

TEST_CASE("limits: tensors larger than HBM exit 2 naming the tensor or the shape") {
  rejected_with("hbm.tasm", ".tensor x bf16 [1048576, 16384]\n",
                ":1:9: tensor x does not fit the core's 12884901888 bytes of HBM");
  rejected_with("hbm.json", R"({"kernel": "rmsnorm", "shape": [1048576, 4096]})",
                "/shape: x and y of [1048576, 4096] bf16 do not fit the 12884901888 bytes of HBM");
}

TEST_CASE("limits: a dtype the operation does not take exits 2 at the instruction") {
  rejected_with("matmul_bf16.tasm",
                ".buffer a sbuf bf16 [128, 128]\n.buffer b sbuf bf16 [128, 512]\n"
                ".buffer acc psum bf16 [128, 512]\npe.matmul acc[:, :], a[:, :], b[:, :], start\n",
                ":4:1: PSUM accumulation groups are fp32");
  rejected_with("bitwise_fp32.tasm",
                ".buffer a sbuf fp32 [128, 64]\n.buffer b sbuf fp32 [128, 64]\n"
                "dve.tensor_tensor b[:, :], a[:, :], a[:, :], op0=bitwise_and\n",
                ":3:1: op0 is bitwise_and, which takes integer operands");
  rejected_with("dma_convert.tasm",
                ".tensor x bf16 [128, 64]\n.buffer a sbuf fp32 [128, 64]\n.queue q\n"
                "sp.dma_copy a[:, :], x[:, :], queue=q\n",
                ":4:1: a DMA copy does not convert dtypes");
  rejected_with("rmsnorm_int8.json",
                R"({"kernel": "rmsnorm", "shape": [128, 64], "dtype": "int8"})",
                "/dtype: rmsnorm takes a floating-point dtype");
}

TEST_CASE("limits: access patterns out of bounds exit 2 at the slice") {
  rejected_with("slice.tasm",
                ".buffer a sbuf bf16 [128, 16, 64]\n.buffer b sbuf bf16 [128, 64]\n"
                "dve.tensor_copy b[:, :], a[:, 16, :]\n",
                ":3:31: dimension 1: slice 16:17 is outside [0, 16)");
  rejected_with("explicit.tasm",
                ".buffer a sbuf bf16 [128, 64]\n.buffer b sbuf bf16 [128, 64]\n"
                "dve.tensor_copy b.bf16{0:127, +0, [1, 100000]}, a[:, :]\n",
                ":3:39: a count is 1 to 65535");
}

TEST_CASE("limits: a program that can deadlock exits 2 in one line naming every engine") {
  rejected_with("cycle.tasm",
                ".sync manual\n.semaphore ping\n.semaphore pong\n"
                ".buffer a sbuf fp32 [128, 64]\n.buffer b sbuf fp32 [128, 64]\n"
                "act.activation a[:, :], b[:, :], wait=pong>=1, update=ping+=1\n"
                "dve.tensor_copy b[:, :], a[:, :], wait=ping>=1, update=pong+=1\n",
                "can deadlock; it would stop with: VectorE instruction 0 (tensor_copy) waits for "
                "ping to reach 1; it can only reach 0 | ScalarE instruction 0");
}

TEST_CASE("limits: a functional run too large for host memory exits 2 suggesting --timing-only") {
  const std::string hint = "use --timing-only, which keeps no tensor data";
  rejected_with("functional.json", R"({"kernel": "rmsnorm", "shape": [524288, 4096]})",
                "/shape: functional mode would hold 8.0 GiB of HBM tensors");
  rejected_with("functional_dma.json", R"({"kernel": "dma", "total_bytes": 4294967296})",
                "/total_bytes: functional mode would hold 4.0 GiB");
  rejected_with("functional.tasm",
                ".tensor x bf16 [1048576, 1024]\n.tensor y bf16 [1048576, 1024]\n"
                ".expect y = copy(x)\n",
                hint);
}

TEST_CASE("limits: a full disk while writing outputs exits 2 in one line and leaves no file") {
  // The rmsnorm trace is about 57 KiB and its stats 5 KiB: at 16 KiB the trace fails when it is
  // closed; copy_sweep_64's trace (about 800 KiB) fails at 100 KiB while the engines still run;
  // at 1 KiB stats.json, written before the trace is closed, fails first.
  for (const auto& [example_name, kib] : std::vector<std::pair<std::string, int>>{
           {"rmsnorm.json", 16}, {"micro/copy_sweep_64.json", 100}, {"rmsnorm.json", 1}}) {
    DYNAMIC_SECTION(example_name << " at " << kib << " KiB") {
      const std::string dir = fresh_dir("limits_full_disk");
      const std::string out = dir + "/out";
      const Invocation r =
          with_file_limit(kib, example(example_name) + " --timing-only --out " + out, dir);
      INFO(r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      const std::string failed = kib == 1 ? "stats.json" : "trace.json";  // 1 KiB: the first write
      CHECK(r.err.find(out + "/" + failed + ": write failed: File too large") != std::string::npos);
      REQUIRE(std::filesystem::exists(out));
      CHECK(std::filesystem::is_empty(out));  // no stats.json, trace.json or temporary file
    }
  }
}
