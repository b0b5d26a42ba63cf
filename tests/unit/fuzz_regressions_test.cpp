// Inputs the fuzz targets (fuzz/, docs/fuzzing.md) found crashing or escaping with an
// undocumented exception, fed to the same functions: each must now end in the documented error
// naming the file and the place.
#include <catch2/catch.hpp>
#include <string>

#include "config/arch.hpp"
#include "isa/text/assembly.hpp"
#include "workloads/graph/npy.hpp"
#include "workloads/lowering.hpp"
#include "workloads/program.hpp"
#include "workloads/workload.hpp"

using Catch::Matchers::Contains;
using trnsim::isa::AssemblyError;
using trnsim::workloads::WorkloadError;

namespace {

// What from_json + lower_assembly (timing only) report for a JSON program.
std::string program_json_error(const std::string& text) {
  try {
    const auto a = trnsim::isa::from_json(trnsim::workloads::parse_json(text, "p.json"), "p.json");
    (void)trnsim::workloads::lower_assembly(a, trnsim::config::trn2(), false);
  } catch (const AssemblyError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// fuzz_workload: nlohmann reports a number beyond a double as out_of_range, not parse_error,
// and it escaped parse_json (the CLI printed nlohmann's text without the place).
TEST_CASE("fuzz: a JSON number too large for a double is a WorkloadError", "[unit][fuzz]") {
  const std::string text = "{\n  \"kerdddddddddddddddd555555555\": 6e4096\n,   `total_by0: 2\n}\n";
  REQUIRE_THROWS_AS(trnsim::workloads::parse_workload(text, "w.json"), WorkloadError);
  REQUIRE_THROWS_WITH(
      trnsim::workloads::parse_json(R"({"kernel": "dma", "seed": 1e400})", "w.json"),
      Contains("w.json: JSON: number overflow"));
}

// fuzz_workload: 71 million rows lowered to 3.9 million instructions, under the old cap of 4
// million, and took over 5 GiB of host memory in timing-only mode (a timeout and out-of-memory
// under libFuzzer). The cap is now a million; the check comes before anything is allocated.
TEST_CASE("fuzz: a kernel of millions of instructions is refused before lowering", "[unit][fuzz]") {
  const auto w = trnsim::workloads::parse_workload(
      R"({"kernel": "rmsnorm", "shape": [71341308, 9]})", "big.json");
  REQUIRE_THROWS_WITH(trnsim::workloads::lower(w, trnsim::config::trn2(), false),
                      Contains("big.json: /shape: 71341308 rows in tiles of 128 lower to about "
                               "3901478 instructions; a kernel holds at most 1000000"));
}

// fuzz_program_json: members indexed as arrays without a check threw nlohmann::type_error.
TEST_CASE("fuzz: JSON program members of the wrong type are AssemblyErrors naming them",
          "[unit][fuzz]") {
  CHECK_THAT(program_json_error(
                 R"({"format":"trnsim-program","tensors":[],"buffers":{"a":1},"semaphores":[]})"),
             Contains("p.json: /buffers: expected an array, got object"));
  const std::string head = R"({"format":"trnsim-program","tensors":[],"queues":[],)";
  CHECK_THAT(program_json_error(head + R"("semaphores":{"s":0},"streams":{}})"),
             Contains("/semaphores: expected an array"));
  CHECK_THAT(program_json_error(head + R"("semaphores":[],"streams":[]})"),
             Contains("/streams: expected an object"));
  CHECK_THAT(program_json_error(head + R"("semaphores":[],"streams":{"pe":7}})"),
             Contains("/streams/pe: expected an array"));
  CHECK_THAT(program_json_error(head + R"("semaphores":[],"streams":{},"expect":3})"),
             Contains("/expect: expected an array"));
}

// Found while extending the targets to lower_assembly as the CLI does: the JSON form skipped
// the .tasm parser's expectation check, and lowering dereferenced a missing tensor or input.
TEST_CASE("fuzz: an expectation with the wrong inputs is an AssemblyError at its line",
          "[unit][fuzz]") {
  CHECK_THAT(program_json_error(
                 R"({"format":"trnsim-program","semaphores":[],"queues":[],"streams":{},
                     "tensors":[{"name":"x","dtype":"fp32","shape":[4],"address":0}],
                     "expect":[{"output":"x","function":"matmul","inputs":["x"]}]})"),
             Contains("p.json: /expect/0: matmul(a_transposed, b) takes two inputs"));
  CHECK_THAT(program_json_error(
                 R"({"format":"trnsim-program","semaphores":[],"queues":[],"streams":{},
                     "tensors":[{"name":"x","dtype":"fp32","shape":[4],"address":0},
                                {"name":"y","dtype":"fp32","shape":[8],"address":64}],
                     "expect":[{"output":"y","function":"copy","inputs":["x"]}]})"),
             Contains("p.json: /expect/0: copy: input and output sizes differ"));
  CHECK_THAT(program_json_error(
                 R"({"format":"trnsim-program","tensors":[],"semaphores":[],"queues":[],
                     "streams":{},"expect":[{"output":"y","function":"copy","inputs":["x"]}]})"),
             Contains("p.json: /expect/0: no tensor \"y\""));
}

// fuzz_npy_header: writing an empty array back passed memcpy the null data() of an empty
// vector (undefined behaviour, reported by UBSan in the sanitizer build).
TEST_CASE("fuzz: an empty .npy array reads and writes back", "[unit][fuzz]") {
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }" + std::string(58, ' ') + "\n";
  std::string file = "\x93NUMPY\x01";
  file += '\0';
  file += static_cast<char>(header.size());
  file += '\0';
  file += header;
  const trnsim::workloads::NpyArray a = trnsim::workloads::parse_npy(file);
  CHECK(a.shape == std::vector<int64_t>{0, 4});
  CHECK(a.values.empty());
  const trnsim::workloads::NpyArray back =
      trnsim::workloads::parse_npy(trnsim::workloads::npy_bytes(a.shape, a.values));
  CHECK(back.shape == a.shape);
  CHECK(back.values.empty());
}
