// `trnsim collective`: the collective timing model (models/collective) on its own, as
// nccom-test runs a collective over a range of sizes (docs/chip.md, "trnsim collective").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::sim {

struct CollectiveOptions {
  std::string op;      // all_reduce, all_gather, reduce_scatter, all_to_all, permute
  uint32_t ranks = 0;  // how many ranks
  uint32_t chips = 0;  // over how many chips (0: as few as hold the ranks)
  std::string sizes = "1KiB:1GiB:x4";  // START:END:xFACTOR, or a comma list
  std::string algorithm;               // "" chooses by size as the runtime does
  std::string arch = "trn2";
  std::vector<std::string> sets;
  std::string json;  // write the table as JSON here too
};

// Runs it and prints the table; returns the exit code (2 for bad input, naming it).
int collective(const CollectiveOptions& options);

// A size as nccom-test takes it: a whole number of bytes with an optional unit (B, KB, MB,
// GB: powers of 1000; KiB, MiB, GiB: powers of 1024; K, M, G as KiB, MiB, GiB); nullopt if not.
std::optional<uint64_t> parse_collective_size(const std::string& text);
// START:END:xFACTOR (every size from START multiplying by FACTOR up to END) or a comma list.
// Throws InputError naming what was expected.
std::vector<uint64_t> parse_collective_sizes(const std::string& text);

}  // namespace trnsim::sim
