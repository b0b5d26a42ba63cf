"""RMSNorm of a [rows, hidden] tensor with a [hidden] weight:
y = x / sqrt(mean(x^2) + eps) * gamma. Rows need not be a multiple of 128."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

EPS = 1e-6


@nki.jit
def rmsnorm_nl(x, gamma):
    """Earlier API with masks for the last tile; gamma reaches every partition by a DMA whose
    partition stride is 0 (a broadcast view of the HBM tensor)."""
    rows, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(hidden)[None, :]
    g = nl.load(gamma.reshape((1, hidden)).broadcast_to((128, hidden)))
    for t in nl.affine_range((rows + 127) // 128):
        m = t * 128 + ip < rows
        tile = nl.load(x[t * 128 + ip, jf], mask=m)
        sq = nl.square(tile, mask=m)
        ss = nl.sum(sq, axis=[1], mask=m)
        ms = nl.multiply(ss, 1.0 / hidden, mask=m)
        r = nl.rsqrt(nl.add(ms, EPS, mask=m), mask=m)
        y = nl.multiply(tile, r, mask=m)
        y = nl.multiply(y, g, mask=m)
        nl.store(out[t * 128 + ip, jf], value=y, mask=m)
    return out


@nki.jit
def rmsnorm_isa(x, gamma):
    """Current API: ScalarE squares and sums in one activation (reduce_res), VectorE turns the
    sum into 1/rms with two ops, ScalarE's rsqrt, and one scalar_tensor_tensor applies both the
    per-row scale and gamma."""
    rows, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((128, hidden), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=gamma.reshape((1, hidden)).broadcast_to((128, hidden)))
    for t in nl.affine_range(rows // 128):
        tile = nl.ndarray((128, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        sq = nl.ndarray((128, hidden), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=tile, reduce_op=nl.add, reduce_res=ss,
                        reduce_cmd=nisa.reduce_cmd.reset_reduce)
        ms = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=ms, data=ss, op0=nl.multiply, operand0=1.0 / hidden,
                           op1=nl.add, operand1=EPS)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=r, op=nl.rsqrt, data=ms)
        y = nl.ndarray((128, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=y, data=tile, op0=nl.multiply, operand0=r,
                                  op1=nl.multiply, operand1=g)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=y)
    return out


def reference(x, gamma):
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + EPS) * gamma).astype(np.float32)


@nki.jit
def rmsnorm_spmd(x, gamma):
    """SPMD: program i of the launch grid normalizes its band of rows (rows / num_programs, a
    multiple of 128), as rmsnorm_nl does; with lnc=2 the bands run on two cores at once."""
    rows, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    band = rows // nl.num_programs(0)
    first = nl.program_id(0) * band
    ip = nl.arange(128)[:, None]
    jf = nl.arange(hidden)[None, :]
    g = nl.load(gamma.reshape((1, hidden)).broadcast_to((128, hidden)))
    for t in nl.affine_range(band // 128):
        tile = nl.load(x[first + t * 128 + ip, jf])
        ss = nl.sum(nl.square(tile), axis=[1])
        r = nl.rsqrt(nl.add(nl.multiply(ss, 1.0 / hidden), EPS))
        nl.store(out[first + t * 128 + ip, jf], value=nl.multiply(nl.multiply(tile, r), g))
    return out
