"""Row softmax of a [rows, cols] tensor: exp(x - max) / sum along each row."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


@nki.jit
def softmax_nl(x):
    """Earlier API, tile by tile: nl.max, nl.exp of the shifted tile, nl.sum, reciprocal, scale."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(x.shape[0] // 128):
        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        m = nl.max(tile, axis=1, keepdims=True)
        e = nl.exp(tile - m)
        s = nl.sum(e, axis=1, keepdims=True)
        out[t * 128:(t + 1) * 128, :] = e * nl.reciprocal(s)
    return out


@nki.jit
def softmax_fused(x):
    """Current API: the row max negated on VectorE, then one ScalarE activation computes
    exp(x - max) and its row sum (activation_reduce), VectorE scales by 1/sum."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        tile = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        neg_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=tile, axis=1, negate=True)
        e = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=e, op=nl.exp, data=tile, reduce_op=nl.add, reduce_res=total,
                               bias=neg_max)
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=total)
        y = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=y)
    return out


@nki.jit
def softmax_builtin(x):
    """nl.softmax."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(x.shape[0] // 128):
        nl.store(out[t * 128:(t + 1) * 128, :],
                 value=nl.softmax(nl.load(x[t * 128:(t + 1) * 128, :]), axis=1))
    return out


def reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
