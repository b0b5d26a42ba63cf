"""NKI tensors (NkiTensor, the earlier API's tiles) as views of HBM tensors or SBUF/PSUM regions,
and their access patterns in trnsim's program form."""

import sys

import numpy as np

from . import _core
from ._core import Index, Mask, fail, unsupported, trace, ds

_INT = (int, np.integer)


class NkiTensor:
    """A view of a Storage: shape, a start (partition, free element) and per view axis a
    (partition step, free-element step). Dimension 0 of an on-chip tensor is its partition
    dimension; views of HBM tensors address elements row-major."""

    __slots__ = ("_st", "shape", "_p0", "_f0", "_dims", "_bounds", "_ap_cache", "_inplace",
                 "__weakref__")
    __array_priority__ = 1000

    def __init__(self, st, shape, p0, f0, dims, bounds=None):
        self._st = st
        self.shape = shape
        self._p0 = p0
        self._f0 = f0
        self._dims = dims
        self._bounds = bounds  # advanced views: bounds checked once masks are known
        self._ap_cache = None
        self._inplace = False

    @staticmethod
    def whole(st):
        return NkiTensor(st, st.shape, 0, 0, st.strides)

    # -- attributes of NkiTensor / the earlier tile
    @property
    def dtype(self):
        return self._st.dtype

    @property
    def buffer(self):
        return {"hbm": _core.shared_hbm if self._st.kind != "internal" else _core.hbm,
                "sbuf": _core.sbuf, "psum": _core.psum}[self._st.memory]

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self._st.dtype.itemsize

    @property
    def name(self):
        return self._st.name

    @property
    def offset(self):
        return self._f0

    @property
    def strides(self):
        return tuple(f if p == 0 else p for p, f in self._dims)

    def __repr__(self):
        return (f"NkiTensor({self._st.name}, shape={list(self.shape)}, dtype={self.dtype}, "
                f"buffer={self._st.memory})")

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        fail("tensor", "Cannot evaluate truth value of a multi-element tensor/array "
                       "(err_ambiguous_tensor_truth_value)", ValueError)

    def __iter__(self):
        fail("tensor", "a tensor cannot be iterated in Python; index it instead", TypeError)

    @property
    def is_hbm(self):
        return self._st.memory == "hbm"

    # -- indexing
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        for k in key:
            if isinstance(k, (Index,)) or (isinstance(k, _core.MGridResult)):
                return self._advanced(key)
        return self._basic(key)

    def _basic(self, key):
        st = self._st
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        if n_real > len(self.shape):
            fail("tensor indexing", f"{len(key)} indices for a {len(self.shape)}-D tensor "
                                    f"{st.name}{list(self.shape)}", IndexError)
        if any(k is Ellipsis for k in key):
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (len(self.shape) - n_real) + key[i + 1:]
        else:
            key = key + (slice(None),) * (len(self.shape) - n_real)
        on_chip = st.memory != "hbm"
        shape, dims, dropped = [], [], []
        p0, f0 = self._p0, self._f0
        axis = 0
        for k in key:
            if k is None:
                shape.append(1)
                dims.append((0, 0))
                continue
            size = self.shape[axis]
            ps, fs = self._dims[axis]
            if isinstance(k, ds):
                k = k.slice()
            if isinstance(k, _INT):
                i = int(k)
                if i < 0:
                    i += size
                if not 0 <= i < size:
                    fail("tensor indexing", f"Out-of-bound access for tensor `{st.name}` on "
                                            f"dimension {axis}: index {int(k)} exceed dimension "
                                            f"size of {size} (err_tensor_access_out_of_bound)",
                         IndexError)
                p0 += i * ps
                f0 += i * fs
                if on_chip and ps != 0:
                    # An integer index on the partition dimension keeps it, of size 1; on a
                    # free (or block) dimension it drops the dimension.
                    shape.append(1)
                    dims.append((ps, fs))
                else:
                    dropped.append((ps, fs))
            elif isinstance(k, slice):
                start, stop, step = k.start, k.stop, k.step
                step = 1 if step is None else int(step)
                if step <= 0:
                    unsupported("tensor indexing", "a slice step must be positive")
                start = 0 if start is None else int(start)
                stop = size if stop is None else int(stop)
                if start < 0:
                    start += size
                if stop < 0:
                    stop += size
                if start < 0 or stop > size or start >= stop:
                    fail("tensor indexing", f"Out-of-bound access for tensor `{st.name}` on "
                                            f"dimension {axis}: index range [{start}, {stop - 1}] "
                                            f"exceed dimension size of {size} "
                                            "(err_tensor_access_out_of_bound)", IndexError)
                count = (stop - start + step - 1) // step
                p0 += start * ps
                f0 += start * fs
                shape.append(count)
                dims.append((ps * step, fs * step))
            elif isinstance(k, NkiTensor):
                unsupported("tensor indexing", "indexing with a tensor of runtime values "
                                               "(dynamic/indirect indexing) is not modelled")
            else:
                fail("tensor indexing", f"index {k!r} is not an int, slice, nl.ds or index "
                                        "expression", TypeError)
            axis += 1
        if on_chip and len(shape) < 2 and dropped:
            shape.append(1)
            dims.append(dropped[-1])
        return NkiTensor(st, tuple(shape), p0, f0, tuple(dims))

    def _advanced(self, key):
        st = self._st
        flat = []
        for k in key:
            if isinstance(k, _core.MGridResult):
                flat.extend(k)
            else:
                flat.append(k)
        key = flat
        if len(key) != len(self.shape):
            fail("tensor indexing", f"{len(key)} index expressions for the {len(self.shape)}-D "
                                    f"tensor {st.name}{list(self.shape)}; with nl.arange every "
                                    "dimension is indexed", IndexError)
        exprs = []
        ndim = 1
        for k in key:
            if isinstance(k, slice) or k is Ellipsis or isinstance(k, ds):
                fail("tensor indexing", "Mixing basic tensor indexing and advanced tensor "
                                        "indexing is not supported (err_unsupported_mixing_basic_"
                                        "advanced_tensor_indexing)", IndexError)
            e = Index.of(k)
            if e is None:
                fail("tensor indexing", f"index {k!r} is not an affine index expression",
                     TypeError)
            for v, _ in e.terms:
                if v.ndim == 1 and len(key) > 1 and len(e.terms) == 1:
                    fail("tensor indexing", f"indexing tensor `{st.name}` with 1d arange is not "
                                            "supported (err_1d_arange_not_supported); shape it "
                                            "with [:, None] or [None, :]", IndexError)
                ndim = max(ndim, v.ndim)
            exprs.append(e)
        shape = [1] * ndim
        for e in exprs:
            for v, _ in e.terms:
                a = v.slot + ndim - v.ndim
                if shape[a] not in (1, v.count) and v.count != 1:
                    fail("tensor indexing", f"index axes of sizes {shape[a]} and {v.count} do not "
                                            "broadcast", IndexError)
                shape[a] = max(shape[a], v.count)
        dims = [(0, 0)] * ndim
        p0, f0 = self._p0, self._f0
        bounds = []
        for axis, e in enumerate(exprs):
            ps, fs = self._dims[axis]
            const = e.const
            coefs = {}
            for v, c in e.terms:
                a = v.slot + ndim - v.ndim
                const += c * v.start
                coefs[a] = coefs.get(a, 0) + c
            p0 += const * ps
            f0 += const * fs
            for a, c in coefs.items():
                dp, df = dims[a]
                dims[a] = (dp + c * ps, df + c * fs)
            bounds.append((axis, self.shape[axis], const, tuple(coefs.items())))
        return NkiTensor(st, tuple(shape), p0, f0, tuple(dims), tuple(bounds))

    # -- assignment: `t[...] = value` (earlier API) writes into an existing tensor
    def __setitem__(self, key, value):
        dst = self[key]
        if value is dst or (isinstance(value, NkiTensor) and value._inplace):
            value._inplace = False
            return  # `t[...] += x` already wrote in place
        from . import language as nl
        if isinstance(value, NkiTensor):
            # References to a temporary here: the caller's, this frame's, getrefcount's (3).
            refs = sys.getrefcount(value)
            if retarget(value, dst, refs):
                return
            if dst._st.memory == "hbm":
                nl.store(dst, value)
            else:
                nl._copy_into("tensor assignment", dst, value)
            return
        if isinstance(value, (int, float, np.integer, np.floating, bool)):
            nl._memset_into("tensor assignment", dst, float(value))
            return
        if isinstance(value, Index):
            unsupported("tensor assignment", "an index expression is not data; materialise it "
                                             "with nisa.iota")
        fail("tensor assignment", f"cannot assign {type(value).__name__} to a tensor", TypeError)

    # -- views (NkiTensor methods of the current API, tile methods of the earlier one)
    def reshape(self, shape):
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if -1 in shape:
            known = 1
            for s in shape:
                if s != -1:
                    known *= s
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        n = 1
        for s in shape:
            n *= s
        if n != self.size:
            fail("reshape", f"cannot reshape {list(self.shape)} ({self.size} elements) into "
                            f"{list(shape)} ({n} elements)", AssertionError)
        st = self._st
        contiguous = self._is_whole_contiguous()
        if not contiguous:
            unsupported("reshape", "reshaping a strided view is not modelled; reshape the "
                                   "whole tensor")
        if st.memory != "hbm" and shape[0] != self.shape[0]:
            fail("reshape", f"an on-chip reshape keeps the partition dimension "
                            f"({self.shape[0]}), got {list(shape)}")
        dims = []
        if st.memory == "hbm":
            step = 1
            for s in reversed(shape):
                dims.append((0, step))
                step *= s
            dims.reverse()
        else:
            dims.append(self._dims[0])
            step = 1
            rest = []
            for s in reversed(shape[1:]):
                rest.append((0, step))
                step *= s
            dims.extend(reversed(rest))
        return NkiTensor(st, shape, self._p0, self._f0, tuple(dims))

    def _is_whole_contiguous(self):
        # Contiguous in its free elements (and rows, for HBM).
        expect = 1
        start = 1 if self._st.memory != "hbm" else 0
        for s, (ps, fs) in zip(reversed(self.shape[start:]), reversed(self._dims[start:])):
            if s == 1:
                continue
            if fs != expect:
                return False
            expect *= s
        return True

    def expand_dims(self, axis):
        shape = list(self.shape)
        dims = list(self._dims)
        if axis < 0:
            axis += len(shape) + 1
        if self._st.memory != "hbm" and axis == 0:
            fail("expand_dims", "cannot add a dimension before the partition dimension")
        shape.insert(axis, 1)
        dims.insert(axis, (0, 0))
        return NkiTensor(self._st, tuple(shape), self._p0, self._f0, tuple(dims))

    expand_dim = expand_dims

    def broadcast_to(self, shape):
        shape = tuple(int(s) for s in shape)
        if len(shape) != len(self.shape):
            fail("broadcast_to", f"shape {list(shape)} must have {len(self.shape)} dimensions")
        dims = []
        for a, (have, want, d) in enumerate(zip(self.shape, shape, self._dims)):
            if have == want:
                dims.append(d)
            elif have == 1:
                if a == 0 and self._st.memory != "hbm":
                    unsupported("broadcast_to", "broadcasting along the partition dimension is "
                                                "not modelled (it needs a TensorE matmul)")
                dims.append((0, 0))
            else:
                fail("broadcast_to", f"cannot broadcast {list(self.shape)} to {list(shape)}")
        return NkiTensor(self._st, shape, self._p0, self._f0, tuple(dims))

    def broadcast(self, dim, size):
        shape = list(self.shape)
        shape[dim] = size
        return self.broadcast_to(tuple(shape))

    def view(self, dt):
        dt = _core.as_dtype(dt, "view")
        if dt.itemsize != self.dtype.itemsize:
            unsupported("view", "a view as a dtype of another size is not modelled")
        unsupported("view", "reinterpreting a tensor's bytes is not modelled")

    def astype(self, dt):
        from . import language as nl
        return nl.copy(self, dtype=dt)

    def assert_shape(self, shape):
        if tuple(shape) != tuple(self.shape):
            fail("assert_shape", f"shape of `{self.name}{list(self.shape)}` does not match the "
                                 f"expected shape of {list(shape)}", AssertionError)
        return self

    def select(self, dim, index):
        key = [slice(None)] * len(self.shape)
        key[dim] = index
        return self[tuple(key)]

    def slice(self, dim, start, end, step=1):
        key = [slice(None)] * len(self.shape)
        key[dim] = slice(start, end, step)
        return self[tuple(key)]

    def permute(self, dims):
        dims = tuple(dims)
        if self._st.memory != "hbm" and dims[0] != 0:
            fail("permute", "an on-chip permutation keeps dimension 0 (the partition dimension) "
                            "first")
        return NkiTensor(self._st, tuple(self.shape[d] for d in dims), self._p0, self._f0,
                         tuple(self._dims[d] for d in dims))

    def ap(self, pattern, offset=0, **kw):
        if any(kw.get(k) is not None for k in ("scalar_offset", "vector_offset", "dtype")):
            unsupported("ap", "dynamic offsets and dtype reinterpretation are not modelled")
        st = self._st
        pattern = [tuple(p) for p in pattern]
        if st.memory != "hbm":
            free = 1
            for s in st.shape[1:]:
                free *= s
            step, num = pattern[0]
            if step != free:
                fail("ap", f"the partition step of an on-chip pattern must be the free size "
                           f"{free}, got {step} (stepping over partitions is illegal)")
            p0, f0 = offset // free, offset % free
            dims = [(1, 0)] + [(0, s) for s, _ in pattern[1:]]
        else:
            p0, f0 = 0, offset
            dims = [(0, s) for s, _ in pattern]
        return NkiTensor(st, tuple(n for _, n in pattern), p0, f0, tuple(dims))

    def get_pattern(self):
        return [[f if p == 0 else p, s] for s, (p, f) in zip(self.shape, self._dims)]

    def is_contiguous(self):
        return self._is_whole_contiguous()

    # -- operators of the earlier API's tiles
    def _op(self, name, other, reverse=False):
        from . import language as nl
        f = getattr(nl, name)
        return f(other, self) if reverse else f(self, other)

    def __add__(self, o):
        return self._op("add", o)

    def __radd__(self, o):
        return self._op("add", o, True)

    def __sub__(self, o):
        return self._op("subtract", o)

    def __rsub__(self, o):
        return self._op("subtract", o, True)

    def __mul__(self, o):
        return self._op("multiply", o)

    def __rmul__(self, o):
        return self._op("multiply", o, True)

    def __truediv__(self, o):
        return self._op("divide", o)

    def __rtruediv__(self, o):
        return self._op("divide", o, True)

    def __pow__(self, o):
        return self._op("power", o)

    def __lt__(self, o):
        return self._op("less", o)

    def __le__(self, o):
        return self._op("less_equal", o)

    def __gt__(self, o):
        return self._op("greater", o)

    def __ge__(self, o):
        return self._op("greater_equal", o)

    def __eq__(self, o):
        return self._op("equal", o)

    def __ne__(self, o):
        return self._op("not_equal", o)

    __hash__ = object.__hash__

    def __and__(self, o):
        return self._op("bitwise_and", o)

    def __or__(self, o):
        return self._op("bitwise_or", o)

    def __xor__(self, o):
        return self._op("bitwise_xor", o)

    def __lshift__(self, o):
        return self._op("left_shift", o)

    def __rshift__(self, o):
        return self._op("right_shift", o)

    def __neg__(self):
        from . import language as nl
        return nl.negative(self)

    def __invert__(self):
        from . import language as nl
        return nl.invert(self)

    def __abs__(self):
        from . import language as nl
        return nl.abs(self)

    def __iadd__(self, o):
        from . import language as nl
        refs = sys.getrefcount(o)  # 3 for a temporary, as in __setitem__
        if isinstance(o, NkiTensor) and accumulate_matmul(o, self, refs):
            self._inplace = True
            return self
        nl._binary_into("+=", "add", self, self, o)
        self._inplace = True
        return self

    def _inplace_op(self, name, o):
        from . import language as nl
        nl._binary_into(name, name, self, self, o)
        self._inplace = True
        return self

    def __isub__(self, o):
        return self._inplace_op("subtract", o)

    def __imul__(self, o):
        return self._inplace_op("multiply", o)


# ---------------------------------------------------------------------------------------------
# Access patterns


def _merge(free):
    out = []
    for s, n in free:
        if n == 1:
            continue
        if out and out[-1][0] == s * n:
            out[-1] = (s, out[-1][1] * n)
        else:
            out.append((s, n))
    return out


def apply_limits(t, limits):
    """The view restricted to [lo, hi) on the axes a mask names."""
    if not limits:
        return t
    shape = list(t.shape)
    p0, f0 = t._p0, t._f0
    for axis, (lo, hi) in limits.items():
        if axis >= len(shape):
            continue
        ps, fs = t._dims[axis]
        hi = min(hi, shape[axis])
        if hi <= lo:
            return None  # the mask leaves nothing: the instruction is skipped
        p0 += lo * ps
        f0 += lo * fs
        shape[axis] = hi - lo
    r = NkiTensor(t._st, tuple(shape), p0, f0, t._dims, None)
    if t._bounds:
        r._bounds = tuple((a, size, const + sum(c * limits.get(ax, (0, 0))[0] for ax, c in co),
                           co) for a, size, const, co in t._bounds)
    return r


def _check_bounds(t, call):
    for axis, size, const, coefs in t._bounds:
        lo = hi = const
        for a, c in coefs:
            span = c * (t.shape[a] - 1)
            if span < 0:
                lo += span
            else:
                hi += span
        if lo < 0 or hi >= size:
            fail(call, f"Out-of-bound access for tensor `{t._st.name}` on dimension {axis}: index "
                       f"range [{lo}, {hi}] exceed dimension size of {size} "
                       "(err_tensor_access_out_of_bound)", IndexError)


def ap(t, call, split=None, merge=True):
    """The access pattern tuple of view `t` for the C++ builder:
    (memory, dtype, start_partition, partitions, partition_stride, offset_bytes, dims).
    `split`: a view axis that free-dimension merging must not cross (reductions)."""
    if split is None and merge and t._ap_cache is not None:
        return t._ap_cache
    if t._bounds:
        _check_bounds(t, call)
    st = t._st
    es = st.dtype.itemsize
    shape, dims = t.shape, t._dims
    if st.memory == "hbm":
        if len(shape) == 0:
            parts, pstride, free = 1, 0, [(1, 1)]
        elif len(shape) == 1:
            parts, pstride, free = 1, 0, [(dims[0][1], shape[0])]
        else:
            parts, pstride = shape[0], dims[0][1]
            free = [(d[1], s) for s, d in zip(shape[1:], dims[1:])]
        groups = [free] if split is None else [free[:split - 1], free[split - 1:]]
        out = []
        for g in groups:
            out.extend(_merge(g) if merge else g)
        if not out:
            out = [(1, 1)]
        if len(out) > 4:
            fail(call, f"{st.name}{list(shape)} needs {len(out)} free dimensions in its access "
                       "pattern; at most 4")
        r = (_core._MEMORY_CODE["hbm"], st.dtype.code, 0, parts, pstride, st.addr + t._f0 * es,
             tuple(out))
    else:
        if not shape:
            fail(call, "an on-chip operand needs a partition dimension")
        ps0, fs0 = dims[0]
        parts = shape[0]
        if parts > 1 and (ps0 != 1 or fs0 != 0):
            if ps0 == 0:
                fail(call, f"dimension 0 of `{st.name}{list(shape)}` is not its partition "
                           "dimension (Failed to infer tile from tensor; "
                           "err_failed_to_infer_tile_from_local_tensor)")
            fail(call, f"`{st.name}` is strided along the partition dimension; an operand must "
                       "occupy consecutive partitions")
        for s, (ps, _) in zip(shape[1:], dims[1:]):
            if ps != 0 and s > 1:
                fail(call, f"`{st.name}{list(shape)}` uses the partition dimension in a free "
                           "dimension; the partition dimension must come first")
        if parts > _core.trace().partitions:
            fail(call, f"number of partitions {parts} exceed architecture limitation of "
                       f"{_core.trace().partitions} (err_num_partition_exceed_arch_limit)")
        free = [(d[1], s) for s, d in zip(shape[1:], dims[1:])]
        groups = [free] if split is None else [free[:split - 1], free[split - 1:]]
        out = []
        for g in groups:
            out.extend(_merge(g) if merge else g)
        if not out:
            out = [(1, 1)]
        if len(out) > 4:
            fail(call, f"`{st.name}{list(shape)}` needs {len(out)} free dimensions in its access "
                       "pattern; at most 4")
        r = (_core._MEMORY_CODE[st.memory], st.dtype.code, t._p0, parts, 0,
             st.addr + t._f0 * es, tuple(out))
    if split is None and merge:
        t._ap_cache = r
    return r


def free_elements(t):
    n = 1
    for s in t.shape[1:]:
        n *= s
    return n


def partitions(t):
    return t.shape[0] if t.shape else 1


# ---------------------------------------------------------------------------------------------
# New tiles of the earlier API, and writing a call's result straight into its destination


def new_tile(shape, dt, memory="sbuf", call="tile", name=None):
    tr = trace()
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        shape = (shape[0] if shape else 1, 1)
    st = tr.new_on_chip(memory, shape, dt, name, call)
    return NkiTensor.whole(st)


def mark_result(tile, idx, limits=None, matmul=False, dma=False):
    """Remembers that instruction `idx` wrote the fresh tile `tile`: `dst[...] = tile` or
    `psum[...] += tile` right after can write `dst` directly instead of copying."""
    trace().last = (idx, id(tile._st), limits, matmul, dma)


def _fresh(value, refs):
    tr = trace()
    last = tr.last
    if last is None or last[1] != id(value._st) or refs > 3:
        return None
    if value._dims != value._st.strides or value._p0 or value._f0:
        return None
    if sys.getrefcount(value._st) > 2:  # another view still reads it
        return None
    return last


def retarget(value, dst, refs):
    """`dst[...] = value` where value is the fresh result of the last call: that call writes
    `dst` instead (what NKI compiles `res[...] = nl.exp(x)` to). False when it cannot."""
    last = _fresh(value, refs)
    if last is None:
        return False
    idx, _, limits, matmul, _ = last
    tr = trace()
    target = apply_limits(dst, limits) if limits else dst
    if target is None:
        return True
    if dst._st.memory == "hbm" and not last[4]:
        return False  # a compute engine cannot write HBM: the caller stores by DMA
    if matmul:
        if dst._st.memory != "psum":
            return False
        start = not _psum_written(dst, target)
        err = tr.builder.retarget(idx, ap(target, "="), start)
    else:
        err = tr.builder.retarget(idx, ap(target, "="), None)
    if err:
        return False  # the instruction cannot write there (engine, shape): copy instead
    tr.last = None
    _release(value._st)
    return True


def accumulate_matmul(value, dst, refs):
    """`psum[...] += nisa.nc_matmul(...)`: the matmul accumulates into psum (earlier API)."""
    last = _fresh(value, refs)
    if last is None or not last[3] or dst._st.memory != "psum":
        return False
    idx, _, limits, _, _ = last
    tr = trace()
    target = apply_limits(dst, limits) if limits else dst
    err = tr.builder.retarget(idx, ap(target, "+="), False)
    if err:
        return False
    _psum_written(dst, target)
    tr.last = None
    _release(value._st)
    return True


def _release(st):
    if st.alloc is not None:
        allocator, start, size = st.alloc
        allocator.release(start, size)
        st.alloc = None


def _psum_written(view, target):
    """True if the bytes `target` covers were written before (an nc_matmul with
    accumulate=None then accumulates); records them as written."""
    st = view._st
    es = st.dtype.itemsize
    lo = target._f0
    hi = lo
    for s, (_, f) in zip(target.shape[1:], target._dims[1:]):
        hi += (s - 1) * f
    lo, hi = lo * es, (hi + 1) * es
    seen = any(a < hi and lo < b for a, b in st.written)
    st.written.append((lo, hi))
    return seen
