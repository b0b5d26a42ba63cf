"""LayerNorm of a [rows, hidden] tensor: (x - mean) / sqrt(var + eps) * gamma + beta, the mean
and variance per row either from reductions or from VectorE's bn_stats/bn_aggr."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

EPS = 1e-5


def _broadcast_rows(v, hidden):
    return v.reshape((1, hidden)).broadcast_to((128, hidden))


@nki.jit
def layernorm_reduce(x, gamma, beta):
    """Earlier API: two VectorE mean reductions (of x and of the centred squares)."""
    rows, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(_broadcast_rows(gamma, hidden))
    b = nl.load(_broadcast_rows(beta, hidden))
    for t in nl.affine_range(rows // 128):
        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        mean = nl.mean(tile, axis=[1])
        centred = nl.subtract(tile, mean)
        var = nl.mean(nl.multiply(centred, centred), axis=[1])
        rstd = nl.rsqrt(nl.add(var, EPS))
        y = nl.multiply(centred, rstd)
        y = nl.add(nl.multiply(y, g), b)
        nl.store(out[t * 128:(t + 1) * 128, :], value=y)
    return out


@nki.jit
def layernorm_bn(x, gamma, beta):
    """Current API: bn_stats on each 512-wide chunk (6 statistics each), one bn_aggr for the
    row's mean and variance, then tensor_scalar subtracts the mean and scales by 1/std."""
    rows, hidden = x.shape
    fmax = nl.tile_size.bn_stats_fmax
    chunks = (hidden + fmax - 1) // fmax
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((128, hidden), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=_broadcast_rows(gamma, hidden))
    b = nl.ndarray((128, hidden), dtype=beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=_broadcast_rows(beta, hidden))
    for t in nl.affine_range(rows // 128):
        tile = nl.ndarray((128, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        stats = nl.ndarray((128, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(chunks):
            w = min(fmax, hidden - c * fmax)
            nisa.bn_stats(dst=stats[:, 6 * c:6 * (c + 1)], data=tile[:, c * fmax:c * fmax + w])
        mv = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv, data=stats)
        rstd = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=mv[:, 1:2], op0=nl.add, operand0=EPS)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=rstd)
        y = nl.ndarray((128, hidden), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=tile, op0=nl.subtract, operand0=mv[:, 0:1],
                           op1=nl.multiply, operand1=rstd)
        nisa.tensor_tensor(dst=y, data1=y, data2=g, op=nl.multiply)
        z = nl.ndarray((128, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=z, data1=y, data2=b, op=nl.add)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=z)
    return out


def reference(x, gamma, beta):
    x64 = x.astype(np.float64)
    m = x64.mean(axis=1, keepdims=True)
    v = x64.var(axis=1, keepdims=True)
    return ((x64 - m) / np.sqrt(v + EPS) * gamma + beta).astype(np.float32)
