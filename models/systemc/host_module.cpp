#include "models/systemc/host_module.hpp"

#include <cmath>

#include "models/systemc/sc_time.hpp"

namespace trnsim::models {

namespace {
Picoseconds from_ns(double ns) {
  return Picoseconds(static_cast<int64_t>(std::llround(ns * 1000)));
}
}  // namespace

HostModule::HostModule(sc_core::sc_module_name name, const isa::Program& program,
                       const config::ArchConfig& arch, uint32_t cores, EventSink& sink)
    : sc_module(name),
      program_(program),
      arch_(arch),
      cores_(cores),
      sink_(sink),
      cores_done_(program.kernel_count(), 0),
      arrival_(program.kernel_count()) {
  SC_THREAD(run);
}

void HostModule::kernel_done(size_t k) {
  if (++cores_done_[k] < cores_) return;
  ++done_;
  done_event_.notify(sc_core::SC_ZERO_TIME);
}

// A device backend's CPU fallback: the op's inputs are the device's results, so the first copy
// to the host waits until every kernel launched so far has finished; each copy is a runtime
// call of fixed cost plus its bytes at the host link's rate; the CPU then computes the op, and
// its results are copied back before the framework goes on to the next op.
void HostModule::run_on_host(size_t op) {
  const config::ArchConfig::Host& h = arch_.host;
  const isa::HostOp& o = program_.host_ops[op];
  auto copy_time = [&](uint64_t bytes) {
    return from_ns(h.transfer_latency_ns + static_cast<double>(bytes) / h.transfer_bytes_per_ns);
  };
  for (size_t i = 0; i < o.to_host.size(); ++i) {
    HostRecord r;
    r.lane = HostLane::runtime;
    r.activity = HostActivity::to_host;
    r.op = static_cast<uint32_t>(op);
    r.copy = static_cast<int32_t>(i);
    r.start = now();
    while (done_ < launched_) wait(done_event_);
    wait(to_sc_time(copy_time(o.to_host[i].bytes)));
    r.end = now();
    sink_.on_host(r);
  }
  HostRecord c;
  c.lane = HostLane::framework;
  c.activity = HostActivity::host_compute;
  c.op = static_cast<uint32_t>(op);
  c.start = now();
  wait(to_sc_time(from_ns(static_cast<double>(o.host_bytes) / h.cpu_bytes_per_ns)));
  c.end = now();
  sink_.on_host(c);
  for (size_t i = 0; i < o.to_device.size(); ++i) {
    HostRecord r;
    r.lane = HostLane::runtime;
    r.activity = HostActivity::to_device;
    r.op = static_cast<uint32_t>(op);
    r.copy = static_cast<int32_t>(i);
    r.start = now();
    wait(to_sc_time(copy_time(o.to_device[i].bytes)));
    r.end = now();
    sink_.on_host(r);
  }
}

void HostModule::run() {
  const config::ArchConfig::Host& h = arch_.host;
  for (size_t op = 0; op < program_.host_ops.size(); ++op) {
    HostRecord d;
    d.lane = HostLane::framework;
    d.activity = HostActivity::dispatch;
    d.op = static_cast<uint32_t>(op);
    d.start = now();
    wait(to_sc_time(from_ns(h.framework_op_ns)));
    d.end = now();
    sink_.on_host(d);
    if (program_.host_ops[op].on_host) {
      run_on_host(op);
      continue;
    }
    for (uint32_t k : program_.host_ops[op].kernels) {
      HostRecord r;
      r.lane = HostLane::runtime;
      r.op = static_cast<uint32_t>(op);
      r.kernel = static_cast<int32_t>(k);
      if (launched_ - done_ >= h.max_inflight) {
        r.activity = HostActivity::queue_full;
        r.start = now();
        while (launched_ - done_ >= h.max_inflight) wait(done_event_);
        r.end = now();
        sink_.on_host(r);
      }
      r.activity = HostActivity::launch;
      r.start = now();
      wait(to_sc_time(from_ns(h.runtime_launch_ns)));
      r.end = now();
      sink_.on_host(r);
      arrival_[k] = now() + from_ns(h.launch_latency_ns);
      launched_ = k + 1;
      launch_event_.notify(sc_core::SC_ZERO_TIME);
    }
  }
  HostRecord s;
  s.lane = HostLane::runtime;
  s.activity = HostActivity::synchronize;
  s.op = program_.host_ops.empty() ? 0 : static_cast<uint32_t>(program_.host_ops.size() - 1);
  s.start = now();
  while (done_ < program_.kernel_count()) wait(done_event_);
  wait(to_sc_time(from_ns(h.sync_ns)));
  s.end = now();
  sink_.on_host(s);
  end_ = now();
  finished_ = true;
}

}  // namespace trnsim::models
