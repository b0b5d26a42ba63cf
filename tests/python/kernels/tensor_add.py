"""Element-wise addition of two [rows, cols] tensors, written from the NKI docs (tiling, SPMD
grids), in both API generations."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


@nki.jit
def add_spmd(a, b):
    """Earlier API: one 128-row tile per program of the launch grid, indices from nl.arange,
    nl.program_id choosing the tile; launched as add_spmd[rows // 128](a, b)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(a.shape[1])[None, :]
    x = nl.load(a[i * 128 + ip, jf])
    y = nl.load(b[i * 128 + ip, jf])
    nl.store(out[i * 128 + ip, jf], value=x + y)
    return out


@nki.jit
def add_spmd_2d(a, b):
    """A 2-D grid over row tiles and column halves (earlier API, slices)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    half = a.shape[1] // nl.num_programs(1)
    rows = slice(i * 128, (i + 1) * 128)
    cols = slice(j * half, (j + 1) * half)
    out[rows, cols] = nl.add(nl.load(a[rows, cols]), nl.load(b[rows, cols]))
    return out


@nki.jit
def add_masked(a, b):
    """Rows not a multiple of 128: the last tile is masked (earlier API)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    ip = nl.arange(128)[:, None]
    jf = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + 127) // 128):
        m = t * 128 + ip < rows
        x = nl.load(a[t * 128 + ip, jf], mask=m)
        y = nl.load(b[t * 128 + ip, jf], mask=m)
        z = nl.add(x, y, mask=m)
        nl.store(out[t * 128 + ip, jf], value=z, mask=m)
    return out


@nki.jit
def add_isa(a, b):
    """Current API: destinations allocated with nl.ndarray, nisa calls with dst=."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range(a.shape[0] // P):
        xa = nl.ndarray((P, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        xb = nl.ndarray((P, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xa, src=a[t * P:(t + 1) * P, :])
        nisa.dma_copy(dst=xb, src=b[t * P:(t + 1) * P, :])
        s = nl.ndarray((P, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s, data1=xa, data2=xb, op=nl.add)
        nisa.dma_copy(dst=out[t * P:(t + 1) * P, :], src=s)
    return out


def reference(a, b):
    return a + b
