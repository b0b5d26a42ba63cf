"""nki.isa for trnsim: one function per NKI ISA instruction, in both API generations. The current
one passes the destination first (`dst=`) and returns an instruction handle; the earlier one
(neuronxcc.nki.isa) returns a new tile. Each call becomes one trnsim instruction (docs/nki.md,
docs/isa.md); an instruction, argument or mode trnsim does not model raises
NkiUnsupportedError naming the call and the kernel's file:line."""

import enum

import numpy as np

from .. import _native
from . import _core
from . import language as nl
from ._core import (NkiError, NkiUnsupportedError, NkiValidationError, Index, fail, unsupported,
                    trace, as_dtype, promote, float32, uint32)
from ._tensor import NkiTensor, ap, new_tile, mark_result, free_elements, _psum_written

OP = _native.OPCODES
ALU = _native.ALU
FN = _native.FUNCTIONS
PE, DVE, ACT, POOL, SP = nl.PE, nl.DVE, nl.ACT, nl.POOL, nl.SP


# ---------------------------------------------------------------------------------------------
# Enumerations (values of the current API; the earlier API's module aliases too)


class engine(enum.IntEnum):
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown
_ENGINE = {engine.tensor: PE, engine.vector: DVE, engine.scalar: ACT, engine.gpsimd: POOL,
           engine.sync: SP}


class reduce_cmd(enum.IntEnum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.IntEnum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.IntEnum):
    error = 0
    skip = 1


class matmul_perf_mode(str, enum.Enum):
    none = "none"
    double_row = "double_row"


class nc_version(enum.IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine(enum.IntEnum):
    dma = 1
    gpsimd_dma = 2


class fp32:
    min = nl.fp32.min
    max = nl.fp32.max


def get_nc_version():
    return {"trn1": nc_version.gen2, "trn2": nc_version.gen3,
            "trn3": nc_version.gen4}.get(trace().arch["name"], nc_version.gen3)


def get_nc_sub_version():
    return 0


class NkiInstruction:
    """What a current-API ISA call returns: a handle of the instruction it emitted."""

    __slots__ = ("index", "name")

    def __init__(self, index, name=None):
        self.index = index
        self.name = name

    def depends_on(self, *producers):
        # trnsim's synchronisation already orders every data dependency; an extra edge between
        # independent instructions is not modelled.
        unsupported("NkiInstruction.depends_on", "explicit scheduling edges are not modelled")


# ---------------------------------------------------------------------------------------------
# Arguments

_REQ = object()


def _bind(call, args, kwargs, params):
    """Binds positional and keyword arguments to `params` [(name, default)] as Python would,
    with NKI's 'unexpected keyword argument' error."""
    out = {}
    if len(args) > len(params):
        fail(call, f"takes {len(params)} arguments, {len(args)} given", TypeError)
    for (n, _), v in zip(params, args):
        out[n] = v
    names = {n for n, _ in params}
    for k, v in kwargs.items():
        if k not in names:
            fail(call, f"unexpected keyword argument '{k}'", TypeError)
        if k in out:
            fail(call, f"got multiple values for argument '{k}'", TypeError)
        out[k] = v
    for n, d in params:
        if n not in out:
            if d is _REQ:
                fail(call, f"missing required argument '{n}'", TypeError)
            out[n] = d
    return out


def _is_new(args, kwargs, old_tensor_positionals):
    """The current API passes dst first: a `dst` keyword, or one more leading tensor than the
    earlier signature has."""
    if "dst" in kwargs:
        return True
    n = 0
    for a in args:
        if isinstance(a, NkiTensor):
            n += 1
        else:
            break
    return n > old_tensor_positionals


_NP_ALU = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply",
           np.divide: "divide", np.true_divide: "divide", np.maximum: "max", np.minimum: "min",
           np.max: "max", np.amax: "max", np.min: "min", np.amin: "min", np.power: "pow",
           np.equal: "is_equal", np.not_equal: "not_equal", np.greater: "is_gt",
           np.greater_equal: "is_ge", np.less: "is_lt", np.less_equal: "is_le",
           np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or",
           np.bitwise_xor: "bitwise_xor", np.left_shift: "shift_left",
           np.right_shift: "shift_right", np.logical_and: "logical_and",
           np.logical_or: "logical_or", np.logical_xor: "logical_xor", np.sum: "add",
           np.mean: "mean"}
_NP_FN = {np.exp: "exp", np.log: "log", np.tanh: "tanh", np.square: "square", np.copy: "copy",
          np.sqrt: "sqrt", np.abs: "abs", np.absolute: "abs", np.sin: "sin",
          np.reciprocal: "reciprocal", np.sign: "sign", np.arctan: "arctan"}


def _alu(call, op, what="op"):
    if op is None:
        return ALU["bypass"]
    if isinstance(op, nl._Op) and op.alu is not None:
        return op.alu
    try:
        name = _NP_ALU.get(op)
    except TypeError:
        name = None
    if name is not None:
        return ALU[name]
    fail(call, f"{what}={op!r} is not an ALU operator trnsim models (nl.add, nl.multiply, "
               "nl.maximum, comparisons, bitwise and logical operators)", NkiUnsupportedError)


def _func(call, op):
    if isinstance(op, nl._Op) and op.func is not None:
        return op.func
    try:
        name = _NP_FN.get(op)
    except TypeError:
        name = None
    if name is not None:
        return FN[name]
    fail(call, f"op={op!r} is not an activation function trnsim models", NkiUnsupportedError)


def _engine(call, e, default, allowed):
    if e is None or e == engine.unknown:
        return default
    if isinstance(e, int) and not isinstance(e, engine):
        fail(call, "engine must be an nisa.engine member (raw integers are rejected since NKI "
                   "0.3.0)", TypeError)
    code = _ENGINE.get(e)
    if code is None or code not in allowed:
        fail(call, f"engine {e!r} cannot run {call}")
    return code


def _tile(call, x, what):
    if not isinstance(x, NkiTensor):
        fail(call, f"'{what}' must be a tile, got {type(x).__name__}", TypeError)
    if x._st.memory == "hbm":
        fail(call, f"Expected operand '{what}' of '{call}' to be in address space 'psum|sbuf', "
                   "but got a tile in 'hbm' instead (err_unsupported_memory)")
    return x


def _scalar(call, v, what):
    if v is None:
        return 0.0
    if isinstance(v, NkiTensor):
        _tile(call, v, what)
        return ap(v, call)
    if isinstance(v, (int, float, np.integer, np.floating, bool)):
        return float(v)
    fail(call, f"'{what}' must be a number or a [P, 1] tile", TypeError)


def _old_out(call, shape, dt, memory="sbuf"):
    return new_tile(shape, dt, memory, call)


def _limits(call, kw, ndim):
    return nl._mask_limits(call, kw.get("mask"), ndim)


def _no_mask(call, kw):
    """Masks are modelled where every operand has the destination's shape; elsewhere (operands
    of other shapes, patterns) a mask raises rather than being ignored."""
    if kw.get("mask") is not None:
        unsupported(call, "a mask on this instruction is not modelled (only on instructions "
                          "whose operands all have the destination's shape)")


def _done(call, new, kw, out, idx, limits=None, matmul=False):
    if new:
        return NkiInstruction(idx, kw.get("name"))
    if idx is not None:
        mark_result(out, idx, limits, matmul)
    return out


def _dtype_arg(call, kw, default):
    d = kw.get("dtype")
    return default if d is None else as_dtype(d, call)


# ---------------------------------------------------------------------------------------------
# TensorE


def nc_matmul(*args, **kwargs):
    call = "nisa.nc_matmul"
    new = _is_new(args, kwargs, 2)
    common = [("is_stationary_onezero", False), ("is_moving_onezero", False),
              ("is_transpose", False), ("tile_position", ()), ("tile_size", ()),
              ("perf_mode", None)]
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("stationary", _REQ), ("moving", _REQ),
                                        ("is_stationary_onezero", False),
                                        ("is_moving_onezero", False), ("is_transpose", False),
                                        ("accumulate", None), ("tile_position", ()),
                                        ("tile_size", ()), ("perf_mode", None), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("stationary", _REQ), ("moving", _REQ)] + common +
                   [("mask", None)])
    _no_mask(call, kw)
    if kw["tile_position"] or kw["tile_size"]:
        unsupported(call, "PE tiling (tile_position, tile_size) is not modelled")
    pm = kw["perf_mode"]
    if pm not in (None, "none", matmul_perf_mode.none):
        unsupported(call, f"perf_mode={pm!r} is not modelled")
    if kw["is_transpose"]:
        unsupported(call, "is_transpose=True (transpose mode) is not modelled; use nc_transpose")
    st = _tile(call, kw["stationary"], "stationary")
    mv = _tile(call, kw["moving"], "moving")
    if new:
        dst = kw["dst"]
        if not isinstance(dst, NkiTensor) or dst._st.memory != "psum":
            fail(call, "dst must be a PSUM tile: TensorE writes PSUM only")
        acc = kw["accumulate"]
        written = _psum_written(dst, dst)
        start = (not written) if acc is None else (not acc)
        idx = nl._emit(call, OP["matmul"], PE, dst, (st, mv), {"start": start, "stop": True})
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, 2)
    out = _old_out(call, (st.shape[-1] if len(st.shape) == 2 else free_elements(st),
                          free_elements(mv)), float32, "psum")
    idx = nl._emit(call, OP["matmul"], PE, out, (st, mv), {"start": True, "stop": True}, limits)
    _psum_written(out, out)
    return _done(call, False, kw, out, idx, limits, matmul=True)


def nc_transpose(*args, **kwargs):
    call = "nisa.nc_transpose"
    new = _is_new(args, kwargs, 1)
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data", _REQ), ("engine", None),
                                        ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data", _REQ), ("mask", None), ("dtype", None),
                                        ("engine", None)])
    _no_mask(call, kw)
    data = _tile(call, kw["data"], "data")
    if len(data.shape) != 2:
        data = data.reshape((data.shape[0], free_elements(data)))
    if new:
        dst = _tile(call, kw["dst"], "dst")
        default = PE if dst._st.memory == "psum" else DVE
        eng = _engine(call, kw["engine"], default, (PE, DVE))
        if dst.dtype is not data.dtype:
            fail(call, f"dst dtype {dst.dtype} must equal data dtype {data.dtype}")
        idx = nl._emit(call, OP["transpose"], eng, dst, (data,))
        return NkiInstruction(idx, kw.get("name"))
    eng = _engine(call, kw["engine"], PE, (PE, DVE))
    dt = _dtype_arg(call, kw, data.dtype)
    out = _old_out(call, (data.shape[1], data.shape[0]), data.dtype,
                   "psum" if eng == PE else "sbuf")
    limits = _limits(call, kw, 2)
    idx = nl._emit(call, OP["transpose"], eng, out, (data,), None, limits)
    if dt is not data.dtype:
        return nl.copy(out, dtype=dt)
    return _done(call, False, kw, out, idx, limits)


# ---------------------------------------------------------------------------------------------
# ScalarE


def _activation_common(call, kw, new, reduce_required):
    op = _func(call, kw["op"])
    data = _tile(call, kw["data"], "data")
    bias = kw.get("bias")
    if bias is not None:
        if not isinstance(bias, NkiTensor):
            if trace().arch["name"] == "trn1":
                fail(call, "bias must be a [P, 1] vector on NeuronCore-v2")
        elif free_elements(bias) != 1:
            fail(call, f"bias{list(bias.shape)} must have one element per partition "
                       "(err_activation_bias_invalid_type)")
    scale = kw.get("scale", 1.0)
    if isinstance(scale, NkiTensor) and (free_elements(scale) != 1 or
                                         scale.shape[0] != data.shape[0]):
        fail(call, "Scale parameter of activation must be either a scalar value or a 1D vector "
                   "spanning the partition dimension (err_activation_scale_scalar_or_vector)")
    if isinstance(scale, NkiTensor) and scale.dtype is not float32:
        fail(call, "Scale parameter of activation or activation_reduce must be a scalar or "
                   "vector of type float32 (err_activation_scale_invalid_type)")
    reduce_res = kw.get("reduce_res")
    if reduce_res is not None:
        rop = kw.get("reduce_op")
        if rop is not None and _alu(call, rop, "reduce_op") != ALU["add"]:
            unsupported(call, "reduce_op other than nl.add is not modelled (NeuronCore-v2 takes "
                              "add only)")
        cmd = kw.get("reduce_cmd", reduce_cmd.reset_reduce)
        if not reduce_required and cmd not in (reduce_cmd.reset_reduce, reduce_cmd.idle):
            unsupported(call, f"reduce_cmd={cmd!r}: accumulation across instructions in the "
                              "ScalarE accumulator registers is not modelled; use "
                              "reset_reduce (or nisa.activation_reduce)")
        _tile(call, reduce_res, "reduce_res")
        if reduce_res.dtype is not float32:
            fail(call, "reduce_res must be float32 [P, 1]")
    elif reduce_required:
        fail(call, "missing required argument 'reduce_res'", TypeError)
    return op, data, bias, scale, reduce_res


def activation(*args, **kwargs):
    call = "nisa.activation"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("op", _REQ), ("data", _REQ),
                                        ("bias", None), ("scale", 1.0), ("reduce_op", None),
                                        ("reduce_res", None), ("reduce_cmd", reduce_cmd.idle),
                                        ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("op", _REQ), ("data", _REQ), ("bias", None),
                                        ("scale", 1.0), ("reduce_op", None), ("reduce_res", None),
                                        ("reduce_cmd", reduce_cmd.idle), ("mask", None),
                                        ("dtype", None)])
    return _activation(call, kw, new, False)


def activation_reduce(*args, **kwargs):
    call = "nisa.activation_reduce"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("op", _REQ), ("data", _REQ),
                                        ("reduce_op", _REQ), ("reduce_res", _REQ), ("bias", None),
                                        ("scale", 1.0), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("op", _REQ), ("data", _REQ), ("reduce_op", _REQ),
                                        ("reduce_res", _REQ), ("bias", None), ("scale", 1.0),
                                        ("mask", None), ("dtype", None)])
    return _activation(call, kw, new, True)


def _activation(call, kw, new, reduce_required):
    op, data, bias, scale, reduce_res = _activation_common(call, kw, new, reduce_required)
    if new:
        dst = _tile(call, kw["dst"], "dst")
        idx = nl._activation_into(call, op, dst, data, None, bias, scale, reduce_res)
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, len(data.shape))
    out = _old_out(call, data.shape, _dtype_arg(call, kw, data.dtype))
    idx = nl._activation_into(call, op, out, data, limits, bias, scale, reduce_res)
    return _done(call, False, kw, out, idx, limits)


# ---------------------------------------------------------------------------------------------
# VectorE (and GpSimdE / ScalarE where NKI allows)


def tensor_tensor(*args, **kwargs):
    call = "nisa.tensor_tensor"
    new = _is_new(args, kwargs, 2)
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data1", _REQ), ("data2", _REQ),
                                        ("op", _REQ), ("engine", None), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data1", _REQ), ("data2", _REQ), ("op", _REQ),
                                        ("dtype", None), ("mask", None), ("engine", None)])
    a = _tile(call, kw["data1"], "data1")
    b = _tile(call, kw["data2"], "data2")
    op = _alu(call, kw["op"])
    if a.shape[0] != b.shape[0]:
        fail(call, f"number of partitions (dimension 0 size of a tile) mismatch in parameters "
                   f"(data1{list(a.shape)}, data2{list(b.shape)}) of 'tensor_tensor' "
                   "(err_num_partition_mismatch)")
    default = POOL if op == ALU["pow"] else DVE
    eng = _engine(call, kw["engine"], default, (DVE, POOL))
    if new:
        dst = _tile(call, kw["dst"], "dst")
        idx = nl._emit(call, OP["tensor_tensor"], eng, dst, (a, b), {"op0": op})
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, len(a.shape))
    out = _old_out(call, a.shape, _dtype_arg(call, kw, promote(a.dtype, b.dtype)))
    idx = nl._emit(call, OP["tensor_tensor"], eng, out, (a, b), {"op0": op}, limits)
    return _done(call, False, kw, out, idx, limits)


def tensor_scalar(*args, **kwargs):
    call = "nisa.tensor_scalar"
    new = "dst" in kwargs or (len(args) > 1 and isinstance(args[1], NkiTensor))
    tail = [("reverse0", False), ("op1", None), ("operand1", None), ("reverse1", False)]
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data", _REQ), ("op0", _REQ),
                                        ("operand0", _REQ)] + tail + [("engine", None),
                                                                       ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data", _REQ), ("op0", _REQ), ("operand0", _REQ)] +
                   tail + [("dtype", None), ("mask", None), ("engine", None)])
    data = _tile(call, kw["data"], "data")
    extra = {"op0": _alu(call, kw["op0"], "op0"), "operand0": _scalar(call, kw["operand0"],
                                                                      "operand0")}
    if kw["op1"] is not None:
        extra["op1"] = _alu(call, kw["op1"], "op1")
        extra["operand1"] = _scalar(call, kw["operand1"], "operand1")
    elif kw["operand1"] is not None:
        fail(call, "operand1 is given without op1")
    rev = (1 if kw["reverse0"] else 0) | (2 if kw["reverse1"] else 0)
    if rev:
        extra["reverse"] = rev
    eng = _engine(call, kw["engine"], DVE, (DVE, ACT, POOL))
    if new:
        dst = _tile(call, kw["dst"], "dst")
        idx = nl._emit(call, OP["tensor_scalar"], eng, dst, (data,), extra)
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, len(data.shape))
    out = _old_out(call, data.shape, _dtype_arg(call, kw, data.dtype))
    idx = nl._emit(call, OP["tensor_scalar"], eng, out, (data,), extra, limits)
    return _done(call, False, kw, out, idx, limits)


def scalar_tensor_tensor(*args, **kwargs):
    call = "nisa.scalar_tensor_tensor"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    params = [("data", _REQ), ("op0", _REQ), ("operand0", _REQ), ("op1", _REQ),
              ("operand1", _REQ), ("reverse0", False), ("reverse1", False)]
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ)] + params + [("name", None)])
    else:
        kw = _bind(call, args, kwargs, params + [("dtype", None), ("mask", None)])
    data = _tile(call, kw["data"], "data")
    other = _tile(call, kw["operand1"], "operand1")
    extra = {"op0": _alu(call, kw["op0"], "op0"), "operand0": _scalar(call, kw["operand0"],
                                                                      "operand0"),
             "op1": _alu(call, kw["op1"], "op1")}
    rev = (1 if kw["reverse0"] else 0) | (2 if kw["reverse1"] else 0)
    if rev:
        extra["reverse"] = rev
    if new:
        dst = _tile(call, kw["dst"], "dst")
        idx = nl._emit(call, OP["scalar_tensor_tensor"], DVE, dst, (data, other), extra)
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, len(data.shape))
    out = _old_out(call, data.shape, _dtype_arg(call, kw, promote(data.dtype, other.dtype)))
    idx = nl._emit(call, OP["scalar_tensor_tensor"], DVE, out, (data, other), extra, limits)
    return _done(call, False, kw, out, idx, limits)


def tensor_reduce(*args, **kwargs):
    call = "nisa.tensor_reduce"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("op", _REQ), ("data", _REQ),
                                        ("axis", _REQ), ("negate", False), ("keepdims", False),
                                        ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("op", _REQ), ("data", _REQ), ("axis", _REQ),
                                        ("mask", None), ("dtype", None), ("negate", False),
                                        ("keepdims", False)])
    data = _tile(call, kw["data"], "data")
    op = _alu(call, kw["op"])
    if op not in (ALU["add"], ALU["max"], ALU["min"], ALU["mean"]):
        unsupported(call, f"reduction with {kw['op']!r} is not modelled (add, maximum, minimum)")
    axes = nl._axes(call, data, kw["axis"])
    if new:
        dst = _tile(call, kw["dst"], "dst")
        idx = nl._reduce_into(call, op, dst, data, axes, kw["negate"])
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, len(data.shape))
    kept = tuple(data.shape[:axes[0]]) + ((1,) * len(axes) if kw["keepdims"] else ())
    if len(kept) < 2:
        kept = (data.shape[0], 1)
    out = _old_out(call, kept, _dtype_arg(call, kw, data.dtype))
    src, dst, kept_limits = data, out, None
    if limits:
        from ._tensor import apply_limits
        kept_limits = {a: r for a, r in limits.items() if a < axes[0]}
        src = apply_limits(data, limits)
        dst = apply_limits(out, kept_limits)
        if src is None or dst is None:
            return out
    idx = nl._reduce_into(call, op, dst, src, axes, kw["negate"])
    return _done(call, False, kw, out, idx, kept_limits)


def tensor_scalar_reduce(*args, **kwargs):
    call = "nisa.tensor_scalar_reduce"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data", _REQ), ("op0", _REQ),
                                        ("operand0", _REQ), ("reduce_op", _REQ),
                                        ("reduce_res", None), ("reverse0", False),
                                        ("reduce_cmd", reduce_cmd.reset_reduce),
                                        ("reduce_init", None), ("reduce_res_negate", False),
                                        ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data", _REQ), ("op0", _REQ), ("operand0", _REQ),
                                        ("reduce_op", _REQ), ("reduce_res", _REQ),
                                        ("reverse0", False), ("dtype", None), ("mask", None)])
    _no_mask(call, kw)
    data = _tile(call, kw["data"], "data")
    if kw.get("reduce_cmd", reduce_cmd.reset_reduce) != reduce_cmd.reset_reduce:
        unsupported(call, "accumulation across instructions (reduce_cmd other than "
                          "reset_reduce) is not modelled")
    if kw.get("reduce_res_negate"):
        unsupported(call, "reduce_res_negate is not modelled")
    if kw["reverse0"]:
        unsupported(call, "reverse0 is not supported (NKI: 'not supported yet')")
    res = kw["reduce_res"]
    if res is None:
        unsupported(call, "keeping the result in the VectorE accumulator (reduce_res=None) is "
                          "not modelled")
    _tile(call, res, "reduce_res")
    rop = _alu(call, kw["reduce_op"], "reduce_op")
    if rop not in (ALU["add"], ALU["max"], ALU["min"]):
        unsupported(call, f"reduce_op={kw['reduce_op']!r} is not modelled (add, maximum, minimum)")
    extra = {"op0": _alu(call, kw["op0"], "op0"),
             "operand0": _scalar(call, kw["operand0"], "operand0"), "op1": rop,
             "accumulate": ap(res, call)}
    if new:
        dst = _tile(call, kw["dst"], "dst")
        idx = nl._emit(call, OP["tensor_scalar_reduce"], DVE, dst, (data,), extra)
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, data.shape, _dtype_arg(call, kw, data.dtype))
    idx = nl._emit(call, OP["tensor_scalar_reduce"], DVE, out, (data,), extra)
    return _done(call, False, kw, out, idx)


def tensor_tensor_scan(*args, **kwargs):
    call = "nisa.tensor_tensor_scan"
    new = _is_new(args, kwargs, 2)
    params = [("data0", _REQ), ("data1", _REQ), ("initial", _REQ), ("op0", _REQ), ("op1", _REQ),
              ("reverse0", False), ("reverse1", False)]
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ)] + params + [("name", None)])
    else:
        kw = _bind(call, args, kwargs, params + [("dtype", None), ("mask", None)])
    _no_mask(call, kw)
    d0 = _tile(call, kw["data0"], "data0")
    d1 = _tile(call, kw["data1"], "data1")
    extra = {"op0": _alu(call, kw["op0"], "op0"), "op1": _alu(call, kw["op1"], "op1"),
             "operand0": _scalar(call, kw["initial"], "initial")}
    rev = (1 if kw["reverse0"] else 0) | (2 if kw["reverse1"] else 0)
    if rev:
        extra["reverse"] = rev
    if new:
        dst = _tile(call, kw["dst"], "dst")
        idx = nl._emit(call, OP["tensor_tensor_scan"], DVE, dst, (d0, d1), extra)
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, d0.shape, _dtype_arg(call, kw, promote(d0.dtype, d1.dtype)))
    idx = nl._emit(call, OP["tensor_tensor_scan"], DVE, out, (d0, d1), extra)
    return _done(call, False, kw, out, idx)


def tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1=None,
                             reduce_cmd=reduce_cmd.reset_reduce, name=None):
    call = "nisa.tensor_scalar_cumulative"
    src = _tile(call, src, "src")
    if reduce_cmd != globals()["reduce_cmd"].reset_reduce:
        unsupported(call, "reduce_cmd other than reset_reduce is not modelled")
    if imm1 is not None:
        unsupported(call, "imm1 (load_reduce's initial value) is not modelled")
    extra = {"op0": _alu(call, op0, "op0"), "op1": _alu(call, op1, "op1"),
             "operand0": _scalar(call, imm0, "imm0")}
    idx = nl._emit(call, OP["tensor_scalar_cumulative"], DVE, _tile(call, dst, "dst"), (src,),
                   extra)
    return NkiInstruction(idx, name)


def tensor_copy(*args, **kwargs):
    call = "nisa.tensor_copy"
    new = _is_new(args, kwargs, 1)
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("src", _REQ), ("engine", None),
                                        ("name", None), ("dtype", None)])
    else:
        kw = _bind(call, args, kwargs, [("src", _REQ), ("mask", None), ("dtype", None),
                                        ("engine", None)])
    src = _tile(call, kw["src"], "src")
    eng = _engine(call, kw["engine"], DVE, (DVE, ACT, POOL))
    if new:
        dst = _tile(call, kw["dst"], "dst")
        if kw["dtype"] is not None and as_dtype(kw["dtype"], call) is not dst.dtype:
            fail(call, f"dtype={kw['dtype']} differs from dst's {dst.dtype}")
        idx = nl._emit(call, OP["tensor_copy"], eng, dst, (src,))
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, len(src.shape))
    out = _old_out(call, src.shape, _dtype_arg(call, kw, src.dtype))
    idx = nl._emit(call, OP["tensor_copy"], eng, out, (src,), None, limits)
    return _done(call, False, kw, out, idx, limits)


def tensor_copy_predicated(*args, **kwargs):
    call = "nisa.tensor_copy_predicated"
    kw = _bind(call, args, kwargs, [("dst", _REQ), ("src", _REQ), ("predicate", _REQ),
                                    ("reverse_pred", False), ("name", None), ("mask", None),
                                    ("dtype", None)])
    if kw["mask"] is not None:
        unsupported(call, "a mask on tensor_copy_predicated is not modelled")
    dst = _tile(call, kw["dst"], "dst")
    pred = _tile(call, kw["predicate"], "predicate")
    src = kw["src"]
    if not isinstance(src, NkiTensor):
        t = new_tile(dst.shape, dst.dtype, "sbuf", call)
        nl._memset_into(call, t, float(src))
        src = t
    extra = {"reverse": 1} if kw["reverse_pred"] else None
    idx = nl._emit(call, OP["copy_predicated"], DVE, dst, (pred, src), extra)
    return NkiInstruction(idx, kw.get("name"))


def memset(*args, **kwargs):
    call = "nisa.memset"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("value", _REQ), ("engine", None),
                                        ("name", None)])
        dst = _tile(call, kw["dst"], "dst")
        v = kw["value"]
        if dst.dtype.is_int and isinstance(v, float):
            fail(call, f"value {v!r} is a float for the integer tile {dst.dtype} (the value's type "
                       "must match dst's, NKI 0.3.0)")
        eng = _engine(call, kw["engine"], DVE, (DVE, POOL))
        idx = nl._emit(call, OP["memset"], eng, dst, (), {"operand0": float(v)})
        return NkiInstruction(idx, kw.get("name"))
    kw = _bind(call, args, kwargs, [("shape", _REQ), ("value", _REQ), ("dtype", _REQ),
                                    ("mask", None), ("engine", None)])
    dims, _ = nl._shape_and_axis(call, kw["shape"])
    out = _old_out(call, dims, as_dtype(kw["dtype"], call))
    eng = _engine(call, kw["engine"], DVE, (DVE, POOL))
    limits = _limits(call, kw, len(dims))
    idx = nl._emit(call, OP["memset"], eng, out, (), {"operand0": float(kw["value"])}, limits)
    return _done(call, False, kw, out, idx, limits)


def _affine_fields(call, expr_terms, const, out_ndim):
    """index_base, partition_step and per-free-dimension steps of an affine expression over the
    result's axes (slot 0 is the partition axis)."""
    steps = [0] * (out_ndim - 1)
    pstep = 0
    for axis, c in expr_terms.items():
        if axis == 0:
            pstep += c
        else:
            steps[axis - 1] += c
    return {"index_base": int(const), "partition_step": int(pstep), "index_steps": steps}


def _expr_axes(call, e, ndim):
    terms, const = {}, e.const
    for v, c in e.terms:
        a = v.slot + ndim - v.ndim
        terms[a] = terms.get(a, 0) + c
        const += c * v.start
    return terms, const


def _shaped_dst(call, dst, nums):
    """dst viewed as [P, *nums] with one access-pattern dimension per pattern entry."""
    view = dst.reshape((dst.shape[0],) + tuple(nums)) if tuple(dst.shape[1:]) != tuple(nums) \
        else dst
    return view


def _pattern_ap(call, view, nums):
    a = ap(view, call, merge=False)
    if len(a[6]) != len(nums):
        fail(call, f"the pattern has {len(nums)} dimensions; at most 4 fit an access pattern")
    return a


def iota(*args, **kwargs):
    call = "nisa.iota"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    tr = trace()
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("pattern", _REQ), ("offset", 0),
                                        ("channel_multiplier", 0), ("name", None)])
        dst = _tile(call, kw["dst"], "dst")
        pattern = [tuple(p) for p in kw["pattern"]]
        nums = [n for _, n in pattern]
        view = _shaped_dst(call, dst, nums)
        d = _pattern_ap(call, view, nums)
        extra = {"index_base": int(kw["offset"]), "partition_step": int(kw["channel_multiplier"]),
                 "index_steps": [int(s) for s, _ in pattern]}
        idx = tr.emit(call, OP["iota"], POOL, d, (), extra)
        return NkiInstruction(idx, kw.get("name"))
    kw = _bind(call, args, kwargs, [("expr", _REQ), ("dtype", _REQ), ("mask", None)])
    _no_mask(call, kw)
    e = Index.of(kw["expr"])
    if e is None:
        fail(call, "expr must be an affine expression of nl.arange indices", TypeError)
    ndim = max(2, e.ndim())
    shape = [1] * ndim
    for v, _ in e.terms:
        shape[v.slot + ndim - v.ndim] = v.count
    out = _old_out(call, shape, as_dtype(kw["dtype"], call))
    terms, const = _expr_axes(call, e, ndim)
    d = _pattern_ap(call, out, shape[1:])
    idx = tr.emit(call, OP["iota"], POOL, d, (), _affine_fields(call, terms, const, ndim))
    return _done(call, False, kw, out, idx)


_CMP = {"<": "is_lt", "<=": "is_le", ">": "is_gt", ">=": "is_ge"}


def affine_select(*args, **kwargs):
    call = "nisa.affine_select"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    tr = trace()
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("pattern", _REQ),
                                        ("channel_multiplier", _REQ), ("on_true_tile", _REQ),
                                        ("on_false_value", _REQ), ("cmp_op", nl.equal),
                                        ("offset", 0), ("name", None)])
        dst = _tile(call, kw["dst"], "dst")
        src = _tile(call, kw["on_true_tile"], "on_true_tile")
        pattern = [tuple(p) for p in kw["pattern"]]
        nums = [n for _, n in pattern]
        dview = _shaped_dst(call, dst, nums)
        sview = _shaped_dst(call, src, nums)
        op = _alu(call, kw["cmp_op"], "cmp_op")
        if not ALU["is_equal"] <= op <= ALU["is_lt"]:
            fail(call, "cmp_op must be a comparison")
        extra = {"index_base": int(kw["offset"]), "partition_step": int(kw["channel_multiplier"]),
                 "index_steps": [int(s) for s, _ in pattern], "op0": op,
                 "fill": float(kw["on_false_value"])}
        idx = tr.emit(call, OP["affine_select"], POOL, _pattern_ap(call, dview, nums),
                      (_pattern_ap(call, sview, nums),), extra)
        return NkiInstruction(idx, kw.get("name"))
    kw = _bind(call, args, kwargs, [("pred", _REQ), ("on_true_tile", _REQ),
                                    ("on_false_value", _REQ), ("mask", None), ("dtype", None)])
    _no_mask(call, kw)
    pred = kw["pred"]
    if not isinstance(pred, _core.Cmp):
        fail(call, "pred must be one affine comparison of nl.arange indices (e.g. iy < ix)",
             TypeError)
    src = _tile(call, kw["on_true_tile"], "on_true_tile")
    ndim = len(src.shape)
    terms, const = _expr_axes(call, pred.expr, ndim)
    out = _old_out(call, src.shape, _dtype_arg(call, kw, src.dtype))
    extra = _affine_fields(call, terms, const, ndim)
    extra["op0"] = ALU[_CMP[pred.op]]
    extra["fill"] = float(kw["on_false_value"])
    idx = tr.emit(call, OP["affine_select"], POOL, ap(out, call, merge=False),
                  (ap(src, call, merge=False),), extra)
    return _done(call, False, kw, out, idx)


def _stats(call, opcode, args, kwargs, width):
    new = _is_new(args, kwargs, 1)
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data", _REQ), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data", _REQ), ("mask", None), ("dtype", None)])
    _no_mask(call, kw)
    data = _tile(call, kw["data"], "data")
    if new:
        idx = nl._emit(call, OP[opcode], DVE, _tile(call, kw["dst"], "dst"), (data,))
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, (data.shape[0], width), _dtype_arg(call, kw, data.dtype))
    idx = nl._emit(call, OP[opcode], DVE, out, (data,))
    return _done(call, False, kw, out, idx)


def bn_stats(*args, **kwargs):
    return _stats("nisa.bn_stats", "bn_stats", args, kwargs, 6)


def bn_aggr(*args, **kwargs):
    return _stats("nisa.bn_aggr", "bn_aggr", args, kwargs, 2)


def reciprocal(*args, **kwargs):
    call = "nisa.reciprocal"
    new = _is_new(args, kwargs, 1)
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data", _REQ), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data", _REQ), ("dtype", None), ("mask", None)])
    data = _tile(call, kw["data"], "data")
    if new:
        idx = nl._emit(call, OP["reciprocal"], DVE, _tile(call, kw["dst"], "dst"), (data,))
        return NkiInstruction(idx, kw.get("name"))
    limits = _limits(call, kw, len(data.shape))
    out = _old_out(call, data.shape, _dtype_arg(call, kw, data.dtype))
    idx = nl._emit(call, OP["reciprocal"], DVE, out, (data,), None, limits)
    return _done(call, False, kw, out, idx, limits)


def max8(*args, **kwargs):
    call = "nisa.max8"
    new = _is_new(args, kwargs, 0) if args else "dst" in kwargs
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("src", _REQ), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("src", _REQ), ("mask", None), ("dtype", None)])
    _no_mask(call, kw)
    src = _tile(call, kw["src"], "src")
    if new:
        idx = nl._emit(call, OP["max8"], DVE, _tile(call, kw["dst"], "dst"), (src,))
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, (src.shape[0], 8), _dtype_arg(call, kw, src.dtype))
    idx = nl._emit(call, OP["max8"], DVE, out, (src,))
    return _done(call, False, kw, out, idx)


def nc_find_index8(*args, **kwargs):
    call = "nisa.nc_find_index8"
    new = "dst" in kwargs or len(args) >= 3
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data", _REQ), ("vals", _REQ),
                                        ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data", _REQ), ("vals", _REQ), ("mask", None),
                                        ("dtype", None)])
    _no_mask(call, kw)
    data = _tile(call, kw["data"], "data")
    vals = _tile(call, kw["vals"], "vals")
    if new:
        idx = nl._emit(call, OP["find_index8"], DVE, _tile(call, kw["dst"], "dst"), (data, vals))
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, (data.shape[0], 8), _dtype_arg(call, kw, uint32))
    idx = nl._emit(call, OP["find_index8"], DVE, out, (data, vals))
    return _done(call, False, kw, out, idx)


def nc_match_replace8(*args, **kwargs):
    call = "nisa.nc_match_replace8"
    new = "dst" in kwargs or len(args) >= 4
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("data", _REQ), ("vals", _REQ),
                                        ("imm", _REQ), ("dst_idx", None), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("data", _REQ), ("vals", _REQ), ("imm", _REQ),
                                        ("dst_idx", None), ("mask", None), ("dtype", None)])
    _no_mask(call, kw)
    if kw["dst_idx"] is not None:
        unsupported(call, "dst_idx (the replaced positions) is not modelled")
    data = _tile(call, kw["data"], "data")
    vals = _tile(call, kw["vals"], "vals")
    extra = {"operand0": float(kw["imm"])}
    if new:
        idx = nl._emit(call, OP["match_replace8"], DVE, _tile(call, kw["dst"], "dst"),
                       (data, vals), extra)
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, data.shape, _dtype_arg(call, kw, data.dtype))
    idx = nl._emit(call, OP["match_replace8"], DVE, out, (data, vals), extra)
    return _done(call, False, kw, out, idx)


def range_select(*args, **kwargs):
    call = "nisa.range_select"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    params = [("on_true_tile", _REQ), ("comp_op0", _REQ), ("comp_op1", _REQ), ("bound0", _REQ),
              ("bound1", _REQ), ("reduce_cmd", reduce_cmd.reset_reduce), ("reduce_res", None),
              ("reduce_op", nl.max), ("range_start", 0), ("on_false_value", fp32.min)]
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ)] + params + [("name", None)])
    else:
        kw = _bind(call, args, kwargs, params + [("mask", None), ("dtype", None)])
    _no_mask(call, kw)
    src = _tile(call, kw["on_true_tile"], "on_true_tile")
    if trace().arch["name"] == "trn1":
        fail(call, "range_select needs NeuronCore-v3 or later")
    if float(kw["on_false_value"]) != fp32.min:
        fail(call, "on_false_value must be FP32_MIN (-3.4028235e38)")
    if kw["reduce_cmd"] not in (reduce_cmd.reset_reduce, reduce_cmd.idle):
        unsupported(call, "accumulation across instructions is not modelled")
    if _alu(call, kw["reduce_op"], "reduce_op") != ALU["max"]:
        fail(call, "reduce_op must be nl.maximum")
    ops = []
    for k in ("comp_op0", "comp_op1"):
        op = _alu(call, kw[k], k)
        if op not in (ALU["is_equal"], ALU["is_lt"], ALU["is_le"], ALU["is_gt"], ALU["is_ge"]):
            fail(call, f"{k} must be equal, less, less_equal, greater or greater_equal")
        ops.append(op)
    for k in ("bound0", "bound1"):
        b = _tile(call, kw[k], k)
        if free_elements(b) != 1 or b.dtype is not float32:
            fail(call, f"{k} must be a float32 [P, 1] tile")
    extra = {"op0": ops[0], "op1": ops[1], "operand0": ap(kw["bound0"], call),
             "operand1": ap(kw["bound1"], call), "index_base": int(kw["range_start"]),
             "fill": float(fp32.min)}
    if kw["reduce_res"] is not None:
        extra["accumulate"] = ap(_tile(call, kw["reduce_res"], "reduce_res"), call)
    if new:
        idx = nl._emit(call, OP["range_select"], DVE, _tile(call, kw["dst"], "dst"), (src,),
                       extra)
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, src.shape, _dtype_arg(call, kw, src.dtype))
    idx = nl._emit(call, OP["range_select"], DVE, out, (src,), extra)
    return _done(call, False, kw, out, idx)


def tensor_partition_reduce(*args, **kwargs):
    call = "nisa.tensor_partition_reduce"
    new = "dst" in kwargs or (args and isinstance(args[0], NkiTensor))
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("op", _REQ), ("data", _REQ),
                                        ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("op", _REQ), ("data", _REQ), ("mask", None),
                                        ("dtype", None)])
    _no_mask(call, kw)
    data = _tile(call, kw["data"], "data")
    op = _alu(call, kw["op"])
    if op not in (ALU["add"], ALU["max"], ALU["min"], ALU["mean"]):
        unsupported(call, f"op={kw['op']!r} is not modelled (add, maximum, minimum, average)")
    if new:
        idx = nl._emit(call, OP["partition_reduce"], POOL, _tile(call, kw["dst"], "dst"), (data,),
                       {"op0": op})
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, (1,) + tuple(data.shape[1:]), _dtype_arg(call, kw, data.dtype))
    idx = nl._emit(call, OP["partition_reduce"], POOL, out, (data,), {"op0": op})
    return _done(call, False, kw, out, idx)


def local_gather(*args, **kwargs):
    call = "nisa.local_gather"
    new = _is_new(args, kwargs, 2)
    params = [("src_buffer", _REQ), ("index", _REQ), ("num_elem_per_idx", 1),
              ("num_valid_indices", None)]
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ)] + params + [("name", None)])
    else:
        kw = _bind(call, args, kwargs, params + [("mask", None)])
    _no_mask(call, kw)
    src = _tile(call, kw["src_buffer"], "src_buffer")
    index = _tile(call, kw["index"], "index")
    per = int(kw["num_elem_per_idx"])
    valid = kw["num_valid_indices"]
    valid = free_elements(index) * 16 if valid is None else int(valid)
    extra = {"gather_elements": per, "gather_indices": valid}
    if new:
        idx = nl._emit(call, OP["local_gather"], POOL, _tile(call, kw["dst"], "dst"),
                       (src, index), extra)
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, (src.shape[0], valid * per // 16), src.dtype)
    idx = nl._emit(call, OP["local_gather"], POOL, out, (src, index), extra)
    return _done(call, False, kw, out, idx)


def nc_n_gather(dst, data, indices, name=None):
    call = "nisa.nc_n_gather"
    idx = nl._emit(call, OP["gather"], POOL, _tile(call, dst, "dst"),
                   (_tile(call, data, "data"), _tile(call, indices, "indices")))
    return NkiInstruction(idx, name)


def nc_stream_shuffle(*args, **kwargs):
    call = "nisa.nc_stream_shuffle"
    if "dst" in kwargs or (len(args) >= 2 and isinstance(args[0], NkiTensor) and
                           isinstance(args[1], NkiTensor)):
        names = [("dst", _REQ), ("src", _REQ), ("shuffle_mask", _REQ), ("name", None)]
        # The earlier API's order was (src, dst, shuffle_mask) (changed in NKI 0.2.0): keyword
        # calls name them; positional calls are read in the current order.
        kw = _bind(call, args, kwargs, names + [("mask", None), ("dtype", None)])
    else:
        fail(call, "takes dst, src and shuffle_mask", TypeError)
    _no_mask(call, kw)
    src = _tile(call, kw["src"], "src")
    dst = _tile(call, kw["dst"], "dst")
    mask = list(kw["shuffle_mask"])
    if len(mask) != 32 or any(not 0 <= int(m) < 32 for m in mask):
        unsupported(call, "a shuffle mask of 32 source lanes 0-31 is modelled (255, 'leave "
                          "unmodified', is not)")
    idx = nl._emit(call, OP["shuffle"], DVE, dst, (src,), {"shuffle_mask": [int(m) for m in mask]})
    return NkiInstruction(idx, kw.get("name"))


# ---------------------------------------------------------------------------------------------
# DMA


def dma_copy(*args, **kwargs):
    call = "nisa.dma_copy"
    kw = _bind(call, args, kwargs, [("dst", _REQ), ("src", _REQ), ("priority", None),
                                    ("oob_mode", oob_mode.error), ("dge_mode", dge_mode.unknown),
                                    ("engine", None), ("name", None), ("mask", None),
                                    ("dst_rmw_op", None)])
    if kw["dst_rmw_op"] is not None:
        unsupported(call, "dst_rmw_op (read-modify-write DMA) is not modelled")
    if kw["priority"] is not None:
        unsupported(call, "DMA priority (NeuronCore-v4 QoS) is not modelled")
    dst, src = kw["dst"], kw["src"]
    for n, v in (("dst", dst), ("src", src)):
        if not isinstance(v, NkiTensor):
            fail(call, f"'{n}' must be a tensor, got {type(v).__name__}", TypeError)
    if src._st.memory == "psum":
        fail(call, "a DMA cannot read PSUM (NKI 0.3.0): copy it to SBUF with nisa.tensor_copy")
    mode = kw["dge_mode"]
    dge = mode == dge_mode.hwdge
    if dge and trace().arch["name"] == "trn1":
        fail(call, "dge_mode=hwdge needs NeuronCore-v3 or later")
    eng = _engine(call, kw["engine"], SP, (SP, ACT) if dge else (SP, ACT, POOL, DVE, PE))
    limits = _limits(call, kw, len(dst.shape))
    if dst._st.memory == "hbm" and dst._st.kind == "input" and dst._st.name not in trace().mutable:
        trace().mutable.add(dst._st.name)  # the current API updates inputs in place
    idx = nl._dma(call, dst, src, limits, engine=eng, dge=dge)
    return NkiInstruction(idx, kw.get("name"))


def dma_transpose(*args, **kwargs):
    call = "nisa.dma_transpose"
    new = _is_new(args, kwargs, 1)
    if new:
        kw = _bind(call, args, kwargs, [("dst", _REQ), ("src", _REQ), ("axes", None),
                                        ("priority", None), ("dge_mode", dge_mode.unknown),
                                        ("oob_mode", oob_mode.error), ("name", None)])
    else:
        kw = _bind(call, args, kwargs, [("src", _REQ), ("axes", None), ("mask", None),
                                        ("dtype", None), ("dge_mode", dge_mode.unknown)])
    _no_mask(call, kw)
    src = kw["src"]
    if not isinstance(src, NkiTensor) or len(src.shape) != 2:
        unsupported(call, "only 2-D transposes (axes=(1, 0)) are modelled")
    if kw["axes"] not in (None, (1, 0), [1, 0]):
        unsupported(call, f"axes={kw['axes']} is not modelled; 2-D (1, 0) is")
    if new:
        dst = kw["dst"]
        if dst._st.memory != "sbuf":
            fail(call, "dst must be in SBUF")
        if tuple(dst.shape) != (src.shape[1], src.shape[0]):
            fail(call, f"dst shape {list(dst.shape)} must be the permuted src shape "
                       f"{[src.shape[1], src.shape[0]]}", AssertionError)
        idx = nl._dma(call, dst, src, transpose=True)
        return NkiInstruction(idx, kw.get("name"))
    out = _old_out(call, (src.shape[1], src.shape[0]), src.dtype)
    idx = nl._dma(call, out, src, transpose=True)
    return _done(call, False, kw, out, idx)


def _unsupported_isa(name, why="is not modelled by trnsim"):
    def f(*a, **k):
        unsupported(f"nisa.{name}", why)

    f.__name__ = name
    return f


for _n, _why in [
    ("nc_matmul_mx", "(MX matmul, NeuronCore-v4) is not modelled"),
    ("quantize_mx", "(NeuronCore-v4) is not modelled"),
    ("activate2", "(NeuronCore-v4) is not modelled"),
    ("exponential", "(NeuronCore-v4) is not modelled"),
    ("dropout", "draws random numbers; trnsim does not model it"),
    ("rng", "draws random numbers; trnsim does not model it"),
    ("rand2", "draws random numbers; trnsim does not model it"),
    ("set_rng_seed", "is not modelled (no random numbers)"),
    ("rand_set_state", "is not modelled (no random numbers)"),
    ("rand_get_state", "is not modelled (no random numbers)"),
    ("select_reduce", "is not modelled; use nl.where or nisa.range_select"),
    ("tensor_copy_dynamic_src", "(runtime offsets) is not modelled"),
    ("tensor_copy_dynamic_dst", "(runtime offsets) is not modelled"),
    ("sequence_bounds", "is not modelled"),
    ("nonzero_with_count", "is not modelled"),
    ("topk", "is not modelled"),
    ("dma_compute", "is not modelled"),
    ("register_alloc", "(sequencer registers) is not modelled"),
    ("register_move", "(sequencer registers) is not modelled"),
    ("register_load", "(sequencer registers) is not modelled"),
    ("register_store", "(sequencer registers) is not modelled"),
    ("core_barrier", "(LNC=2) is not modelled"),
    ("sendrecv", "(LNC=2) is not modelled"),
    ("builtin_custom_op", "is not modelled"),
]:
    globals()[_n] = _unsupported_isa(_n, _why)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    _core.unsupported_attribute(f"nisa.{name}", "is not part of trnsim's nki.isa (docs/nki.md lists what is)")
