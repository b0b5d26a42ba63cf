"""nki.language for trnsim: tensors, loops, memory movement and the tile-level math of both NKI
API generations. Each call appends trnsim instructions (docs/nki.md says which call becomes
which instruction on which engine); a call or argument trnsim does not model raises
NkiUnsupportedError naming the call and the kernel's file:line."""

import builtins
import math
import sys

import numpy as np

from .. import _native
from . import _core
from ._core import (NkiError, NkiUnsupportedError, NkiValidationError, Index, Mask, arange, ds,
                    mgrid, par_dim, fail, unsupported, trace, as_dtype, promote)
from ._core import (float32, bfloat16, float16, float8_e4m3, float8_e5m2, int32, int16, int8,
                    uint32, uint16, uint8, bool_, tfloat32, float8_e4m3fn)
from ._core import sbuf, psum, hbm, private_hbm, shared_hbm
from ._tensor import NkiTensor, ap, new_tile, mark_result, apply_limits, free_elements

_builtin_max, _builtin_min, _builtin_sum, _builtin_abs, _builtin_all = max, min, sum, abs, all

OP = _native.OPCODES
ENG = _native.ENGINES
FN = _native.FUNCTIONS
ALU = _native.ALU
PE, DVE, ACT, POOL, SP = ENG["tensor"], ENG["vector"], ENG["scalar"], ENG["gpsimd"], ENG["sync"]

tile = NkiTensor
NKIObject = object


class MemoryRegion:
    sbuf = sbuf
    psum = psum
    hbm = hbm
    private_hbm = private_hbm
    shared_hbm = shared_hbm


def is_hbm(b):
    return b.memory == "hbm"


def is_on_chip(b):
    return b.memory != "hbm"


def is_psum(b):
    return b.memory == "psum"


def is_sbuf(b):
    return b.memory == "sbuf"


class _FloatLimits:
    def __init__(self, lo, hi):
        self.min = lo
        self.max = hi


fp32 = _FloatLimits(float(np.finfo(np.float32).min), float(np.finfo(np.float32).max))
bfp16 = _FloatLimits(-3.3895313892515355e38, 3.3895313892515355e38)

# ---------------------------------------------------------------------------------------------
# Operators as values: what `op=` of nki.isa and the nl math functions name.


class _Op:
    """An operator or function usable as nki.isa's op/op0/op1/reduce_op, an activation function,
    and as a callable nl function."""

    __slots__ = ("name", "alu", "func", "fn")

    def __init__(self, name, alu=None, func=None, fn=None):
        self.name = name
        self.alu = alu
        self.func = func
        self.fn = fn

    def __call__(self, *args, **kwargs):
        if self.fn is None:
            unsupported(f"nl.{self.name}", "is an operator constant, not a function")
        return self.fn(*args, **kwargs)

    def __repr__(self):
        return f"nl.{self.name}"


def _check_kwargs(call, kwargs, allowed=()):
    for k in kwargs:
        if k not in allowed:
            fail(call, f"unexpected keyword argument '{k}'", TypeError)


def _mask_limits(call, mask, ndim):
    if mask is None:
        return None
    if isinstance(mask, _core.Cmp):
        mask = mask.mask()
    if isinstance(mask, Mask):
        return mask.for_ndim(ndim)
    if mask is True:
        return None
    fail(call, "mask must be a comparison of index expressions (nl.arange, loop indices, "
               "nl.program_id) combined with &", TypeError)


def _no_mask(call, mask):
    if mask is not None:
        unsupported(call, "a mask on this call is not modelled")


def _on_chip(call, x, what="x"):
    if not isinstance(x, NkiTensor):
        fail(call, f"expected a tile for '{what}', got {type(x).__name__}", TypeError)
    if x._st.memory == "hbm":
        fail(call, f"Expected operand '{what}' of '{call}' to be in address space 'psum|sbuf', "
                   "but got a tile in 'hbm' instead (err_unsupported_memory)")
    return x


def _limited(views, limits):
    if not limits:
        return views
    return [None if v is None else apply_limits(v, limits) for v in views]


def _number(v):
    return isinstance(v, (int, float, np.integer, np.floating, bool))


def _out_tile(call, shape, dt, buffer=None):
    memory = "sbuf" if buffer is None else _core.as_buffer(buffer, call).memory
    if memory == "hbm":
        fail(call, "the result of a compute call is an on-chip tile (SBUF or PSUM)")
    return new_tile(shape, dt, memory, call)


def _emit(call, opcode, engine, dst, srcs=(), extra=None, call_limits=None):
    tr = trace()
    views = _limited([dst] + list(srcs), call_limits)
    if any(v is None for v, orig in zip(views, [dst] + list(srcs)) if orig is not None):
        return None  # a mask leaves nothing to do: the instruction is skipped
    d = ap(views[0], call)
    s = [None if v is None else ap(v, call) for v in views[1:]]
    return tr.emit(call, opcode, engine, d, s, extra, tr.source())


# ---------------------------------------------------------------------------------------------
# Creation


def _shape_and_axis(call, shape):
    if isinstance(shape, (int, np.integer, par_dim)):
        shape = (shape,)
    axis = 0
    dims = []
    for i, s in enumerate(shape):
        if isinstance(s, par_dim):
            axis = i
        dims.append(int(s))
    return tuple(dims), axis


def ndarray(shape, dtype, buffer=None, name="", address=None, **kwargs):
    call = "nl.ndarray"
    _check_kwargs(call, kwargs)
    tr = trace()
    dt = as_dtype(dtype, call)
    b = _core.as_buffer(buffer, call)
    if address is not None:
        unsupported(call, "address= (manual allocation) is not modelled; trnsim allocates")
    dims, axis = _shape_and_axis(call, shape)
    if b.memory == "hbm":
        return _hbm_tensor(call, tr, b, dims, dt, name)
    st = tr.new_on_chip(b.memory, dims, dt, name or None, call, axis)
    return NkiTensor.whole(st)


def _hbm_tensor(call, tr, b, dims, dt, name):
    if b is shared_hbm:
        if tr.instance > 0:
            # SPMD: every program instance names the same shared tensor (creation order).
            if tr.shared_seen < len(tr.shared_order):
                st = tr.shared_order[tr.shared_seen]
                tr.shared_seen += 1
                if st.shape != dims or st.dtype is not dt:
                    fail(call, "SPMD program instances create different shared_hbm tensors")
                return NkiTensor.whole(st)
        st = tr.new_hbm(dims, dt, name or "out", call=call)
        if tr.instance == 0:
            tr.shared_order.append(st)
        tr.shared_seen += 1
        return NkiTensor.whole(st)
    st = tr.new_hbm(dims, dt, name or "hbm", call=call)
    return NkiTensor.whole(st)


def empty_like(x, dtype=None, buffer=None, name="", **kwargs):
    return ndarray(x.shape, dtype or x.dtype, buffer if buffer is not None else x.buffer, name)


def _filled(call, shape, value, dtype, buffer, name):
    b = _core.as_buffer(buffer, call)
    if b.memory == "hbm":
        fail(call, "Creating HBM tensor with init value is not supported "
                   "(err_hbm_tensor_with_init_value_not_supported)")
    t = ndarray(shape, dtype, b, name)
    _memset_into(call, t, float(value))
    return t


def zeros(shape, dtype, buffer=None, name="", **kwargs):
    _check_kwargs("nl.zeros", kwargs)
    return _filled("nl.zeros", shape, 0.0, dtype, buffer, name)


def ones(shape, dtype, buffer=None, name="", **kwargs):
    _check_kwargs("nl.ones", kwargs)
    return _filled("nl.ones", shape, 1.0, dtype, buffer, name)


def full(shape, fill_value, dtype, buffer=None, name="", **kwargs):
    _check_kwargs("nl.full", kwargs)
    return _filled("nl.full", shape, fill_value, dtype, buffer, name)


def zeros_like(x, dtype=None, buffer=None, name="", **kwargs):
    return zeros(x.shape, dtype or x.dtype, buffer, name)


def ones_like(x, dtype=None, buffer=None, name="", **kwargs):
    return ones(x.shape, dtype or x.dtype, buffer, name)


def full_like(x, fill_value, dtype=None, buffer=None, name="", **kwargs):
    return full(x.shape, fill_value, dtype or x.dtype, buffer, name)


def _memset_into(call, dst, value, engine=None):
    if dst._st.memory == "hbm":
        fail(call, "memset writes SBUF or PSUM; an HBM tensor is written by DMA (nl.store)")
    if dst._st.memory == "psum" and engine == POOL:
        fail(call, "GpSimdE cannot reach PSUM")
    _emit(call, OP["memset"], engine if engine is not None else DVE, dst, (),
          {"operand0": float(value)})


def shared_constant(constant, dtype=None, **kwargs):
    call = "nl.shared_constant"
    tr = trace()
    if isinstance(constant, str):
        constant = np.load(constant)
    arr = np.asarray(constant)
    dt = as_dtype(dtype if dtype is not None else arr.dtype, call)
    key = (arr.tobytes(), arr.shape, dt.name)
    for name, (k, st) in tr.constants.items():
        if k == key:
            return NkiTensor.whole(st)
    st = tr.new_hbm(arr.shape if arr.ndim else (1,), dt, "constant", call=call)
    st.kind = "constant"
    tr.constants[st.name] = (key, st)
    tr.inputs[st.name] = (st, arr.reshape(st.shape).astype(np.float32 if dt.np is None else dt.np))
    return NkiTensor.whole(st)


def shared_identity_matrix(n, dtype=uint8, dst=None, **kwargs):
    c = shared_constant(np.eye(n, dtype=np.float32), dtype)
    t = load(c) if dst is None else dst
    if dst is not None:
        _dma("nl.shared_identity_matrix", dst, c)
    return t


def static_cast(data, dtype):
    dt = as_dtype(dtype, "nl.static_cast")
    if dt.np is None:
        return np.asarray(data, dtype=np.float32)
    return np.asarray(data).astype(dt.np)


# ---------------------------------------------------------------------------------------------
# Loops and SPMD


def _range(call, args):
    try:
        return builtins.range(*[int(a) for a in args])
    except TypeError:
        fail(call, "takes integer start, stop and step known when the kernel is traced",
             TypeError)


def affine_range(*args, **kwargs):
    return _range("nl.affine_range", args)


def sequential_range(*args, **kwargs):
    return _range("nl.sequential_range", args)


def static_range(*args, **kwargs):
    return _range("nl.static_range", args)


def program_id(axis=0):
    tr = trace()
    if not tr.grid:
        return 0
    if not 0 <= axis < len(tr.grid):
        fail("nl.program_id", f"axis {axis} is outside the {len(tr.grid)}-D launch grid")
    return tr.program_id[axis]


def num_programs(axes=None):
    tr = trace()
    if not tr.grid:
        return 1
    if axes is None:
        return math.prod(tr.grid)
    if isinstance(axes, (tuple, list)):
        return math.prod(tr.grid[a] for a in axes)
    return tr.grid[axes]


def program_ndim():
    return len(trace().grid)


class _NoReorder:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def no_reorder():
    # trnsim keeps each engine's program order; instructions are never reordered.
    return _NoReorder()


# ---------------------------------------------------------------------------------------------
# Memory movement


def _queue_for(dst, src):
    """The DMA queue of a transfer (assumption, docs/nki.md: NKI's compiler chooses queues and
    does not document how): one queue per HBM tensor read (q_<tensor>_in) and per HBM tensor
    written (q_<tensor>_out), one for on-chip copies, so that transfers of different tensors
    complete independently while each tensor's keep their order. Past the arch's limit of
    queues a program may name, new names wrap onto the earliest ones."""
    d, s = dst._st, src._st
    if d.memory == "hbm":
        return f"q_{d.name}_out"
    if s.memory == "hbm":
        return f"q_{s.name}_in"
    return "q_on_chip"


def _dma(call, dst, src, limits=None, engine=SP, dge=False, transpose=False):
    tr = trace()
    if src._st.dtype is not dst._st.dtype and src._st.dtype.name != dst._st.dtype.name:
        unsupported(call, f"a DMA from {src.dtype} to {dst.dtype}: trnsim's DMA does not convert "
                          "data types; move the data in its own type and convert with nl.copy or "
                          "nisa.tensor_copy")
    q = tr.queue(_queue_for(dst, src))
    if dst._st.memory == "hbm":
        dst._st.written = True if dst._st.written is None else dst._st.written
        tr.hbm_written.add(dst._st.name)
    extra = {"queue": q}
    if dge:
        extra["dge"] = True
    return _emit(call, OP["dma_transpose" if transpose else "dma_copy"], engine, dst, (src,),
                 extra, limits)


def load(src, mask=None, dtype=None, **kwargs):
    call = "nl.load"
    _check_kwargs(call, kwargs)
    if not isinstance(src, NkiTensor):
        fail(call, f"src must be a tensor, got {type(src).__name__}", TypeError)
    if src._st.memory != "hbm":
        fail(call, f"Expected operand 'src' of 'load' to be in address space 'hbm', but got a "
                   f"tile in '{src._st.memory}' instead (err_unsupported_memory)")
    dt = src.dtype if dtype is None else as_dtype(dtype, call)
    shape = src.shape if len(src.shape) >= 2 else (1, src.shape[0] if src.shape else 1)
    if shape[0] > trace().partitions:
        fail(call, f"number of partitions {shape[0]} exceed architecture limitation of "
                   f"{trace().partitions} (err_num_partition_exceed_arch_limit)")
    limits = _mask_limits(call, mask, len(src.shape))
    out = new_tile(shape, src.dtype, "sbuf", call)
    idx = _dma(call, out, src, limits)
    if dt is not src.dtype:
        return copy(out, dtype=dt)
    mark_result(out, idx, limits, dma=True)  # `t[...] = nl.load(...)` loads straight into t
    return out


def store(dst, value, mask=None, **kwargs):
    call = "nl.store"
    _check_kwargs(call, kwargs)
    if not isinstance(dst, NkiTensor) or dst._st.memory != "hbm":
        fail(call, "Expected operand 'dst' of 'store' to be in address space 'hbm' "
                   "(err_unsupported_memory)")
    limits = _mask_limits(call, mask, len(dst.shape))
    if _number(value):
        shape = dst.shape if len(dst.shape) >= 2 else (1, dst.shape[0])
        tmp = new_tile(shape, dst.dtype, "sbuf", call)
        _memset_into(call, tmp, float(value))
        value = tmp
    if not isinstance(value, NkiTensor):
        fail(call, f"value must be a tile, got {type(value).__name__}", TypeError)
    if value._st.memory == "psum":
        # The earlier API stores PSUM through an SBUF copy ("an extra copy will be performed").
        value = copy(value)
    if value._st.memory == "hbm":
        _dma(call, dst, value, limits)
        return None
    _dma(call, dst, value, limits)
    return None


def load_transpose2d(src, mask=None, dtype=None, **kwargs):
    call = "nl.load_transpose2d"
    if src._st.memory != "hbm" or len(src.shape) != 2:
        fail(call, "src must be a 2-D HBM tensor")
    if mask is not None:
        unsupported(call, "a mask on a transposing load is not modelled")
    out = new_tile((src.shape[1], src.shape[0]), src.dtype, "sbuf", call)
    _dma(call, out, src, transpose=True)
    if dtype is not None and as_dtype(dtype, call) is not src.dtype:
        return copy(out, dtype=dtype)
    return out


def copy(x, dtype=None, mask=None, **kwargs):
    call = "nl.copy"
    _check_kwargs(call, kwargs)
    x = _on_chip(call, x)
    out = _out_tile(call, x.shape, as_dtype(dtype, call) if dtype is not None else x.dtype)
    limits = _mask_limits(call, mask, len(x.shape))
    idx = _emit(call, OP["tensor_copy"], DVE, out, (x,), None, limits)
    mark_result(out, idx, limits)
    return out


def _copy_into(call, dst, src, engine=DVE):
    _emit(call, OP["tensor_copy"], engine, dst, (src,))


def broadcast_to(x, shape, dtype=None, **kwargs):
    call = "nl.broadcast_to"
    x = _on_chip(call, x)
    shape = tuple(int(s) for s in shape)
    if len(shape) != len(x.shape):
        if len(shape) > len(x.shape):
            x = x.reshape((x.shape[0],) + (1,) * (len(shape) - len(x.shape)) + tuple(x.shape[1:]))
    view = x.broadcast_to(shape)
    out = _out_tile(call, shape, as_dtype(dtype, call) if dtype is not None else x.dtype)
    idx = _emit(call, OP["tensor_copy"], DVE, out, (view,))
    mark_result(out, idx)
    return out


def expand_dims(x, axis):
    return x.expand_dims(axis)


# ---------------------------------------------------------------------------------------------
# Element-wise math


def _activation_into(call, func, dst, x, limits=None, bias=None, scale=1.0, accumulate=None):
    extra = {"function": func}
    if isinstance(scale, NkiTensor):
        extra["scale"] = ap(_partition_limited(scale, limits), call)
    elif scale != 1.0:
        extra["scale"] = float(scale)
    if isinstance(bias, NkiTensor):
        extra["bias"] = ap(_partition_limited(bias, limits), call)
    elif bias is not None and bias != 0:
        extra["bias"] = float(bias)
    if accumulate is not None:
        extra["accumulate"] = ap(_partition_limited(accumulate, limits), call)
    return _emit(call, OP["activation"], ACT, dst, (x,), extra, limits)


def _unary_activation(name, func):
    call = f"nl.{name}"

    def f(x, dtype=None, mask=None, **kwargs):
        _check_kwargs(call, kwargs)
        x = _on_chip(call, x)
        out = _out_tile(call, x.shape, as_dtype(dtype, call) if dtype is not None else x.dtype)
        limits = _mask_limits(call, mask, len(x.shape))
        idx = _activation_into(call, FN[func], out, x, limits)
        mark_result(out, idx, limits)
        return out

    f.__name__ = name
    return f


def _scalar_operand(call, v, limits=None):
    if isinstance(v, NkiTensor):
        return ap(_partition_limited(v, limits), call)
    return float(v)


def _partition_limited(t, limits):
    """A per-partition [P, 1] operand under a mask: only the mask's partitions."""
    if not limits or 0 not in limits:
        return t
    return apply_limits(t, {0: limits[0]})


def _binary_into(call, name, dst, x, y, limits=None):
    """dst = x op y on VectorE: tensor_tensor for two tiles of one shape, tensor_scalar with a
    per-partition [P, 1] tile or a number, a free-dimension broadcast view otherwise."""
    alu = ALU[_ALU_OF[name]]
    if _number(x) and _number(y):
        fail(call, "at least one operand must be a tile", TypeError)
    if _number(y) or (isinstance(y, NkiTensor) and _per_partition(y, x)):
        data, operand, reverse = x, y, 0
    elif _number(x) or (isinstance(x, NkiTensor) and _per_partition(x, y)):
        data, operand, reverse = y, x, 1
    else:
        data, operand, reverse = None, None, 0
    if data is not None:
        data = _on_chip(call, data)
        extra = {"op0": alu, "operand0": _scalar_operand(call, operand, limits)}
        if reverse:
            extra["reverse"] = 1
        if isinstance(operand, NkiTensor):
            _on_chip(call, operand, "y")
        return _emit(call, OP["tensor_scalar"], DVE, dst, (data,), extra, limits)
    x = _on_chip(call, x, "x")
    y = _on_chip(call, y, "y")
    if x.shape != y.shape and (x.shape[0] != y.shape[0] or
                               free_elements(x) != free_elements(y)):
        x, y = _broadcast_pair(call, x, y)
    return _emit(call, OP["tensor_tensor"], DVE, dst, (x, y), {"op0": alu}, limits)


def _per_partition(s, other):
    if not isinstance(other, NkiTensor):
        return False
    return (len(s.shape) >= 1 and free_elements(s) == 1 and free_elements(other) > 1
            and s.shape[0] == other.shape[0])


def _broadcast_pair(call, x, y):
    n = _builtin_max(len(x.shape), len(y.shape))
    xs = (1,) * (n - len(x.shape)) + tuple(x.shape)
    ys = (1,) * (n - len(y.shape)) + tuple(y.shape)
    shape = []
    for a, b in zip(xs, ys):
        if a != b and a != 1 and b != 1:
            fail(call, f"operand shapes {list(x.shape)} and {list(y.shape)} do not broadcast")
        shape.append(_builtin_max(a, b))
    if xs[0] != ys[0]:
        unsupported(call, f"broadcasting along the partition dimension ({list(x.shape)} with "
                          f"{list(y.shape)}) is not modelled")
    if len(x.shape) != n:
        x = x.reshape(xs)
    if len(y.shape) != n:
        y = y.reshape(ys)
    return x.broadcast_to(tuple(shape)), y.broadcast_to(tuple(shape))


_ALU_OF = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
           "maximum": "max", "minimum": "min", "power": "pow", "equal": "is_equal",
           "not_equal": "not_equal", "greater": "is_gt", "greater_equal": "is_ge",
           "less": "is_lt", "less_equal": "is_le", "bitwise_and": "bitwise_and",
           "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
           "left_shift": "shift_left", "right_shift": "shift_right",
           "logical_and": "logical_and", "logical_or": "logical_or",
           "logical_xor": "logical_xor"}


def _binary(name):
    call = f"nl.{name}"

    def f(x, y, dtype=None, mask=None, **kwargs):
        _check_kwargs(call, kwargs)
        if isinstance(x, NkiTensor) and isinstance(y, NkiTensor):
            dt = promote(x.dtype, y.dtype)
            shape = x.shape if free_elements(x) >= free_elements(y) else y.shape
            if x.shape != y.shape and not (_per_partition(x, y) or _per_partition(y, x)):
                n = _builtin_max(len(x.shape), len(y.shape))
                xs = (1,) * (n - len(x.shape)) + tuple(x.shape)
                ys = (1,) * (n - len(y.shape)) + tuple(y.shape)
                if x.shape[0] == y.shape[0] and free_elements(x) == free_elements(y):
                    shape = x.shape
                else:
                    shape = tuple(_builtin_max(a, b) for a, b in zip(xs, ys))
        elif isinstance(x, NkiTensor):
            dt, shape = x.dtype, x.shape
        elif isinstance(y, NkiTensor):
            dt, shape = y.dtype, y.shape
        else:
            fail(call, "at least one operand must be a tile", TypeError)
        if dtype is not None:
            dt = as_dtype(dtype, call)
        out = _out_tile(call, shape, dt)
        limits = _mask_limits(call, mask, len(shape))
        idx = _binary_into(call, name, out, x, y, limits)
        mark_result(out, idx, limits)
        return out

    f.__name__ = name
    return f


def negative(x, dtype=None, mask=None, **kwargs):
    call = "nl.negative"
    x = _on_chip(call, x)
    out = _out_tile(call, x.shape, as_dtype(dtype, call) if dtype is not None else x.dtype)
    limits = _mask_limits(call, mask, len(x.shape))
    idx = _emit(call, OP["tensor_scalar"], DVE, out, (x,),
                {"op0": ALU["multiply"], "operand0": -1.0}, limits)
    mark_result(out, idx, limits)
    return out


def invert(x, dtype=None, mask=None, **kwargs):
    call = "nl.invert"
    x = _on_chip(call, x)
    if not x.dtype.is_int:
        fail(call, "invert takes integer tiles")
    out = _out_tile(call, x.shape, x.dtype)
    limits = _mask_limits(call, mask, len(x.shape))
    idx = _emit(call, OP["tensor_scalar"], DVE, out, (x,),
                {"op0": ALU["bitwise_xor"], "operand0": -1.0}, limits)
    mark_result(out, idx, limits)
    return out


def logical_not(x, dtype=None, mask=None, **kwargs):
    call = "nl.logical_not"
    x = _on_chip(call, x)
    out = _out_tile(call, x.shape, as_dtype(dtype, call) if dtype is not None else x.dtype)
    idx = _emit(call, OP["tensor_scalar"], DVE, out, (x,),
                {"op0": ALU["is_equal"], "operand0": 0.0}, _mask_limits(call, mask, len(x.shape)))
    mark_result(out, idx)
    return out


def reciprocal(x, dtype=None, mask=None, **kwargs):
    # ScalarE's activation function (max(MIN_II, N)); nisa.reciprocal is VectorE's (8N).
    return _unary_activation("reciprocal", "reciprocal")(x, dtype=dtype, mask=mask, **kwargs)


def _unsupported_fn(name, why="is not supported by trnsim"):
    def f(*a, **k):
        unsupported(f"nl.{name}", why)

    f.__name__ = name
    return f


# Activation functions (ScalarE) and ALU operators as named values.
_ACTIVATIONS = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_dx",
                "gelu_apprx_sigmoid", "silu", "silu_dx", "softplus", "mish", "erf", "erf_dx",
                "sin", "arctan", "sign", "abs", "square"]
_ACT_FN = {"gelu_apprx_tanh": "gelu_tanh", "copy": "copy"}

for _n in _ACTIVATIONS:
    globals()[_n] = _Op(_n, None, FN[_n], _unary_activation(_n, _n))
gelu_apprx_tanh = _Op("gelu_apprx_tanh", None, FN["gelu_tanh"],
                      _unary_activation("gelu_apprx_tanh", "gelu_tanh"))
for _n in list(_ALU_OF):
    globals()[_n] = _Op(_n, ALU[_ALU_OF[_n]], None, _binary(_n))
reciprocal = _Op("reciprocal", None, FN["reciprocal"], reciprocal)
copy = _Op("copy", None, FN["copy"], copy)
negative = _Op("negative", None, None, negative)
invert = _Op("invert", None, None, invert)
logical_not = _Op("logical_not", None, None, logical_not)
identity = _Op("identity", None, FN["identity"], None)
average = _Op("average", ALU["mean"], None, None)
bypass = _Op("bypass", ALU["bypass"], None, None)
for _n, _why in [("cos", "has no ScalarE activation function in trnsim"),
                 ("tan", "has no ScalarE activation function in trnsim"),
                 ("ceil", "is not modelled"), ("floor", "is not modelled"),
                 ("trunc", "is not modelled"), ("fmod", "fails on hardware (NKI known issue)"),
                 ("mod", "fails on hardware (NKI known issue)"),
                 ("gelu_apprx_sigmoid_dx", "is not modelled"), ("prelu", "is not modelled"),
                 ("abs_max", "is NeuronCore-v4 only and not modelled"),
                 ("abs_min", "is NeuronCore-v4 only and not modelled")]:
    globals()[_n] = _Op(_n, None, None, _unsupported_fn(_n, _why))
max_ = None  # (nl.max is the reduction below)


# ---------------------------------------------------------------------------------------------
# Reductions


def _axes(call, x, axis):
    if isinstance(axis, (list, tuple)):
        axes = sorted(int(a) + (len(x.shape) if int(a) < 0 else 0) for a in axis)
    else:
        a = int(axis)
        axes = [a + len(x.shape) if a < 0 else a]
    if not axes or axes[0] == 0 or axes != list(builtins.range(axes[0], len(x.shape))):
        fail(call, f"axis {axis} of a {len(x.shape)}-D tile: reduction axes are the last "
                   "contiguous free dimensions ([1], [1, 2], ...), never the partition dimension")
    return axes


def _reduce_dims_of(x, first_axis):
    groups = [(d[1], s) for s, d in zip(x.shape[first_axis:], x._dims[first_axis:])]
    from ._tensor import _merge
    return _builtin_max(1, len(_merge(groups)))


def _reduce_into(call, alu, dst, x, axes, negate=False):
    from ._tensor import apply_limits  # noqa
    tr = trace()
    src_ap = ap(x, call, split=axes[0])
    nd = _reduce_dims_of(x, axes[0])
    if nd > len(src_ap[6]):
        nd = len(src_ap[6])
    extra = {"op0": alu, "reduce_dims": nd}
    if negate:
        extra["negate"] = True
    return tr.emit(call, OP["tensor_reduce"], DVE, ap(dst, call), (src_ap,), extra, tr.source())


def _reduction(name, alu_name):
    call = f"nl.{name}"

    def f(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):
        _check_kwargs(call, kwargs)
        x = _on_chip(call, x)
        limits = _mask_limits(call, mask, len(x.shape))
        axes = _axes(call, x, axis)
        kept = tuple(x.shape[:axes[0]])
        shape = kept + ((1,) * len(axes) if keepdims else ())
        if len(shape) < 2:
            shape = (x.shape[0], 1)
        dt = as_dtype(dtype, call) if dtype is not None else x.dtype
        out = _out_tile(call, shape, dt)
        src, dst = x, out
        if limits:
            # The mask narrows what is read and written; the result tile keeps its full shape.
            src = apply_limits(x, limits)
            dst = apply_limits(out, {a: r for a, r in limits.items() if a < axes[0]})
            if src is None or dst is None:
                return out
        idx = _reduce_into(call, ALU[alu_name], dst, src, axes)
        mark_result(out, idx, {a: r for a, r in (limits or {}).items() if a < axes[0]})
        return out

    f.__name__ = name
    return f


sum = _Op("sum", ALU["add"], None, _reduction("sum", "add"))
max = _Op("max", ALU["max"], None, _reduction("max", "max"))
min = _Op("min", ALU["min"], None, _reduction("min", "min"))
mean = _Op("mean", ALU["mean"], None, _reduction("mean", "mean"))
prod = _Op("prod", None, None, _unsupported_fn("prod", "(a product reduction) is not modelled"))
all = _Op("all", None, None, _unsupported_fn("all", "is not modelled"))
loop_reduce = _unsupported_fn("loop_reduce", "is not modelled")
all_reduce = _unsupported_fn("all_reduce", "(across SPMD programs) is not modelled")


def var(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):
    call = "nl.var"
    _no_mask(call, mask)
    x = _on_chip(call, x)
    axes = _axes(call, x, axis)
    m = mean(x, axis=axis, keepdims=True, dtype=float32)
    m2 = m.reshape((m.shape[0], 1)) if len(m.shape) != 2 else m
    centred = _out_tile(call, x.shape, float32)
    if free_elements(m) != 1:
        unsupported(call, "a variance keeping free dimensions is not modelled")
    _emit(call, OP["tensor_scalar"], DVE, centred, (x,),
          {"op0": ALU["subtract"], "operand0": ap(m2, call)})
    sq = _out_tile(call, x.shape, float32)
    _emit(call, OP["tensor_tensor"], DVE, sq, (centred, centred), {"op0": ALU["multiply"]})
    out = _out_tile(call, m.shape if keepdims else (x.shape[0], 1),
                    as_dtype(dtype, call) if dtype is not None else x.dtype)
    _reduce_into(call, ALU["mean"], out, sq, axes)
    return out


# ---------------------------------------------------------------------------------------------
# Higher-level operations


def matmul(x, y, transpose_x=False, mask=None, **kwargs):
    """x @ y (or x.T @ y with transpose_x) into a new PSUM fp32 tile, through nc_matmul; without
    transpose_x, x is first transposed on TensorE and copied to SBUF (as NKI inserts)."""
    call = "nl.matmul"
    _check_kwargs(call, kwargs)
    x = _on_chip(call, x)
    y = _on_chip(call, y, "y")
    if mask is not None:
        unsupported(call, "operand masking of nl.matmul is not modelled")
    if not transpose_x:
        xt = transpose(x)
        x = copy(xt)
    if len(x.shape) != 2 or len(y.shape) != 2:
        fail(call, "x and y must be 2-D tiles")
    if x.shape[0] != y.shape[0]:
        fail(call, f"the contraction (partition) dimensions differ: x{list(x.shape)} and "
                   f"y{list(y.shape)}")
    out = new_tile((x.shape[1], y.shape[1]), float32, "psum", call)
    idx = _emit(call, OP["matmul"], PE, out, (x, y), {"start": True, "stop": True})
    _psum_mark(out)
    mark_result(out, idx, None, matmul=True)
    return out


def _psum_mark(view):
    from ._tensor import _psum_written
    _psum_written(view, view)


def transpose(x, dtype=None, mask=None, **kwargs):
    call = "nl.transpose"
    _no_mask(call, mask)
    x = _on_chip(call, x)
    if len(x.shape) != 2:
        fail(call, f"parameter 'x{list(x.shape)}' of 'transpose' exceed max supported number of "
                   "dimensions of 2 (err_exceed_max_supported_dimension)")
    for i, s in enumerate(x.shape):
        if s > 128:
            fail(call, f"size of dimension {i} in 'x{list(x.shape)}' of 'transpose' exceed "
                       "architecture limitation of 128 (err_size_of_dimension_exceed_arch_limit)")
    out = new_tile((x.shape[1], x.shape[0]), x.dtype, "psum", call)
    idx = _emit(call, OP["transpose"], PE, out, (x,))
    mark_result(out, idx)
    if dtype is not None and as_dtype(dtype, call) is not x.dtype:
        return copy(out, dtype=dtype)
    return out


def softmax(x, axis=-1, dtype=None, compute_dtype=None, mask=None, **kwargs):
    """exp(x - max) / sum along the free axis: VectorE max, ScalarE exp with the negated max as
    bias and the sum in its accumulator, VectorE reciprocal and scale."""
    call = "nl.softmax"
    x = _on_chip(call, x)
    if mask is not None:
        unsupported(call, "a mask on nl.softmax is not modelled")
    axes = _axes(call, x, axis)
    if axes != [len(x.shape) - 1] or len(x.shape) != 2:
        unsupported(call, "softmax over more than the last axis of a 2-D tile is not modelled")
    p = x.shape[0]
    m = _out_tile(call, (p, 1), float32)
    _reduce_into(call, ALU["max"], m, x, axes)
    nm = _out_tile(call, (p, 1), float32)
    _emit(call, OP["tensor_scalar"], DVE, nm, (m,), {"op0": ALU["multiply"], "operand0": -1.0})
    e = _out_tile(call, x.shape, float32)
    s = _out_tile(call, (p, 1), float32)
    _activation_into(call, FN["exp"], e, x, bias=nm, accumulate=s)
    r = _out_tile(call, (p, 1), float32)
    _emit(call, OP["reciprocal"], DVE, r, (s,))
    out = _out_tile(call, x.shape, as_dtype(dtype, call) if dtype is not None else x.dtype)
    _emit(call, OP["tensor_scalar"], DVE, out, (e,), {"op0": ALU["multiply"],
                                                       "operand0": ap(r, call)})
    return out


def rms_norm(x, w, axis, n, epsilon=1e-6, dtype=None, compute_dtype=None, mask=None, **kwargs):
    """x / sqrt(sum(x^2)/n + epsilon) * w (w of x's shape): ScalarE square with its sum, VectorE
    scale-and-add, ScalarE rsqrt, then VectorE scale and multiply."""
    call = "nl.rms_norm"
    _no_mask(call, mask)
    x = _on_chip(call, x)
    w = _on_chip(call, w, "w")
    axes = _axes(call, x, axis)
    if axes != [len(x.shape) - 1] or len(x.shape) != 2:
        unsupported(call, "rms_norm over more than the last axis of a 2-D tile is not modelled")
    p = x.shape[0]
    sq = _out_tile(call, x.shape, float32)
    ss = _out_tile(call, (p, 1), float32)
    _activation_into(call, FN["square"], sq, x, accumulate=ss)
    ms = _out_tile(call, (p, 1), float32)
    _emit(call, OP["tensor_scalar"], DVE, ms, (ss,),
          {"op0": ALU["multiply"], "operand0": 1.0 / float(n), "op1": ALU["add"],
           "operand1": float(epsilon)})
    r = _out_tile(call, (p, 1), float32)
    _activation_into(call, FN["rsqrt"], r, ms)
    out = _out_tile(call, x.shape, as_dtype(dtype, call) if dtype is not None else x.dtype)
    _emit(call, OP["tensor_scalar"], DVE, out, (x,), {"op0": ALU["multiply"],
                                                       "operand0": ap(r, call)})
    if w.shape != x.shape:
        w = _broadcast_pair(call, out, w)[1]
    _emit(call, OP["tensor_tensor"], DVE, out, (out, w), {"op0": ALU["multiply"]})
    return out


def where(condition, x, y, dtype=None, mask=None, **kwargs):
    call = "nl.where"
    condition = _on_chip(call, condition, "condition")
    shape = condition.shape
    dt = as_dtype(dtype, call) if dtype is not None else (
        x.dtype if isinstance(x, NkiTensor) else y.dtype if isinstance(y, NkiTensor) else float32)

    def as_tile(v, what):
        if isinstance(v, NkiTensor):
            return _on_chip(call, v, what)
        t = new_tile(shape, dt, "sbuf", call)
        _memset_into(call, t, float(v))
        return t

    xt, yt = as_tile(x, "x"), as_tile(y, "y")
    out = _out_tile(call, shape, dt)
    limits = _mask_limits(call, mask, len(shape))
    idx = _emit(call, OP["select"], DVE, out, (condition, xt, yt), None, limits)
    mark_result(out, idx, limits)
    return out


def gather_flattened(data, indices, axis=0, dtype=None, mask=None, **kwargs):
    call = "nl.gather_flattened"
    _no_mask(call, mask)
    data = _on_chip(call, data, "data")
    indices = _on_chip(call, indices, "indices")
    out = _out_tile(call, indices.shape, data.dtype)
    idx = _emit(call, OP["gather"], POOL, out, (data, indices))
    mark_result(out, idx)
    return out


dropout = _unsupported_fn("dropout", "draws random numbers; trnsim does not model it")
rand = _unsupported_fn("rand", "draws random numbers; trnsim does not model it")
random_seed = _unsupported_fn("random_seed", "is not modelled (no random numbers)")
device_print = _unsupported_fn("device_print", "prints data that only exists when the program "
                                               "runs; trnsim traces the kernel before running it")
atomic_rmw = _unsupported_fn("atomic_rmw", "is not modelled")
dynamic_range = _unsupported_fn("dynamic_range", "(a hardware loop over registers) is not "
                                                 "modelled; use nl.affine_range")
fori_loop = _unsupported_fn("fori_loop", "(a hardware loop over registers) is not modelled")
while_loop = _unsupported_fn("while_loop", "(a hardware loop over registers) is not modelled")
spmd_dim = _unsupported_fn("spmd_dim", "(multi-core SPMD) is not modelled")
nc = _unsupported_fn("nc", "(multi-core SPMD) is not modelled")


class _TileSize:
    """nl.tile_size: the hardware's tile limits (from the arch the kernel is traced for)."""

    pmax = 128
    psum_fmax = 512
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = 2048
    psum_num_banks = 8
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512

    @property
    def sbuf_fmax_bytes(self):
        return trace().arch["sbuf_partition_bytes"]

    @property
    def sbuf_fmax(self):
        return self.sbuf_fmax_bytes // 4

    @property
    def total_available_sbuf_size(self):
        return self.sbuf_fmax_bytes

    @property
    def sbuf_size_bytes(self):
        return self.sbuf_fmax_bytes * trace().partitions


tile_size = _TileSize()


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    _core.unsupported_attribute(f"nl.{name}", "is not part of trnsim's nki.language (docs/nki.md lists what is)")
