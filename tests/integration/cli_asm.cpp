// The ISA tools as a user runs them: `trnsim asm`, `trnsim disasm`, `trnsim isa`, and running
// .tasm programs and their JSON and disassembled forms with the same cycle counts.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace trnsim_test;

namespace {

// The cycle count of running `program`, from stats.json.
uint64_t cycles_of(const std::string& program, const std::string& dir, const std::string& tag) {
  const Invocation r = trnsim(program + " --out " + dir + "/" + tag, dir);
  INFO(program << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const auto stats = read_json(dir + "/" + tag + "/stats.json");
  const uint64_t c = stats["summary"]["neuroncore_cycle_count"].get<uint64_t>();
  CHECK(c > 0);
  return c;
}

const std::vector<std::string> kOpcodes = {"dma_copy",
                                           "dma_transpose",
                                           "matmul",
                                           "transpose",
                                           "activation",
                                           "tensor_tensor",
                                           "tensor_scalar",
                                           "scalar_tensor_tensor",
                                           "tensor_reduce",
                                           "tensor_copy",
                                           "memset",
                                           "iota",
                                           "select",
                                           "bn_stats",
                                           "bn_aggr",
                                           "reciprocal",
                                           "shuffle",
                                           "affine_select",
                                           "partition_reduce",
                                           "partition_all_reduce",
                                           "nop",
                                           "tensor_scalar_reduce",
                                           "tensor_tensor_scan",
                                           "tensor_scalar_cumulative",
                                           "max8",
                                           "find_index8",
                                           "match_replace8",
                                           "range_select",
                                           "copy_predicated",
                                           "local_gather",
                                           "gather",
                                           "collective"};

}  // namespace

TEST_CASE("trnsim asm prints the JSON program form") {
  const std::string dir = fresh_dir("asm_stdout");
  const Invocation r = trnsim("asm " + example("matmul_tiled.tasm"), dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);  // throws on invalid JSON
  CHECK(j["format"] == "trnsim-program");
  CHECK(j["version"] == 1);
  CHECK(j["tensors"].size() == 3);
  CHECK(j["streams"]["pe"].size() == 4);
  CHECK(j["streams"]["sp"].size() == 6);
  // Auto-sync added the engine semaphores after the two queues.
  CHECK(j["semaphores"].size() > 2);
  size_t waits = 0;
  for (const auto& [engine, list] : j["streams"].items())
    for (const auto& in : list) waits += in.value("wait", nlohmann::json::array()).size();
  CHECK(waits > 0);
}

TEST_CASE("trnsim asm -o writes a program that runs with the same cycles as the .tasm") {
  const std::string dir = fresh_dir("asm_file");
  for (const char* name : {"matmul_tiled", "rmsnorm_manual", "micro_dma"}) {
    INFO(name);
    const std::string json = dir + "/" + name + ".json";
    const Invocation a = trnsim("asm -o " + json + " " + example(std::string(name) + ".tasm"), dir);
    INFO(a.err);
    REQUIRE(a.exit_code == 0);
    CHECK(a.out.empty());
    REQUIRE(std::filesystem::exists(json));
    CHECK(read_json(json)["format"] == "trnsim-program");
    const uint64_t from_tasm =
        cycles_of(example(std::string(name) + ".tasm"), dir, std::string(name) + "_tasm");
    CHECK(cycles_of(json, dir, std::string(name) + "_json") == from_tasm);
  }
}

TEST_CASE("trnsim asm keeps the .arch of a trn1 program: the JSON runs with the same cycles") {
  const std::string dir = fresh_dir("asm_trn1");
  std::string text = slurp(example("micro_pe.tasm"));
  const auto at = text.find(".arch trn2");
  REQUIRE(at != std::string::npos);
  text.replace(at, 10, ".arch trn1");
  const std::string tasm = write_file(dir, "pe_trn1.tasm", text);
  const std::string json = dir + "/pe_trn1.json";
  REQUIRE(trnsim("asm -o " + json + " " + tasm, dir).exit_code == 0);
  const uint64_t trn1 = cycles_of(tasm, dir, "tasm");
  CHECK(read_json(dir + "/tasm/stats.json")["arch"]["name"] == "trn1");
  CHECK(cycles_of(json, dir, "json") == trn1);
  // disasm of the JSON keeps it as well.
  const Invocation d = trnsim("disasm " + json, dir);
  REQUIRE(d.exit_code == 0);
  CHECK(cycles_of(write_file(dir, "pe_dis.tasm", d.out), dir, "dis") == trn1);
}

TEST_CASE("trnsim disasm output, saved as .tasm, runs with the same cycles") {
  const std::string dir = fresh_dir("disasm");
  for (const char* name : {"matmul_tiled", "rmsnorm_manual", "micro_pe"}) {
    INFO(name);
    const std::string json = dir + "/" + name + ".json";
    REQUIRE(trnsim("asm -o " + json + " " + example(std::string(name) + ".tasm"), dir).exit_code ==
            0);
    const Invocation d = trnsim("disasm " + json, dir);
    INFO(d.err);
    REQUIRE(d.exit_code == 0);
    CHECK(d.out.find(".sync manual") != std::string::npos);
    const std::string tasm = write_file(dir, std::string(name) + "_dis.tasm", d.out);
    const uint64_t original =
        cycles_of(example(std::string(name) + ".tasm"), dir, std::string(name) + "_orig");
    CHECK(cycles_of(tasm, dir, std::string(name) + "_dis") == original);
    // disasm -o writes the same text to a file; disassembling a .tasm directly agrees too.
    const std::string out = dir + "/" + name + "_o.tasm";
    REQUIRE(trnsim("disasm -o " + out + " " + json, dir).exit_code == 0);
    CHECK(slurp(out) == d.out);
    // The JSON form carries the program's .arch too: the text is the same.
    const std::string direct = trnsim("disasm " + example(std::string(name) + ".tasm"), dir).out;
    CHECK(direct == d.out);
  }
}

TEST_CASE("trnsim isa lists all 32 opcodes") {
  const std::string dir = fresh_dir("isa_list");
  const Invocation r = trnsim("isa", dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(kOpcodes.size() == 32);
  for (const auto& op : kOpcodes) {
    INFO(op);
    // Each opcode starts a line, followed by its engines.
    CHECK((r.out.rfind(op + " ", 0) == 0 || r.out.find("\n" + op + " ") != std::string::npos));
  }
  size_t rows = 0;
  for (size_t p = 0; (p = r.out.find("cost: ", p)) != std::string::npos; ++p) ++rows;
  CHECK(rows == 32);
  const Invocation md = trnsim("isa --markdown", dir);
  REQUIRE(md.exit_code == 0);
  size_t table_rows = 0;
  for (const auto& op : kOpcodes) {
    if (md.out.find("| `" + op + "` |") != std::string::npos) ++table_rows;
  }
  CHECK(table_rows == 32);
}

TEST_CASE("trnsim isa --markdown is contained verbatim in docs/isa.md") {
  const std::string dir = fresh_dir("isa_markdown");
  const Invocation r = trnsim("isa --markdown", dir);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("| opcode |") == 0);
  const std::string doc = std::string(TRNSIM_SOURCE_DIR) + "/docs/isa.md";
  INFO("docs/isa.md must embed the output of `trnsim isa --markdown`");
  REQUIRE(std::filesystem::exists(doc));
  CHECK(slurp(doc).find(r.out) != std::string::npos);
}

TEST_CASE("a malformed .tasm exits 2 with file:line:column and writes no outputs") {
  const std::string dir = fresh_dir("asm_malformed");
  const std::string path = write_file(dir, "bad.tasm",
                                      ".tensor x bf16 [128, 512]\n"
                                      ".buffer t sbuf bf16 [128, 512]\n"
                                      "dve.tensor_copy t[:, :], nope[:, :]\n");
  const Invocation r = trnsim(path + " --out " + dir + "/out", dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(path + ":3:26:") != std::string::npos);
  CHECK(r.err.find("no tensor or buffer named \"nope\"") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out/stats.json"));
  CHECK_FALSE(std::filesystem::exists(dir + "/out/trace.json"));
  CHECK_FALSE(std::filesystem::exists(dir + "/out/trace.json.tmp"));
  // asm and disasm report it the same way and write nothing.
  const Invocation a = trnsim("asm -o " + dir + "/bad.json " + path, dir);
  CHECK(a.exit_code == 2);
  CHECK(a.err.find(path + ":3:26:") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/bad.json"));
  CHECK(trnsim("disasm " + path, dir).exit_code == 2);
}

TEST_CASE("a .tasm that can deadlock exits 2 with \"can deadlock\"") {
  const std::string dir = fresh_dir("asm_deadlock");
  const std::string path = write_file(dir, "cycle.tasm",
                                      ".sync manual\n"
                                      ".semaphore ping\n"
                                      ".semaphore pong\n"
                                      ".buffer a sbuf fp32 [128, 64]\n"
                                      ".buffer b sbuf fp32 [128, 64]\n"
                                      "act.activation a[:, :], b[:, :], wait=pong>=1, "
                                      "update=ping+=1\n"
                                      "dve.tensor_copy b[:, :], a[:, :], wait=ping>=1, "
                                      "update=pong+=1\n");
  const Invocation r = trnsim(path + " --out " + dir + "/out", dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("can deadlock") != std::string::npos);
  CHECK(r.err.find("ScalarE") != std::string::npos);
  CHECK(r.err.find("VectorE") != std::string::npos);
  CHECK(r.err.find("waits for pong to reach 1") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out/stats.json"));
}

TEST_CASE("trnsim matmul_tiled.tasm passes its check") {
  const std::string dir = fresh_dir("asm_matmul_tiled");
  const Invocation r = trnsim(example("matmul_tiled.tasm") + " --out " + dir + "/out", dir);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("check: PASS") != std::string::npos);
  const auto stats = read_json(dir + "/out/stats.json");
  CHECK(stats["check"]["status"] == "pass");
  CHECK(stats["choices"]["synchronization"] == "auto-sync");
}
