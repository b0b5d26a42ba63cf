"""trnsim.torch.profile: torch.profiler's interface over a simulated NeuronCore.

    with trnsim.torch.profile(arch="trn2") as prof:
        y = model(x)
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

The block runs the program on the CPU under the capture (_capture.py); when it ends, the recorded
ops become a graph workload (out_dir/workload.json, its data in out_dir/data), trnsim simulates
it as `trnsim out_dir/workload.json` would (in a child process), and the tensors the program
returned receive the device's values. Every time comes from the simulation (stats.json's
profiler_key_averages); the table is printed by the same C++ formatter as the command line's.
"""

import collections
import gzip
import json
import os
import shutil
import tempfile
import warnings
import weakref

import numpy as np

from .. import _native
from .._runner import SimulationError, run_workload
from ._capture import Capture, write_back
from ._graph import CaptureError, GraphBuilder, numel


class HostFallbackWarning(UserWarning):
    """Some ops of the profiled program have no lowering and ran on the host."""


def _format_time(us):
    if us >= 1e6:
        return "{:.3f}s".format(us / 1e6)
    if us >= 1e3:
        return "{:.3f}ms".format(us / 1e3)
    return "{:.3f}us".format(us)


class FunctionEventAvg:
    """One row of key_averages(), with torch's attribute names (microseconds): torch >= 2's
    device_* and torch 1.13's cuda_* for the same device times."""

    def __init__(self, row):
        self.key = row["key"]
        self.count = row["count"]
        self.self_cpu_time_total = row["self_cpu_time_total"]
        self.cpu_time_total = row["cpu_time_total"]
        self.self_device_time_total = row["self_device_time_total"]
        self.device_time_total = row["device_time_total"]
        self.device_type = row.get("device_type", "CPU")
        self.input_shapes = ""
        self.stack = []
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.flops = 0

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self):
        return self.device_time_total / self.count if self.count else 0.0

    # torch 1.13's names for the device's times
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_time = property(lambda self: self.device_time)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    self_device_time_total_str = property(lambda self: _format_time(self.self_device_time_total))
    device_time_total_str = property(lambda self: _format_time(self.device_time_total))
    device_time_str = property(lambda self: _format_time(self.device_time))
    self_cuda_time_total_str = self_device_time_total_str
    cuda_time_total_str = device_time_total_str
    cuda_time_str = device_time_str

    def _row(self):
        return {"key": self.key, "count": self.count, "device_type": self.device_type,
                "self_cpu_time_total": self.self_cpu_time_total,
                "cpu_time_total": self.cpu_time_total,
                "self_device_time_total": self.self_device_time_total,
                "device_time_total": self.device_time_total}

    def __repr__(self):
        return ("<FunctionEventAvg key={} self_cpu_time={} cpu_time={} self_device_time={} "
                "device_time={} input_shapes={} cpu_memory_usage=0 device_memory_usage=0>".format(
                    self.key, self.self_cpu_time_total_str, self.cpu_time_str,
                    self.self_device_time_total_str, self.device_time_str, self.input_shapes))


class EventList(list):
    """key_averages()' rows; table() prints them as torch.profiler does."""

    def __init__(self, rows=(), device_name="device"):
        super().__init__(rows)
        self.device_name = device_name

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """torch.profiler's table (torch/autograd/profiler_util.py _build_table): Name, Self CPU
        %, Self CPU, CPU total %, CPU total, CPU time avg, Self device, Self device %, Device
        total, Device time avg, # of Calls, then "Self CPU time total" and "Self device time
        total". sort_by is any row attribute (largest first); row_limit -1 prints every row."""
        if top_level_events_only:
            raise NotImplementedError("top_level_events_only: the rows have no parents here")
        rows = json.dumps([e._row() for e in self])
        try:
            return _native.key_averages_table(rows, sort_by or "", int(row_limit),
                                              self.device_name,
                                              int(max_name_column_width or 0), header or "")
        except ValueError as e:
            if sort_by is not None and "sort_by" in str(e):
                raise AttributeError(
                    f"'FunctionEventAvg' object has no attribute '{sort_by}'") from None
            raise

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def total_average(self):
        total = FunctionEventAvg({"key": "Total", "count": 0, "self_cpu_time_total": 0,
                                  "cpu_time_total": 0, "self_device_time_total": 0,
                                  "device_time_total": 0})
        for e in self:
            total.count += e.count
            total.self_cpu_time_total += e.self_cpu_time_total
            total.cpu_time_total += e.cpu_time_total
            total.self_device_time_total += e.self_device_time_total
            total.device_time_total += e.device_time_total
        return total


class profile:
    """Profiles the program run in its block on a simulated NeuronCore (docs/pytorch.md).

    arch: a preset ("trn2", "trn1", "trn3") or an arch JSON file; sets: "name=value" parameter
    overrides (as --set); out_dir: where workload.json, its data, stats.json, trace.json and
    report.html go (None: a temporary directory, removed with the profile object; the export_*
    calls copy from it); timing_only: no data and no functional check (None: only when the
    program ran on meta tensors); report: write report.html; device_name: the label of the
    table's device columns ("device": "Self device", "Device total", ...; "CUDA" gives torch
    1.13's headers); name: the workload's name; warn_host_fallback: one warning listing the ops
    that ran on the host.

    The block runs under torch.no_grad() (the capture profiles inference). Tensors the block
    produced and still holds when it ends receive the device's results (read back, as
    `tensor.cpu()` would) unless write_back is False; inside the block they hold the CPU's.
    """

    def __init__(self, arch="trn2", sets=(), out_dir=None, timing_only=None, report=True,
                 device_name="device", name="torch_program", warn_host_fallback=True,
                 write_back=True, record_shapes=False, activities=None):
        self.arch = arch
        self.sets = list(sets)
        self.out_dir = out_dir
        self.timing_only = timing_only
        self.report = report
        self.device_name = device_name
        self.name = name
        self.warn_host_fallback = warn_host_fallback
        self.write_back = write_back
        self.stats = None
        self.summary = ""
        self.exit_code = None
        self.host_ops = []  # (aten name, why) per call that ran on the host
        self.outputs = {}   # graph output name -> numpy array (functional runs)
        self._capture = None
        self._dir = None

    # ---- the block ----

    def __enter__(self):
        self._capture = Capture()
        self._capture.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._capture.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            return False
        self._finish()
        return False

    # ---- after the block ----

    @property
    def directory(self):
        """Where this profile's files are (out_dir, or its temporary directory)."""
        return self._dir

    @property
    def workload_path(self):
        return os.path.join(self._dir, "workload.json")

    def _finish(self):
        session = self._capture.session
        if not session.calls:
            raise CaptureError("trnsim.torch.profile: the block ran no PyTorch op")
        if self.out_dir is None:
            self._dir = tempfile.mkdtemp(prefix="trnsim-torch-")
            weakref.finalize(self, shutil.rmtree, self._dir, True)
        else:
            self._dir = self.out_dir
            os.makedirs(self._dir, exist_ok=True)
        timing_only = self.timing_only
        if timing_only is None:
            timing_only = session.meta
        if session.meta and not timing_only:
            raise CaptureError("the program ran on meta tensors (no values): profile it with "
                               "timing_only=True")
        live = session.live_outputs()
        builder, doc = self._lower(session, live)
        data = os.path.join(self._dir, "data")
        if builder.arrays:
            os.makedirs(data, exist_ok=True)
        for rel, arr in builder.arrays.items():
            np.save(os.path.join(self._dir, rel), np.ascontiguousarray(arr, dtype=np.float32))
        with open(self.workload_path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        self.host_ops = [(c.name, why) for c, why in builder.host_calls]
        if self.host_ops and self.warn_host_fallback:
            counts = collections.Counter(n for n, _ in self.host_ops)
            listed = ", ".join(f"{n} x{k}" if k > 1 else n for n, k in counts.items())
            warnings.warn(
                f"trnsim.torch: {len(self.host_ops)} op call(s) have no lowering and ran on the "
                f"host, their inputs copied from the device and their results back: {listed} "
                f"(prof.host_ops says why; docs/pytorch.md lists what lowers)",
                HostFallbackWarning, stacklevel=3)
        self.exit_code, self.stats, self.summary = run_workload(
            self.workload_path, self._dir, timing_only=timing_only, report=self.report,
            arch=self.arch, sets=self.sets)
        if timing_only:
            return
        for name in doc.get("outputs", []):
            path = os.path.join(self._dir, name + ".npy")
            if os.path.exists(path):
                self.outputs[name] = np.load(path)
        if self.write_back:
            values = {}
            for t, key in live:
                g = builder.geo.get(key)
                if g is None or g.root.name not in self.outputs:
                    continue
                root = self.outputs[g.root.name].reshape(-1)
                values[key] = np.lib.stride_tricks.as_strided(
                    root[g.offset:], shape=g.shape,
                    strides=[st * root.itemsize for st in g.stride]).copy()
            write_back(live, values)

    def _lower(self, session, live):
        """The graph workload of the recorded calls. An op the C++ lowering turns away (a shape
        its kernels do not take) runs on the host instead; that is asked op by op of trnsim's own
        lowering (_native.graph_problem), so Python and C++ never disagree on what lowers."""
        forced = set()
        while True:
            builder = GraphBuilder(session.calls, force_host=forced).build()
            doc = self._document(builder, live)
            index, message = _native.graph_problem(json.dumps(doc), self.workload_path,
                                                   self.arch, self.sets)
            if index == -1:
                return builder, doc
            if index < 0 or index >= len(builder.op_calls):
                raise CaptureError(f"trnsim cannot run the captured program: {message}")
            call = session.calls[builder.op_calls[index]]
            if call.index in forced or (call.values is None and not session.meta) or \
                    doc["ops"][index]["op"] in ("host", "view"):
                raise CaptureError(f"trnsim cannot run {call.name} (op {index} of the captured "
                                   f"program): {message}")
            forced.add(call.index)

    def _document(self, builder, live):
        outputs = []
        for t, key in live:
            g = builder.geo.get(key)
            if g is None or g.root.dtype is None or g.root.stale:
                continue
            if g.root.name in builder.inputs or g.root.name in outputs:
                continue
            outputs.append(g.root.name)
        ops = [dict(op) for op in builder.ops]
        mode = "compile" if builder.modes == {"compile"} else "eager"
        if mode == "compile":
            for op in ops:
                op.pop("mode", None)
        if not builder.inputs:
            raise CaptureError("nothing in the block runs on the device: it reads no "
                               "floating-point tensor (integer and bool tensors stay on the "
                               "host)")
        doc = {"name": self.name, "mode": mode, "seed": 0, "inputs": builder.inputs,
               "ops": ops}
        if outputs:
            doc["outputs"] = outputs
        return doc

    # ---- torch.profiler's calls ----

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The table's rows: per op name, per runtime call and per kernel (docs/pytorch.md)."""
        if group_by_input_shape or group_by_stack_n:
            raise NotImplementedError("trnsim.torch.profile groups rows by name only")
        self._check_done()
        rows = self.stats.get("profiler_key_averages", [])
        return EventList([FunctionEventAvg(r) for r in rows], self.device_name)

    def export_chrome_trace(self, path):
        """Writes the trace (Chrome trace-event JSON: the host's framework and runtime lanes, the
        NeuronCore's kernel, engine and DMA queue lanes) to path (gzipped for a .gz path)."""
        self._check_done()
        src = os.path.join(self._dir, "trace.json")
        if path.endswith(".gz"):
            with open(src, "rb") as f, gzip.open(path, "wb") as g:
                shutil.copyfileobj(f, g)
        else:
            shutil.copyfile(src, path)

    def export_report(self, path):
        """Writes report.html (the timeline, metrics and tables in one page) to path."""
        self._check_done()
        src = os.path.join(self._dir, "report.html")
        if not os.path.exists(src):
            raise FileNotFoundError("this profile wrote no report.html (report=False)")
        shutil.copyfile(src, path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        raise NotImplementedError("trnsim.torch.profile records no Python stacks")

    def _check_done(self):
        if self.stats is None:
            raise RuntimeError("the profile has no results yet: use it after its with block")

    @property
    def total_time_us(self):
        self._check_done()
        return self.stats["summary"]["total_time"] * 1e6

    @property
    def device_time_us(self):
        self._check_done()
        return self.stats.get("host", {}).get("device_time", 0.0) * 1e6


def key_averages_of_stats(stats, device_name="device"):
    """The key_averages() rows of a stats.json (of `trnsim` run on a graph workload)."""
    return EventList([FunctionEventAvg(r) for r in stats.get("profiler_key_averages", [])],
                     device_name)


__all__ = ["profile", "EventList", "FunctionEventAvg", "HostFallbackWarning", "SimulationError",
           "key_averages_of_stats", "numel"]
