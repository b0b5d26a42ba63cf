"""trnsim.nki: NKI kernels, as the public NKI documentation defines them, traced into trnsim
programs and run on the simulated NeuronCore.

A kernel written for NKI runs unchanged apart from its imports:

    import trnsim.nki as nki                # was: import nki  /  import neuronxcc.nki as nki
    import trnsim.nki.language as nl        # was: nki.language / neuronxcc.nki.language
    import trnsim.nki.isa as nisa           # was: nki.isa / neuronxcc.nki.isa

and the NKI workflow works on the simulator: calling a kernel (or nki.simulate_kernel,
nki.simulate) returns numpy outputs computed by trnsim's functional model; nki.benchmark gives
the simulated latency; nki.profile writes trace.json, stats.json and report.html.
docs/nki.md says what is supported and how results relate to hardware.
"""

import functools
import inspect
import itertools
import warnings

import numpy as np

from .. import _native
from .._runner import RunResult, SimulationError, run_program
from . import _core
from ._core import (NkiError, NkiUnsupportedError, NkiValidationError, KernelTrace, as_dtype,
                    unsupported)
from ._tensor import NkiTensor
from . import language
from . import isa
from . import typing
from . import compiler

tensor = NkiTensor
__all__ = ["jit", "trace", "run", "simulate_kernel", "simulate", "benchmark", "profile",
           "baremetal", "language", "isa", "typing", "NkiError", "NkiValidationError",
           "NkiUnsupportedError", "Traced", "RunResult"]


class Traced:
    """A traced kernel: the trnsim program (program.to_json(), program.to_tasm()), its input
    arrays, and its outputs in the structure the kernel returned them."""

    def __init__(self, name, trace, program, inputs, outputs, structure, written_inputs, arrays):
        self.name = name
        self.trace = trace
        self.program = program
        self.inputs = inputs  # {tensor name: numpy array}
        self.outputs = outputs  # [tensor name]
        self.structure = structure  # "none", "one", "tuple", "list"
        self.written_inputs = written_inputs  # [(tensor name, the caller's array)]
        self.arrays = arrays

    @property
    def instruction_count(self):
        return self.program.instruction_count()

    def shape_outputs(self, tensors):
        values = [tensors[n] for n in self.outputs]
        if self.structure == "none":
            return None
        if self.structure == "one":
            return values[0]
        return tuple(values) if self.structure == "tuple" else list(values)


class InputSpec:
    """An input given by shape and dtype only (nki.typing.tensor[shape, dtype], or trnsim run's
    --input name=128x512:bfloat16): deterministic normal(0, 1) data."""

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = as_dtype(dtype, "input")

    def array(self, seed):
        rng = np.random.default_rng(seed)
        if self.dtype.is_int:
            return rng.integers(0, 8, size=self.shape).astype(self.dtype.np or np.int32)
        a = rng.standard_normal(self.shape).astype(np.float32)
        return a if self.dtype.np is None else a.astype(self.dtype.np)


def _array_dtype(call, arr):
    if arr.dtype == np.float64:
        raise NkiValidationError(f"{call}: float64 arrays are not an NKI data type; pass float32")
    return as_dtype(arr.dtype, call)


def trace(kernel, *args, grid=(), arch="trn2", sets=(), name=None, input_dtypes=None, lnc=1,
          **kwargs):
    """Traces `kernel` (an nki.jit kernel or a plain function) with `args` into a trnsim program.
    numpy arrays (and InputSpec) become HBM input tensors named after the kernel's parameters;
    other arguments pass through as Python values. grid: the SPMD launch grid (kernel[grid]).
    input_dtypes: {parameter: dtype} to give an input an NKI type numpy lacks (bfloat16).
    lnc: physical NeuronCores per logical core (1 or 2): with 2, grid instance i runs on core
    i % 2 and the result has one program per core (Traced.core_programs), sharing the HBM."""
    fn = kernel.fn if isinstance(kernel, Kernel) else kernel
    if _core._current is not None:
        raise NkiError("a kernel cannot be traced inside another kernel's trace "
                       "(err_nested_kernel_with_spmd_grid)")
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(int(g) for g in grid)
    name = name or fn.__name__
    tr = KernelTrace(name, arch, sets)
    lnc = _check_lnc(lnc, grid, tr.arch, name)
    tr.set_lnc(lnc)
    sig = inspect.signature(fn)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise NkiError(f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}: {name}: {e}") \
            from None
    if not bound.arguments and sig.parameters:
        raise NkiError(f"{name}: calling a kernel with no arguments")
    bound.apply_defaults()
    call_args = {}
    arrays = {}
    written_candidates = []
    _core._current = tr
    try:
        for pname, value in bound.arguments.items():
            param = sig.parameters[pname]
            if param.annotation is typing.mutable_tensor:
                tr.mutable.add(pname)
            if isinstance(value, InputSpec) or isinstance(value, np.ndarray):
                if isinstance(value, InputSpec):
                    arr = value.array(len(arrays))
                    dt = value.dtype
                else:
                    arr = value
                    dt = _array_dtype(f"{name}({pname})", value)
                if input_dtypes and pname in input_dtypes:
                    dt = as_dtype(input_dtypes[pname], "input_dtypes")
                shape = arr.shape if arr.ndim else (1,)
                st = tr.new_hbm(shape, dt, pname, kind="input", call=name)
                tr.inputs[st.name] = (st, arr.reshape(shape))
                arrays[st.name] = arr
                if isinstance(value, np.ndarray):
                    written_candidates.append((st.name, value))
                call_args[pname] = NkiTensor.whole(st)
            else:
                call_args[pname] = value
        result = None
        points = list(itertools.product(*[range(g) for g in grid])) if grid else [()]
        for k, point in enumerate(points):
            tr.grid = grid
            tr.program_id = point
            tr.instance = k
            tr.shared_seen = 0
            if lnc > 1:
                tr.on_core(k % lnc)
            r = fn(*[call_args[p] for p in bound.arguments if
                     sig.parameters[p].kind != inspect.Parameter.VAR_KEYWORD])
            if k == 0:
                result = r
        outputs, structure = _outputs(name, result)
        for st in outputs:
            if st.kind == "internal":
                st.kind = "output"
        programs = [b.finish() for b in tr.builders]
        program = programs[0]
    finally:
        _core._current = None
        tr.active = False
    inputs = {n: a for n, (st, a) in tr.inputs.items()}
    written = [(n, a) for n, a in written_candidates if n in tr.hbm_written]
    traced = Traced(name, tr, program, inputs, [st.name for st in outputs], structure, written,
                    arrays)
    traced.core_programs = programs[1:]
    traced.lnc = lnc
    return traced


def _check_lnc(lnc, grid, arch, name):
    """The logical core's degree, checked against the grid and the preset (NkiError)."""
    try:
        lnc = int(lnc)
    except (TypeError, ValueError):
        raise NkiError(f"{name}: lnc={lnc!r}: the logical core's degree is 1 or 2") from None
    if lnc not in (1, 2):
        raise NkiError(f"{name}: lnc={lnc}: the Neuron SDK groups 1 or 2 physical NeuronCores "
                       "into a logical core")
    if lnc == 1:
        return 1
    if arch.get("lnc_max", 1) < lnc:
        raise NkiError(f"{name}: lnc={lnc} on {arch['name']}: {arch['name']} has no logical "
                       f"cores of {lnc} physical cores (LNC=2 is Trainium2's; trn1 runs LNC=1)")
    if arch.get("chip_cores", 1) < lnc:
        raise NkiError(f"{name}: lnc={lnc} but a {arch['name']} chip has "
                       f"{arch.get('chip_cores', 1)} NeuronCores")
    total = 1
    for g in grid:
        total *= g
    if not grid or total % lnc != 0:
        raise NkiError(f"{name}: lnc={lnc} spreads the launch grid's instances over {lnc} "
                       f"physical cores; the grid {list(grid) or '(none)'} has {total} "
                       f"instance(s), not a multiple of {lnc} (launch kernel[{lnc}] or a grid "
                       f"with a dimension divisible by {lnc})")
    return lnc


def _outputs(name, result):
    if result is None:
        return [], "none"
    if isinstance(result, NkiTensor):
        items, structure = [result], "one"
    elif isinstance(result, (tuple, list)):
        items, structure = list(result), "tuple" if isinstance(result, tuple) else "list"
    else:
        raise NkiValidationError(f"{name}: a kernel returns HBM tensors (or a tuple of them), "
                                 f"not {type(result).__name__}")
    out = []
    for t in items:
        if not isinstance(t, NkiTensor) or t._st.memory != "hbm":
            raise NkiValidationError(f"{name}: kernel outputs must be HBM tensors "
                                     "(nl.ndarray(..., buffer=nl.shared_hbm)); got "
                                     f"{t!r}")
        if t._dims != t._st.strides or t._f0:
            raise NkiValidationError(f"{name}: return whole HBM tensors, not views")
        out.append(t._st)
    return out, structure


def run(kernel, *args, grid=(), arch="trn2", sets=(), out=None, timing_only=False, report=True,
        input_dtypes=None, lnc=1, **kwargs):
    """Traces and simulates `kernel`: a RunResult with the outputs (result.outputs, in the
    kernel's return structure), stats.json as a dict and the printed summary. With out=DIR the
    run's stats.json, trace.json and report.html are written there. lnc=2: the grid's
    instances run on the two physical cores of a logical core at once (docs/nki.md)."""
    traced = trace(kernel, *args, grid=grid, arch=arch, sets=sets, input_dtypes=input_dtypes,
                   lnc=lnc, **kwargs)
    return run_traced(traced, out=out, timing_only=timing_only, report=report, arch=arch,
                      sets=sets)


def run_traced(traced, out=None, timing_only=False, report=True, arch="", sets=()):
    fetch = list(traced.outputs) + [n for n, _ in traced.written_inputs]
    result = run_program(traced.program, traced.inputs, fetch, out_dir=out,
                         timing_only=timing_only, report=report, arch=arch, sets=sets,
                         core_programs=getattr(traced, "core_programs", []))
    if not timing_only:
        result.outputs = traced.shape_outputs(result.tensors)
        for n, arr in traced.written_inputs:
            np.copyto(arr, result.tensors[n].astype(arr.dtype), casting="unsafe")
    else:
        result.outputs = None
    result.traced = traced
    return result


class Kernel:
    """What nki.jit returns: calling it with numpy arrays runs it on trnsim (as NKI runs a
    kernel called with numpy arrays on a NeuronCore); kernel[grid] launches an SPMD grid;
    called from inside another kernel it is traced inline."""

    def __init__(self, fn, grid=(), options=None):
        self.fn = fn
        self.grid = grid
        self.options = options or {}
        functools.update_wrapper(self, fn)

    def __getitem__(self, grid):
        if not isinstance(grid, tuple):
            grid = (grid,)
        return Kernel(self.fn, grid, self.options)

    def __call__(self, *args, **kwargs):
        if _core._current is not None:
            if self.grid:
                raise NkiError(f"{_core.where_text()}: calling a kernel with a launch grid from "
                               "another kernel is not supported (err_nested_kernel_with_spmd_grid)")
            return self.fn(*args, **kwargs)
        if not args and not kwargs and inspect.signature(self.fn).parameters:
            raise NkiError(f"{self.fn.__name__}: calling a kernel with no arguments")
        return simulate_kernel(self, *args, **kwargs)


def jit(fn=None, mode=None, platform_target=None, **kwargs):
    """nki.jit (both generations; mode and platform_target are accepted and ignored as NKI 0.3.0
    ignores mode)."""
    def wrap(f):
        return Kernel(f, (), kwargs)

    return wrap(fn) if fn is not None else wrap


def _kernel_and_grid(kernel):
    if isinstance(kernel, Kernel):
        return kernel, kernel.grid
    return Kernel(kernel), ()


def simulate_kernel(kernel, *args, **kwargs):
    """Runs the kernel on trnsim's functional and timing model; returns its outputs as numpy
    arrays (the kernel's return structure). Inputs the kernel writes are updated in place."""
    k, grid = _kernel_and_grid(kernel)
    arch = k.options.get("arch", "trn2")
    return run(k, *args, grid=grid, arch=arch, report=False, **kwargs).outputs


def simulate(kernel):
    """nki.simulate(kernel)(*arrays): the current API's form of simulate_kernel."""
    def call(*args, **kwargs):
        return simulate_kernel(kernel, *args, **kwargs)

    return call


baremetal = simulate


class _Latency:
    def __init__(self, us):
        self._us = us

    def get_latency_percentile(self, p):
        if p not in (0, 1, 10, 25, 50, 90, 99, 100):
            raise ValueError(f"percentile {p}: one of 0, 1, 10, 25, 50, 90, 99, 100")
        return self._us


class BenchmarkResult:
    """nc_latency.get_latency_percentile(p), in microseconds. The simulation is deterministic:
    every percentile is the simulated kernel time (device only: no host transfers, no launch
    overhead, no warm-up effects; docs/nki.md)."""

    def __init__(self, run_result):
        self.run = run_result
        self.nc_latency = _Latency(run_result.total_time_us)


class _Benchmarked:
    def __init__(self, kernel, options):
        self.kernel = kernel
        self.options = options
        self.benchmark_result = None
        self.result = None

    def __call__(self, *args, **kwargs):
        k, grid = _kernel_and_grid(self.kernel)
        args = [_placeholder(a) for a in args]
        self.result = run(k, *args, grid=grid, timing_only=True, report=False, **kwargs)
        self.benchmark_result = BenchmarkResult(self.result)
        return None


def _placeholder(a):
    if isinstance(a, typing._TensorType):
        return InputSpec(a.shape, a.dtype)
    return a


def _hardware_options(call, options):
    ignored = [k for k in ("save_neff_name", "save_trace_name", "additional_compile_opt",
                           "artifacts_dir") if options.get(k)]
    if ignored:
        warnings.warn(f"{call}: {', '.join(ignored)} name hardware artifacts (NEFF, NTFF) that "
                      "trnsim does not produce; nki.profile writes trace.json, stats.json and "
                      "report.html", stacklevel=3)


def benchmark(kernel=None, warmup=10, iters=100, **options):
    """nki.benchmark: the returned function simulates the kernel (timing only: NKI's benchmark
    ignores the inputs' values too) and sets .benchmark_result.nc_latency."""
    _hardware_options("nki.benchmark", options)
    if kernel is None:
        return lambda k: _Benchmarked(k, options)
    return _Benchmarked(kernel, options)


class _Profiled:
    def __init__(self, kernel, options):
        self.kernel = kernel
        self.options = options
        self.result = None

    def __call__(self, *args, **kwargs):
        import os
        k, grid = _kernel_and_grid(self.kernel)
        directory = self.options.get("working_directory")
        if not directory:
            raise NkiError("nki.profile: working_directory is required")
        os.makedirs(directory, exist_ok=True)
        args = [_placeholder(a) for a in args]
        self.result = run(k, *args, grid=grid, out=directory, report=True, **kwargs)
        print(self.result.summary, end="")
        return None


def profile(func=None, working_directory=None, overwrite=False, profile_nth=1, **options):
    """nki.profile: the returned function simulates the kernel and writes trace.json,
    stats.json and report.html into working_directory (NKI writes a NEFF, an NTFF and a JSON
    summary there)."""
    _hardware_options("nki.profile", options)
    opts = dict(options, working_directory=working_directory)
    if func is None:
        return lambda f: _Profiled(f, opts)
    return _Profiled(func, opts)
