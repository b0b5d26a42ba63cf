// The .tasm text form and the JSON program form: every example survives print -> parse and
// to_json -> from_json unchanged, and every malformed input is reported at its file, line and
// column with what was expected.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "compiler/deadlock.hpp"
#include "compiler/synchronize.hpp"
#include "config/arch.hpp"
#include "isa/text/assembly.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using trnsim::config::ArchConfig;
using trnsim::isa::Assembly;
using trnsim::isa::AssemblyError;
using trnsim::isa::from_json;
using trnsim::isa::parse_assembly;
using trnsim::isa::print_assembly;
using trnsim::isa::Program;
using trnsim::isa::to_json;

namespace {

// workloads/examples in the source tree; this file is tests/unit/assembly_test.cpp.
std::string examples_dir() {
  const std::string here = __FILE__;
  return here.substr(0, here.rfind("tests/unit/")) + "workloads/examples";
}

std::vector<std::string> example_programs() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(examples_dir())) {
    if (e.path().extension() == ".tasm") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

ArchConfig arch_of(const Assembly& a) {
  return a.arch.empty() ? trnsim::config::trn2() : *trnsim::config::preset(a.arch);
}

// The program with its streams filled, as trnsim runs it.
Program streams_of(const Assembly& a, const ArchConfig& arch) {
  return a.auto_sync ? trnsim::compiler::synchronize(a.sequence, a.program, arch)
                     : trnsim::compiler::distribute(a.sequence, a.program);
}

nlohmann::json json_of(const Assembly& a, const Program& p) {
  return to_json(p, a.buffers, a.inits, a.expectations);
}

// Declarations shared by the error tests: six lines, so the line under test is line 7.
const std::string kPrelude =
    ".tensor x bf16 [128, 512]\n"
    ".queue q\n"
    ".semaphore s\n"
    ".buffer t sbuf bf16 [128, 512]\n"
    ".buffer w sbuf bf16 [128, 128]\n"
    ".buffer acc psum fp32 [128, 512]\n";

// The AssemblyError message for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_assembly(text, "e.tasm", trnsim::config::trn2());
  } catch (const AssemblyError& e) {
    return e.what();
  }
  return "";
}

// The error for one line placed after the prelude (line 7).
std::string error_of_line(const std::string& line) {
  return error_of(kPrelude + line + "\n");
}

// 1-based column of the first occurrence of `needle` in `line`.
std::string at(const std::string& line, const std::string& needle, int line_no = 7) {
  const auto p = line.find(needle);
  REQUIRE(p != std::string::npos);
  return "e.tasm:" + std::to_string(line_no) + ":" + std::to_string(p + 1) + ": ";
}

std::string end_of(const std::string& line, int line_no = 7) {
  return "e.tasm:" + std::to_string(line_no) + ":" + std::to_string(line.size() + 1) + ": ";
}

std::string json_error_of(const nlohmann::json& j) {
  try {
    from_json(j, "p.json");
  } catch (const AssemblyError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("assembly: the examples directory holds the .tasm programs", "[unit][assembly]") {
  const auto files = example_programs();
  CHECK(files.size() >= 6);
  bool tiled = false;
  for (const auto& f : files) tiled = tiled || f.find("matmul_tiled.tasm") != std::string::npos;
  CHECK(tiled);
}

TEST_CASE("assembly: every example survives print_assembly -> parse_assembly unchanged",
          "[unit][assembly]") {
  for (const auto& file : example_programs()) {
    INFO(file);
    const Assembly first = parse_assembly(slurp(file), file, trnsim::config::trn2());
    const ArchConfig arch = arch_of(first);
    const Assembly a = parse_assembly(slurp(file), file, arch);
    REQUIRE_FALSE(a.sequence.empty());
    const Program p = streams_of(a, arch);
    const std::string text = print_assembly(p, a.buffers, a.inits, a.expectations);
    INFO(text);
    const Assembly b = parse_assembly(text, "printed.tasm", arch);
    CHECK_FALSE(b.auto_sync);  // printed streams are hand-synchronized
    const Program q = trnsim::compiler::distribute(b.sequence, b.program);
    CHECK(json_of(a, p) == json_of(b, q));
    CHECK(p.instruction_count() == a.sequence.size());
    // Printing is stable: the reparsed program prints to the same text.
    CHECK(print_assembly(q, b.buffers, b.inits, b.expectations) == text);
  }
}

TEST_CASE("assembly: every example survives to_json -> from_json unchanged", "[unit][assembly]") {
  for (const auto& file : example_programs()) {
    INFO(file);
    const Assembly first = parse_assembly(slurp(file), file, trnsim::config::trn2());
    const ArchConfig arch = arch_of(first);
    const Assembly a = parse_assembly(slurp(file), file, arch);
    const nlohmann::json j = json_of(a, streams_of(a, arch));
    CHECK(j["format"] == "trnsim-program");
    // Through text as well, the way `trnsim asm` output is read back.
    const Assembly b = from_json(nlohmann::json::parse(j.dump(1)), "p.json");
    CHECK(b.sequence.empty());  // the JSON form carries streams, not a sequence
    CHECK_FALSE(b.auto_sync);
    CHECK(to_json(b.program, b.buffers, b.inits, b.expectations) == j);
  }
}

TEST_CASE("assembly: labels with spaces, '#' and quotes survive print and parse",
          "[unit][assembly]") {
  const std::string file = examples_dir() + "/matmul_tiled.tasm";
  const Assembly a = parse_assembly(slurp(file), file, trnsim::config::trn2());
  nlohmann::json j = json_of(a, streams_of(a, trnsim::config::trn2()));
  for (const std::string label : {"plain", "two words", "hash # inside", "say \"hi\""}) {
    INFO(label);
    j["streams"]["pe"][0]["label"] = label;
    const Assembly b = from_json(j, "p.json");
    REQUIRE(b.program.stream(trnsim::Engine::tensor)[0].label == label);
    const std::string text = print_assembly(b.program, b.buffers, b.inits, b.expectations);
    std::string reparsed;
    try {
      const Assembly c = parse_assembly(text, "printed.tasm", trnsim::config::trn2());
      reparsed = c.sequence.at(0).label;
    } catch (const AssemblyError& e) {
      reparsed = std::string("error: ") + e.what();
    }
    CHECK(reparsed == label);
  }
}

TEST_CASE(
    "assembly: synchronization of the sequential examples adds waits, hand-synchronized ones keep "
    "theirs",
    "[unit][assembly]") {
  const Assembly tiled = parse_assembly(slurp(examples_dir() + "/matmul_tiled.tasm"),
                                        "matmul_tiled.tasm", trnsim::config::trn2());
  CHECK(tiled.auto_sync);
  const Program p = streams_of(tiled, trnsim::config::trn2());
  size_t waits = 0;
  for (const auto& s : p.streams)
    for (const auto& in : s) waits += in.waits.size();
  CHECK(waits > 0);
  CHECK(trnsim::compiler::find_deadlock(p, trnsim::config::trn2()).empty());
  const Assembly manual = parse_assembly(slurp(examples_dir() + "/rmsnorm_manual.tasm"),
                                         "rmsnorm_manual.tasm", trnsim::config::trn2());
  CHECK_FALSE(manual.auto_sync);
}

// ---------------------------------------------------------------------------------------------
// Errors: file:line:column and what was expected.

TEST_CASE("assembly: an unknown engine is reported at the engine", "[unit][assembly][errors]") {
  const std::string line = "foo.tensor_copy t[:, :], t[:, :]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "foo")));
  CHECK_THAT(e, Contains("unknown engine \"foo\"") && Contains("pe, dve, act, pool or sp"));
}

TEST_CASE("assembly: an unknown opcode is reported at the opcode", "[unit][assembly][errors]") {
  const std::string line = "dve.frobnicate t[:, :], t[:, :]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "frobnicate")));
  CHECK_THAT(e, Contains("unknown opcode \"frobnicate\""));
}

TEST_CASE("assembly: an opcode on an engine that cannot run it is reported at the opcode",
          "[unit][assembly][errors]") {
  const std::string line = "pe.tensor_copy t[:, :], t[:, :]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "tensor_copy")));
  CHECK_THAT(e, Contains("tensor_copy does not run on TensorE"));
  const std::string act = "act.matmul acc[:, :], w[:, :], t[:, :], start, stop";
  CHECK_THAT(error_of_line(act),
             StartsWith(at(act, "matmul")) && Contains("matmul does not run on ScalarE"));
}

TEST_CASE("assembly: an unknown option is reported at its key", "[unit][assembly][errors]") {
  const std::string line = "dve.tensor_copy t[:, :], t[:, :], colour=3";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "colour")));
  CHECK_THAT(e, Contains("unknown option \"colour\""));
}

TEST_CASE("assembly: an option the opcode does not take is reported at its key",
          "[unit][assembly][errors]") {
  const std::string line = "dve.tensor_copy t[:, :], t[:, :], func=exp";
  CHECK_THAT(error_of_line(line),
             StartsWith(at(line, "func")) && Contains("tensor_copy takes no option \"func\""));
  const std::string start = "dve.tensor_copy t[:, :], t[:, :], start";
  CHECK_THAT(error_of_line(start),
             StartsWith(at(start, "start")) && Contains("tensor_copy takes no option \"start\""));
  const std::string queue = "act.activation t[:, :], t[:, :], queue=q";
  CHECK_THAT(error_of_line(queue),
             StartsWith(at(queue, "queue")) && Contains("activation takes no option \"queue\""));
}

TEST_CASE("assembly: a DMA without a queue is reported at the end of its line",
          "[unit][assembly][errors]") {
  const std::string line = "sp.dma_copy t[:, :], x[:, :]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(end_of(line)));
  CHECK_THAT(e, Contains("a DMA instruction needs queue=NAME"));
  // The queue of one DMA does not carry over to the next.
  const std::string two = kPrelude + "sp.dma_copy t[:, :], x[:, :], queue=q\n" + line + "\n";
  CHECK_THAT(error_of(two), StartsWith(end_of(line, 8)));
  // An undeclared queue is named.
  const std::string unknown = "sp.dma_copy t[:, :], x[:, :], queue=q9";
  CHECK_THAT(error_of_line(unknown),
             StartsWith(at(unknown, "q9")) && Contains("no DMA queue named \"q9\""));
}

TEST_CASE("assembly: the wrong number of access patterns is reported", "[unit][assembly][errors]") {
  const std::string few = "dve.tensor_copy t[:, :]";
  CHECK_THAT(error_of_line(few), StartsWith(end_of(few)) &&
                                     Contains("tensor_copy takes 2 access patterns") &&
                                     Contains("found 1"));
  const std::string many = "dve.tensor_copy t[:, :], t[:, :], t[:, :]";
  const auto third = many.rfind("t[");
  CHECK_THAT(error_of_line(many), StartsWith("e.tasm:7:" + std::to_string(third + 1) + ": ") &&
                                      Contains("tensor_copy takes 2 access patterns"));
  const std::string matmul = "pe.matmul acc[:, :], w[:, :], start, stop";
  CHECK_THAT(error_of_line(matmul),
             StartsWith(end_of(matmul)) && Contains("matmul takes 3 access patterns"));
}

TEST_CASE("assembly: a slice out of bounds is reported at the slice", "[unit][assembly][errors]") {
  const std::string line = "dve.tensor_copy t[:, 0:600], t[:, 0:600]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "0:600")));
  CHECK_THAT(e, Contains("dimension 1: slice 0:600 is outside [0, 512)"));
  const std::string parts = "dve.tensor_copy t[0:129, :], t[:, :]";
  CHECK_THAT(error_of_line(parts), StartsWith(at(parts, "0:129")) &&
                                       Contains("dimension 0: slice 0:129 is outside [0, 128)"));
  const std::string dims = "dve.tensor_copy t[:, :, 0], t[:, :]";
  CHECK_THAT(error_of_line(dims),
             StartsWith(at(dims, "t[")) && Contains("3 slices for 2 dimensions of t"));
}

TEST_CASE("assembly: an unknown tensor or buffer name is reported at the name",
          "[unit][assembly][errors]") {
  const std::string line = "dve.tensor_copy t[:, :], nope[:, :]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "nope")));
  CHECK_THAT(e, Contains("no tensor or buffer named \"nope\""));
}

TEST_CASE("assembly: a wait on an undeclared semaphore is reported at its name",
          "[unit][assembly][errors]") {
  const std::string line = "dve.tensor_copy t[:, :], t[:, :], wait=zz>=1";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "zz")));
  CHECK_THAT(e, Contains("no semaphore or queue named \"zz\""));
  const std::string update = "dve.tensor_copy t[:, :], t[:, :], update=zz+=1";
  CHECK_THAT(error_of_line(update), StartsWith(at(update, "zz")));
}

TEST_CASE("assembly: a wait without >= is reported where >= was expected",
          "[unit][assembly][errors]") {
  const std::string line = "dve.tensor_copy t[:, :], t[:, :], wait=s=1";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "=1")));
  CHECK_THAT(e, Contains("expected '>='"));
  // A queue's semaphore can be waited on by the queue's name.
  CHECK(error_of_line("dve.tensor_copy t[:, :], t[:, :], wait=q>=16").empty());
}

TEST_CASE("assembly: a bad dtype in .tensor is reported at the dtype", "[unit][assembly][errors]") {
  const std::string line = ".tensor z bf17 [4, 4]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "bf17")));
  CHECK_THAT(e, Contains("unknown dtype \"bf17\"") && Contains("bf16"));
}

TEST_CASE("assembly: a buffer that does not fit SBUF is reported at its name",
          "[unit][assembly][errors]") {
  // 60000 fp32 = 240000 bytes per partition; trn2 SBUF has 224 KiB.
  const std::string line = ".buffer big sbuf fp32 [128, 60000]";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "big")));
  CHECK_THAT(e, Contains("buffer big needs 240000 bytes per partition"));
  // It fits on its own but not after the prelude's buffers (1024 + 256 bytes at offset 0).
  const std::string after = ".buffer late sbuf fp32 [128, 57300]";
  CHECK_THAT(error_of_line(after), StartsWith(at(after, "late")) && Contains("at offset 1280"));
  CHECK(error_of(".buffer alone sbuf fp32 [128, 57300]\n").empty());
  const std::string psum = ".buffer p2 psum fp32 [128, 4096]";
  CHECK_THAT(error_of_line(psum), StartsWith(at(psum, "p2")));
}

TEST_CASE("assembly: a duplicate name is reported at the second declaration",
          "[unit][assembly][errors]") {
  for (const std::string line : {".tensor t fp32 [4]", ".buffer x sbuf fp32 [128, 4]",
                                 ".semaphore q", ".queue s", ".semaphore sbuf"}) {
    INFO(line);
    // The name is the word after the directive.
    const size_t from = line.find(' ') + 1;
    const std::string name = line.substr(from, line.find(' ', from) - from);
    CHECK_THAT(error_of_line(line), StartsWith("e.tasm:7:" + std::to_string(from + 1) + ": ") &&
                                        Contains("\"" + name + "\" is already declared"));
  }
}

TEST_CASE("assembly: an unterminated string is reported", "[unit][assembly][errors]") {
  const std::string line = "\"load x: sp.dma_copy t[:, :], x[:, :], queue=q";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(end_of(line)));
  CHECK_THAT(e, Contains("unterminated string"));
  // A '#' inside quotes is not a comment.
  CHECK(error_of_line("\"a # b\": dve.tensor_copy t[:, :], t[:, :]").empty());
}

TEST_CASE("assembly: .sync after the first instruction is reported at the directive",
          "[unit][assembly][errors]") {
  const std::string text = kPrelude + "dve.tensor_copy t[:, :], t[:, :]\n.sync manual\n";
  const std::string e = error_of(text);
  CHECK_THAT(e, StartsWith("e.tasm:8:2: "));
  CHECK_THAT(e, Contains(".sync must come before the first instruction"));
  CHECK(error_of(".sync manual\n" + kPrelude + "dve.tensor_copy t[:, :], t[:, :]\n").empty());
  const std::string mode = ".sync sometimes";
  CHECK_THAT(error_of_line(mode), StartsWith(at(mode, "sometimes")));
}

TEST_CASE("assembly: an unknown .expect function is reported at the function",
          "[unit][assembly][errors]") {
  const std::string line = ".expect x = softmax(x)";
  const std::string e = error_of_line(line);
  CHECK_THAT(e, StartsWith(at(line, "softmax")));
  CHECK_THAT(
      e, Contains("unknown reference \"softmax\"; expected rmsnorm, matmul, copy, all_reduce_add"));
  const std::string missing = ".expect x = copy(nothing)";
  CHECK_THAT(error_of_line(missing),
             StartsWith(at(missing, "nothing")) && Contains("no tensor \"nothing\""));
  // Shapes are checked once the file is read, at the .expect's line.
  const std::string shapes = ".expect x = matmul(x, x)";
  CHECK_THAT(error_of_line(shapes), StartsWith("e.tasm:7:1: ") && Contains("matmul: inputs"));
}

TEST_CASE("assembly: a validation failure is reported at the instruction's line",
          "[unit][assembly][errors]") {
  const std::string line = "pe.matmul t[:, :], w[:, :], t[:, :], start, stop";
  const std::string e = error_of(kPrelude + "\n# a comment\n" + line + "\n");
  CHECK_THAT(e, StartsWith("e.tasm:9:1: "));
  CHECK_THAT(e, Contains("PSUM"));
  // The same instruction into PSUM is fine.
  CHECK(error_of_line("pe.matmul acc[:, :], w[:, :], t[:, :], start, stop").empty());
}

TEST_CASE("assembly: garbage, binary input, an empty file and a file of comments do not crash",
          "[unit][assembly][errors]") {
  const trnsim::config::ArchConfig arch = trnsim::config::trn2();
  SECTION("empty") {
    const Assembly a = parse_assembly("", "e.tasm", arch);
    CHECK(a.sequence.empty());
    CHECK(a.program.instruction_count() == 0);
  }
  SECTION("only comments and blank lines") {
    const Assembly a = parse_assembly("# one\n\n   # two\r\n\t\n", "e.tasm", arch);
    CHECK(a.sequence.empty());
    CHECK(a.program.dram_tensors.empty());
  }
  SECTION("garbage text") {
    CHECK_THAT(error_of("%%% !!\n"), StartsWith("e.tasm:1:1: "));
    CHECK_THAT(error_of("dve.tensor_copy t[[[[\n"), StartsWith("e.tasm:1:"));
    CHECK_THAT(error_of(kPrelude + "dve.tensor_copy t[:, :], t[:, :] junk\n"),
               StartsWith("e.tasm:7:"));
    CHECK_THAT(error_of(".tensor huge fp32 [999999999999, 999999999]\n"),
               StartsWith("e.tasm:1:9: ") && Contains("does not fit"));
    // 2^32 x 2^32 elements: the byte count must not wrap around to 0.
    CHECK_THAT(error_of(".tensor wraps fp32 [4294967296, 4294967296]\n"),
               StartsWith("e.tasm:1:9: ") && Contains("does not fit"));
  }
  SECTION("binary bytes") {
    std::string bin;
    for (int i = 0; i < 4096; ++i) bin += static_cast<char>((i * 7919 + 13) % 256);
    CHECK_THROWS_AS(parse_assembly(bin, "e.tasm", arch), AssemblyError);
    const std::string nul("\0\0\0\x01\xff", 5);
    CHECK_THROWS_AS(parse_assembly(nul, "e.tasm", arch), AssemblyError);
    CHECK_THROWS_AS(
        parse_assembly(kPrelude + "dve.tensor_copy t[:, \xff], t[:, :]\n", "e.tasm", arch),
        AssemblyError);
  }
  SECTION("every prefix of an example either parses or throws AssemblyError") {
    const std::string text = slurp(examples_dir() + "/rmsnorm_manual.tasm");
    REQUIRE(text.size() > 100);
    for (size_t n = 0; n < text.size(); n += 7) {
      try {
        parse_assembly(text.substr(0, n), "e.tasm", arch);
      } catch (const AssemblyError& e) {
        CHECK_THAT(std::string(e.what()), StartsWith("e.tasm:"));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// from_json errors name the JSON path.

TEST_CASE("assembly: from_json names the JSON path of what is wrong", "[unit][assembly][errors]") {
  const std::string file = examples_dir() + "/matmul_tiled.tasm";
  const Assembly a = parse_assembly(slurp(file), file, trnsim::config::trn2());
  const nlohmann::json good = json_of(a, streams_of(a, trnsim::config::trn2()));
  REQUIRE(json_error_of(good).empty());

  CHECK_THAT(json_error_of(nlohmann::json::array()),
             StartsWith("p.json: /format: ") && Contains("trnsim-program"));
  CHECK_THAT(json_error_of("garbage"), Contains("/format"));
  {
    auto j = good;
    j.erase("tensors");
    CHECK_THAT(json_error_of(j), Contains("missing \"tensors\""));
  }
  {
    auto j = good;
    j["tensors"][1]["dtype"] = "bf17";
    CHECK_THAT(json_error_of(j), Contains("/tensors/1/dtype: unknown value \"bf17\""));
  }
  {
    auto j = good;
    j["tensors"][0]["shape"][1] = -3;
    CHECK_THAT(json_error_of(j), Contains("/tensors/0/shape/1: out of range"));
  }
  {
    auto j = good;
    j["streams"]["pe"][0]["opcode"] = "frobnicate";
    CHECK_THAT(json_error_of(j), Contains("/streams/pe/0/opcode: unknown value \"frobnicate\""));
  }
  {
    auto j = good;
    j["streams"]["pe"][1]["opcode"] = "tensor_copy";
    CHECK_THAT(json_error_of(j),
               Contains("/streams/pe/1/opcode: tensor_copy does not run on TensorE"));
  }
  {
    auto j = good;
    j["streams"]["dve"][0]["src"][0]["dims"][0][1] = 0;
    CHECK_THAT(json_error_of(j), Contains("/streams/dve/0/src/0/dims/0/1: a count is 1 to 65535"));
  }
  {
    auto j = good;
    j["streams"]["dve"][0]["dst"]["memory"] = "DRAM";
    CHECK_THAT(json_error_of(j), Contains("/streams/dve/0/dst/memory: expected HBM, SBUF or PSUM"));
  }
  {
    auto j = good;
    j["streams"]["sp"][0]["queue"] = 7;
    CHECK_THAT(json_error_of(j), Contains("/streams/sp/0/queue: no such queue"));
  }
  {
    auto j = good;
    j["streams"]["sp"][0]["queue"] = "q_load";
    CHECK_THAT(json_error_of(j), Contains("/streams/sp/0/queue: expected an integer"));
  }
  {
    auto j = good;
    j["streams"]["dve"][0]["wait"] = {{{"semaphore", 99}, {"value", 1}}};
    CHECK_THAT(json_error_of(j), Contains("/streams/dve/0/wait/0/semaphore: no such semaphore"));
  }
  {
    auto j = good;
    j["queues"][0]["semaphore"] = 42;
    CHECK_THAT(json_error_of(j), Contains("/queues/0/semaphore: no such semaphore"));
  }
  {
    // 2^40 x 2^40 elements: each dimension is in range, the size wraps around 2^64.
    auto j = good;
    j["tensors"][2]["shape"] = {int64_t(1) << 40, int64_t(1) << 40};
    CHECK_THAT(json_error_of(j), Contains("/tensors/2"));
  }
  {
    auto j = good;
    j["tensors"][0]["init"] = "gaussian(0, 1)";
    CHECK_THAT(json_error_of(j), Contains("/tensors/0/init: expected zeros, normal"));
  }
}
