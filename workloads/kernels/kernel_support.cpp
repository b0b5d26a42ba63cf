#include "workloads/kernels/kernel_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace trnsim::workloads {

isa::Instruction make_instruction(isa::Opcode op, Engine e, std::string label) {
  isa::Instruction in;
  in.opcode = op;
  in.engine = e;
  in.label = std::move(label);
  return in;
}

namespace {

std::string choice_at(const Workload& w, const std::string& where, const nlohmann::json& v,
                      const std::vector<std::string>& allowed) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return s;
    throw WorkloadError(w.file, where,
                        fmt::format("expected {}, got {}{}", quoted_list(allowed), v.dump(),
                                    did_you_mean(s, allowed)));
  }
  throw WorkloadError(w.file, where,
                      fmt::format("expected {}, got {}", quoted_list(allowed), v.dump()));
}

}  // namespace

void check_param_keys(const Workload& w, const std::string& kernel,
                      const std::vector<std::string>& known) {
  for (const auto& item : w.params.items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    throw WorkloadError(w.file, "/params/" + item.key(),
                        fmt::format("unknown {} parameter; expected one of: {}{}", kernel,
                                    fmt::join(known, ", "), did_you_mean(item.key(), known)));
  }
}

int64_t int_param(const Workload& w, const std::string& key, int64_t lo, int64_t hi,
                  int64_t fallback) {
  if (!w.params.contains(key)) return fallback;
  const auto& v = w.params[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    throw WorkloadError(w.file, "/params/" + key,
                        fmt::format("expected an integer in [{}, {}], got {}", lo, hi, v.dump()));
  }
  return v.get<int64_t>();
}

std::string choice_param(const Workload& w, const std::string& key,
                         const std::vector<std::string>& allowed, const std::string& fallback) {
  if (!w.params.contains(key)) return fallback;
  return choice_at(w, "/params/" + key, w.params[key], allowed);
}

std::string choice_option(const Workload& w, const std::string& key,
                          const std::vector<std::string>& allowed, const std::string& fallback) {
  if (!w.options.contains(key)) return fallback;
  return choice_at(w, "/" + key, w.options[key], allowed);
}

bool bool_option(const Workload& w, const std::string& key, bool fallback) {
  if (!w.options.contains(key)) return fallback;
  const auto& v = w.options[key];
  if (!v.is_boolean()) {
    throw WorkloadError(w.file, "/" + key, fmt::format("expected true or false, got {}", v.dump()));
  }
  return v.get<bool>();
}

uint64_t saturating_product(std::initializer_list<uint64_t> factors) {
  uint64_t p = 1;
  for (uint64_t f : factors) {
    if (__builtin_mul_overflow(p, f, &p)) return UINT64_MAX;
  }
  return p;
}

void check_hbm_bytes(const Workload& w, const config::ArchConfig& arch, bool functional,
                     uint64_t bytes, const std::string& what) {
  if (bytes > arch.hbm_capacity_bytes) {
    throw WorkloadError(w.file, "/shape",
                        fmt::format("{} do not fit the {} bytes of HBM of a {} core", what,
                                    arch.hbm_capacity_bytes, arch.name));
  }
  if (functional) {
    // bytes <= HBM capacity (at most 2^44), so times 64 cores cannot overflow.
    const std::string why = functional_size_problem(bytes * w.cores);
    if (!why.empty()) throw WorkloadError(w.file, "/shape", why);
  }
}

void check_instruction_count(const Workload& w, const config::ArchConfig& arch,
                             uint64_t instructions, const std::string& hint, bool lower_bound) {
  if (instructions <= arch.max_instructions) return;
  const std::string count = instructions == UINT64_MAX ? "more than 2^64"
                            : lower_bound              ? fmt::format("at least {}", instructions)
                                                       : std::to_string(instructions);
  throw WorkloadError(
      w.file, "/shape",
      fmt::format("{} of [{}] lowers to {} instructions; a kernel holds at most "
                  "{} ({})",
                  w.kernel, fmt::join(w.shape, ", "), count, arch.max_instructions, hint));
}

SyncTracker::SyncTracker(isa::Program& program, const config::ArchConfig& arch)
    : program_(program), arch_(arch) {}

uint16_t SyncTracker::semaphore(std::string name) {
  if (sems_ != 0) throw std::logic_error("SyncTracker: semaphore added after the first emit");
  return program_.add_semaphore(std::move(name));
}

size_t SyncTracker::executor_of(const isa::Instruction& in) const {
  return isa::is_dma(in.opcode) ? kEngineCount + in.dma_queue
                                : static_cast<size_t>(index_of(in.engine));
}

const int64_t* SyncTracker::snapshot_of(const Signal& s) const {
  const auto& values = event_values_[s.semaphore];
  const auto it = std::lower_bound(values.begin(), values.end(), s.value);
  if (it == values.end()) {
    throw std::logic_error(fmt::format("SyncTracker: a wait for {} >= {} before it is raised",
                                       program_.semaphores[s.semaphore].name, s.value));
  }
  return &snapshots_[event_snapshot_[s.semaphore][it - values.begin()] * sems_];
}

void SyncTracker::record(uint16_t semaphore, int64_t value, const std::vector<int64_t>& knowledge) {
  event_values_[semaphore].push_back(value);
  event_snapshot_[semaphore].push_back(snapshots_.size() / sems_);
  snapshots_.insert(snapshots_.end(), knowledge.begin(), knowledge.end());
}

Signal SyncTracker::emit(isa::Instruction in, const std::vector<Signal>& deps, int raise) {
  if (sems_ == 0) {
    sems_ = program_.semaphores.size();
    value_.assign(sems_, 0);
    known_.assign(kEngineCount + program_.queues.size(), std::vector<int64_t>(sems_, 0));
    event_values_.assign(sems_, {});
    event_snapshot_.assign(sems_, {});
  }
  const size_t engine = static_cast<size_t>(index_of(in.engine));
  std::vector<int64_t>& known = known_[engine];
  // The highest value needed per semaphore, of those the engine does not know yet.
  std::vector<Signal> needed;
  for (const Signal& d : deps) {
    if (d.semaphore == kNotEmitted.semaphore) {
      throw std::logic_error(
          fmt::format("SyncTracker: '{}' depends on a stage not emitted yet", in.label));
    }
    if (d.value <= 0) continue;
    if (d.value > value_[d.semaphore]) snapshot_of(d);  // throws: not raised yet
    if (known[d.semaphore] >= d.value) {
      ++dropped_;
      continue;
    }
    auto same = std::find_if(needed.begin(), needed.end(),
                             [&](const Signal& n) { return n.semaphore == d.semaphore; });
    if (same == needed.end()) {
      needed.push_back(d);
    } else {
      ++dropped_;
      same->value = std::max(same->value, d.value);
    }
  }
  // A dependency that another one's signal already knew about needs no wait of its own.
  std::vector<const int64_t*> snaps;
  for (const Signal& d : needed) snaps.push_back(snapshot_of(d));
  for (size_t i = 0; i < needed.size(); ++i) {
    bool implied = false;
    for (size_t j = 0; j < needed.size() && !implied; ++j) {
      implied = j != i && snaps[j][needed[i].semaphore] >= needed[i].value;
    }
    if (implied) {
      ++dropped_;
      continue;
    }
    in.waits.push_back(isa::SemaphoreWait{needed[i].semaphore, needed[i].value});
    ++waits_;
  }
  for (size_t i = 0; i < needed.size(); ++i) {
    for (size_t s = 0; s < sems_; ++s) known[s] = std::max(known[s], snaps[i][s]);
    known[needed[i].semaphore] = std::max(known[needed[i].semaphore], needed[i].value);
  }

  Signal out;
  if (isa::is_dma(in.opcode)) {
    if (raise >= 0) throw std::logic_error("SyncTracker: a DMA raises its queue's semaphore");
    // The transfer starts after its trigger and completes after the queue's earlier ones.
    const size_t q = executor_of(in);
    std::vector<int64_t>& queue = known_[q];
    for (size_t s = 0; s < sems_; ++s) queue[s] = std::max(queue[s], known[s]);
    const uint16_t sem = program_.queues[in.dma_queue].semaphore;
    value_[sem] += arch_.dma_engines_for(in.dst->partitions);
    queue[sem] = value_[sem];
    record(sem, value_[sem], queue);
    out = Signal{sem, value_[sem]};
  } else if (raise >= 0) {
    const auto sem = static_cast<uint16_t>(raise);
    in.updates.push_back(isa::SemaphoreUpdate{sem});
    known[sem] = ++value_[sem];
    record(sem, value_[sem], known);
    out = Signal{sem, value_[sem]};
  }
  program_.stream(in.engine).push_back(std::move(in));
  return out;
}

Signal SyncTracker::emit_sequence(std::vector<isa::Instruction> ins,
                                  const std::vector<Signal>& deps, int raise) {
  Signal last;
  for (size_t i = 0; i < ins.size(); ++i) {
    const bool is_last = i + 1 == ins.size();
    last = emit(std::move(ins[i]), i == 0 ? deps : std::vector<Signal>{}, is_last ? raise : -1);
  }
  return last;
}

void run_pipeline(int64_t items, const std::vector<PipelineStage>& stages) {
  std::vector<int64_t> steps(static_cast<size_t>(std::max<int64_t>(items, 0)));
  for (size_t i = 0; i < steps.size(); ++i) steps[i] = static_cast<int64_t>(i);
  run_pipeline(steps, stages);
}

void run_pipeline(const std::vector<int64_t>& steps, const std::vector<PipelineStage>& stages) {
  if (steps.empty() || stages.empty()) return;
  int64_t lo = stages[0].lag, hi = stages[0].lag;
  for (const auto& s : stages) {
    lo = std::min(lo, s.lag);
    hi = std::max(hi, s.lag);
  }
  // item_at[step - steps.front()]: the item at that step, or -1 in a gap.
  const int64_t first = steps.front();
  std::vector<int64_t> item_at(static_cast<size_t>(steps.back() - first + 1), -1);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i > 0 && steps[i] <= steps[i - 1]) {
      throw std::logic_error("run_pipeline: steps must increase");
    }
    item_at[static_cast<size_t>(steps[i] - first)] = static_cast<int64_t>(i);
  }
  for (int64_t step = first + lo; step <= steps.back() + hi; ++step) {
    for (const auto& s : stages) {
      const int64_t at = step - s.lag - first;
      if (at < 0 || at >= static_cast<int64_t>(item_at.size())) continue;
      const int64_t i = item_at[static_cast<size_t>(at)];
      if (i >= 0) s.emit(i);
    }
  }
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  const std::string near = closest_name(word, known);
  return near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near);
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("\"" + names[i] + "\"");
  }
  return out;
}

}  // namespace trnsim::workloads
