// The presets as data (arch/*.json, embedded at build time): complete, sourced, exactly the
// values the model was validated with, and readable back from what arch_document prints.
#include <catch2/catch.hpp>

#include <regex>

#include "config/arch_file.hpp"

using trnsim::config::ArchConfig;
using trnsim::config::ArchFileError;
using trnsim::config::parameters;
using trnsim::config::parse_arch_document;

namespace {

bool same_values(const ArchConfig& a, const ArchConfig& b) {
  for (const auto& p : parameters()) {
    if (p.get(a) != p.get(b)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the built-in presets are trn1, trn2 and trn3, from arch/*.json") {
  CHECK(trnsim::config::preset_names() == "trn1, trn2, trn3");
  REQUIRE(trnsim::config::embedded_arch_files().size() == 3);
  for (const auto& spec : trnsim::config::preset_specs()) {
    CHECK(spec.origin.find("arch/" + spec.config.name + ".json") != std::string::npos);
  }
  CHECK_FALSE(trnsim::config::preset("trn4").has_value());
}

TEST_CASE("every preset parameter has a source: a fact-sheet key or an assumption with a reason") {
  // Keys of ../shared/reference/trainium.md, or its sections, or DRV (the public Neuron driver
  // source), or N (the public AWS Neuron documentation, pages named; docs/chip.md "Sources"),
  // optionally [inferred] or [read off figure] (a number read from a profile screenshot or chart in
  // the docs).
  const std::regex key(
      R"(^((A[1-3]|H|I1|P|D[12]|X[1-5]|DRV|N|section [1-7])( \[(inferred|read off figure)\])?)(, (A[1-3]|H|I1|P|D[12]|X[1-5]|DRV|N|section [1-7])( \[(inferred|read off figure)\])?)*: .{8,}$)");
  const std::regex assumption(R"(^assumption: .{8,}$)");
  // A simulator option that is not a hardware figure (dma_flow_model: which memory model runs).
  const std::regex model_choice(R"(^model choice: .{8,}$)");
  for (const auto& spec : trnsim::config::preset_specs()) {
    REQUIRE(spec.sources.size() == parameters().size());
    for (size_t i = 0; i < parameters().size(); ++i) {
      INFO(spec.config.name << " " << parameters()[i].name << ": " << spec.sources[i]);
      CHECK((std::regex_match(spec.sources[i], key) ||
             std::regex_match(spec.sources[i], assumption) ||
             std::regex_match(spec.sources[i], model_choice)));
    }
  }
}

TEST_CASE("the presets keep the values the golden counts were taken with") {
  const ArchConfig trn1 = trnsim::config::trn1(), trn2 = trnsim::config::trn2();
  CHECK(trn1.engine_mhz == std::array<uint32_t, 5>{2800, 1120, 1400, 1400, 1400});
  CHECK(trn2.engine_mhz == std::array<uint32_t, 5>{2400, 960, 1200, 1200, 1200});
  CHECK(trn1.sbuf_partition_bytes == 192 * 1024);
  CHECK(trn2.sbuf_partition_bytes == 224 * 1024);
  CHECK(trn1.hbm_bytes_per_ns() == 410.0);
  CHECK(trn2.hbm_bytes_per_ns() == 362.5);
  CHECK(trn1.dma_descriptor_overhead_ns == 89.0);
  CHECK(trn2.dma_descriptor_overhead_ns == 1.0);
  CHECK(trn1.hbm.t_ccd_l == 0.0);
  // Two bursts, exactly as the former C++ preset computed it.
  CHECK(trn2.hbm.t_ccd_l == 2 * trn2.hbm.burst_ns());
  CHECK(trn2.hbm.pseudo_channels == 32);
  CHECK(trn2.host.runtime_launch_ns == 15000.0);
  CHECK(trn1.shared_sbuf_psum_ports);
  CHECK_FALSE(trn2.shared_sbuf_psum_ports);
  CHECK(trn2.max_instructions == 1'000'000);
}

TEST_CASE("trn3 takes what the fact sheet gives for Trainium3 / NeuronCore-v4") {
  const ArchConfig a = trnsim::config::trn3();
  CHECK(a.chip_cores == 8);
  CHECK(a.engine_mhz == std::array<uint32_t, 5>{2400, 1200, 1200, 1200, 1200});
  CHECK(a.sbuf_partition_bytes * a.partitions == 32ULL << 20);
  CHECK(a.psum_partition_bytes * a.partitions == 2ULL << 20);
  CHECK(a.matmul_fp8_rate == 4);  // 315 MXFP8 over 79 BF16 TFLOPS
  CHECK(a.dma_engines == 16);
  CHECK(a.dma_engine_bytes_per_ns == 38.4);
  CHECK(a.hbm_capacity_bytes * a.chip_cores == 144ULL << 30);
  CHECK(a.hbm_bytes_per_ns() * a.chip_cores == 4900.0);
  CHECK(a.hbm.t_ccd_l == 2 * a.hbm.burst_ns());
  CHECK(a.tensor_peak_flops_bf16() == Approx(78.6e12).epsilon(0.001));
}

TEST_CASE("arch_document prints a file that parses back to the same values and sources") {
  for (const auto& spec : trnsim::config::preset_specs()) {
    const auto back = parse_arch_document(trnsim::config::arch_document(spec), "copy.json");
    CHECK(back.config.name == spec.config.name);
    CHECK(same_values(back.config, spec.config));
    CHECK(back.sources == spec.sources);
    CHECK(back.notes == spec.notes);
  }
}

TEST_CASE("an arch file with a base changes only what it gives") {
  const auto spec = parse_arch_document(
      R"({"base": "trn1", "parameters": {"pe_columns": 256, "hbm.t_rcd": {"value": 12.5, "source": "faster"}}})",
      "dir/wide.json");
  CHECK(spec.config.name == "wide");  // the file's name without .json
  CHECK(spec.base == "trn1");
  CHECK(spec.config.pe_columns == 256);
  CHECK(spec.config.hbm.t_rcd == 12.5);
  ArchConfig expected = trnsim::config::trn1();
  expected.pe_columns = 256;
  expected.hbm.t_rcd = 12.5;
  expected.name = "wide";
  CHECK(same_values(spec.config, expected));
  const size_t rcd = trnsim::config::parameter_index(*trnsim::config::find_parameter("hbm.t_rcd"));
  const size_t cols =
      trnsim::config::parameter_index(*trnsim::config::find_parameter("pe_columns"));
  CHECK(spec.sources[rcd] == "faster");
  CHECK(spec.sources[cols] == "dir/wide.json");
  auto with_set = spec;
  trnsim::config::set_parameter(with_set, "pe_rows=64");
  CHECK(with_set.config.pe_rows == 64);
  CHECK(with_set
            .sources[trnsim::config::parameter_index(*trnsim::config::find_parameter("pe_rows"))] ==
        "--set");
}

TEST_CASE("a bad arch file names the file, the key and what was expected") {
  using Catch::Matchers::Contains;
  const auto error = [](const std::string& text) {
    try {
      (void)parse_arch_document(text, "a.json");
    } catch (const ArchFileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error("[1]"), Contains("a.json: /: expected a JSON object"));
  CHECK_THAT(error(R"({"base": "trn2"})"), Contains("a.json: /parameters: missing"));
  CHECK_THAT(error(R"({"base": "trn2", "parameters": {"pe_rows": true}})"),
             Contains("a.json: /parameters/pe_rows: expected an integer"));
  CHECK_THAT(error(R"({"base": "trn2", "parameters": {"pe_rows": 1.5}})"),
             Contains("a.json: /parameters/pe_rows: expected an integer"));
  CHECK_THAT(
      error(R"({"base": "trn2", "parameters": {"pe_rows": {"value": 64, "units": "rows"}}})"),
      Contains("a.json: /parameters/pe_rows/units: unknown key"));
  CHECK_THAT(error(R"({"base": "trn2", "parameters": {"pe_rows": {"unit": "rows"}}})"),
             Contains("a.json: /parameters/pe_rows/value: missing"));
  CHECK_THAT(error(R"({"base": "trn2", "base": "trn1", "parameters": {}})"),
             Contains("duplicate key"));
  CHECK_THAT(error(R"({"parameters": {"pe_rows": 64}})"),
             Contains("a.json: /parameters/pe_rows: expected {\"value\""));
}
