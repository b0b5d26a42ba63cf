"""GEMM out[M, N] = lhsT[K, M]^T @ rhs[K, N] (TensorE contracts over partitions, so the left
operand comes transposed), at four levels of optimisation, as the NKI performance guide walks
through them. TensorE tiles: stationary [128 x 128], moving [128 x 512], one PSUM bank."""
import numpy as np

import trnsim.nki as nki
import trnsim.nki.isa as nisa
import trnsim.nki.language as nl

TK, TM, TN = 128, 128, 512  # contraction, stationary width, moving width


@nki.jit
def gemm_naive(lhsT, rhs):
    """Level 1, earlier API: every output tile loads its operand tiles afresh in the K loop."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nisa.nc_matmul(a, b)
            nl.store(out[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=nl.copy(acc))
    return out


@nki.jit
def gemm_hoisted(lhsT, rhs):
    """Level 2, earlier API: the K tiles of lhsT for one row of output tiles are loaded once,
    before the N loop, into a tensor with a block dimension (K/128 tiles of [128, 128])."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        a = nl.ndarray((K // TK, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            a[k] = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                b = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nisa.nc_matmul(a[k], b)
            nl.store(out[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=nl.copy(acc))
    return out


@nki.jit
def gemm_blocked(lhsT, rhs, block_m=2, block_n=2):
    """Level 3, current API: output tiles in blocks of block_m x block_n; each block loads its
    lhsT and rhs tiles once per K step and keeps block_m * block_n accumulators in PSUM."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (TM * block_m)):
        for nb in nl.affine_range(N // (TN * block_n)):
            accs = [[nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                     for _ in range(block_n)] for _ in range(block_m)]
            for k in nl.affine_range(K // TK):
                ks = slice(k * TK, (k + 1) * TK)
                a = nl.ndarray((TK, block_m * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[ks, mb * block_m * TM:(mb + 1) * block_m * TM])
                b = nl.ndarray((TK, block_n * TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[ks, nb * block_n * TN:(nb + 1) * block_n * TN])
                for i in range(block_m):
                    for j in range(block_n):
                        nisa.nc_matmul(dst=accs[i][j], stationary=a[:, i * TM:(i + 1) * TM],
                                       moving=b[:, j * TN:(j + 1) * TN])
            for i in range(block_m):
                for j in range(block_n):
                    r = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=r, src=accs[i][j])
                    m0 = (mb * block_m + i) * TM
                    n0 = (nb * block_n + j) * TN
                    nisa.dma_copy(dst=out[m0:m0 + TM, n0:n0 + TN], src=r)
    return out


@nki.jit
def gemm_blocked_loads(lhsT, rhs, block_n=2):
    """Level 4, current API: every byte of lhsT and rhs is loaded once. All of lhsT comes in
    first (K/128 tiles of [128, M]); rhs a block of N at a time, one DMA per (K tile, 512
    columns) so that the first matmuls start as soon as their tiles arrive; the block's output
    rows are evacuated from PSUM alternately by VectorE and ScalarE and stored in one DMA."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((TK, K // TK, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // TK):
        nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * TK:(k + 1) * TK, :])
    for nb in nl.affine_range(N // (TN * block_n)):
        n0 = nb * block_n * TN
        b = nl.ndarray((TK, K // TK, block_n * TN), dtype=rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            for j in range(block_n):
                nisa.dma_copy(dst=b[:, k, j * TN:(j + 1) * TN],
                              src=rhs[k * TK:(k + 1) * TK, n0 + j * TN:n0 + (j + 1) * TN])
        for m in nl.affine_range(M // TM):
            r = nl.ndarray((TM, block_n * TN), dtype=nl.float32, buffer=nl.sbuf)
            for j in range(block_n):
                acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // TK):
                    nisa.nc_matmul(dst=acc, stationary=a[:, k, m * TM:(m + 1) * TM],
                                   moving=b[:, k, j * TN:(j + 1) * TN])
                engine = nisa.engine.vector if j % 2 == 0 else nisa.engine.scalar
                nisa.tensor_copy(dst=r[:, j * TN:(j + 1) * TN], src=acc, engine=engine)
            nisa.dma_copy(dst=out[m * TM:(m + 1) * TM, n0:n0 + block_n * TN], src=r)
    return out


def reference(lhsT, rhs, *unused):
    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32)


@nki.jit
def gemm_spmd(lhsT, rhs):
    """SPMD: program i of the launch grid computes output columns [i N/G, (i + 1) N/G) as
    gemm_naive does; with lnc=2 the column blocks run on two cores at once."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    width = N // nl.num_programs(0)
    n0 = nl.program_id(0) * width
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(width // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b = nl.load(rhs[k * TK:(k + 1) * TK, n0 + n * TN:n0 + (n + 1) * TN])
                acc += nisa.nc_matmul(a, b)
            nl.store(out[m * TM:(m + 1) * TM, n0 + n * TN:n0 + (n + 1) * TN], value=nl.copy(acc))
    return out
