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

uint8_t algorithm_index(const std::string& algorithm) {
  const auto& names = collective_algorithms();
  return static_cast<uint8_t>(std::find(names.begin(), names.end(), algorithm) - names.begin());
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

void CollectiveModule::attach_memory(MemorySystemModule& memory) {
  memory_system_ = &memory;
  memory.on_collective_done(
      [this](uint32_t tag, const DmaTransfer& transfer) { traffic_done(tag, transfer); });
}

void CollectiveModule::attach(uint32_t core, SemaphoreFile* semaphores, isa::MemoryImage* memory) {
  semaphores_[core] = semaphores;
  memories_[core] = memory;
}

CollectiveRequest CollectiveModule::request_for(const isa::Instruction& in,
                                                uint32_t first_core) const {
  CollectiveRequest r;
  r.op = in.collective_op;
  // nccom-test's size: the whole buffer (isa/collective.hpp): all_gather's output, the input
  // of the others.
  r.bytes =
      in.collective_op == isa::CollectiveOp::all_gather ? in.dst->bytes() : in.src[0]->bytes();
  r.element_bytes = isa::size_of(in.dst->dtype);
  const uint32_t group = in.collective_group != 0 ? in.collective_group : cores_;
  for (uint32_t c = first_core; c < first_core + group; ++c) {
    r.ranks.push_back(CollectiveRank{c / cores_per_chip_, c % cores_per_chip_});
  }
  return r;
}

void CollectiveModule::fail(const std::string& why) {
  if (!error_.empty()) return;
  error_ = why;
  // The run's error says why it stopped: not SystemC's own "Simulation stopped by user" on
  // stdout, which would land in the middle of the summary's place.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  sc_core::sc_stop();
}

void CollectiveModule::trigger(uint32_t core, const isa::Instruction& in) {
  if (isa::is_point_to_point(in.collective_op)) {
    trigger_pair(core, in);
    return;
  }
  const uint32_t k = next_[core]++;
  ++outstanding_[core];
  // Validated: the group divides the cores.
  const uint32_t group = in.collective_group != 0 ? in.collective_group : cores_;
  const Key key{k, core / group * group};
  Pending& p = pending_[key];
  if (p.by_rank.empty()) {
    p.first_core = key.second;
    p.by_rank.assign(group, nullptr);
    p.first_arrived = core;
    p.first_trigger = now();
  }
  const isa::Instruction& first =
      *(p.arrived > 0 ? p.by_rank[p.first_arrived - p.first_core] : &in);
  auto describe = [](const isa::Instruction& x) {
    return fmt::format("{}{}{} {} src {} elements, dst {} elements{}",
                       isa::name_of(x.collective_op),
                       x.op0 == isa::AluOp::bypass ? "" : fmt::format(" op0={}", name_of(x.op0)),
                       x.collective_group == 0 ? "" : fmt::format(" group={}", x.collective_group),
                       name_of(x.dst->dtype), x.src[0]->elements(), x.dst->elements(),
                       x.label.empty() ? "" : fmt::format(" ('{}')", x.label));
  };
  if (in.collective_op != first.collective_op || in.op0 != first.op0 ||
      in.collective_group != first.collective_group || in.dst->dtype != first.dst->dtype ||
      in.src[0]->elements() != first.src[0]->elements() ||
      in.dst->elements() != first.dst->elements()) {
    fail(fmt::format(
        "collective #{}: the ranks disagree: core {} triggered {}, core {} triggered {}", k,
        p.first_arrived, describe(first), core, describe(in)));
    return;
  }
  p.by_rank[core - p.first_core] = &in;
  if (++p.arrived < group) return;
  p.triggered = now();
  try {
    p.timing = fabric_.schedule(request_for(in, p.first_core), p.triggered);
  } catch (const std::invalid_argument& e) {
    fail(fmt::format("collective #{} ({}): {}", k, describe(in), e.what()));
    return;
  }
  due_.emplace(p.timing.end.value, Due{key, false, {}});
  std::vector<uint32_t> cores;
  for (uint32_t r = 0; r < p.by_rank.size(); ++r) cores.push_back(p.first_core + r);
  p.traffic_open = add_traffic(Due{key, false, {}}, p.timing, cores);
  scheduled_.notify(sc_core::SC_ZERO_TIME);
}

namespace {
std::string describe_pair(const isa::Instruction& x) {
  const bool send = x.collective_op == isa::CollectiveOp::send;
  const isa::AccessPattern& ap = send ? x.src[0] : x.dst;
  return fmt::format("{} {} {} elements{}", send ? "sends" : "receives", name_of(ap.dtype),
                     ap.elements(), x.label.empty() ? "" : fmt::format(" ('{}')", x.label));
}
}  // namespace

void CollectiveModule::trigger_pair(uint32_t core, const isa::Instruction& in) {
  ++outstanding_[core];
  const bool send = in.collective_op == isa::CollectiveOp::send;
  // Validated: the partner is another core of the run.
  const uint32_t peer = isa::peer_core(in.peer_kind, in.peer, core, cores_);
  const uint32_t from = send ? core : peer, to = send ? peer : core;
  const uint32_t k = (send ? sends_ : recvs_)[{from, to}]++;
  const PairKey key{from, to, k};
  PairPending& p = pairs_[key];
  if (p.send == nullptr && p.recv == nullptr) p.first_trigger = now();
  (send ? p.send : p.recv) = &in;
  if (p.send == nullptr || p.recv == nullptr) return;
  const isa::AccessPattern& src = p.send->src[0];
  const isa::AccessPattern& dst = p.recv->dst;
  if (src.dtype != dst.dtype || src.elements() != dst.elements()) {
    fail(fmt::format(
        "send/recv #{} from core {} to core {}: the cores disagree: core {} {}, core {} {}", k,
        from, to, from, describe_pair(*p.send), to, describe_pair(*p.recv)));
    return;
  }
  p.triggered = now();
  CollectiveRequest r;
  r.op = isa::CollectiveOp::send;
  r.bytes = src.bytes();
  r.element_bytes = isa::size_of(src.dtype);
  r.ranks = {CollectiveRank{from / cores_per_chip_, from % cores_per_chip_},
             CollectiveRank{to / cores_per_chip_, to % cores_per_chip_}};
  try {
    p.timing = fabric_.schedule(r, p.triggered);
  } catch (const std::invalid_argument& e) {
    fail(fmt::format("send/recv #{} from core {} to core {}: {}", k, from, to, e.what()));
    return;
  }
  due_.emplace(p.timing.end.value, Due{{}, true, key});
  p.traffic_open = add_traffic(Due{{}, true, key}, p.timing, {from, to});
  scheduled_.notify(sc_core::SC_ZERO_TIME);
}

// The times every collective record has, and its delivery: it ends now (the fabric's end, or
// its traffic's in the memory system when later).
void CollectiveModule::finish_record(CollectiveRecord& rec, Picoseconds first_trigger,
                                     Picoseconds triggered, const CollectiveTiming& timing) {
  rec.first_trigger = first_trigger;
  rec.triggered = triggered;
  rec.start = timing.start;
  rec.end = now();
  sink_.on_collective(rec);
}

void CollectiveModule::complete_pair(const PairKey& key) {
  const auto found = pairs_.find(key);
  const PairPending& p = found->second;
  if (memories_[key.from] != nullptr && memories_[key.to] != nullptr) {
    // The data moves at the end: the sender's src into the receiver's dst.
    const std::vector<float> values = flat(isa::read(*memories_[key.from], p.send->src[0]));
    write_flat(*memories_[key.to], p.recv->dst, values.data());
  }
  for (const auto& [core, in] : {std::pair{key.from, p.send}, std::pair{key.to, p.recv}}) {
    for (const isa::SemaphoreUpdate& u : in->updates) {
      semaphores_[core]->apply(u, SemaphoreFile::kDmaQueue);
    }
    --outstanding_[core];
  }
  CollectiveRecord rec;
  rec.index = key.k;
  rec.first_core = key.from;
  rec.peer_core = key.to;
  rec.point_to_point = true;
  rec.op = static_cast<uint8_t>(isa::CollectiveOp::send);
  rec.algorithm = algorithm_index(p.timing.algorithm);
  rec.ranks = 2;
  rec.chips = key.from / cores_per_chip_ == key.to / cores_per_chip_ ? 1 : 2;
  rec.steps = p.timing.steps;
  rec.bytes = p.send->src[0]->bytes();
  finish_record(rec, p.first_trigger, p.triggered, p.timing);
  pairs_.erase(found);
  ended_.notify(sc_core::SC_ZERO_TIME);
}

uint32_t CollectiveModule::add_traffic(const Due& of, const CollectiveTiming& timing,
                                       const std::vector<uint32_t>& cores) {
  if (memory_system_ == nullptr) return 0;
  // Submitted so that, on idle engines, its data starts when the fabric's step does: the DMA's
  // start latency and setup are part of the step's fixed cost (cc.step_ns).
  const Picoseconds lead =
      from_ns(arch_.dma_start_latency_ns) + from_ns(arch_.dma_transfer_setup_ns);
  for (const CollectiveTiming::RankTraffic& t : timing.traffic) {
    const uint32_t tag = next_tag_++;
    auto x = std::make_unique<Traffic>();
    x->of = of;
    x->core = cores[t.rank];
    x->bytes = t.bytes;
    traffic_.emplace(tag, std::move(x));
    traffic_due_.emplace(std::max(t.at.value - lead.value, now().value), tag);
  }
  return static_cast<uint32_t>(timing.traffic.size());
}

void CollectiveModule::submit_traffic(uint32_t tag) {
  Traffic& t = *traffic_.at(tag);
  // The rank's own operands: a send has only its src, a recv only its dst.
  const isa::Instruction& in = t.of.pair ? *pairs_.at(t.of.pair_key).send
                                         : *pending_.at(t.of.key).by_rank[t.core - t.of.key.second];
  const uint64_t read_at = in.src[0]->offset;
  const uint64_t write_at = t.of.pair ? read_at : in.dst->offset;
  // The bytes as 128 partitions of fp32 (or fewer partitions for a small step), read from the
  // rank's input and written at its output: the rank's own HBM stack, by its 16 DMA engines.
  const uint64_t words = std::max<uint64_t>(1, (t.bytes + 3) / 4);
  const auto partitions = static_cast<uint32_t>(std::min<uint64_t>(128, words));
  const auto row = static_cast<int64_t>((words + partitions - 1) / partitions);
  t.dma.opcode = isa::Opcode::dma_copy;
  t.dma.engine = in.engine;
  t.dma.dma_queue = memory_system_->collective_queue();
  t.dma.src[0] = isa::hbm_ap(isa::DType::fp32, read_at, partitions, row,
                             {isa::Dim{1, static_cast<uint32_t>(row)}});
  t.dma.dst = isa::hbm_ap(isa::DType::fp32, write_at, partitions, row,
                          {isa::Dim{1, static_cast<uint32_t>(row)}});
  memory_system_->submit_collective(t.core, t.dma, plan_transfer(t.dma, arch_), tag);
}

void CollectiveModule::traffic_done(uint32_t tag, const DmaTransfer& transfer) {
  const auto found = traffic_.find(tag);
  const Due of = found->second->of;
  CollectiveTransferRecord r;
  r.core = static_cast<int>(transfer.core);
  r.collective = of.pair ? of.pair_key.k : of.key.first;
  r.first_core = of.pair ? of.pair_key.from : of.key.second;
  r.point_to_point = of.pair;
  r.issued = transfer.issued;
  r.start = transfer.start;
  r.end = transfer.end;
  r.bytes = found->second->bytes;
  sink_.on_collective_transfer(r);
  traffic_.erase(found);
  // The collective ends when the fabric has moved its data and the memory system has carried
  // every step's traffic, whichever comes later.
  if (of.pair) {
    PairPending& p = pairs_.at(of.pair_key);
    if (--p.traffic_open == 0 && p.fabric_done) complete_pair(of.pair_key);
    return;
  }
  Pending& p = pending_.at(of.key);
  if (--p.traffic_open == 0 && p.fabric_done) complete(of.key);
}

void CollectiveModule::run() {
  for (;;) {
    while (due_.empty() && traffic_due_.empty()) wait(scheduled_);
    const int64_t next_end = due_.empty() ? kNever : due_.begin()->first;
    const int64_t next_traffic = traffic_due_.empty() ? kNever : traffic_due_.begin()->first;
    const int64_t next = std::min(next_end, next_traffic);
    if (next > now().value) {
      wait(to_sc_time(Picoseconds(next) - now()), scheduled_);
      continue;
    }
    if (next_traffic <= now().value) {
      const uint32_t tag = traffic_due_.begin()->second;
      traffic_due_.erase(traffic_due_.begin());
      submit_traffic(tag);
      continue;
    }
    const Due due = due_.begin()->second;
    due_.erase(due_.begin());
    if (due.pair) {
      PairPending& p = pairs_.at(due.pair_key);
      p.fabric_done = true;
      if (p.traffic_open == 0) complete_pair(due.pair_key);
      continue;
    }
    Pending& p = pending_.at(due.key);
    p.fabric_done = true;
    if (p.traffic_open == 0) complete(due.key);
  }
}

void CollectiveModule::move_data(const Pending& p) {
  const isa::Instruction& in = *p.by_rank[0];
  const auto ranks = static_cast<uint32_t>(p.by_rank.size());
  // Rank r is core first_core + r.
  auto memory = [&](uint32_t r) -> isa::MemoryImage& { return *memories_[p.first_core + r]; };
  std::vector<std::vector<float>> src(ranks);
  for (uint32_t r = 0; r < ranks; ++r) src[r] = flat(isa::read(memory(r), p.by_rank[r]->src[0]));
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
      for (uint32_t r = 0; r < ranks; ++r) write_flat(memory(r), p.by_rank[r]->dst, acc.data());
      break;
    }
    case isa::CollectiveOp::all_gather: {
      std::vector<float> all;
      all.reserve(n * ranks);
      for (uint32_t r = 0; r < ranks; ++r) all.insert(all.end(), src[r].begin(), src[r].end());
      for (uint32_t r = 0; r < ranks; ++r) write_flat(memory(r), p.by_rank[r]->dst, all.data());
      break;
    }
    case isa::CollectiveOp::reduce_scatter: {
      const std::vector<float> acc = reduced();
      const size_t chunk = n / ranks;
      for (uint32_t r = 0; r < ranks; ++r) {
        write_flat(memory(r), p.by_rank[r]->dst, acc.data() + r * chunk);
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
        write_flat(memory(r), p.by_rank[r]->dst, out.data());
      }
      break;
    }
    case isa::CollectiveOp::permute:
      // Each rank receives its predecessor's input (nccom-test's permute).
      for (uint32_t r = 0; r < ranks; ++r) {
        write_flat(memory(r), p.by_rank[r]->dst, src[(r + ranks - 1) % ranks].data());
      }
      break;
    case isa::CollectiveOp::send:
    case isa::CollectiveOp::recv:
      break;  // complete_pair
  }
}

void CollectiveModule::complete(Key key) {
  const auto found = pending_.find(key);
  const Pending& p = found->second;
  const auto ranks = static_cast<uint32_t>(p.by_rank.size());
  if (memories_[0] != nullptr) move_data(p);
  for (uint32_t r = 0; r < ranks; ++r) {
    for (const isa::SemaphoreUpdate& u : p.by_rank[r]->updates) {
      semaphores_[p.first_core + r]->apply(u, SemaphoreFile::kDmaQueue);
    }
    --outstanding_[p.first_core + r];
  }
  CollectiveRecord rec;
  rec.index = key.first;
  rec.first_core = p.first_core;
  rec.op = static_cast<uint8_t>(p.by_rank[0]->collective_op);
  rec.algorithm = algorithm_index(p.timing.algorithm);
  rec.ranks = ranks;
  rec.chips = (p.first_core + ranks - 1) / cores_per_chip_ - p.first_core / cores_per_chip_ + 1;
  rec.steps = p.timing.steps;
  rec.bytes = request_for(*p.by_rank[0], p.first_core).bytes;
  finish_record(rec, p.first_trigger, p.triggered, p.timing);
  pending_.erase(found);
  ended_.notify(sc_core::SC_ZERO_TIME);
}

std::string CollectiveModule::deadlock_report() const {
  std::string out;
  for (const auto& [key, p] : pending_) {
    if (p.arrived == p.by_rank.size()) continue;
    std::vector<uint32_t> arrived, missing;
    for (uint32_t r = 0; r < p.by_rank.size(); ++r) {
      (p.by_rank[r] ? arrived : missing).push_back(p.first_core + r);
    }
    out += fmt::format("  waits for collective #{}: cores {} arrived, {} did not\n", key.first,
                       core_list(arrived), core_list(missing));
  }
  for (const auto& [key, p] : pairs_) {
    if (p.send != nullptr && p.recv != nullptr) continue;
    const isa::Instruction& in = p.send != nullptr ? *p.send : *p.recv;
    const std::string label = in.label.empty() ? "" : fmt::format(" '{}'", in.label);
    if (p.send != nullptr) {
      out += fmt::format(
          "  waits for send #{} from core {} to core {}: core {} ({}{}) sent, core {} never "
          "received it (no matching recv from core {})\n",
          key.k, key.from, key.to, key.from, name_of(in.engine), label, key.to, key.from);
    } else {
      out += fmt::format(
          "  waits for recv #{} on core {} from core {}: core {} ({}{}) waits, core {} never "
          "sent it (no matching send to core {})\n",
          key.k, key.to, key.from, key.to, name_of(in.engine), label, key.from, key.to);
    }
  }
  return out;
}

}  // namespace trnsim::models
