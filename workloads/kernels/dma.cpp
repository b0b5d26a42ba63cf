#include "workloads/kernels/dma.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "workloads/kernels/instruction_builder.hpp"

namespace trnsim::workloads {

using isa::DType;
using nlohmann::json;

const std::vector<std::string>& dma_workload_keys() {
  static const std::vector<std::string> keys = {
      "direction", "pattern",   "bytes_per_partition", "partitions", "total_bytes",
      "queues",    "run_bytes", "stride_bytes",        "transpose",  "dge"};
  return keys;
}

namespace {

const std::vector<std::string> kDirections = {"hbm_to_sbuf", "sbuf_to_hbm", "sbuf_to_sbuf",
                                              "sbuf_to_psum", "hbm_to_hbm"};
const std::vector<std::string> kPatterns = {"contiguous", "strided", "random"};

struct Fields {
  const Workload& w;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw WorkloadError(w.file, "/" + key, what);
  }
  uint64_t integer(const std::string& key, uint64_t lo, uint64_t hi, uint64_t fallback) const {
    if (!w.params.contains(key)) return fallback;
    const json& v = w.params[key];
    if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi) {
      fail(key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, v.dump()));
    }
    return v.get<uint64_t>();
  }
  std::string one_of(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& fallback) const {
    if (!w.params.contains(key)) return fallback;
    const json& v = w.params[key];
    const std::string s = v.is_string() ? v.get<std::string>() : "";
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      const std::string near = closest_name(s, allowed);
      fail(key, fmt::format("expected one of: {}, got {}{}", fmt::join(allowed, ", "), v.dump(),
                            near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
    }
    return s;
  }
  bool flag(const std::string& key) const {
    if (!w.params.contains(key)) return false;
    if (!w.params[key].is_boolean()) {
      fail(key, fmt::format("expected true or false, got {}", w.params[key].dump()));
    }
    return w.params[key].get<bool>();
  }
};

}  // namespace

DmaBenchmark parse_dma_benchmark(const Workload& w, const config::ArchConfig& arch) {
  const Fields f{w};
  DmaBenchmark b;
  b.direction = f.one_of("direction", kDirections, b.direction);
  b.pattern = f.one_of("pattern", kPatterns, b.pattern);
  // bf16 elements: even byte counts.
  const uint64_t max_row = b.direction == "sbuf_to_psum"   ? arch.psum_partition_bytes
                           : b.direction == "sbuf_to_sbuf" ? arch.sbuf_partition_bytes / 2
                                                           : arch.sbuf_partition_bytes;
  b.bytes_per_partition = f.integer("bytes_per_partition", 2, max_row, b.bytes_per_partition);
  if (b.bytes_per_partition % 2 != 0) {
    f.fail("bytes_per_partition", "expected an even number of bytes (bf16 elements)");
  }
  b.partitions = static_cast<uint32_t>(f.integer("partitions", 1, arch.partitions, b.partitions));
  b.total_bytes = f.integer("total_bytes", 2, 1ULL << 34, b.total_bytes);
  b.queues = static_cast<uint32_t>(f.integer("queues", 1, arch.dma_queues, b.queues));
  b.run_bytes = f.integer("run_bytes", 2, b.bytes_per_partition, b.run_bytes);
  b.stride_bytes = f.integer("stride_bytes", 2, 1ULL << 20, b.stride_bytes);
  b.transpose = f.flag("transpose");
  b.dge = f.flag("dge");
  if (b.pattern == "strided") {
    if (b.bytes_per_partition % b.run_bytes != 0 || b.run_bytes % 2 != 0) {
      f.fail("run_bytes", fmt::format("expected an even divisor of bytes_per_partition ({})",
                                      b.bytes_per_partition));
    }
    if (b.stride_bytes < b.run_bytes || b.stride_bytes % 2 != 0) {
      f.fail(
          "stride_bytes",
          fmt::format("expected an even number of bytes of at least run_bytes ({})", b.run_bytes));
    }
  }
  const bool hbm_side =
      b.direction == "hbm_to_sbuf" || b.direction == "sbuf_to_hbm" || b.direction == "hbm_to_hbm";
  if (b.pattern != "contiguous" && !hbm_side) {
    f.fail("pattern", fmt::format("\"{}\" describes HBM addresses; direction {} has no HBM side",
                                  b.pattern, b.direction));
  }
  if (b.transpose && b.direction != "hbm_to_sbuf" && b.direction != "sbuf_to_sbuf") {
    f.fail("transpose", "the DMA transpose runs HBM->SBUF or SBUF->SBUF (fact sheet section 3)");
  }
  if (b.dge && arch.dma_dge_instruction_ns <= 0) {
    f.fail("dge", fmt::format("{} has no hardware descriptor generation (DGE is NeuronCore-v3)",
                              arch.name));
  }
  return b;
}

LoweredKernel lower_dma(const Workload& w, const config::ArchConfig& arch, bool functional) {
  const DmaBenchmark b = parse_dma_benchmark(w, arch);
  const DType dt = DType::bf16;
  const uint64_t es = isa::size_of(dt);
  const uint32_t parts = b.partitions;
  const uint64_t row = b.bytes_per_partition;
  const uint64_t per_transfer = row * parts;
  const uint64_t transfers = (b.total_bytes + per_transfer - 1) / per_transfer;

  // HBM footprint of one transfer's rows, by pattern.
  const uint64_t runs = b.pattern == "strided" ? row / b.run_bytes : 1;
  const uint64_t hbm_row = b.pattern == "strided" ? runs * b.stride_bytes : row;
  // Random placement scatters rows over a region of at least 256 MiB (assumption: larger than
  // any row-buffer or bank locality, small enough to allocate in functional mode).
  const uint64_t region = b.pattern == "random"
                              ? std::max<uint64_t>(256ULL << 20, hbm_row * parts * transfers)
                              : hbm_row * parts * transfers;
  if (region * (b.direction == "hbm_to_hbm" ? 2 : 1) > arch.hbm_capacity_bytes) {
    throw WorkloadError(w.file, "/total_bytes",
                        fmt::format("the benchmark needs {} bytes of HBM; a {} core has {}", region,
                                    arch.name, arch.hbm_capacity_bytes));
  }

  LoweredKernel k;
  isa::Program& p = k.program;
  p.name = w.name;
  const bool reads_hbm = b.direction == "hbm_to_sbuf" || b.direction == "hbm_to_hbm";
  const bool writes_hbm = b.direction == "sbuf_to_hbm" || b.direction == "hbm_to_hbm";
  if (functional) {  // region fits HBM (checked above), so this cannot overflow
    const std::string why =
        functional_size_problem(region * (int(reads_hbm) + int(writes_hbm)) * w.cores);
    if (!why.empty()) throw WorkloadError(w.file, "/total_bytes", why);
  }
  uint64_t src_addr = 0, dst_addr = 0;
  if (reads_hbm)
    src_addr = p.add_dram_tensor("src", dt, {static_cast<int64_t>(region / es)}).address;
  if (writes_hbm)
    dst_addr = p.add_dram_tensor("dst", dt, {static_cast<int64_t>(region / es)}).address;
  for (uint32_t q = 0; q < b.queues; ++q) p.add_queue(fmt::format("qDma{}", q));

  // On-chip buffers: a ring of slots per partition, reused without waits (the benchmark
  // measures the memory system; what lands in a slot is not checked).
  const uint64_t on_chip = b.direction == "sbuf_to_psum"   ? arch.psum_partition_bytes
                           : b.direction == "sbuf_to_sbuf" ? arch.sbuf_partition_bytes / 2
                                                           : arch.sbuf_partition_bytes;
  const uint64_t slots = std::max<uint64_t>(1, std::min<uint64_t>(8, on_chip / row));
  SeededRandom rng(w.seed);
  const auto elems = static_cast<uint32_t>(row / es);

  auto hbm_side = [&](uint64_t base, uint64_t t) {
    if (b.pattern == "strided") {
      const auto run_elems = static_cast<uint32_t>(b.run_bytes / es);
      return isa::hbm_ap(dt, base + t * parts * hbm_row, parts, static_cast<int64_t>(hbm_row / es),
                         {{static_cast<int64_t>(b.stride_bytes / es), static_cast<uint32_t>(runs)},
                          {1, run_elems}});
    }
    if (b.pattern == "random") {
      // Rows at random 64-byte aligned places: a random partition stride from a random base.
      const uint64_t max_stride = (region - row) / std::max<uint32_t>(1, parts - 1);
      const uint64_t stride =
          parts == 1 ? row : std::max<uint64_t>(row, rng.next() % max_stride / 64 * 64);
      const uint64_t span = stride * (parts - 1) + row;
      const uint64_t offset = (rng.next() % (region - span + 1)) / 64 * 64;
      return isa::hbm_ap(dt, base + offset, parts, static_cast<int64_t>(stride / es), {{1, elems}});
    }
    return isa::hbm_ap(dt, base + t * per_transfer, parts, static_cast<int64_t>(elems),
                       {{1, elems}});
  };
  auto slot = [&](uint64_t t) { return (t % slots) * row; };

  auto& sync = p.stream(Engine::sync);
  sync.reserve(transfers);
  for (uint64_t t = 0; t < transfers; ++t) {
    const isa::AccessPattern slot_ap = isa::sbuf_ap(dt, 0, parts, slot(t), {{1, elems}});
    isa::AccessPattern src = slot_ap, dst = slot_ap;
    if (b.direction == "hbm_to_sbuf") {
      src = hbm_side(src_addr, t);
    } else if (b.direction == "sbuf_to_hbm") {
      dst = hbm_side(dst_addr, t);
    } else if (b.direction == "hbm_to_hbm") {
      src = hbm_side(src_addr, t);  // random placement: the source's draws come first
      dst = hbm_side(dst_addr, t);
    } else if (b.direction == "sbuf_to_sbuf") {
      // Source in the lower half of each partition, destination in the upper half.
      dst = isa::sbuf_ap(dt, 0, parts, on_chip + slot(t), {{1, elems}});
    } else {  // sbuf_to_psum
      dst = isa::psum_ap(dt, 0, parts, slot(t), {{1, elems}});
    }
    isa::Instruction in =
        dma_copy(static_cast<uint16_t>(t % b.queues), dst, src, fmt::format("dma {}", t));
    in.dma_transpose = b.transpose;
    in.dma_dge = b.dge;
    sync.push_back(std::move(in));
  }

  k.choices = {{"direction", b.direction},
               {"pattern", b.pattern},
               {"bytes_per_partition", b.bytes_per_partition},
               {"partitions", b.partitions},
               {"total_bytes", transfers * per_transfer},
               {"transfers", transfers},
               {"queues", b.queues},
               {"dma_engines_per_transfer", arch.dma_engines_for(parts)},
               {"transpose", b.transpose},
               {"dge", b.dge}};
  if (b.pattern == "strided") {
    k.choices["run_bytes"] = b.run_bytes;
    k.choices["stride_bytes"] = b.stride_bytes;
  }
  if (functional && reads_hbm) {
    // Some data to move; nothing is checked (no reference outputs).
    HostTensor src{"src", dt, {static_cast<int64_t>(region / es)}, {}};
    src.values.resize(region / es);
    for (size_t i = 0; i < src.values.size(); ++i) src.values[i] = static_cast<float>(i % 256);
    k.inputs.push_back(std::move(src));
  }
  return k;
}

}  // namespace trnsim::workloads
