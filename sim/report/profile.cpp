#include "sim/report/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace trnsim::sim {

namespace {

std::string us(Picoseconds t) {
  return fmt::format("{:.1f} us", t.us());
}
double secs(Picoseconds t) {
  return static_cast<double>(t.value) * 1e-12;
}

}  // namespace

std::pair<std::string, double> KernelProfile::bound() const {
  std::string who = "DMA";
  double most = static_cast<double>(dma_busy.value);
  const double n = std::max<uint32_t>(cores, 1);
  for (Engine e : kAllEngines) {
    const double per_core = static_cast<double>(engine_active[index_of(e)].value) / n;
    if (per_core > most) {
      most = per_core;
      who = std::string(name_of(e));
    }
  }
  const Picoseconds d = duration();
  return {who, d.value > 0 ? 100.0 * most / static_cast<double>(d.value) : 0.0};
}

ProfileCollector::ProfileCollector(const isa::Program& program, const config::ArchConfig&)
    : program_(program), kernels_(program.kernel_count()), ops_(program.host_ops.size()) {
  for (size_t k = 0; k < kernels_.size(); ++k) {
    kernels_[k].name = program.kernels.empty() ? program.name : program.kernels[k].name;
  }
  for (size_t i = 0; i < ops_.size(); ++i) {
    ops_[i].name = program.host_ops[i].name;
    ops_[i].calls = 1;
    for (uint32_t k : program.host_ops[i].kernels) kernels_[k].op = ops_[i].name;
  }
}

void ProfileCollector::on_instruction(const models::InstructionRecord& r) {
  KernelProfile& k = kernels_[r.kernel];
  k.engine_active[index_of(r.engine)] = k.engine_active[index_of(r.engine)] + (r.end - r.start);
  ++k.instructions[index_of(r.engine)];
}

void ProfileCollector::on_transfer(const models::TransferRecord& r) {
  KernelProfile& k = kernels_[r.kernel];
  ++k.dma_transfers;
  k.dma_bytes += r.bytes;
  const Picoseconds from = max(r.start, k.dma_covered_to);
  if (r.end > from) k.dma_busy = k.dma_busy + (r.end - from);
  k.dma_covered_to = max(k.dma_covered_to, r.end);
}

void ProfileCollector::on_kernel(const models::KernelRecord& r) {
  KernelProfile& k = kernels_[r.kernel];
  ++k.cores;
  if (!k.seen) {
    k.arrived = r.arrived;
    k.start = r.start;
    k.end = r.end;
    k.seen = true;
    return;
  }
  k.start = std::min(k.start, r.start);
  k.end = max(k.end, r.end);
}

void ProfileCollector::on_host(const models::HostRecord& r) {
  const Picoseconds d = r.end - r.start;
  OpProfile& op = ops_[r.op];
  auto first = [&](Picoseconds& at, uint64_t seen) {
    if (seen == 0) at = r.start;
  };
  switch (r.activity) {
    case models::HostActivity::dispatch:
      op.first_start = r.start;
      op.self_cpu = op.self_cpu + d;
      op.cpu_total = op.cpu_total + d;
      host_cpu_ = host_cpu_ + d;
      break;
    case models::HostActivity::host_compute:
      op.self_cpu = op.self_cpu + d;
      op.cpu_total = op.cpu_total + d;
      host_cpu_ = host_cpu_ + d;
      break;
    case models::HostActivity::launch:
      op.cpu_total = op.cpu_total + d;
      op.launch = op.launch + d;
      host_cpu_ = host_cpu_ + d;
      first(first_launch_, launches_);
      ++launches_;
      launch_total_ = launch_total_ + d;
      break;
    case models::HostActivity::queue_full:
      // The launch call that follows is the one that blocked: it starts the row here.
      op.cpu_total = op.cpu_total + d;
      op.launch = op.launch + d;
      host_blocked_ = host_blocked_ + d;
      first(first_launch_, launches_);
      launch_total_ = launch_total_ + d;
      break;
    case models::HostActivity::to_host:
    case models::HostActivity::to_device: {
      const bool in = r.activity == models::HostActivity::to_host;
      op.cpu_total = op.cpu_total + d;
      op.copies = op.copies + d;
      host_copies_ = host_copies_ + d;
      first(in ? first_to_host_ : first_to_device_, in ? to_host_ : to_device_);
      ++(in ? to_host_ : to_device_);
      (in ? to_host_total_ : to_device_total_) = (in ? to_host_total_ : to_device_total_) + d;
      break;
    }
    case models::HostActivity::synchronize:
      sync_start_ = r.start;
      sync_ = sync_ + d;
      break;
  }
}

Picoseconds ProfileCollector::device_busy() const {
  Picoseconds t;
  for (const auto& k : kernels_) t = t + k.duration();
  return t;
}

Picoseconds ProfileCollector::first_kernel_start() const {
  return kernels_.empty() ? Picoseconds() : kernels_.front().start;
}

std::vector<OpProfile> ProfileCollector::key_averages() const {
  std::vector<OpProfile> rows;
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < ops_.size(); ++i) {
    auto [it, fresh] = at.emplace(ops_[i].name, rows.size());
    if (fresh)
      rows.push_back(OpProfile{ops_[i].name, 0, {}, {}, {}, 0, {}, {}, ops_[i].first_start});
    OpProfile& row = rows[it->second];
    row.calls += 1;
    row.self_cpu = row.self_cpu + ops_[i].self_cpu;
    row.cpu_total = row.cpu_total + ops_[i].cpu_total;
    row.launch = row.launch + ops_[i].launch;
    row.copies = row.copies + ops_[i].copies;
    for (uint32_t k : program_.host_ops[i].kernels) {
      row.device_total = row.device_total + kernels_[k].duration();
      ++row.kernels;
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const OpProfile& a, const OpProfile& b) {
    return a.device_total > b.device_total;
  });
  return rows;
}

std::string kernel_row_name(const std::string& kernel) {
  const auto open = kernel.rfind('(');
  if (open == std::string::npos || open == 0 || kernel.back() != ')') return kernel;
  return kernel.substr(0, open);
}

std::vector<KeyAveragesRow> ProfileCollector::profiler_rows() const {
  if (!has_host()) return {};
  struct Placed {
    Picoseconds first;
    size_t order;
    KeyAveragesRow row;
  };
  std::vector<Placed> placed;
  std::map<std::string, size_t> ops;
  for (size_t i = 0; i < ops_.size(); ++i) {
    auto [it, fresh] = ops.emplace(ops_[i].name, placed.size());
    if (fresh) placed.push_back({ops_[i].first_start, placed.size(), {ops_[i].name}});
    KeyAveragesRow& row = placed[it->second].row;
    row.count += 1;
    row.self_cpu_time_total += ops_[i].self_cpu.us();
    row.cpu_time_total += ops_[i].cpu_total.us();
    for (uint32_t k : program_.host_ops[i].kernels) {
      row.self_device_time_total += kernels_[k].duration().us();
      row.device_time_total += kernels_[k].duration().us();
    }
  }
  auto runtime_row = [&](const char* key, uint64_t count, Picoseconds first, Picoseconds total) {
    if (count == 0) return;
    KeyAveragesRow row{key, count, total.us(), total.us()};
    placed.push_back({first, placed.size(), row});
  };
  runtime_row(kLaunchRow, launches_, first_launch_, launch_total_);
  runtime_row(kToHostRow, to_host_, first_to_host_, to_host_total_);
  runtime_row(kToDeviceRow, to_device_, first_to_device_, to_device_total_);
  runtime_row(kSynchronizeRow, 1, sync_start_, sync_);
  std::map<std::string, size_t> kinds;
  for (const KernelProfile& k : kernels_) {
    const std::string name = kernel_row_name(k.name);
    auto [it, fresh] = kinds.emplace(name, placed.size());
    if (fresh) placed.push_back({k.start, placed.size(), {name}});
    KeyAveragesRow& row = placed[it->second].row;
    row.on_device = true;
    row.count += 1;
    row.self_device_time_total += k.duration().us();
    row.device_time_total += k.duration().us();
  }
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return a.first < b.first || (a.first == b.first && a.order < b.order);
  });
  std::vector<KeyAveragesRow> rows;
  for (Placed& p : placed) rows.push_back(std::move(p.row));
  return rows;
}

nlohmann::json ProfileCollector::json(Picoseconds total) const {
  nlohmann::json out;
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelProfile& k : kernels_) {
    nlohmann::json e = {{"name", k.name},
                        {"op", k.op},
                        {"arrived_time_ps", k.arrived.value},
                        {"start_time_ps", k.start.value},
                        {"end_time_ps", k.end.value},
                        {"duration", secs(k.duration())},
                        {"dma_transfers", k.dma_transfers},
                        {"dma_bytes", k.dma_bytes},
                        {"dma_active_time", secs(k.dma_busy)},
                        {"bound_by", k.bound().first},
                        {"bound_by_percent", k.bound().second}};
    // Several cores: the engine times below are summed over them.
    if (k.cores > 1) e["cores"] = k.cores;
    uint64_t instructions = 0;
    for (Engine eng : kAllEngines) {
      e[fmt::format("{}_engine_active_time", key_of(eng))] = secs(k.engine_active[index_of(eng)]);
      instructions += k.instructions[index_of(eng)];
    }
    e["instructions"] = instructions;
    kernels.push_back(e);
  }
  out["kernels"] = kernels;
  if (!has_host()) return out;
  const Picoseconds device = device_busy();
  out["host"] = {{"total_time", secs(total)},
                 {"device_time", secs(device)},
                 {"device_time_percent", total.value ? 100.0 * device.value / total.value : 0.0},
                 {"host_cpu_time", secs(host_cpu_)},
                 {"host_blocked_time", secs(host_blocked_)},
                 {"synchronize_time", secs(sync_)},
                 {"first_kernel_start_time", secs(first_kernel_start())},
                 {"kernel_launches", kernels_.size()},
                 {"host_ops", ops_.size()},
                 {"host_copy_time", secs(host_copies_)}};
  nlohmann::json table = nlohmann::json::array();
  for (const OpProfile& o : key_averages()) {
    table.push_back(
        {{"name", o.name},
         {"calls", o.calls},
         {"self_cpu_time", secs(o.self_cpu)},
         {"cpu_time_total", secs(o.cpu_total)},
         {"device_time_total", secs(o.device_total)},
         {"device_time_avg", o.calls ? secs(o.device_total) / o.calls : 0.0},
         {"device_time_percent", device.value ? 100.0 * o.device_total.value / device.value : 0.0},
         {"kernels", o.kernels}});
  }
  out["key_averages"] = table;
  out["profiler_key_averages"] = key_averages_json(profiler_rows());
  return out;
}

std::string ProfileCollector::text(Picoseconds total) const {
  if (!has_host() && kernels_.size() < 2) return "";
  std::string out;
  const Picoseconds device = device_busy();
  if (has_host()) {
    out += fmt::format(
        "host: {} ops, {} kernel launches; host CPU {} (dispatch and launch calls), blocked on "
        "the launch queue {}, final sync {}; device busy {} = {:.1f}% of the total; first kernel "
        "starts at {}\n",
        ops_.size(), kernels_.size(), us(host_cpu_), us(host_blocked_), us(sync_), us(device),
        total.value ? 100.0 * device.value / total.value : 0.0, us(first_kernel_start()));
    std::map<std::string, uint64_t> on_host;
    for (const isa::HostOp& op : program_.host_ops) {
      if (op.on_host) ++on_host[op.name];
    }
    if (!on_host.empty()) {
      std::vector<std::string> names;
      uint64_t n = 0;
      for (const auto& [name, count] : on_host) {
        names.push_back(count > 1 ? fmt::format("{} x{}", name, count) : name);
        n += count;
      }
      out += fmt::format(
          "ran on the host (no lowering): {} op{} ({}); copies between host and device {}\n", n,
          n == 1 ? "" : "s", fmt::join(names, ", "), us(host_copies_));
    }
    // torch.profiler's table, rows with the most device time first, as
    // prof.key_averages().table(sort_by="device_time_total", row_limit=kTableRows) prints it.
    constexpr int64_t kTableRows = 15;
    const std::vector<KeyAveragesRow> rows = profiler_rows();
    KeyAveragesTableOptions o;
    o.sort_by = "device_time_total";
    o.row_limit = kTableRows;
    out += "key_averages (torch.profiler's table, sorted by device_time_total):\n";
    out += key_averages_table(rows, o);
    if (static_cast<int64_t>(rows.size()) > kTableRows) {
      out += fmt::format("... {} more rows in stats.json (profiler_key_averages)\n",
                         rows.size() - kTableRows);
    }
  }
  out += "kernels:\n";
  out += fmt::format("  {:<3}{:<32}{:>11}{:>11}{:>10}{:>10}  {}\n", "#", "name", "start",
                     "duration", "DMA", "instr", "busiest");
  const size_t shown = std::min<size_t>(kernels_.size(), 12);
  for (size_t i = 0; i < shown; ++i) {
    const KernelProfile& k = kernels_[i];
    uint64_t n = 0;
    for (uint64_t c : k.instructions) n += c;
    const auto [who, pct] = k.bound();
    out += fmt::format("  {:<3}{:<32}{:>11}{:>11}{:>7.1f}MiB{:>10}  {} {:.0f}%\n", i,
                       k.name.size() > 31 ? k.name.substr(0, 28) + "..." : k.name, us(k.start),
                       us(k.duration()), k.dma_bytes / 1048576.0, n, who, pct);
  }
  if (kernels_.size() > shown) {
    out += fmt::format("  ... {} more kernels in stats.json\n", kernels_.size() - shown);
  }
  return out;
}

}  // namespace trnsim::sim
