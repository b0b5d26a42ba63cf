#include "isa/collective.hpp"

#include <array>

namespace trnsim::isa {

namespace {
constexpr std::array<std::string_view, kCollectiveOpCount> kNames = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute", "send", "recv"};
}

std::string_view name_of(CollectiveOp op) {
  return kNames[static_cast<size_t>(op)];
}

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<CollectiveOp>(i);
  }
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveOp op, uint32_t ranks) {
  if (ranks == 0) return 0;
  const double r = ranks;
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2 * (r - 1) / r;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
      return (r - 1) / r;
    case CollectiveOp::permute:
    case CollectiveOp::send:
    case CollectiveOp::recv:
      return 1;
  }
  return 1;
}

}  // namespace trnsim::isa
