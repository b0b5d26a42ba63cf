// The text forms of what NKI kernels brought: the new opcodes' options (reverse, negate,
// elements/indices, range_select's base and fill), source locations (.source and src=N in
// .tasm, "sources" and "source" in JSON) survive print -> parse and to_json -> from_json, and
// malformed ones are reported at their line and column.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "isa/text/assembly.hpp"

using Catch::Matchers::Contains;
using trnsim::isa::Assembly;
using trnsim::isa::AssemblyError;
using trnsim::isa::from_json;
using trnsim::isa::parse_assembly;
using trnsim::isa::print_assembly;
using trnsim::isa::Program;
using trnsim::isa::to_json;

namespace {

const std::string kProgram =
    ".tensor x fp32 [128, 512]\n"
    ".buffer a sbuf fp32 [128, 512]\n"
    ".buffer b sbuf fp32 [128, 512]\n"
    ".buffer c sbuf fp32 [128, 512]\n"
    ".buffer r sbuf fp32 [128, 1]\n"
    ".buffer u sbuf uint8 [128, 512]\n"
    ".buffer i sbuf uint16 [128, 4]\n"
    ".buffer g sbuf fp32 [128, 64]\n"
    ".source \"kernel.py:12\"\n"
    ".source \"kernel.py:13\"\n"
    "act.tensor_scalar b[:, :], a[:, :], op0=subtract, operand0=1, op1=divide, operand1=2, "
    "reverse=3, src=1\n"
    "dve.tensor_reduce r[:, :], a[:, :], op0=max, reduce_dims=1, negate, src=2\n"
    "dve.tensor_tensor_scan c[:, :], a[:, :], b[:, :], op0=multiply, operand0=0.5, op1=add, "
    "reverse=1\n"
    "dve.tensor_scalar_reduce c[:, :], a[:, :], op0=multiply, operand0=3, op1=max, "
    "accumulate=r[:, :]\n"
    "dve.range_select c[:, :], a[:, :], op0=is_ge, operand0=r[:, :], op1=is_lt, "
    "operand1=r[:, :], base=4, fill=-1e30, accumulate=r[:, :]\n"
    "dve.copy_predicated c[:, :], u[:, :], a[:, :], reverse=1\n"
    "pool.local_gather g[:, :], a[:, :], i[:, :], elements=2, indices=32\n"
    "dve.max8 r.fp32{0:128, +0, [1,8]}, a[:, :]\n";

}  // namespace

TEST_CASE("NKI options and source lines survive print -> parse and to_json -> from_json",
          "[unit][assembly][nki]") {
  const auto arch = trnsim::config::trn2();
  const Assembly a = parse_assembly(kProgram, "k.tasm", arch);
  REQUIRE(a.sequence.size() == 8);
  CHECK(a.sequence[0].reverse == 3);
  CHECK(a.sequence[0].source == 1);
  CHECK(a.sequence[1].negate);
  CHECK(a.sequence[6].gather_elements == 2);
  CHECK(a.sequence[6].gather_indices == 32);
  CHECK(a.sequence[4].extra->index_base == 4);
  const Program p = trnsim::compiler::synchronize(a.sequence, a.program, arch);
  CHECK(p.sources == std::vector<std::string>{"kernel.py:12", "kernel.py:13"});
  const std::string text = print_assembly(p, a.buffers);
  CHECK_THAT(text, Contains(".source \"kernel.py:13\""));
  CHECK_THAT(text, Contains("reverse=3"));
  CHECK_THAT(text, Contains("negate"));
  const Assembly b = parse_assembly(text, "printed.tasm", arch);
  const Program q = trnsim::compiler::distribute(b.sequence, b.program);
  CHECK(to_json(p, a.buffers) == to_json(q, b.buffers));
  const nlohmann::json j = to_json(p, a.buffers);
  CHECK(j["sources"].size() == 2);
  const Assembly c = from_json(nlohmann::json::parse(j.dump()), "p.json");
  CHECK(to_json(c.program, c.buffers) == j);
  // A program without sources prints none, as before.
  CHECK_FALSE(to_json(Program{}).contains("sources"));
}

TEST_CASE("malformed NKI options are reported at their line and column",
          "[unit][assembly][errors][nki]") {
  const auto error_of = [](const std::string& line) {
    try {
      parse_assembly(kProgram + line + "\n", "e.tasm", trnsim::config::trn2());
    } catch (const AssemblyError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error_of("dve.tensor_scalar b[:, :], a[:, :], op0=add, operand0=1, reverse=7"),
             Contains("e.tasm:19:66: reverse is 0 to 3"));  // at the value
  CHECK_THAT(error_of("dve.tensor_copy b[:, :], a[:, :], src=3"),
             Contains("e.tasm:19:39: src=3 names no .source line (there are 2)"));
  CHECK_THAT(error_of("dve.tensor_copy b[:, :], a[:, :], negate"),
             Contains("tensor_copy takes no option \"negate\""));
  CHECK_THAT(error_of("pool.local_gather g[:, :], a[:, :], i[:, :], elements=64, indices=1"),
             Contains("elements is 1 to 32"));
  CHECK_THAT(error_of("pool.local_gather g[:, :], a[:, :], i[:, :], elements=3, indices=32"),
             Contains("expected 1, 2, 4, 8, 16 or 32"));
}
