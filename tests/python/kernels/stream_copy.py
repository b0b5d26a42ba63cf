"""A DMA-bound SPMD kernel: each program of the launch grid copies its 128-row band of `a` to
the output through SBUF, tile by tile, with no compute; for the logical-core (LNC) timing."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.language as nl


@nki.jit
def copy_spmd(a):
    """Program i copies rows [128 i, 128 (i + 1)) in tiles of 512 columns."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    rows = slice(i * 128, (i + 1) * 128)
    for t in nl.affine_range(a.shape[1] // 512):
        cols = slice(t * 512, (t + 1) * 512)
        out[rows, cols] = nl.load(a[rows, cols])
    return out


def reference(a):
    return np.array(a, copy=True)
