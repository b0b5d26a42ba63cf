"""Running a program: each simulation in a child process of its own.

SystemC elaborates once per process (design brief), so a Python process that simulates more than
once (two simulate_kernel calls, a tuner's candidates) forks after tracing: the child runs
trnsim's simulation (sim::execute, the CLI's own path) on the program the parent built and sends
the results back through a pipe; the parent never starts SystemC.
"""

import os
import pickle
import shutil
import tempfile

import numpy as np

from . import _native


class SimulationError(RuntimeError):
    """The simulation could not run the program (invalid program, deadlock, bad option)."""


class RunResult:
    """The outcome of one simulation: outputs as numpy arrays, stats.json as a dict, the printed
    summary, and where the files are (out_dir, None when they were not kept)."""

    def __init__(self, exit_code, stats, summary, tensors, out_dir):
        self.exit_code = exit_code
        self.stats = stats
        self.summary = summary
        self.tensors = tensors
        self.out_dir = out_dir

    def metric(self, name):
        return self.stats["summary"][name]

    @property
    def total_time_us(self):
        return self.stats["summary"]["total_time"] * 1e6

    @property
    def cycles(self):
        return self.stats["summary"]["neuroncore_cycle_count"]

    def __repr__(self):
        return (f"RunResult(total_time={self.total_time_us:.3f} us, cycles={self.cycles}, "
                f"out_dir={self.out_dir!r})")


def _encode(arr, dtype_name):
    """Bytes of `arr` for an HBM tensor of trnsim dtype `dtype_name`: the array's own bytes for
    types numpy has, float32 values (rounded by C++) for bf16 and fp8."""
    native = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32, "int16": np.int16,
              "int8": np.int8, "uint32": np.uint32, "uint16": np.uint16, "uint8": np.uint8}
    t = native.get(dtype_name)
    if t is None:
        return np.ascontiguousarray(arr, dtype=np.float32).tobytes(), False
    return np.ascontiguousarray(arr, dtype=t).tobytes(), True


def _decode(data, dtype_name, shape):
    native = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32, "int16": np.int16,
              "int8": np.int8, "uint32": np.uint32, "uint16": np.uint16, "uint8": np.uint8}
    t = native.get(dtype_name, np.float32)  # bf16 and fp8 come back as float32 values
    return np.frombuffer(data, dtype=t).reshape(shape).copy()


def _in_child(work):
    """Runs work() (one simulation) in a forked child and returns what it returned (pickled back
    through a pipe). The parent never starts SystemC."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one simulation, then exit without running Python's teardown
        os.close(r)
        code = 0
        try:
            payload = pickle.dumps(("ok", work()))
        except BaseException as e:  # noqa: B902 - everything goes back to the parent
            payload = pickle.dumps(("error", f"{type(e).__name__}: {e}"))
            code = 3
        view = memoryview(payload)
        while view:
            n = os.write(w, view)
            view = view[n:]
        os.close(w)
        os._exit(code)
    os.close(w)
    chunks = []
    with os.fdopen(r, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            chunks.append(b)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        raise SimulationError(f"the simulation process died (wait status {status})")
    kind, result = pickle.loads(b"".join(chunks))
    if kind == "error":
        raise SimulationError(result)
    return result


def run_workload(path, out_dir, timing_only=False, report=True, arch="", sets=()):
    """Simulates the workload file `path` (graph, kernel or program form) as `trnsim PATH` does,
    in a child process, writing stats.json, trace.json (and report.html, the outputs' .npy) into
    out_dir. Returns (exit code, stats dict, summary text); raises SimulationError for bad
    input (exit code 2), with trnsim's message."""
    import json
    options = {"out": out_dir, "timing_only": bool(timing_only), "report": bool(report),
               "arch": arch or "", "sets": list(sets)}
    result = _in_child(lambda: _native.run_workload(path, options))
    if result["exit_code"] == 2:
        raise SimulationError(result["error"].strip() or "trnsim rejected the workload")
    stats = json.loads(result["stats"]) if result["stats"] else {}
    return result["exit_code"], stats, result["summary"]


def run_program(program, inputs, fetch=(), out_dir=None, timing_only=False, report=True,
                trace=True, arch="", sets=(), core_programs=()):
    """Simulates `program` (an _native.Program) in a child process.

    inputs: {tensor name: numpy array}; fetch: tensor names whose final contents to return;
    out_dir: where stats.json, trace.json and report.html go (None: a temporary directory that
    is removed afterwards)."""
    keep = out_dir is not None
    directory = out_dir if keep else tempfile.mkdtemp(prefix="trnsim-")
    tensors = {t["name"]: t for t in program.tensors()}
    encoded = {}
    for name, arr in inputs.items():
        t = tensors[name]
        data, raw = _encode(arr, t["dtype"])
        encoded[name] = (data, raw)
    options = {"out": directory, "timing_only": bool(timing_only), "report": bool(report and keep),
               "arch": arch, "sets": list(sets), "fetch": list(fetch) if not timing_only else []}
    if core_programs:  # SPMD over a logical core: the programs of cores 1..
        options["core_programs"] = list(core_programs)
    try:
        result = _in_child(lambda: _native.run(program, encoded, options))
        if result["exit_code"] == 2:
            raise SimulationError(result["error"] or "the simulation rejected the program")
        import json
        stats = json.loads(result["stats"]) if result["stats"] else {}
        out = {}
        for name, (data, dtype_name) in result["tensors"].items():
            out[name] = _decode(data, dtype_name, tuple(tensors[name]["shape"]))
        summary = result["summary"]
        if not keep:  # the files went with the temporary directory
            summary = summary.replace(directory, "(not kept; run with out=DIR)")
        return RunResult(result["exit_code"], stats, summary, out, directory if keep else None)
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
