// Dense matrix products for the functional side of a run (the simulated TensorE's matmul and the
// checks' references), through OpenBLAS (Debian's libopenblas, built with DYNAMIC_ARCH: it picks
// its kernels for the host's processor when it loads, AVX2/FMA or AVX-512 where there are, where
// Eigen's products run on the SSE2 baseline that Debian's compiler targets). Timing never reads
// these values: no cycle count depends on which kernels OpenBLAS picked. The values themselves
// may differ in the last bits between processors (the order of the additions is the kernel's);
// every check allows for far more than that (docs/performance.md, "Functional runs").
//
// Each call runs on the calling thread only: callers that want more threads split the work
// themselves (base/host_threads), so that a run's thread count stays TRNSIM_THREADS' to decide.
#pragma once

#include <cstdint>

namespace trnsim::base {

// Row-major matrices. C[m, n] = beta * C + op(A)[m, k] * op(B)[k, n], where op(X) is X, or X's
// transpose when trans_x (then A is stored [k, m], B [n, k]); lda, ldb, ldc are the stored
// matrices' row strides in elements.
void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a,
          const float* b, int64_t ldb, bool trans_b, float beta, float* c, int64_t ldc);
void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a,
          const double* b, int64_t ldb, bool trans_b, double beta, double* c, int64_t ldc);

// Asks OpenBLAS, before it is loaded, to start no threads of its own (OPENBLAS_NUM_THREADS=1,
// unless the environment sets it already): loaded without it, Debian's build starts a thread per
// processor that spins for about 0.1 s of CPU. It sets an environment variable, so call it
// while the process has one thread only (trnsim's main() does).
void single_threaded_blas();

// The name of the kernels OpenBLAS chose for this processor ("Haswell", "SkylakeX"), for
// reports and benchmarks.
const char* gemm_kernels();

}  // namespace trnsim::base
