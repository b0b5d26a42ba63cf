"""From recorded aten op calls to trnsim's graph form (docs/workloads.md).

This module does not import torch: the capture (_capture.py) hands it each op call with its
tensors replaced by TensorRef records (shape, dtype, identity), so that the lowering table below
(LOWERINGS) can also be read without torch, to generate docs/pytorch.md's op coverage table.

A tensor is held as a geometry over a *root*: a graph tensor in row-major order (an input, or
the output of a graph op), and the shape, strides and offset, in elements, through which the
tensor reads it. View ops (view, transpose, slice, expand, ...) only change the geometry, as they
only change metadata in PyTorch. When an op that computes needs a tensor, the geometry is
materialized: nothing for the root itself, a reshape (free, no kernel) for a contiguous view, and
for a strided one the data-movement ops a device backend would run (a slice, a permute), each a
DMA kernel. An op with no lowering runs on the host (a CPU fallback): its device inputs are
copied to the host, its results back, and their values are the ones PyTorch computed while the
model ran.
"""

import math

# torch dtype name -> graph dtype; anything else stays on the host.
DEVICE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
# bytes per element of the graph dtypes
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
MAX_RANK = 4


class NotLowered(Exception):
    """An op call this lowering cannot express: it runs on the host instead (reason in args)."""


class CaptureError(RuntimeError):
    """A program the capture cannot represent (named op, module and why)."""


class TensorRef:
    """A tensor of a recorded call: its identity (a key the capture assigns), shape, dtype name
    ("bfloat16", "int64", ...) and, for a tensor first seen as an input, a value (numpy) and a
    name suggestion."""

    __slots__ = ("key", "shape", "dtype", "value", "hint", "meta")

    def __init__(self, key, shape, dtype, value=None, hint=None, meta=False):
        self.key = key
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.value = value
        self.hint = hint
        self.meta = meta

    @property
    def graph_dtype(self):
        return DEVICE_DTYPES.get(self.dtype)


class Call:
    """One recorded op call: schema name ("aten::mul"), overload ("Tensor"), positional args and
    kwargs (TensorRef where a tensor was, lists and numbers as given), outputs (TensorRef or
    None per output), where it ran (module scope) and whether it is in a compiled region."""

    __slots__ = ("index", "name", "overload", "args", "kwargs", "outs", "scope", "compiled",
                 "inplace", "values")

    def __init__(self, index, name, overload, args, kwargs, outs, scope="", compiled=False,
                 inplace=False, values=None):
        self.index = index
        self.name = name
        self.overload = overload
        self.args = args
        self.kwargs = kwargs
        self.outs = outs
        self.scope = scope
        self.compiled = compiled
        self.inplace = inplace
        self.values = values  # the outputs' values (numpy), for an op that runs on the host

    def arg(self, i, key, default=None):
        if i < len(self.args):
            return self.args[i]
        return self.kwargs.get(key, default)

    @property
    def full_name(self):
        return f"{self.name}.{self.overload}"


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape):
    st = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        st[d] = st[d + 1] * shape[d + 1]
    return st


class Root:
    """A graph tensor: row-major data on the device (or, with host_value, a value that stays on
    the host: a non-float tensor, or a result nothing on the device computes)."""

    __slots__ = ("name", "shape", "dtype", "host_value", "stale")

    def __init__(self, name, shape, dtype, host_value=None):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.host_value = host_value
        self.stale = False  # overwritten in place: views of it no longer see its data


class Geo:
    """A tensor as the graph holds it: root, shape, strides and offset (elements)."""

    __slots__ = ("root", "shape", "stride", "offset")

    def __init__(self, root, shape, stride=None, offset=0):
        self.root = root
        self.shape = tuple(shape)
        self.stride = tuple(stride) if stride is not None else tuple(contiguous_strides(shape))
        self.offset = offset

    def is_contiguous(self):
        expect = 1
        for size, st in zip(reversed(self.shape), reversed(self.stride)):
            if size != 1 and st != expect:
                return False
            expect *= size
        return True

    def is_root(self):
        return (self.offset == 0 and self.is_contiguous() and
                numel(self.shape) == numel(self.root.shape))

    def key(self):
        return (id(self.root), self.shape, self.stride, self.offset)


def compute_stride(oldshape, oldstride, newshape):
    """ATen's computeStride: strides that view (oldshape, oldstride) as newshape, or None."""
    if not oldshape:
        oldshape, oldstride = (1,), (1,)
    if numel(oldshape) == 0:
        return None
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return newstride


def norm_dim(d, rank):
    r = max(rank, 1)
    if not -r <= d < r:
        raise NotLowered(f"dimension {d} of a rank-{rank} tensor")
    return d + r if d < 0 else d


def resolve_size(size, n):
    size = list(size)
    if -1 in size:
        i = size.index(-1)
        rest = numel([s for j, s in enumerate(size) if j != i])
        size[i] = n // rest if rest else 0
    return tuple(size)


# ---- the lowering table: aten op -> graph op, with what the docs say about it ----

class Lowering:
    def __init__(self, names, graph_op, kernel, note, handler):
        self.names = names
        self.graph_op = graph_op
        self.kernel = kernel
        self.note = note
        self.handler = handler


LOWERINGS = []
HANDLERS = {}


def lowers(names, graph_op, kernel, note=""):
    def wrap(fn):
        entry = Lowering(tuple(names), graph_op, kernel, note, fn)
        LOWERINGS.append(entry)
        for n in names:
            HANDLERS[n] = entry
        return fn
    return wrap


UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal",
         "neg": "neg", "abs": "abs", "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu",
         "silu": "silu", "gelu": "gelu"}
BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum",
          "minimum": "minimum"}
VIEWS = ("aten::view", "aten::_unsafe_view", "aten::_reshape_alias", "aten::reshape",
         "aten::t", "aten::transpose", "aten::permute", "aten::slice", "aten::select",
         "aten::expand", "aten::unsqueeze", "aten::squeeze", "aten::alias", "aten::detach",
         "aten::split", "aten::split_with_sizes", "aten::unbind", "aten::lift_fresh",
         "aten::view_as", "aten::expand_as", "aten::swapaxes", "aten::transpose_")
# Calls that are no op at all for the device: the profile shows no row for them.
SILENT = ("aten::detach", "aten::alias", "aten::lift_fresh")


@lowers([f"aten::{n}" for n in UNARY] + [f"aten::{n}_" for n in UNARY],
        "exp, log, sqrt, rsqrt, reciprocal, neg, abs, tanh, sigmoid, relu, silu, gelu",
        "row kernel (ScalarE activation)", "gelu with approximate 'none' or 'tanh'; the in-place "
        "forms (`relu_`, ...) write a new tensor that the variable then names")
def _unary(b, call):
    op = UNARY[call.name.split("::")[1].rstrip("_")]
    attrs = {}
    if op == "gelu":
        attrs["approximate"] = call.arg(1, "approximate", "none")
        if attrs["approximate"] not in ("none", "tanh"):
            raise NotLowered("gelu approximate " + str(attrs["approximate"]))
        if attrs["approximate"] == "none":
            del attrs["approximate"]
    b.compute(call, op, [b.operand(call.args[0])], **attrs)


def _scalar(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@lowers(["aten::add", "aten::sub", "aten::mul", "aten::div", "aten::maximum", "aten::minimum",
         "aten::rsub", "aten::add_", "aten::sub_", "aten::mul_", "aten::div_"], "add, sub, mul, div, maximum, minimum", "row kernel (VectorE or ScalarE)",
        "tensor or number operands, broadcast as the row kernels can (the whole tensor, one value "
        "per row, one row, one value, or trailing rows repeated); alpha 1; div without "
        "rounding_mode; rsub as sub with the operands swapped; the in-place forms (`add_`, ...) "
        "of a whole tensor")
def _binary(b, call):
    base = call.name.split("::")[1].rstrip("_")
    alpha = call.kwargs.get("alpha", call.args[2] if len(call.args) > 2 and base in ("add", "sub", "rsub") else 1)
    if alpha != 1:
        raise NotLowered("alpha other than 1")
    if base == "div" and call.kwargs.get("rounding_mode") is not None:
        raise NotLowered("div with rounding_mode")
    x, y = call.args[0], call.args[1]
    if base == "rsub":
        base, x, y = "sub", y, x
    args = []
    for v in (x, y):
        if isinstance(v, TensorRef):
            args.append(b.operand(v, broadcast=True))
        elif _scalar(v):
            args.append(float(v))
        else:
            raise NotLowered(f"operand {v!r}")
    if not any(isinstance(a, str) for a in args):
        raise NotLowered("no tensor operand")
    b.compute(call, BINARY[base], args)


@lowers(["aten::pow", "aten::pow_"], "pow", "row kernel (ScalarE square, sqrt, rsqrt, reciprocal; else VectorE)",
        "the exponent a number")
def _pow(b, call):
    e = call.args[1]
    if not isinstance(call.args[0], TensorRef) or not _scalar(e):
        raise NotLowered("a tensor exponent")
    b.compute(call, "pow", [b.operand(call.args[0]), float(e)])


def _last_dim_only(call, x, dims):
    rank = len(x.shape)
    if dims is None:
        if rank != 1:
            raise NotLowered("a reduction over every dimension")
        return
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) != 1 or norm_dim(dims[0], rank) != rank - 1:
        raise NotLowered(f"a reduction over dimensions {list(dims)} (the last only)")


@lowers(["aten::mean", "aten::sum", "aten::amax"], "mean, sum, max", "row kernel (VectorE "
        "reduce, or folded into the ScalarE activation that feeds it when compiled)",
        "along the last dimension, no dtype argument")
def _reduce(b, call):
    x = call.args[0]
    op = {"aten::mean": "mean", "aten::sum": "sum", "aten::amax": "max"}[call.name]
    if call.kwargs.get("dtype") is not None:
        raise NotLowered("a reduction with a dtype")
    dims = call.arg(1, "dim")
    keep = bool(call.arg(2, "keepdim", False))
    if call.overload == "default":
        dims, keep = None, False
    _last_dim_only(call, x, dims)
    b.compute(call, op, [b.operand(x)], dim=-1, keepdim=keep)


@lowers(["aten::_softmax"], "softmax", "softmax kernel", "along the last dimension, "
        "half_to_float false")
def _softmax(b, call):
    x = call.args[0]
    if norm_dim(call.args[1], len(x.shape)) != len(x.shape) - 1 or call.args[2]:
        raise NotLowered("softmax other than along the last dimension")
    b.compute(call, "softmax", [b.operand(x)], dim=-1)


@lowers(["aten::native_layer_norm"], "layer_norm", "LayerNorm kernel",
        "normalized over the last dimension, with weight and bias; its mean and rstd outputs "
        "stay on the host")
def _layer_norm(b, call):
    x, shape, w, bias, eps = call.args[:5]
    if list(shape) != [x.shape[-1]] or w is None or bias is None:
        raise NotLowered("layer_norm other than over the last dimension with weight and bias")
    b.compute(call, "layer_norm", [b.operand(x), b.operand(w), b.operand(bias)],
              eps=float(eps), outs=1)


@lowers(["trnsim::rms_norm"], "rms_norm", "RMSNorm kernel (the library's fused kernel)",
        "trnsim.torch.rms_norm / trnsim.torch.RMSNorm: over the last dimension")
def _rms_norm(b, call):
    x, w, eps = call.args[0], call.args[1], call.arg(2, "eps", 1e-6)
    b.compute(call, "rms_norm", [b.operand(x), b.operand(w)], eps=float(eps))


@lowers(["aten::mm", "aten::bmm", "aten::addmm"], "matmul (+ add for addmm)",
        "matmul kernel (TensorE; A transposed on the way in, B too when it is a transposed "
        "view)", "2-D, or batched with the same batch; addmm with beta = alpha = 1")
def _matmul(b, call):
    if call.name == "aten::addmm":
        bias, x, y = call.args[:3]
        if call.kwargs.get("beta", 1) != 1 or call.kwargs.get("alpha", 1) != 1:
            raise NotLowered("addmm with beta or alpha other than 1")
    else:
        x, y = call.args[:2]
    if x.graph_dtype != y.graph_dtype:
        raise NotLowered("matmul operands of different dtypes")
    a_name = b.operand(x)
    b_name, transposed = b.matmul_operand(y)
    attrs = {"transpose_b": True} if transposed else {}
    if call.name != "aten::addmm":
        b.compute(call, "matmul", [a_name, b_name], **attrs)
        return
    product = b.emit(call, "matmul", [a_name, b_name], call.outs[0].shape, call.outs[0].dtype,
                     **attrs)
    b.compute(call, "add", [product, b.operand(bias, broadcast=True)])


@lowers(["aten::_to_copy"], "to (clone for the same dtype)", "row kernel (ScalarE copy "
        "converting the dtype)", "to a floating-point dtype on the same device")
def _to_copy(b, call):
    x, out = call.args[0], call.outs[0]
    if out.graph_dtype is None or x.graph_dtype is None:
        raise NotLowered(f"a copy to {out.dtype}")
    if out.graph_dtype == x.graph_dtype:
        b.bind_copy(call, x)
        return
    b.compute(call, "to", [b.operand(x)], dtype=out.graph_dtype)


@lowers(["aten::clone"], "clone, or the permute/slice a strided view needs",
        "DMA kernel (HBM to HBM)", "")
def _clone(b, call):
    b.bind_copy(call, call.args[0])


@lowers(["aten::cat"], "cat", "DMA kernel (HBM to HBM, one transfer per input)",
        "tensors of one floating-point dtype")
def _cat(b, call):
    tensors = [t for t in call.args[0] if numel(t.shape) > 0]
    dim = call.arg(1, "dim", 0)
    if len(tensors) < 1 or len({t.graph_dtype for t in tensors}) != 1:
        raise NotLowered("cat of tensors of several dtypes")
    if len(tensors) == 1:
        b.bind_copy(call, tensors[0])
        return
    b.compute(call, "cat", [b.operand(t) for t in tensors],
              dim=norm_dim(dim, len(tensors[0].shape)))


@lowers(list(VIEWS), "none: a view (reshape when materialized; permute or slice for a strided "
        "view a computing op reads)", "none (metadata), or a DMA kernel to materialize",
        "dispatched on the host like any op (its CPU time is in the profile), no kernel")
def _view(b, call):
    b.view(call)


FACTORIES = ("aten::empty", "aten::empty_like", "aten::empty_strided", "aten::zeros",
             "aten::zeros_like", "aten::ones", "aten::ones_like", "aten::full", "aten::full_like",
             "aten::arange", "aten::linspace", "aten::scalar_tensor")


@lowers(list(FACTORIES), "none: a graph input", "none: the host makes the tensor and it reaches "
        "the device with the program's inputs, as a parameter does (an assumption: no fill "
        "kernel is modelled)", "non-float results stay on the host")
def _factory(b, call):
    b.constant(call)


class GraphBuilder:
    """Turns the recorded calls into a graph-form workload (a dict for workload.json) and the
    arrays it needs (given tensors: inputs and results of ops run on the host)."""

    def __init__(self, calls, force_host=(), data_dir="data", compiled_name=None):
        self.calls = calls
        self.force_host = set(force_host)
        self.data_dir = data_dir
        self.ops = []            # graph ops (dicts)
        self.op_calls = []       # the call index each graph op came from
        self.inputs = {}         # graph name -> spec dict
        self.arrays = {}         # relative npy path -> numpy array
        self.geo = {}            # TensorRef.key -> Geo
        self.names = set()
        self.counters = {}
        self.materialized = {}   # Geo.key() -> graph name
        self.host_calls = []     # calls that ran on the host: (call, reason)
        self.modes = set()
        self.call = None
        self.pending_roots = {}  # graph name -> Root, for the ops' outputs

    # ---- names ----

    def fresh(self, base):
        base = "".join(c if c.isalnum() or c in "_.-" else "_" for c in base) or "t"
        base = base[-56:].lstrip(".")
        n = self.counters.get(base, 0)
        while True:
            name = base if n == 0 and base not in self.names else f"{base}_{n}"
            n += 1
            if name not in self.names:
                break
        self.counters[base] = n
        self.names.add(name)
        return name

    def out_name(self, call, op):
        scope = call.scope + "." if call.scope else ""
        return self.fresh(scope + op)

    # ---- tensors ----

    def geo_of(self, ref):
        g = self.geo.get(ref.key)
        if g is not None:
            return g
        # First seen as an input: a graph input (floats) or a value that stays on the host.
        name = self.fresh(ref.hint or "input")
        shape = ref.shape or (1,)
        if ref.graph_dtype is None or len(shape) > MAX_RANK:
            root = Root(name, shape, None, host_value=ref.value)
        else:
            root = Root(name, shape, ref.graph_dtype)
            spec = {"shape": list(shape), "dtype": ref.graph_dtype}
            if ref.value is not None:
                path = f"{self.data_dir}/{name}.npy"
                self.arrays[path] = ref.value
                spec["npy"] = path
            else:
                spec["init"] = "zeros"
            self.inputs[name] = spec
        g = Geo(root, shape)
        self.geo[ref.key] = g
        return g

    def bind(self, ref, geo):
        self.geo[ref.key] = geo

    def constant(self, call):
        """A tensor a factory (torch.ones, torch.arange, ...) made inside the program: a graph
        input holding the values PyTorch made (zeros on meta tensors)."""
        ref = call.outs[0]
        value = call.values[0] if call.values else None
        shape = ref.shape or (1,)
        base = call.name.split("::")[-1]
        if ref.graph_dtype is None or len(shape) > MAX_RANK:
            self.bind(ref, Geo(Root(self.fresh(base), shape, None, host_value=value), shape))
            return
        name = self.out_name(call, base)
        spec = {"shape": list(shape), "dtype": ref.graph_dtype}
        if value is not None:
            path = f"{self.data_dir}/{name}.npy"
            self.arrays[path] = value
            spec["npy"] = path
        else:
            spec["init"] = "zeros"
        self.inputs[name] = spec
        self.bind(ref, Geo(Root(name, shape, ref.graph_dtype), shape))

    def emit(self, call, op, args, out_shape, out_dtype, **attrs):
        """A graph op computing a new root; returns its graph name."""
        out = self.out_name(call, op)
        entry = {"op": op, "args": list(args), "out": out}
        entry.update(attrs)
        self._append(call, entry)
        gd = DEVICE_DTYPES.get(out_dtype, out_dtype)
        self.pending_roots[out] = Root(out, out_shape or (1,), gd)
        return out

    def _append(self, call, entry):
        entry["name"] = call.name
        entry["call"] = call.index
        if call.compiled:
            entry["mode"] = "compile"
        self.modes.add("compile" if call.compiled else "eager")
        self.ops.append(entry)
        self.op_calls.append(call.index)

    def compute(self, call, op, args, outs=None, **attrs):
        """The call computes its first output with graph op `op`."""
        ref = call.outs[0]
        if ref.graph_dtype is None or len(ref.shape) > MAX_RANK:
            raise NotLowered(f"a {ref.dtype} result of rank {len(ref.shape)}")
        if op not in ("to",) and "dtype" not in attrs:
            first = next((a for a in args if isinstance(a, str)), None)
            if first is not None and self.dtype_of(first) != ref.graph_dtype:
                attrs["dtype"] = ref.graph_dtype
        name = self.emit(call, op, args, ref.shape, ref.dtype, **attrs)
        self.bind(ref, Geo(self.pending_roots[name], ref.shape or (1,)))
        # Further outputs (native_layer_norm's mean and rstd) stay on the host.
        for extra in call.outs[1:]:
            if extra is not None:
                self.bind(extra, Geo(Root(self.fresh("host_value"), extra.shape or (1,), None,
                                          host_value=None), extra.shape or (1,)))

    def dtype_of(self, name):
        if name in self.inputs:
            return self.inputs[name]["dtype"]
        return self.pending_roots[name].dtype

    def bind_copy(self, call, x):
        """The call's output is a copy of x (clone, contiguous, cat of one): the materialized
        data when x is a strided view (the permute or slice made it anew), else a clone."""
        g = self.geo_of(x)
        if g.root.dtype is None:
            raise NotLowered("a copy of a value on the host")
        ref = call.outs[0]
        if g.is_root():
            name = self.emit(call, "clone", [g.root.name], g.root.shape, g.root.dtype)
            self.bind(ref, Geo(self.pending_roots[name], ref.shape or (1,)))
            return
        name = self.materialize(g)
        root = self.pending_roots.get(name) or Root(name, g.shape, g.root.dtype)
        self.bind(ref, Geo(root, ref.shape or (1,)))

    def operand(self, ref, broadcast=False):
        """The graph name holding ref's data in row-major order (materializing a view). With
        broadcast, an expanded dimension stays of size 1 (the op broadcasts it)."""
        g = self.geo_of(ref)
        if g.root.dtype is None:
            raise NotLowered("an input that is on the host")
        return self.materialize(g, broadcast)

    def matmul_operand(self, ref):
        """(name, transposed): b of a matmul, given as [..., N, K] when it is a transposed view
        of row-major data (a Linear's weight.t(), k.transpose(-2, -1))."""
        g = self.geo_of(ref)
        if g.root.dtype is None:
            raise NotLowered("an input that is on the host")
        if len(g.shape) >= 2 and not g.is_contiguous():
            perm = list(range(len(g.shape)))
            perm[-2], perm[-1] = perm[-1], perm[-2]
            swapped = Geo(g.root, [g.shape[p] for p in perm], [g.stride[p] for p in perm],
                          g.offset)
            if swapped.is_contiguous() and self._expand_free(swapped):
                return self.materialize(swapped), True
        return self.materialize(g), False

    @staticmethod
    def _expand_free(g):
        return all(st != 0 or size == 1 for size, st in zip(g.shape, g.stride))

    def materialize(self, g, broadcast=False):
        if g.root.stale:
            raise CaptureError(f"a view of {g.root.name} is read after {g.root.name} was "
                               "overwritten in place; the capture cannot follow that aliasing")
        if not self._expand_free(g):
            if not broadcast:
                raise NotLowered("an expanded (broadcast) tensor read in full")
            g = Geo(g.root, [1 if st == 0 else s for s, st in zip(g.shape, g.stride)],
                    [0 if st == 0 else st for st in g.stride], g.offset)
        shape = g.shape or (1,)
        if g.is_root():
            if tuple(shape) == tuple(g.root.shape):
                return g.root.name
        key = g.key()
        if key in self.materialized:
            return self.materialized[key]
        if g.is_root():
            name = self._reshape(g.root.name, g.root.dtype, shape)
        else:
            name = self._gather(g)
        self.materialized[key] = name
        return name

    def _reshape(self, name, dtype, shape):
        if len(shape) > MAX_RANK:
            raise NotLowered(f"a view of rank {len(shape)}")
        out = self.emit(self.call, "reshape", [name], shape, dtype, shape=list(shape))
        return out

    def _gather(self, g):
        """A strided view as reshape -> slices -> permute -> reshape of its root."""
        dims = [(s, st) for s, st in zip(g.shape, g.stride) if s != 1]
        if not dims:
            dims = [(1, 1)]
        order = sorted(range(len(dims)), key=lambda d: -dims[d][1])
        sd = [dims[d] for d in order]
        # A contiguous parent of shape q, with strides p, of which the view takes a slice in each
        # dimension (an innermost stride > 1 adds a parent dimension the view takes 1 of).
        q, starts, sizes = [], [], []
        inner = sd[-1][1]
        if inner < 1:
            raise NotLowered("an overlapping view")
        parent_dims = list(sd)
        if inner > 1:
            parent_dims.append((1, 1))
        p = [1] * len(parent_dims)
        for j in range(len(parent_dims) - 2, -1, -1):
            p[j] = parent_dims[j][1] if j < len(sd) else 1
        if inner > 1:
            p[len(sd) - 1] = inner
        q = [0] * len(parent_dims)
        total = numel(g.root.shape)
        for j in range(len(parent_dims)):
            if j == 0:
                if total % p[0]:
                    raise NotLowered("a view that is no slice of its data")
                q[0] = total // p[0]
            else:
                if p[j - 1] % p[j]:
                    raise NotLowered("a view that is no slice of its data")
                q[j] = p[j - 1] // p[j]
        rest = g.offset
        for j in range(len(parent_dims)):
            starts.append(rest // p[j] if j == 0 else (rest // p[j]) % q[j])
            sizes.append(parent_dims[j][0])
        if sum(s * pj for s, pj in zip(starts, p)) != g.offset:
            raise NotLowered("a view that is no slice of its data")
        for j in range(len(parent_dims)):
            if starts[j] + sizes[j] > q[j]:
                raise NotLowered("an overlapping view")
        if len(q) > MAX_RANK:
            raise NotLowered(f"a view needing a parent of rank {len(q)}")
        dtype = g.root.dtype
        name = g.root.name
        if tuple(q) != tuple(g.root.shape):
            name = self._reshape(name, dtype, q)
        cur = list(q)
        for j in range(len(q)):
            if starts[j] != 0 or sizes[j] != q[j]:
                cur[j] = sizes[j]
                name = self.emit(self.call, "slice", [name], list(cur), dtype, dim=j,
                                 start=starts[j], end=starts[j] + sizes[j])
        sorted_shape = [s for s, _ in sd]
        if inner > 1:
            name = self._reshape(name, dtype, sorted_shape)
        if order != sorted(order):
            inv = [order.index(d) for d in range(len(order))]
            shape = [sorted_shape[i] for i in inv]
            name = self.emit(self.call, "permute", [name], shape, dtype, dims=inv)
            sorted_shape = shape
        final = g.shape or (1,)
        if tuple(final) != tuple(sorted_shape):
            name = self._reshape(name, dtype, final)
        return name

    # ---- views ----

    def view(self, call):
        n = call.name
        x = call.args[0]
        if n in ("aten::split", "aten::split_with_sizes", "aten::unbind"):
            g = self.geo_of(x)
            dim = norm_dim(call.arg(2 if n != "aten::unbind" else 1, "dim", 0), len(g.shape))
            if n == "aten::unbind":
                for i, ref in enumerate(call.outs[0] if isinstance(call.outs[0], list) else call.outs):
                    if ref is not None:
                        self.bind(ref, self._select(g, dim, i))
                return
            sizes = call.args[1]
            if isinstance(sizes, int):
                total = g.shape[dim]
                sizes = [min(sizes, total - s) for s in range(0, total, sizes)]
            at = 0
            outs = call.outs[0] if isinstance(call.outs[0], list) else call.outs
            for ref, size in zip(outs, sizes):
                if ref is not None:
                    self.bind(ref, self._slice(g, dim, at, at + size, 1))
                at += size
            return
        if n in ("aten::detach", "aten::alias", "aten::lift_fresh"):
            if x.key not in self.geo and n == "aten::lift_fresh":
                self.geo_of(x)
            self.bind(call.outs[0], self.geo_of(x))
            return
        g = self.geo_of(x)
        out = call.outs[0]
        if n in ("aten::view", "aten::_unsafe_view", "aten::_reshape_alias", "aten::reshape",
                 "aten::view_as"):
            self.bind(out, self._reshape_geo(g, out.shape))
        elif n in ("aten::t", "aten::transpose", "aten::swapaxes", "aten::transpose_"):
            rank = len(g.shape)
            d0, d1 = (0, 1) if n == "aten::t" else (norm_dim(call.args[1], rank),
                                                   norm_dim(call.args[2], rank))
            if rank < 2:
                self.bind(out, g)
                return
            perm = list(range(rank))
            perm[d0], perm[d1] = perm[d1], perm[d0]
            self.bind(out, self._permute(g, perm))
            if n == "aten::transpose_":
                self.bind(x, self.geo[out.key])
        elif n == "aten::permute":
            rank = len(g.shape)
            self.bind(out, self._permute(g, [norm_dim(d, rank) for d in call.args[1]]))
        elif n == "aten::slice":
            rank = len(g.shape)
            dim = norm_dim(call.arg(1, "dim", 0), rank)
            size = g.shape[dim]
            start, end, step = call.arg(2, "start"), call.arg(3, "end"), call.arg(4, "step", 1)
            start = 0 if start is None else start
            end = size if end is None else end
            start = max(0, start + size) if start < 0 else min(start, size)
            end = max(0, end + size) if end < 0 else min(end, size)
            self.bind(out, self._slice(g, dim, start, max(start, end), step))
        elif n == "aten::select":
            dim = norm_dim(call.args[1], len(g.shape))
            idx = call.args[2]
            idx = idx + g.shape[dim] if idx < 0 else idx
            self.bind(out, self._select(g, dim, idx))
        elif n in ("aten::expand", "aten::expand_as"):
            self.bind(out, self._expand(g, out.shape))
        elif n == "aten::unsqueeze":
            dim = norm_dim(call.args[1], len(g.shape) + 1)
            shape, stride = list(g.shape), list(g.stride)
            st = stride[dim] * shape[dim] if dim < len(shape) else 1
            shape.insert(dim, 1)
            stride.insert(dim, st)
            self.bind(out, Geo(g.root, shape, stride, g.offset))
        elif n == "aten::squeeze":
            keep = [i for i in range(len(g.shape))
                    if g.shape[i] != 1 or (len(call.args) > 1 and
                                           norm_dim(call.args[1], len(g.shape)) != i)]
            self.bind(out, Geo(g.root, [g.shape[i] for i in keep], [g.stride[i] for i in keep],
                               g.offset))
        else:
            raise NotLowered(n)

    def _reshape_geo(self, g, shape):
        shape = resolve_size(shape, numel(g.shape))
        if g.is_contiguous():
            return Geo(g.root, shape, None, g.offset)
        st = compute_stride(g.shape, g.stride, shape)
        if st is not None:
            return Geo(g.root, shape, st, g.offset)
        # Not a view of this layout: the data moves first (a device backend's reshape copies).
        name = self.materialize(g)
        root = self.pending_roots.get(name) or Root(name, g.shape, g.root.dtype)
        return Geo(root, shape)

    @staticmethod
    def _permute(g, perm):
        return Geo(g.root, [g.shape[p] for p in perm], [g.stride[p] for p in perm], g.offset)

    @staticmethod
    def _slice(g, dim, start, end, step):
        shape, stride = list(g.shape), list(g.stride)
        shape[dim] = max(0, (end - start + step - 1) // step)
        offset = g.offset + start * stride[dim]
        stride[dim] *= step
        return Geo(g.root, shape, stride, offset)

    @staticmethod
    def _select(g, dim, idx):
        shape, stride = list(g.shape), list(g.stride)
        offset = g.offset + idx * stride[dim]
        del shape[dim]
        del stride[dim]
        return Geo(g.root, shape, stride, offset)

    @staticmethod
    def _expand(g, size):
        size = list(size)
        lead = len(size) - len(g.shape)
        shape, stride = [], []
        for i, s in enumerate(size):
            if i < lead:
                shape.append(s)
                stride.append(0)
                continue
            old, st = g.shape[i - lead], g.stride[i - lead]
            if s == -1 or s == old:
                shape.append(old)
                stride.append(st)
            else:
                shape.append(s)
                stride.append(0)
        return Geo(g.root, shape, stride, g.offset)

    # ---- host ----

    def host(self, call, reason):
        """The call runs on the host: device inputs go over, float results come back."""
        self.host_calls.append((call, reason))
        args = []
        tensors = []
        for a in list(call.args) + list(call.kwargs.values()):
            tensors.extend(a if isinstance(a, (list, tuple)) else [a])
        for t in tensors:
            if not isinstance(t, TensorRef):
                continue
            g = self.geo_of(t)
            if g.root.dtype is None:
                continue  # already on the host
            if g.root.stale:
                raise CaptureError(f"{call.name} reads a view of {g.root.name} after it was "
                                   "overwritten in place")
            # The CPU fallback gets the tensor's storage (the root) and reads its view there.
            if g.root.name not in args:
                args.append(g.root.name)
        results = {}
        outs = call.outs
        values = call.values or [None] * len(outs)
        for ref, value in zip(outs, values):
            if ref is None:
                continue
            if ref.graph_dtype is None or len(ref.shape) > MAX_RANK:
                self.bind(ref, Geo(Root(self.fresh("host_value"), ref.shape or (1,), None,
                                        host_value=value), ref.shape or (1,)))
                continue
            name = self.out_name(call, call.name.split("::")[-1])
            spec = {"shape": list(ref.shape or (1,)), "dtype": ref.graph_dtype}
            if value is not None:
                path = f"{self.data_dir}/{name}.npy"
                self.arrays[path] = value
                spec["npy"] = path
            else:
                spec["init"] = "zeros"
            results[name] = spec
            root = Root(name, ref.shape or (1,), ref.graph_dtype)
            self.pending_roots[name] = root
            self.bind(ref, Geo(root, ref.shape or (1,)))
        self._append(call, {"op": "host", "args": args, "out": results})

    # ---- the whole program ----

    def build(self):
        for call in self.calls:
            self.call = call
            if call.name in SILENT and call.name != "aten::lift_fresh":
                self.view(call)
                continue
            entry = HANDLERS.get(call.name)
            mark = len(self.ops), len(self.op_calls), dict(self.materialized)
            try:
                if call.index in self.force_host:
                    raise NotLowered("the graph lowering rejected it")
                if entry is None:
                    raise NotLowered("no lowering")
                if call.values is None and entry.handler not in (_view, _factory) and any(
                        r is not None and r.graph_dtype is None for r in call.outs[:1]):
                    raise NotLowered("a non-float result")
                entry.handler(self, call)
                if call.inplace:
                    self._inplace(call)
            except NotLowered as e:
                # Undo what the handler emitted before it gave up.
                del self.ops[mark[0]:]
                del self.op_calls[mark[1]:]
                self.materialized = mark[2]
                self.host(call, str(e))
                if call.inplace:
                    self._inplace(call)
            if entry is not None and entry.handler is _view and call.name not in SILENT and \
                    call.index not in self.force_host and not self._hosted(call):
                # A view is dispatched like any op: in the profile, a call with no kernel.
                x = self.geo.get(call.args[0].key) if isinstance(call.args[0], TensorRef) else None
                args = [x.root.name] if x is not None and x.root.dtype is not None else []
                self._append(call, {"op": "view", "args": args})
        return self

    def _hosted(self, call):
        return bool(self.host_calls) and self.host_calls[-1][0] is call

    def _inplace(self, call):
        """x.op_(...) returns x: x now holds the result (a new root)."""
        x = call.args[0]
        g = self.geo.get(x.key)
        out = self.geo.get(call.outs[0].key) if call.outs and call.outs[0] is not None else None
        if g is None or out is None:
            return
        if not g.is_root():
            raise CaptureError(f"{call.name} writes into a view of {g.root.name}; the capture "
                               "cannot follow writes through views (call the op out of place)")
        g.root.stale = True
        self.geo[x.key] = out
