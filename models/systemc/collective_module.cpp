#include "models/systemc/collective_module.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/systemc/sc_time.hpp"

namespace trnsim::models {

namespace {

std::vector<float> flat(const isa::Tile& t) {
  return std::vector<float>(t.data(), t.data() + t.size());
}

// Writes `values` (row-major, one row per partition of `ap`) through `ap`.
void write_flat(isa::MemoryImage& mem, const isa::AccessPattern& ap, const float* values) {
  isa::Tile t(ap.partitions, static_cast<Eigen::Index>(ap.free_elements()));
  std::copy(values, values + t.size(), t.data());
  isa::write(mem, ap, t);
}

std::string core_list(const std::vector<uint32_t>& cores) {
  return fmt::format("{{{}}}", fmt::join(cores, ", "));
}

}  // namespace

CollectiveModule::CollectiveModule(sc_core::sc_module_name name, const config::ArchConfig& arch,
                                   uint32_t cores, uint32_t chips, EventSink& sink)
    : sc_module(name),
      arch_(arch),
      cores_(cores),
      cores_per_chip_(std::max<uint32_t>(1, cores / std::max<uint32_t>(1, chips))),
      sink_(sink),
      fabric_(arch),
      semaphores_(cores, nullptr),
      memories_(cores, nullptr),
      next_(cores, 0),
      outstanding_(cores, 0) {
  SC_THREAD(run);
}

void CollectiveModule::attach(uint32_t core, SemaphoreFile* semaphores, isa::MemoryImage* memory) {
  semaphores_[core] = semaphores;
  memories_[core] = memory;
}

CollectiveRequest CollectiveModule::request_for(const isa::Instruction& in) const {
  CollectiveRequest r;
  r.op = in.collective_op;
  // nccom-test's size: the whole buffer (isa/collective.hpp): all_gather's output, the input
  // of the others.
  r.bytes = in.collective_op == isa::CollectiveOp::all_gather ? in.dst.bytes() : in.src[0].bytes();
  r.element_bytes = isa::size_of(in.dst.dtype);
  for (uint32_t c = 0; c < cores_; ++c) {
    r.ranks.push_back(CollectiveRank{c / cores_per_chip_, c % cores_per_chip_});
  }
  return r;
}

void CollectiveModule::fail(const std::string& why) {
  if (!error_.empty()) return;
  error_ = why;
  sc_core::sc_stop();
}

void CollectiveModule::trigger(uint32_t core, const isa::Instruction& in) {
  const uint32_t k = next_[core]++;
  ++outstanding_[core];
  Pending& p = pending_[k];
  if (p.by_rank.empty()) {
    p.by_rank.assign(cores_, nullptr);
    p.first_core = core;
    p.first_trigger = now();
  }
  const isa::Instruction& first = *(p.arrived > 0 ? p.by_rank[p.first_core] : &in);
  auto describe = [](const isa::Instruction& x) {
    return fmt::format("{}{} {} src {} elements, dst {} elements{}", isa::name_of(x.collective_op),
                       x.op0 == isa::AluOp::bypass ? "" : fmt::format(" op0={}", name_of(x.op0)),
                       name_of(x.dst.dtype), x.src[0].elements(), x.dst.elements(),
                       x.label.empty() ? "" : fmt::format(" ('{}')", x.label));
  };
  if (in.collective_op != first.collective_op || in.op0 != first.op0 ||
      in.dst.dtype != first.dst.dtype || in.src[0].elements() != first.src[0].elements() ||
      in.dst.elements() != first.dst.elements()) {
    fail(fmt::format(
        "collective #{}: the ranks disagree: core {} triggered {}, core {} triggered {}", k,
        p.first_core, describe(first), core, describe(in)));
    return;
  }
  p.by_rank[core] = &in;
  if (++p.arrived < cores_) return;
  p.triggered = now();
  try {
    p.timing = fabric_.schedule(request_for(in), p.triggered);
  } catch (const std::invalid_argument& e) {
    fail(fmt::format("collective #{} ({}): {}", k, describe(in), e.what()));
    return;
  }
  due_.emplace(p.timing.end.value, k);
  scheduled_.notify(sc_core::SC_ZERO_TIME);
}

void CollectiveModule::run() {
  for (;;) {
    while (due_.empty()) wait(scheduled_);
    const auto it = due_.begin();
    if (it->first > now().value) {
      wait(to_sc_time(Picoseconds(it->first) - now()), scheduled_);
      continue;
    }
    const uint32_t k = it->second;
    due_.erase(it);
    complete(k);
  }
}

void CollectiveModule::move_data(const Pending& p) {
  const isa::Instruction& in = *p.by_rank[0];
  const uint32_t ranks = cores_;
  std::vector<std::vector<float>> src(ranks);
  for (uint32_t r = 0; r < ranks; ++r)
    src[r] = flat(isa::read(*memories_[r], p.by_rank[r]->src[0]));
  auto reduced = [&] {
    std::vector<float> acc = src[0];
    for (uint32_t r = 1; r < ranks; ++r) {
      for (size_t i = 0; i < acc.size(); ++i) acc[i] = isa::apply(in.op0, acc[i], src[r][i]);
    }
    return acc;
  };
  const size_t n = src[0].size();
  switch (in.collective_op) {
    case isa::CollectiveOp::all_reduce: {
      const std::vector<float> acc = reduced();
      for (uint32_t r = 0; r < ranks; ++r) write_flat(*memories_[r], p.by_rank[r]->dst, acc.data());
      break;
    }
    case isa::CollectiveOp::all_gather: {
      std::vector<float> all;
      all.reserve(n * ranks);
      for (uint32_t r = 0; r < ranks; ++r) all.insert(all.end(), src[r].begin(), src[r].end());
      for (uint32_t r = 0; r < ranks; ++r) write_flat(*memories_[r], p.by_rank[r]->dst, all.data());
      break;
    }
    case isa::CollectiveOp::reduce_scatter: {
      const std::vector<float> acc = reduced();
      const size_t chunk = n / ranks;
      for (uint32_t r = 0; r < ranks; ++r) {
        write_flat(*memories_[r], p.by_rank[r]->dst, acc.data() + r * chunk);
      }
      break;
    }
    case isa::CollectiveOp::all_to_all: {
      // Rank r's chunk s goes to rank s's chunk r.
      const size_t chunk = n / ranks;
      std::vector<float> out(n);
      for (uint32_t r = 0; r < ranks; ++r) {
        for (uint32_t s = 0; s < ranks; ++s) {
          std::copy_n(src[s].begin() + static_cast<std::ptrdiff_t>(r * chunk), chunk,
                      out.begin() + static_cast<std::ptrdiff_t>(s * chunk));
        }
        write_flat(*memories_[r], p.by_rank[r]->dst, out.data());
      }
      break;
    }
    case isa::CollectiveOp::permute:
      // Each rank receives its predecessor's input (nccom-test's permute).
      for (uint32_t r = 0; r < ranks; ++r) {
        write_flat(*memories_[r], p.by_rank[r]->dst, src[(r + ranks - 1) % ranks].data());
      }
      break;
  }
}

void CollectiveModule::complete(uint32_t k) {
  const auto found = pending_.find(k);
  const Pending& p = found->second;
  if (memories_[0] != nullptr) move_data(p);
  for (uint32_t r = 0; r < cores_; ++r) {
    for (const isa::SemaphoreUpdate& u : p.by_rank[r]->updates) {
      semaphores_[r]->apply(u, SemaphoreFile::kDmaQueue);
    }
    --outstanding_[r];
  }
  CollectiveRecord rec;
  rec.index = k;
  rec.op = static_cast<uint8_t>(p.by_rank[0]->collective_op);
  const auto& names = collective_algorithms();
  rec.algorithm = static_cast<uint8_t>(std::find(names.begin(), names.end(), p.timing.algorithm) -
                                       names.begin());
  rec.ranks = cores_;
  rec.chips = (cores_ + cores_per_chip_ - 1) / cores_per_chip_;
  rec.steps = p.timing.steps;
  rec.bytes = request_for(*p.by_rank[0]).bytes;
  rec.first_trigger = p.first_trigger;
  rec.triggered = p.triggered;
  rec.start = p.timing.start;
  rec.end = p.timing.end;
  sink_.on_collective(rec);
  pending_.erase(found);
  ended_.notify(sc_core::SC_ZERO_TIME);
}

std::string CollectiveModule::deadlock_report() const {
  std::string out;
  for (const auto& [k, p] : pending_) {
    if (p.arrived == cores_) continue;
    std::vector<uint32_t> arrived, missing;
    for (uint32_t c = 0; c < cores_; ++c) (p.by_rank[c] ? arrived : missing).push_back(c);
    out += fmt::format("  waits for collective #{}: cores {} arrived, {} did not\n", k,
                       core_list(arrived), core_list(missing));
  }
  return out;
}

}  // namespace trnsim::models
