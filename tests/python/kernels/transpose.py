"""2-D transpose of a [rows, cols] tensor: through the PE array (TensorE), through VectorE's
32x32 blocks, and by the DMA transpose unit."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


@nki.jit
def transpose_pe(x):
    """128 x 128 blocks: load, transpose into PSUM on TensorE, copy to SBUF, store (current API)."""
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        for j in nl.affine_range(cols // 128):
            t = nl.load(x[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])
            tp = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=tp, data=t)
            ts = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=ts, src=tp)
            nisa.dma_copy(dst=out[j * 128:(j + 1) * 128, i * 128:(i + 1) * 128], src=ts)
    return out


@nki.jit
def transpose_nl(x):
    """The earlier API's nl.transpose (TensorE, into PSUM) and nl.copy."""
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.copy(nl.transpose(t)))
    return out


@nki.jit
def transpose_vector(x):
    """32 x 32 blocks on VectorE (nc_transpose with engine=vector), SBUF to SBUF."""
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_transpose(dst=r, data=t, engine=nisa.engine.vector)
    nl.store(out, r)
    return out


@nki.jit
def transpose_dma(x):
    """The DMA transpose unit, HBM to SBUF (nisa.dma_transpose)."""
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    nl.store(out, t)
    return out


def reference(x):
    return x.T.copy()
