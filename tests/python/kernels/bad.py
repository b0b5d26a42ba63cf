"""Kernels that break NKI's rules or call what trnsim does not model: each must fail at its own
line (tests/python/test_errors.py finds the lines by their markers)."""
import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl


@nki.jit
def unsupported_call(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.device_print("t", t)  # MARK unsupported_call
    nl.store(out, t)
    return out


@nki.jit
def too_many_partitions(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((256, 64), dtype=a.dtype, buffer=nl.sbuf)  # MARK too_many_partitions
    return out


@nki.jit
def bad_start_partition(a):
    out = nl.ndarray((64, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    u = nl.exp(t[32:96, :])  # MARK bad_start_partition
    nl.store(out, u)
    return out


@nki.jit
def psum_bank_crossed(a, b):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=x, moving=y)  # MARK psum_bank_crossed
    return out


@nki.jit
def sbuf_full(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    keep = []
    for i in range(64):
        keep.append(nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf))  # MARK sbuf_full
    return out


@nki.jit
def psum_dtype(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    acc = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=x, moving=y)  # MARK psum_dtype
    return out


@nki.jit
def bn_stats_too_wide(a):
    out = nl.ndarray((128, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    s = nl.ndarray((128, 6), dtype=nl.float32, buffer=nl.sbuf)
    nisa.bn_stats(dst=s, data=t)  # MARK bn_stats_too_wide
    return out


@nki.jit
def gpsimd_psum(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=p, value=0.0, engine=nisa.engine.gpsimd)  # MARK gpsimd_psum
    return out


@nki.jit
def unknown_name(a):
    return nl.frobnicate(a)  # MARK unknown_name


@nki.jit
def python_error(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    return out + 1 / 0  # MARK python_error


@nki.jit
def masked_matmul(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    x = nl.load(a)
    y = nl.load(b)
    r = nisa.nc_matmul(x, y, mask=(ip < 64))  # MARK masked_matmul
    nl.store(out, nl.copy(r))
    return out
