// Collective operations between NeuronCores (docs/chip.md): the operations the Neuron runtime
// and nccom-test name (neuron-runtime/about/collectives.rst,
// tools/neuron-sys-tools/nccom-test.rst).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace trnsim::isa {

// Sizes follow nccom-test's `size`: the whole buffer. all_reduce: input = output = size;
// all_gather: output = size, each rank's input size / ranks; reduce_scatter: input = size, each
// rank's output size / ranks; all_to_all: each rank sends size (size / ranks to each peer);
// permute: each rank sends size to its successor in the rank list and receives size from its
// predecessor.
enum class CollectiveOp : uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, permute };
constexpr int kCollectiveOpCount = 5;

std::string_view name_of(CollectiveOp op);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);

// nccom-test's bus-bandwidth factor (busbw = algbw x factor): all_reduce 2 (r - 1) / r;
// all_gather, reduce_scatter, all_to_all (r - 1) / r; permute 1.
double bus_bandwidth_factor(CollectiveOp op, uint32_t ranks);

}  // namespace trnsim::isa
