"""nki.language calls the kernels of tests/python/kernels do not reach, against numpy:
nl.matmul (with and without transpose_x), nl.mgrid with its .p/.x attributes, block
dimensions, nl.shared_constant and nl.shared_identity_matrix, nl.var, nl.load_transpose2d,
nl.broadcast_to, nl.gather_flattened, comparisons and nl.where, operator overloads."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.language as nl

rng = np.random.default_rng(5)
X = rng.standard_normal((128, 128)).astype(np.float32)
Y = rng.standard_normal((128, 256)).astype(np.float32)


def store(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(o, nl.copy(t) if t.buffer is nl.psum else t)
    return o


@nki.jit
def matmuls(x, y):
    a = nl.load(x)
    b = nl.load(y)
    return store(nl.matmul(a, b, transpose_x=True)), store(nl.matmul(a, b))


def test_matmul_with_and_without_transpose_x():
    at_b, a_b = nki.simulate_kernel(matmuls, X, Y)
    np.testing.assert_allclose(at_b, X.T @ Y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a_b, X @ Y, rtol=1e-4, atol=1e-4)


@nki.jit
def grid_and_blocks(x, y):
    g = nl.mgrid[0:128, 0:64]
    left = nl.load(y[g.p, g.x])  # the first 64 columns
    blocks = nl.ndarray((2, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
    for k in nl.affine_range(2):
        blocks[k] = nl.load(y[:, k * 128:(k + 1) * 128])
    summed = nl.add(blocks[0], blocks[1])
    const = nl.load(nl.shared_constant(np.arange(128 * 4, dtype=np.float32).reshape(128, 4)))
    ident = nl.shared_identity_matrix(128, dtype=nl.float32)
    a = nl.load(x)
    var = nl.var(a, axis=1)
    tr = nl.load_transpose2d(x[0:64, :])
    row = nl.load(x[0:128, 0:1])
    wide = nl.broadcast_to(row, (128, 32))
    return (store(left), store(summed), store(const), store(ident), store(var), store(tr),
            store(wide))


def test_mgrid_blocks_constants_var_transposed_load_broadcast():
    left, summed, const, ident, var, tr, wide = nki.simulate_kernel(grid_and_blocks, X, Y)
    np.testing.assert_array_equal(left, Y[:, :64])
    np.testing.assert_allclose(summed, Y[:, :128] + Y[:, 128:], rtol=1e-6)
    np.testing.assert_array_equal(const, np.arange(512, dtype=np.float32).reshape(128, 4))
    np.testing.assert_array_equal(ident, np.eye(128, dtype=np.float32))
    np.testing.assert_allclose(var[:, 0], X.var(axis=1), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(tr, X[0:64, :].T)
    np.testing.assert_array_equal(wide, np.repeat(X[:, 0:1], 32, axis=1))


@nki.jit
def overloads(x, y, idx):
    a = nl.load(x)
    b = nl.load(y[:, 0:128])
    mixed = (a * 2.0 - b) / 4.0
    cond = nl.greater(a, b, dtype=nl.float32)
    picked = nl.where(cond, a, -1.0)
    neg = -a
    g = nl.gather_flattened(a, nl.load(idx))
    return store(mixed), store(picked), store(neg), store(g)


def test_operator_overloads_where_and_gather():
    idx = rng.integers(0, 128, (128, 16)).astype(np.uint32)
    mixed, picked, neg, g = nki.simulate_kernel(overloads, X, Y, idx)
    b = Y[:, :128]
    np.testing.assert_allclose(mixed, (X * 2 - b) / 4, rtol=1e-6)
    np.testing.assert_array_equal(picked, np.where(X > b, X, -1.0))
    np.testing.assert_array_equal(neg, -X)
    np.testing.assert_array_equal(g, np.take_along_axis(X, idx.astype(np.int64), 1))
