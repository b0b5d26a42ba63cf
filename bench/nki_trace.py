#!/usr/bin/env python3
"""The NKI tracing benchmark (docs/nki.md, "Speed"): how long trnsim.nki takes to trace and
lower (synchronisation included) a kernel that emits N instructions, in both API generations.
Target: 100,000 instructions in under 2 s on one core. Not a timed test: run it by hand,

    PYTHONPATH=build/python:python /usr/bin/python3 bench/nki_trace.py [N]

It prints one line per kernel and exits 1 when a kernel misses the target."""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "build", "python")]

import trnsim.nki as nki  # noqa: E402
import trnsim.nki.isa as nisa  # noqa: E402
import trnsim.nki.language as nl  # noqa: E402

TARGET_SECONDS = 2.0


@nki.jit
def stream_isa(x, n):
    """Current API: ScalarE and VectorE alternate on two tiles, each waiting for the other."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    for _ in nl.affine_range((n - 2) // 2):
        nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=1.0001)
        nisa.activation(dst=t, op=nl.exp, data=u)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def stream_tiles(x, n):
    """Earlier API: tiles returned by value, a new tile (allocation, free) per call."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    for _ in nl.affine_range((n - 2) // 2):
        t = nl.exp(nl.multiply(t, 1.0001))
    nl.store(out, t)
    return out


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    x = np.zeros((128, 512), np.float32)
    ok = True
    for kernel in (stream_isa, stream_tiles):
        t0 = time.perf_counter()
        traced = nki.trace(kernel, x, n)
        seconds = time.perf_counter() - t0
        met = seconds < TARGET_SECONDS * n / 100_000
        ok &= met
        print(f"{kernel.__name__:14s} {traced.instruction_count:>9,} instructions  "
              f"{seconds:6.3f} s  {seconds / traced.instruction_count * 1e6:5.2f} us each  "
              f"{'target met' if met else 'TARGET MISSED'} (< {TARGET_SECONDS} s per 100,000)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
