"""Each nki.isa instruction trnsim models, traced from Python and run, against numpy: the
instruction's NumPy semantics from the nki.isa reference. Kernels return several outputs to
keep the number of simulations small."""
import numpy as np
import pytest

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

rng = np.random.default_rng(11)
X = rng.standard_normal((128, 64)).astype(np.float32)
Y = rng.standard_normal((128, 64)).astype(np.float32)


def hbm_out(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)


def store(t, dtype=None):
    o = hbm_out(t.shape, dtype or t.dtype)
    nl.store(o, t)
    return o


@nki.jit
def vector_ops(x, y):
    """Current API: scan, scalar-reduce, cumulative, reverse operands, predicated copy, memset."""
    a = nl.load(x)
    b = nl.load(y)
    scan = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=scan, data0=a, data1=b, initial=0.5, op0=nl.multiply,
                            op1=nl.add)
    scaled = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=scaled, data=a, op0=nl.multiply, operand0=3.0,
                              reduce_op=nl.maximum, reduce_res=sums)
    cum = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=cum, src=a, op0=nl.add, op1=nl.add, imm0=1.0)
    rev = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=rev, data=a, op0=nl.subtract, operand0=10.0, reverse0=True)
    pred = nl.ndarray(a.shape, dtype=nl.uint8, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=pred, data=a, op0=nl.greater, operand0=0.0)
    sel = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=sel, value=-7.0)
    nisa.tensor_copy_predicated(dst=sel, src=b, predicate=pred)
    return (store(scan), store(scaled), store(sums), store(cum), store(rev), store(sel))


def test_vector_ops():
    scan, scaled, sums, cum, rev, sel = nki.simulate_kernel(vector_ops, X, Y)
    r = np.full(128, 0.5, np.float32)
    want = np.empty_like(X)
    for i in range(X.shape[1]):
        r = X[:, i] * r + Y[:, i]
        want[:, i] = r
    np.testing.assert_allclose(scan, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scaled, 3 * X, rtol=1e-6)
    np.testing.assert_allclose(sums[:, 0], (3 * X).max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(cum, np.cumsum(X + 1, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rev, 10 - X, rtol=1e-6)
    np.testing.assert_array_equal(sel, np.where(X > 0, Y, -7.0))


@nki.jit
def top8(x):
    """Current API: max8, nc_find_index8, nc_match_replace8."""
    a = nl.load(x)
    m = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.max8(dst=m, src=a)
    idx = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=idx, data=a, vals=m)
    rep = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_match_replace8(dst=rep, data=a, vals=m, imm=-100.0)
    return store(m), store(idx), store(rep)


def test_top8():
    m, idx, rep = nki.simulate_kernel(top8, X)
    want = -np.sort(-X, axis=1)[:, :8]
    np.testing.assert_array_equal(m, want)
    np.testing.assert_array_equal(np.take_along_axis(X, idx.astype(np.int64), 1), want)
    assert idx.dtype == np.uint32
    expect = X.copy()
    np.put_along_axis(expect, np.argsort(-X, axis=1)[:, :8], -100.0, 1)
    np.testing.assert_array_equal(rep, expect)


@nki.jit
def gpsimd_ops(x, index, flat_index):
    """Current API: iota, affine_select, tensor_partition_reduce, local_gather, nc_n_gather."""
    a = nl.load(x)
    io = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=io, pattern=[[1, 64]], offset=5, channel_multiplier=100)
    causal = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    # keep a[p, i] where p - i >= 0 (a causal mask), else -1e9
    nisa.affine_select(dst=causal, pattern=[[-1, 64]], channel_multiplier=1, on_true_tile=a,
                       on_false_value=-1e9, cmp_op=nl.greater_equal)
    col = nl.ndarray((1, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(dst=col, op=nl.add, data=a)
    ix = nl.load(index)
    g = nl.ndarray((128, 40), dtype=nl.float32, buffer=nl.sbuf)
    nisa.local_gather(dst=g, src_buffer=a, index=ix, num_elem_per_idx=2, num_valid_indices=20)
    fx = nl.load(flat_index)
    n = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=n, data=a, indices=fx)
    return store(io), store(causal), store(col), store(g), store(n)


def test_gpsimd_ops():
    index = np.tile((rng.integers(0, 31, (16, 2)) * 2).astype(np.uint16), (8, 1))
    flat = rng.integers(0, 64, (128, 16)).astype(np.uint32)
    io, causal, col, g, n = nki.simulate_kernel(gpsimd_ops, X, index, flat)
    p = np.arange(128)[:, None]
    i = np.arange(64)[None, :]
    np.testing.assert_array_equal(io, 5 + 100 * p + i)
    np.testing.assert_array_equal(causal, np.where(p - i >= 0, X, np.float32(-1e9)))
    np.testing.assert_allclose(col[0], X.sum(axis=0), rtol=1e-5, atol=1e-5)
    want = np.empty((128, 20, 2), np.float32)
    for c in range(8):
        s = slice(16 * c, 16 * (c + 1))
        ids = index[s].flatten(order="F")[:20].astype(np.int64)
        want[s, :, 0] = X[s][:, ids]
        want[s, :, 1] = X[s][:, ids + 1]
    np.testing.assert_array_equal(g, want.reshape(128, 40))
    np.testing.assert_array_equal(n, np.take_along_axis(X, flat.astype(np.int64), 1))


@nki.jit
def select_ops(x, y, lo, hi):
    """range_select (NeuronCore-v3), nl.where, nc_stream_shuffle."""
    a = nl.load(x)
    b = nl.load(y)
    l = nl.load(lo)
    h = nl.load(hi)
    rs = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    best = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=rs, on_true_tile=a, comp_op0=nl.greater_equal, comp_op1=nl.less,
                      bound0=l, bound1=h, reduce_res=best)
    w = nl.where(nl.greater(a, b), a, b)
    sh = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=sh, src=a, shuffle_mask=[31 - k for k in range(32)])
    return store(rs), store(best), store(w), store(sh)


def test_select_ops():
    lo = rng.integers(0, 30, (128, 1)).astype(np.float32)
    hi = lo + rng.integers(1, 30, (128, 1)).astype(np.float32)
    rs, best, w, sh = nki.simulate_kernel(select_ops, X, Y, lo, hi)
    i = np.arange(64)[None, :]
    keep = (i >= lo) & (i < hi)
    want = np.where(keep, X, np.finfo(np.float32).min)
    np.testing.assert_array_equal(rs, want)
    np.testing.assert_array_equal(best[:, 0], want.max(axis=1))
    np.testing.assert_array_equal(w, np.maximum(X, Y))
    p = np.arange(128)
    np.testing.assert_array_equal(sh, X[(p // 32) * 32 + 31 - p % 32])


@nki.jit
def earlier_api(x, y):
    """The earlier API: tiles returned by value, nl.arange expressions in iota and
    affine_select, reductions with keepdims, activation with a per-partition scale."""
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    a = nl.load(x[ip, jf])
    b = nl.load(y[ip, jf])
    io = nisa.iota(ip * 64 + jf, dtype=nl.float32)
    upper = nisa.affine_select(jf > ip, a, 0.0)
    s = nisa.tensor_reduce(nl.add, a, axis=[1], keepdims=True)
    act = nisa.activation(nl.exp, b, scale=1.0, bias=s)
    t = nisa.tensor_tensor(a, b, op=np.multiply)
    sc = nisa.tensor_scalar(a, np.add, 1.0, op1=np.multiply, operand1=2.0)
    st = nisa.scalar_tensor_tensor(data=a, op0=nl.subtract, operand0=1.0, op1=nl.multiply,
                                   operand1=b)
    return store(io), store(upper), store(act), store(t), store(sc), store(st)


def test_earlier_api():
    io, upper, act, t, sc, st = nki.simulate_kernel(earlier_api, X, Y)
    p = np.arange(128)[:, None]
    i = np.arange(64)[None, :]
    np.testing.assert_array_equal(io, (p * 64 + i).astype(np.float32))
    np.testing.assert_array_equal(upper, np.where(i > p, X, 0.0))
    np.testing.assert_allclose(act, np.exp(Y + X.sum(axis=1, keepdims=True)), rtol=1e-4)
    np.testing.assert_allclose(t, X * Y, rtol=1e-6)
    np.testing.assert_allclose(sc, (X + 1) * 2, rtol=1e-6)
    np.testing.assert_allclose(st, (X - 1) * Y, rtol=1e-6)


@pytest.mark.parametrize("dtype,tol", [(nl.bfloat16, 1e-2), (nl.float16, 1e-3)])
def test_low_precision_inputs_round_as_the_hardware(dtype, tol):
    @nki.jit
    def double(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(x), 2.0))
        return out

    out = nki.run(double, X, input_dtypes={"x": dtype}, report=False).outputs
    np.testing.assert_allclose(out, 2 * X, rtol=tol, atol=tol)
    assert not np.array_equal(out, 2 * X)  # rounded: not the fp32 result


@nki.jit
def masked_reduce(x):
    """Earlier API: a masked reduction writes only the masked rows of its full-size result."""
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    a = nl.load(x[ip, jf])
    s = nl.zeros((128, 1), dtype=nl.float32)
    s[...] = nisa.tensor_reduce(nl.add, a, axis=[1], mask=(ip < 100))
    m = nisa.tensor_reduce(np.max, a[ip, jf], axis=[1], mask=(jf < 10))
    return store(s), store(m)


def test_masked_reduce():
    s, m = nki.simulate_kernel(masked_reduce, X)
    np.testing.assert_allclose(s[:100, 0], X[:100].sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(s[100:, 0], 0.0)
    np.testing.assert_array_equal(m[:, 0], X[:, :10].max(axis=1))
