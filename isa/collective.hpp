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
// predecessor. send and recv are point to point (NCCL's ncclSend/ncclRecv): the k-th send from
// core a to core b meets the k-th recv on b from a, and size is the one buffer they move.
enum class CollectiveOp : uint8_t {
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  permute,
  send,
  recv
};
constexpr int kCollectiveOpCount = 7;

constexpr bool is_point_to_point(CollectiveOp op) {
  return op == CollectiveOp::send || op == CollectiveOp::recv;
}

// A send's or recv's partner core: `peer=P` (absolute) or `peer=+K` / `peer=-K` (relative to the
// core running the instruction, modulo the run's cores, so that one SPMD program can pass data
// along a pipeline).
enum class PeerKind : uint8_t { none, absolute, relative };

// The partner of core `core` among `cores` (kind not none).
constexpr uint32_t peer_core(PeerKind kind, int32_t peer, uint32_t core, uint32_t cores) {
  if (kind == PeerKind::absolute) return static_cast<uint32_t>(peer);
  const int64_t n = cores;
  return static_cast<uint32_t>(((int64_t{core} + peer) % n + n) % n);
}

std::string_view name_of(CollectiveOp op);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);

// nccom-test's bus-bandwidth factor (busbw = algbw x factor): all_reduce 2 (r - 1) / r;
// all_gather, reduce_scatter, all_to_all (r - 1) / r; permute 1.
double bus_bandwidth_factor(CollectiveOp op, uint32_t ranks);

}  // namespace trnsim::isa
