"""The tracer's core: data types, buffers, tensors and their views, on-chip allocation, the
index expressions of the earlier API (nl.arange, nl.mgrid, masks) and instruction emission.

A kernel is traced once per SPMD program instance: every NKI call appends instructions to a
trnsim program through the C++ builder (trnsim._trnsim.ProgramBuilder), which checks each one
against the same rules the simulator validates (isa/validate.cpp) and remembers the Python
file:line that emitted it. Nothing here computes a time: timing exists once, in C++.
"""

import itertools
import os
import sys

import numpy as np

from .. import _native

# ---------------------------------------------------------------------------------------------
# Errors


class NkiError(Exception):
    """Base of the errors a kernel raises while trnsim traces it."""


class NkiValidationError(NkiError):
    """A kernel breaks an NKI rule (partition limit, start partition, PSUM bank, SBUF capacity,
    dtype, shape): what NKI's compiler or simulator rejects (nki.isa.NkiValidationError)."""


class NkiUnsupportedError(NkiError, NotImplementedError):
    """An NKI call or argument that trnsim does not model. Nothing is approximated silently."""


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_internal_code = {}


def _is_internal(code):
    r = _internal_code.get(code)
    if r is None:
        fn = code.co_filename
        r = fn.startswith(_PKG_DIR) or fn.startswith("<frozen") or "/importlib/" in fn
        _internal_code[code] = r
    return r


def user_frame():
    """The innermost frame outside trnsim: the kernel line that made the current call."""
    f = sys._getframe(1)
    while f is not None and _is_internal(f.f_code):
        f = f.f_back
    return f


def display_path(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def where_text():
    f = user_frame()
    if f is None:
        return "<unknown>"
    return f"{display_path(f.f_code.co_filename)}:{f.f_lineno}"


def fail(call, message, kind=None):
    """Raises the error of an NKI rule broken by `call`, naming the kernel's file:line."""
    raise (kind or NkiValidationError)(f"{where_text()}: {call}: {message}")


def unsupported(call, message="is not supported by trnsim"):
    raise NkiUnsupportedError(f"{where_text()}: {call}: {message}")


class NkiUnsupportedAttribute(NkiUnsupportedError, AttributeError):
    """An NKI name (nl.foo, nisa.bar) that trnsim does not provide."""


def unsupported_attribute(call, message):
    raise NkiUnsupportedAttribute(f"{where_text()}: {call}: {message}")


# ---------------------------------------------------------------------------------------------
# Data types


class dtype:
    """An NKI data type (nl.float32, nl.bfloat16, ...), with the trnsim dtype it maps to."""

    __slots__ = ("name", "trnsim", "itemsize", "np", "code", "is_float", "is_int")

    def __init__(self, name, trnsim, itemsize, np_type, is_float):
        self.name = name
        self.trnsim = trnsim
        self.itemsize = itemsize
        self.np = np_type
        self.is_float = is_float
        self.is_int = not is_float
        self.code = None if trnsim is None else _native.DTYPES[trnsim]

    def __repr__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, dtype):
            return self.name == other.name
        try:
            return self is as_dtype(other)
        except (TypeError, KeyError, NkiError):
            return NotImplemented

    def __hash__(self):
        return hash(self.name)


float32 = dtype("float32", "fp32", 4, np.float32, True)
bfloat16 = dtype("bfloat16", "bf16", 2, None, True)
float16 = dtype("float16", "fp16", 2, np.float16, True)
float8_e4m3 = dtype("float8_e4m3", "fp8_e4m3", 1, None, True)
float8_e5m2 = dtype("float8_e5m2", "fp8_e5m2", 1, None, True)
int32 = dtype("int32", "int32", 4, np.int32, False)
int16 = dtype("int16", "int16", 2, np.int16, False)
int8 = dtype("int8", "int8", 1, np.int8, False)
uint32 = dtype("uint32", "uint32", 4, np.uint32, False)
uint16 = dtype("uint16", "uint16", 2, np.uint16, False)
uint8 = dtype("uint8", "uint8", 1, np.uint8, False)
bool_ = dtype("bool_", "uint8", 1, np.bool_, False)
# Types NKI has and trnsim does not model: naming one raises.
tfloat32 = dtype("tfloat32", None, 4, None, True)
float8_e4m3fn = dtype("float8_e4m3fn", None, 1, None, True)

ALL_DTYPES = [float32, bfloat16, float16, float8_e4m3, float8_e5m2, int32, int16, int8,
              uint32, uint16, uint8, bool_, tfloat32, float8_e4m3fn]
_by_name = {d.name: d for d in ALL_DTYPES}
_by_name.update({"bf16": bfloat16, "fp32": float32, "fp16": float16, "bool": bool_})
_by_np = {np.dtype(np.float32): float32, np.dtype(np.float16): float16,
          np.dtype(np.int32): int32, np.dtype(np.int16): int16, np.dtype(np.int8): int8,
          np.dtype(np.uint32): uint32, np.dtype(np.uint16): uint16, np.dtype(np.uint8): uint8,
          np.dtype(np.bool_): bool_}


def as_dtype(d, call="dtype"):
    if isinstance(d, dtype):
        r = d
    elif isinstance(d, str):
        r = _by_name.get(d)
        if r is None:
            fail(call, f"unknown data type {d!r}", TypeError)
    else:
        try:
            r = _by_np.get(np.dtype(d))
        except TypeError:
            r = None
        if r is None:
            fail(call, f"data type {d!r} is not an NKI data type trnsim models", TypeError)
    if r.trnsim is None:
        unsupported(call, f"data type nl.{r.name} is not modelled by trnsim")
    return r


# Type promotion of the earlier API (nki.api.shared "NKI Type Promotion").
_FLOAT_RANK = {"float8_e4m3": 0, "float8_e5m2": 0, "bfloat16": 1, "float16": 1, "float32": 3}


def promote(a, b):
    if a is b:
        return a
    if a.is_float and not b.is_float:
        return a
    if b.is_float and not a.is_float:
        return b
    if a.is_float:
        pair = {a.name, b.name}
        if pair == {"float16", "bfloat16"}:
            return float32
        if pair == {"float8_e4m3", "float8_e5m2"}:
            return bfloat16
        return a if _FLOAT_RANK[a.name] >= _FLOAT_RANK[b.name] else b
    signed = {"int8": 1, "int16": 2, "int32": 4}
    unsigned = {"uint8": 1, "bool_": 1, "uint16": 2, "uint32": 4}
    if a.name in unsigned and b.name in unsigned:
        return a if unsigned[a.name] >= unsigned[b.name] else b
    if a.name in signed and b.name in signed:
        return a if signed[a.name] >= signed[b.name] else b
    s, u = (a, b) if a.name in signed else (b, a)
    if signed[s.name] > unsigned[u.name]:
        return s
    return {1: int16, 2: int32}.get(unsigned[u.name], float32)


# ---------------------------------------------------------------------------------------------
# Buffers


class buffer:
    """An NKI memory (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm, nl.private_hbm)."""

    __slots__ = ("name", "memory")

    def __init__(self, name, memory):
        self.name = name
        self.memory = memory  # "hbm", "sbuf" or "psum"

    def __repr__(self):
        return f"nl.{self.name}"


sbuf = buffer("sbuf", "sbuf")
psum = buffer("psum", "psum")
hbm = buffer("hbm", "hbm")
private_hbm = buffer("private_hbm", "hbm")
shared_hbm = buffer("shared_hbm", "hbm")

_MEMORY_CODE = {"hbm": _native.MEMORY["HBM"], "sbuf": _native.MEMORY["SBUF"],
                "psum": _native.MEMORY["PSUM"]}


def as_buffer(b, call):
    if b is None:
        return sbuf
    if isinstance(b, buffer):
        return b
    if isinstance(b, str):
        fail(call, f"buffer {b!r} given as a string; NKI takes nl.sbuf, nl.psum or nl.shared_hbm "
                   "(strings are rejected since NKI 0.3.0)", TypeError)
    unsupported(call, f"buffer {b!r} (direct allocation with nki.compiler) is not modelled")


class par_dim:
    """nl.par_dim(n): marks the partition dimension of an on-chip tensor (earlier API)."""

    __slots__ = ("size",)

    def __init__(self, size):
        self.size = int(size)

    def __index__(self):
        return self.size

    def __int__(self):
        return self.size

    def __repr__(self):
        return f"par_dim({self.size})"


# ---------------------------------------------------------------------------------------------
# The trace of one kernel


_current = None


def trace():
    if _current is None:
        raise NkiError(f"{where_text()}: calling NKI API outside of NKI kernels is not "
                       "supported (call it inside a function decorated with nki.jit)")
    return _current


class ByteAllocator:
    """First-fit byte ranges of one partition, the same range in every partition: what NKI's
    allocator gives a tensor (assumption: every on-chip tensor reserves its bytes across all
    partitions; see docs/nki.md)."""

    def __init__(self, capacity, align, what):
        self.capacity = capacity
        self.align = align
        self.what = what
        self.free = [(0, capacity)]
        self.in_use = 0
        self.peak = 0

    def alloc(self, nbytes, call, name, granule=None):
        size = max(self.align, (nbytes + self.align - 1) // self.align * self.align)
        for i, (lo, hi) in enumerate(self.free):
            start = lo
            if granule:
                # A tile of at most one granule (a PSUM bank) must not cross a granule boundary;
                # a larger one starts on a boundary.
                if size <= granule:
                    if start // granule != (start + size - 1) // granule:
                        start = (start // granule + 1) * granule
                else:
                    start = (start + granule - 1) // granule * granule
            if start + size <= hi:
                pieces = []
                if lo < start:
                    pieces.append((lo, start))
                if start + size < hi:
                    pieces.append((start + size, hi))
                self.free[i:i + 1] = pieces
                self.in_use += size
                self.peak = max(self.peak, self.in_use)
                return start, size
        fail(call, f"{self.what} is full: tensor {name!r} needs {nbytes} bytes per partition, "
                   f"{self.in_use} of {self.capacity} are in use by live tensors and no gap fits "
                   "(NKI: SBUF/PSUM capacity)")

    def release(self, start, size):
        self.in_use -= size
        self.free.append((start, start + size))
        self.free.sort()
        merged = []
        for lo, hi in self.free:
            if merged and merged[-1][1] == lo:
                merged[-1] = (merged[-1][0], hi)
            else:
                merged.append((lo, hi))
        self.free = merged


class Storage:
    """The memory behind a tensor: an HBM tensor of the program, or a region of SBUF/PSUM."""

    __slots__ = ("trace", "memory", "dtype", "shape", "name", "part_axis", "strides", "addr",
                 "alloc", "hbm_name", "written", "kind", "generation", "__weakref__")

    def __init__(self, tr, memory, dt, shape, name, part_axis=0):
        self.trace = tr
        self.memory = memory
        self.dtype = dt
        self.shape = shape
        self.name = name
        self.part_axis = part_axis
        self.alloc = None
        self.hbm_name = None
        self.written = None  # PSUM: byte ranges written (nc_matmul accumulate=None)
        self.kind = "internal"
        self.generation = tr.generation if tr is not None else 0
        # Per-axis strides: (partition step, free-element step).
        strides = [None] * len(shape)
        if memory == "hbm":
            step = 1
            for k in range(len(shape) - 1, -1, -1):
                strides[k] = (0, step)
                step *= shape[k]
        else:
            step = 1
            for k in range(len(shape) - 1, -1, -1):
                if k == part_axis:
                    strides[k] = (1, 0)
                else:
                    strides[k] = (0, step)
                    step *= shape[k]
        self.strides = tuple(strides)
        self.addr = 0

    def __del__(self):
        if self.alloc is not None and self.trace is not None and self.trace.active:
            allocator, start, size = self.alloc
            allocator.release(start, size)
            self.alloc = None


def _elements(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class KernelTrace:
    """Everything one kernel's tracing builds: the program (C++), HBM tensors, allocators."""

    def __init__(self, name, arch="trn2", sets=(), generation=None):
        self.builder = _native.ProgramBuilder(name, arch, list(sets))
        # One builder per physical core of the logical core (lnc > 1: set_lnc); self.builder is
        # the one the current grid instance emits into.
        self.builders = [self.builder]
        self._builder_args = (name, arch, list(sets))
        info = self.builder.arch_info()
        self.arch = info
        self.partitions = info["partitions"]
        self.max_queues = info["dma_queues"]
        # SBUF rows in 64-byte steps, as .tasm buffers; PSUM by 4 bytes within a bank.
        self.sbuf_alloc = ByteAllocator(info["sbuf_partition_bytes"], 64, "SBUF")
        self.bank_bytes = info["psum_partition_bytes"] // info["psum_banks"]
        self.psum_alloc = ByteAllocator(info["psum_partition_bytes"], 4, "PSUM")
        self.active = True
        self.generation = generation
        self.sources = {}
        self.program_id = ()
        self.grid = ()
        self.instance = 0
        self.hbm_tensors = {}  # name -> Storage
        self.shared_order = []  # shared_hbm tensors in creation order (SPMD instances share)
        self.shared_seen = 0
        self.inputs = {}  # name -> (Storage, numpy array)
        self.constants = {}  # name -> numpy array (nl.shared_constant)
        self.names = set()
        self.queues = {}
        self.last = None  # (instruction index, Storage written) of the last call's new tile
        self.hbm_written = set()  # HBM tensors a DMA writes
        self.mutable = set()  # input parameters the kernel may write (nt.mutable_tensor)
        self.instructions = 0
        self.counter = itertools.count()

    def set_lnc(self, lnc):
        """SPMD over a logical core of `lnc` physical cores: one program per core. Tensors,
        queues and sources go to every program alike (one HBM layout); instructions to the
        current instance's core's program."""
        while len(self.builders) < lnc:
            self.builders.append(_native.ProgramBuilder(*self._builder_args))

    def on_core(self, core):
        self.builder = self.builders[core]
        self.last = None

    def _everywhere(self, method, *args):
        results = [getattr(b, method)(*args) for b in self.builders]
        return results[0]

    # -- sources
    def source(self):
        f = sys._getframe(2)
        while f is not None and _is_internal(f.f_code):
            f = f.f_back
        if f is None:
            return 0
        key = (f.f_code.co_filename, f.f_lineno)
        idx = self.sources.get(key)
        if idx is None:
            idx = self._everywhere("add_source", f"{display_path(key[0])}:{key[1]}")
            self.sources[key] = idx
        return idx

    def queue(self, name):
        q = self.queues.get(name)
        if q is None:
            if len(self.queues) < self.max_queues:
                q = self._everywhere("add_queue", name)
            else:
                q = len(self.queues) % self.max_queues
            self.queues[name] = q
        return q

    def unique_name(self, base):
        base = base or "t"
        if base not in self.names:
            self.names.add(base)
            return base
        for i in itertools.count(1):
            n = f"{base}_{i}"
            if n not in self.names:
                self.names.add(n)
                return n

    # -- tensors
    def new_hbm(self, shape, dt, name, kind="internal", call="nl.ndarray"):
        shape = tuple(int(s) for s in shape)
        if any(s <= 0 for s in shape):
            fail(call, f"shape {shape} has a dimension that is not positive")
        name = self.unique_name(name or ("out" if kind == "output" else "hbm"))
        st = Storage(self, "hbm", dt, shape, name)
        st.addr = self._everywhere("add_tensor", name, dt.trnsim, list(shape))
        st.hbm_name = name
        st.kind = kind
        self.hbm_tensors[name] = st
        return st

    def new_on_chip(self, memory, shape, dt, name, call, part_axis=0):
        shape = tuple(int(s) for s in shape)
        if not shape:
            fail(call, "an on-chip tensor needs at least one dimension")
        if any(s <= 0 for s in shape):
            fail(call, f"shape {shape} has a dimension that is not positive")
        p = shape[part_axis]
        if p > self.partitions:
            fail(call, f"number of partitions {p} exceed architecture limitation of "
                       f"{self.partitions} (the partition dimension is dimension {part_axis} of "
                       f"{list(shape)})")
        per_partition = _elements(shape) // p * dt.itemsize
        name = name or f"{memory}{next(self.counter)}"
        st = Storage(self, memory, dt, shape, name, part_axis)
        if memory == "sbuf":
            start, size = self.sbuf_alloc.alloc(per_partition, call, name)
            st.alloc = (self.sbuf_alloc, start, size)
        else:
            start, size = self.psum_alloc.alloc(per_partition, call, name, self.bank_bytes)
            st.alloc = (self.psum_alloc, start, size)
            st.written = []
        st.addr = start
        return st

    # -- instructions
    def emit(self, call, opcode, engine, dst, srcs=(), extra=None, source=None):
        """Appends one instruction; raises NkiValidationError naming `call` and the kernel's
        line when trnsim's rules (the hardware's, as NKI checks them) reject it."""
        src = source if source is not None else self.source()
        s0 = srcs[0] if len(srcs) > 0 else None
        s1 = srcs[1] if len(srcs) > 1 else None
        s2 = srcs[2] if len(srcs) > 2 else None
        idx, err = self.builder.add(opcode, engine, src, dst, s0, s1, s2, extra)
        if err:
            self.builder.drop_last()
            fail(call, err)
        self.instructions += 1
        return idx


# ---------------------------------------------------------------------------------------------
# Index expressions of the earlier API: nl.arange, nl.mgrid, affine expressions and masks


class IndexVar:
    """One nl.arange axis: values 0..count-1 (plus start) along result axis `slot` of `ndim`."""

    __slots__ = ("count", "slot", "ndim", "start")

    def __init__(self, count, slot, ndim, start=0):
        self.count = count
        self.slot = slot
        self.ndim = ndim
        self.start = start


class Index:
    """An affine expression of arange axes: const + sum(coef * var), for indexing and masks."""

    __slots__ = ("terms", "const")
    __array_priority__ = 1000

    def __init__(self, terms, const=0):
        self.terms = terms  # tuple of (IndexVar, coef)
        self.const = const

    @staticmethod
    def of(x):
        if isinstance(x, Index):
            return x
        if isinstance(x, (int, np.integer)):
            return Index((), int(x))
        return None

    def _combine(self, other, sign):
        o = Index.of(other)
        if o is None:
            return NotImplemented
        terms = list(self.terms)
        for v, c in o.terms:
            terms.append((v, sign * c))
        return Index(tuple(terms), self.const + sign * o.const)

    def __add__(self, o):
        return self._combine(o, 1)

    __radd__ = __add__

    def __sub__(self, o):
        return self._combine(o, -1)

    def __rsub__(self, o):
        r = Index.of(o)
        if r is None:
            return NotImplemented
        return r._combine(self, -1)

    def __mul__(self, o):
        if isinstance(o, (int, np.integer)):
            return Index(tuple((v, c * int(o)) for v, c in self.terms), self.const * int(o))
        unsupported("index expression", "only multiplication by an integer keeps an index "
                                        "affine (err_unsupported_expression_in_mask)")

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __getitem__(self, key):
        # nl.arange(n)[:, None] and [None, :]: place the axis in a result of len(key) dims.
        if not isinstance(key, tuple):
            key = (key,)
        if len(self.terms) != 1:
            unsupported("index expression", "only a plain nl.arange can be reshaped with [:, None]")
        var, coef = self.terms[0]
        if var.ndim != 1:
            unsupported("index expression", "an nl.arange can be reshaped once")
        slots = [i for i, k in enumerate(key) if k is not None]
        if len(slots) != 1 or not isinstance(key[slots[0]], slice):
            fail("nl.arange", f"index {key} must place the range with one ':' among Nones", IndexError)
        nv = IndexVar(var.count, slots[0], len(key), var.start)
        return Index(((nv, coef),), self.const)

    def _cmp(self, other, op):
        o = Index.of(other)
        if o is None:
            return NotImplemented
        return Cmp(self._combine(o, -1), op)

    def __lt__(self, o):
        return self._cmp(o, "<")

    def __le__(self, o):
        return self._cmp(o, "<=")

    def __gt__(self, o):
        return self._cmp(o, ">")

    def __ge__(self, o):
        return self._cmp(o, ">=")

    def __bool__(self):
        fail("index expression", "control flow depending on nl.arange or nl.mgrid is not "
                                 "supported (err_control_flow_condition_depending_on_arange)",
             ValueError)

    def ndim(self):
        return max((v.ndim for v, _ in self.terms), default=0)


class Cmp:
    """`expr (op) 0` of affine index expressions: a mask (nl.load(..., mask=i_p < n)) or the
    predicate of nisa.affine_select (earlier API)."""

    __slots__ = ("expr", "op")

    def __init__(self, expr, op):
        self.expr = expr
        self.op = op

    def mask(self):
        return Mask.compare(self.expr, self.op)

    def __and__(self, other):
        return self.mask() & (other.mask() if isinstance(other, Cmp) else other)

    __rand__ = __and__

    def __or__(self, other):
        unsupported("mask", "masks combine with & only")

    def __bool__(self):
        fail("mask", "a comparison of index expressions is not a Python truth value "
                     "(err_control_flow_condition_depending_on_arange)", ValueError)


class Mask:
    """A conjunction of single-axis affine comparisons: an interval per (slot, ndim)."""

    __slots__ = ("limits",)

    def __init__(self, limits):
        self.limits = limits  # {(slot, ndim): (lo, hi)} on the axis position

    @staticmethod
    def compare(expr, op):
        # expr (op) 0 with expr = const + sum(coef * var), all vars on one axis.
        vars_ = {}
        for v, c in expr.terms:
            if c:
                key = (v.slot, v.ndim)
                vars_.setdefault(key, []).append((v, c))
        if len(vars_) != 1:
            unsupported("mask", "a mask compares one index axis with a bound "
                                "(err_unsupported_expression_in_mask)")
        (key, vs), = vars_.items()
        coef = sum(c for _, c in vs)
        base = expr.const + sum(c * v.start for v, c in vs)
        count = vs[0][0].count
        if coef == 0:
            unsupported("mask", "the mask's index terms cancel")
        # coef * i + base (op) 0, i in [0, count)
        lo, hi = 0, count
        import math
        bound = -base / coef
        if coef < 0:
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
        if op == "<":
            hi = min(hi, math.ceil(bound))
        elif op == "<=":
            hi = min(hi, math.floor(bound) + 1)
        elif op == ">":
            lo = max(lo, math.floor(bound) + 1)
        else:
            lo = max(lo, math.ceil(bound))
        return Mask({key: (lo, max(lo, hi))})

    def __and__(self, other):
        if isinstance(other, Cmp):
            other = other.mask()
        if not isinstance(other, Mask):
            return NotImplemented
        limits = dict(self.limits)
        for k, (lo, hi) in other.limits.items():
            if k in limits:
                a, b = limits[k]
                limits[k] = (max(a, lo), max(max(a, lo), min(b, hi)))
            else:
                limits[k] = (lo, hi)
        return Mask(limits)

    def __or__(self, other):
        unsupported("mask", "masks combine with & only")

    def __bool__(self):
        fail("mask", "a mask is not a Python truth value; use & to combine comparisons",
             ValueError)

    def for_ndim(self, ndim):
        """{axis: (lo, hi)} for an operand of `ndim` dims (masks align to the right)."""
        out = {}
        for (slot, n), r in self.limits.items():
            axis = slot + ndim - n
            if 0 <= axis < ndim:
                out[axis] = r
        return out


def arange(*args):
    if len(args) == 1:
        start, stop = 0, int(args[0])
    elif len(args) == 2:
        start, stop = int(args[0]), int(args[1])
    else:
        unsupported("nl.arange", "a step is not supported; multiply the index instead")
    return Index(((IndexVar(stop - start, 0, 1, start), 1),), 0)


class _MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        out = []
        n = len(key)
        for i, s in enumerate(key):
            if not isinstance(s, slice) or (s.step not in (None, 1)):
                unsupported("nl.mgrid", "takes start:stop slices with step 1")
            start = s.start or 0
            out.append(Index(((IndexVar(s.stop - start, i, n, start), 1),), 0))
        return MGridResult(out)


class MGridResult(tuple):
    """nl.mgrid's result: a tuple of index grids, also as .p (partition) and .x, .y, .z."""

    @property
    def p(self):
        return self[0]

    @property
    def x(self):
        return self[1]

    @property
    def y(self):
        return self[2]

    @property
    def z(self):
        return self[3]


mgrid = _MGrid()


class ds:
    """nl.ds(start, size): the slice start:start+size."""

    __slots__ = ("start", "size")

    def __init__(self, start, size):
        self.start = start
        self.size = size

    def slice(self):
        return slice(self.start, self.start + self.size)
