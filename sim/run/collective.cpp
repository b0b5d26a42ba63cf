#include "sim/run/collective.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <iostream>
#include <nlohmann/json.hpp>

#include "isa/collective.hpp"
#include "models/collective/fabric.hpp"
#include "sim/io/exit_codes.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/output_file.hpp"
#include "sim/run/load.hpp"

namespace trnsim::sim {

std::optional<uint64_t> parse_collective_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 19) return std::nullopt;
  const uint64_t value = std::stoull(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  uint64_t scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KB")
    scale = 1000;
  else if (unit == "MB")
    scale = 1000 * 1000;
  else if (unit == "GB")
    scale = 1000 * 1000 * 1000;
  else if (unit == "K" || unit == "KiB")
    scale = uint64_t{1} << 10;
  else if (unit == "M" || unit == "MiB")
    scale = uint64_t{1} << 20;
  else if (unit == "G" || unit == "GiB")
    scale = uint64_t{1} << 30;
  else
    return std::nullopt;
  // At most 1 TiB: beyond it nothing in the model changes but the time, and it keeps the
  // arithmetic far from overflow.
  if (value > (uint64_t{1} << 40) / scale) return std::nullopt;
  return value * scale;
}

std::vector<uint64_t> parse_collective_sizes(const std::string& text) {
  const std::string expected =
      "expected START:END:xFACTOR (e.g. 1KiB:1GiB:x4) or a comma list of sizes (e.g. "
      "1KiB,4MiB), each a whole number of bytes with an optional unit B, KB, MB, GB, KiB, MiB, "
      "GiB, at most 1 TiB";
  auto size = [&](const std::string& word) {
    const auto v = parse_collective_size(word);
    if (!v) throw InputError("--sizes: '" + word + "' is not a size: " + expected);
    return *v;
  };
  std::vector<uint64_t> out;
  if (text.find(':') != std::string::npos) {
    const size_t a = text.find(':'), b = text.find(':', a + 1);
    if (b == std::string::npos || text.find(':', b + 1) != std::string::npos ||
        b + 1 >= text.size() || text[b + 1] != 'x')
      throw InputError("--sizes: '" + text + "': " + expected);
    const uint64_t start = size(text.substr(0, a)), end = size(text.substr(a + 1, b - a - 1));
    const std::string f = text.substr(b + 2);
    const auto factor = parse_collective_size(f);
    if (!factor || f.find_first_not_of("0123456789") != std::string::npos || *factor < 2)
      throw InputError("--sizes: factor 'x" + f + "' must be a whole number of at least 2");
    if (start == 0)
      throw InputError("--sizes: '" + text +
                       "' starts at 0 bytes: a range multiplies from at "
                       "least 1 byte (a list may hold 0)");
    if (start > end) throw InputError("--sizes: '" + text + "' starts above its end: " + expected);
    for (uint64_t s = start; s <= end; s *= *factor) {
      out.push_back(s);
      if (s > end / *factor) break;
    }
    return out;
  }
  size_t from = 0;
  while (true) {
    const size_t comma = text.find(',', from);
    out.push_back(size(text.substr(from, comma == std::string::npos ? comma : comma - from)));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

int collective(const CollectiveOptions& o) {
  try {
    const auto op = isa::parse_collective_op(o.op);
    if (!op || isa::is_point_to_point(*op))
      throw InputError("unknown collective '" + o.op +
                       "': expected all_reduce, all_gather, reduce_scatter, all_to_all or permute");
    const config::ArchSpec spec = load_arch_spec(o.arch, o.sets);
    const config::ArchConfig& arch = spec.config;
    const uint32_t chip_cores = arch.chip_cores, instance_chips = arch.instance.chips();
    if (o.ranks == 0) throw InputError("--ranks: expected at least 1 rank");
    const uint32_t chips = o.chips ? o.chips : (o.ranks + chip_cores - 1) / chip_cores;
    if (chips > instance_chips)
      throw InputError(fmt::format("--ranks {}{}: {} has {} chips of {} cores ({} ranks at most)",
                                   o.ranks, o.chips ? fmt::format(" --chips {}", o.chips) : "",
                                   arch.name, instance_chips, chip_cores,
                                   instance_chips * chip_cores));
    if (o.ranks % chips != 0 || o.ranks / chips > chip_cores)
      throw InputError(fmt::format(
          "--ranks {} --chips {}: expected the same number of ranks on every chip, at most {} "
          "(the cores of a {} chip)",
          o.ranks, chips, chip_cores, arch.name));
    const std::vector<uint64_t> sizes = parse_collective_sizes(o.sizes);
    // A chip's ranks spread over its cores evenly (4 ranks on trn2's 8 cores: 0, 2, 4, 6, one
    // per HBM stack, as LNC=2's logical cores are), so that ranks share stacks only when they
    // must.
    const uint32_t per_chip = o.ranks / chips;
    const uint32_t spacing = chip_cores % per_chip == 0 ? chip_cores / per_chip : 1;
    models::CollectiveRequest request;
    request.op = *op;
    request.algorithm = o.algorithm;
    for (uint32_t c = 0; c < chips; ++c)
      for (uint32_t k = 0; k < per_chip; ++k) request.ranks.push_back({c, k * spacing});
    if (const std::string e = models::collective_request_error(arch, request); !e.empty())
      throw InputError("--algorithm " + o.algorithm + ": " + e);
    std::optional<OutputFile> json_file;
    if (!o.json.empty()) json_file.emplace(o.json);

    const std::string topology =
        arch.instance.switched
            ? fmt::format("{} chips through a switch", instance_chips)
            : fmt::format("{}x{} torus", arch.instance.torus_x, arch.instance.torus_y);
    std::string text =
        fmt::format("# trnsim collective {}: {} ranks on {} chip{} ({} per chip) of {} ({})\n",
                    o.op, o.ranks, chips, chips == 1 ? "" : "s", per_chip, arch.name, topology);
    text += fmt::format("{:>14} {:>12} {:>12} {:>12} {:>13} {:>6}\n", "size(B)", "time(us)",
                        "algbw(GB/s)", "busbw(GB/s)", "algorithm", "steps");
    nlohmann::json results = nlohmann::json::array();
    const double factor = isa::bus_bandwidth_factor(*op, o.ranks);
    for (const uint64_t size : sizes) {
      request.bytes = size;
      models::CollectiveFabric fabric(arch);  // each size alone, as nccom-test runs them
      const models::CollectiveTiming t = fabric.schedule(request, Picoseconds(0));
      const double ns = static_cast<double>(t.end.value) / 1e3;
      const double algbw = ns > 0 ? static_cast<double>(size) / ns : 0;  // B/ns = GB/s
      text += fmt::format("{:>14} {:>12.2f} {:>12.2f} {:>12.2f} {:>13} {:>6}\n", size, ns / 1e3,
                          algbw, algbw * factor, t.algorithm, t.steps);
      results.push_back({{"size_bytes", size},
                         {"time_us", ns / 1e3},
                         {"algbw_gbps", algbw},
                         {"busbw_gbps", algbw * factor},
                         {"algorithm", t.algorithm},
                         {"steps", t.steps},
                         {"channels", t.channels},
                         {"link_bytes", t.link_bytes}});
    }
    if (json_file) {
      const nlohmann::json doc = {{"op", o.op},
                                  {"ranks", o.ranks},
                                  {"chips", chips},
                                  {"arch", arch.name},
                                  {"algorithm", o.algorithm.empty() ? "auto" : o.algorithm},
                                  {"results", results}};
      json_file->write(doc.dump(2) + "\n");
      json_file->commit();
    }
    std::cout << text << std::flush;
    return kSuccess;
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return kBadInput;
  } catch (const OutputError& e) {
    spdlog::error("{}", e.what());
    return kBadInput;
  }
}

}  // namespace trnsim::sim
