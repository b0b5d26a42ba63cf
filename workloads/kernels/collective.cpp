#include "workloads/kernels/collective.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "isa/collective.hpp"
#include "isa/instruction.hpp"

namespace trnsim::workloads {

std::vector<float> collective_reference(const std::string& f,
                                        const std::vector<std::vector<float>>& each,
                                        uint32_t core) {
  const auto ranks = static_cast<uint32_t>(each.size());
  const size_t n = each[0].size();
  auto reduced = [&](isa::AluOp op) {
    std::vector<float> acc = each[0];
    for (uint32_t r = 1; r < ranks; ++r) {
      for (size_t i = 0; i < n; ++i) acc[i] = isa::apply(op, acc[i], each[r][i]);
    }
    return acc;
  };
  auto op_of = [&](const std::string& suffix) {
    return suffix == "max" ? isa::AluOp::max : suffix == "min" ? isa::AluOp::min : isa::AluOp::add;
  };
  if (f.rfind("all_reduce_", 0) == 0) return reduced(op_of(f.substr(11)));
  if (f.rfind("reduce_scatter_", 0) == 0) {
    const std::vector<float> acc = reduced(op_of(f.substr(15)));
    const size_t chunk = n / ranks;
    return std::vector<float>(acc.begin() + static_cast<std::ptrdiff_t>(core * chunk),
                              acc.begin() + static_cast<std::ptrdiff_t>((core + 1) * chunk));
  }
  std::vector<float> out;
  if (f == "all_gather") {
    for (const auto& x : each) out.insert(out.end(), x.begin(), x.end());
  } else if (f == "all_to_all") {
    const size_t chunk = n / ranks;
    for (uint32_t s = 0; s < ranks; ++s) {
      const auto from = each[s].begin() + static_cast<std::ptrdiff_t>(core * chunk);
      out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(chunk));
    }
  } else {  // permute: the predecessor's input
    out = each[(core + ranks - 1) % ranks];
  }
  return out;
}

LoweredKernel lower_collective(const Workload& w, const config::ArchConfig& arch, bool functional) {
  if (!w.options.contains("op") || !w.options["op"].is_string() ||
      !isa::parse_collective_op(w.options["op"].get<std::string>()) ||
      isa::is_point_to_point(*isa::parse_collective_op(w.options["op"].get<std::string>()))) {
    throw WorkloadError(w.file, "/op",
                        fmt::format("expected one of \"all_reduce\", \"all_gather\", "
                                    "\"reduce_scatter\", \"all_to_all\", \"permute\", got {}",
                                    w.options.value("op", nlohmann::json()).dump()));
  }
  const isa::CollectiveOp op = *isa::parse_collective_op(w.options["op"].get<std::string>());
  const bool reduces =
      op == isa::CollectiveOp::all_reduce || op == isa::CollectiveOp::reduce_scatter;
  isa::AluOp reduce = isa::AluOp::bypass;
  std::string reduce_name = "add";
  if (w.options.contains("reduce")) {
    const auto& v = w.options["reduce"];
    if (!reduces) {
      throw WorkloadError(w.file, "/reduce",
                          fmt::format("{} does not reduce; drop \"reduce\"", isa::name_of(op)));
    }
    if (!v.is_string() || (v != "add" && v != "max" && v != "min")) {
      throw WorkloadError(w.file, "/reduce",
                          fmt::format("expected \"add\", \"max\" or \"min\", got {}", v.dump()));
    }
    reduce_name = v.get<std::string>();
  }
  if (reduces) reduce = *isa::parse_alu_op(reduce_name);
  if (!w.params.empty()) {
    throw WorkloadError(w.file, "/params/" + w.params.items().begin().key(),
                        "collective takes no params");
  }
  const uint64_t es = isa::size_of(w.dtype);
  uint32_t ranks = w.cores;
  if (w.options.contains("group")) {
    const auto& g = w.options["group"];
    if (!g.is_number_unsigned() || g.get<uint64_t>() < 1 || g.get<uint64_t>() > 255 ||
        w.cores % g.get<uint64_t>() != 0) {
      throw WorkloadError(
          w.file, "/group",
          fmt::format("expected cores per group dividing the {} cores, got {}", w.cores, g.dump()));
    }
    ranks = static_cast<uint32_t>(g.get<uint64_t>());
  }
  const bool grouped = ranks != w.cores;
  const auto& b = w.options.value("bytes", nlohmann::json());
  // Whole elements, and for the ops that split the buffer a whole number per rank.
  const bool splits = op != isa::CollectiveOp::all_reduce && op != isa::CollectiveOp::permute;
  const uint64_t unit = es * (splits ? ranks : 1);
  if (!b.is_number_unsigned() || b.get<uint64_t>() == 0 || b.get<uint64_t>() % unit != 0 ||
      b.get<uint64_t>() > arch.hbm_capacity_bytes / 2) {
    throw WorkloadError(
        w.file, "/bytes",
        fmt::format("expected nccom-test's size in bytes: a positive multiple of {} ({} bytes "
                    "per {} element{}), at most half the core's HBM; got {}",
                    unit, es, isa::name_of(w.dtype),
                    splits ? fmt::format(" x {} cores", ranks) : "", b.dump()));
  }
  const uint64_t n = b.get<uint64_t>() / es;
  const uint64_t in_elements = op == isa::CollectiveOp::all_gather ? n / ranks : n;
  const uint64_t out_elements = op == isa::CollectiveOp::reduce_scatter ? n / ranks : n;
  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  // Rows of the widest count a free dimension takes (at most 65535) that divides the tensor:
  // the collective sees each tensor whole and flattened, so the split is only its address.
  auto shape_of = [](uint64_t elements) {
    uint64_t cols = std::min<uint64_t>(elements, 65535);
    while (elements % cols != 0) --cols;
    return std::vector<int64_t>{static_cast<int64_t>(elements / cols), static_cast<int64_t>(cols)};
  };
  const isa::DramTensor x = p.add_dram_tensor("x", w.dtype, shape_of(in_elements));
  const isa::DramTensor y = p.add_dram_tensor("y", w.dtype, shape_of(out_elements));
  const uint16_t done = p.add_semaphore("collective_done");
  auto whole = [](const isa::DramTensor& t) {
    const auto cols = static_cast<uint32_t>(t.shape[1]);
    return isa::hbm_ap(t.dtype, t.address, static_cast<uint32_t>(t.shape[0]), cols, {{1, cols}});
  };
  isa::Instruction cc;
  cc.opcode = isa::Opcode::collective;
  cc.engine = Engine::sync;
  cc.collective_op = op;
  cc.op0 = reduce;
  if (grouped) cc.collective_group = static_cast<uint8_t>(ranks);
  cc.src[0] = whole(x);
  cc.dst = whole(y);
  cc.label = std::string(isa::name_of(op));
  cc.updates.push_back(isa::SemaphoreUpdate{done, isa::SemaphoreUpdateKind::add, 1});
  isa::Instruction fence;
  fence.opcode = isa::Opcode::nop;
  fence.engine = Engine::sync;
  fence.waits.push_back(isa::SemaphoreWait{done, 1});
  p.stream(Engine::sync).push_back(cc);
  p.stream(Engine::sync).push_back(fence);
  k.choices = {
      {"op", std::string(isa::name_of(op))}, {"bytes", b.get<uint64_t>()}, {"ranks", ranks}};
  if (reduces) k.choices["reduce"] = reduce_name;
  if (grouped) k.choices["group"] = ranks;
  // Reductions add up `ranks` roundings of fp32 sums at most; the others move values exactly.
  k.tolerance = reduces ? Tolerance{1e-6 * ranks, 2 * rounding_unit(w.dtype)} : Tolerance{0, 0};
  if (!functional) return k;
  const std::string why = functional_size_problem(p.dram_bytes() * w.cores);
  if (!why.empty()) throw WorkloadError(w.file, "/bytes", why);
  std::vector<std::vector<float>> all(w.cores);
  for (uint32_t c = 0; c < w.cores; ++c) {
    SeededRandom rng(w.seed + c);
    all[c].resize(in_elements);
    for (float& v : all[c]) v = isa::round_to(w.dtype, static_cast<float>(rng.normal()));
  }
  const std::string function =
      std::string(isa::name_of(op)) + (reduces ? "_" + reduce_name : std::string());
  for (uint32_t c = 0; c < w.cores; ++c) {
    // The inputs of c's group, in order.
    const uint32_t first = c / ranks * ranks;
    const std::vector<std::vector<float>> each(all.begin() + first, all.begin() + first + ranks);
    HostTensor in{"x", w.dtype, x.shape, all[c]};
    HostTensor out{"y", w.dtype, y.shape, collective_reference(function, each, c - first)};
    for (float& v : out.values) v = isa::round_to(w.dtype, v);
    k.core_inputs.push_back({in});
    k.core_expected.push_back({out});
  }
  k.inputs = k.core_inputs[0];
  k.expected = k.core_expected[0];
  return k;
}

}  // namespace trnsim::workloads
