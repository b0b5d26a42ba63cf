#include "base/gemm.hpp"

#include <cblas.h>

#include <limits>
#include <mutex>
#include <stdexcept>

namespace trnsim::base {

namespace {

// OpenBLAS would start a thread per processor for each large product; the callers split their
// work over host_threads() themselves, so every call stays on its caller's thread.
void one_thread_per_call() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE op(bool trans) {
  return trans ? CblasTrans : CblasNoTrans;
}

// BLAS takes its sizes as int (Debian's OpenBLAS is not the 64-bit-integer build).
blasint blas_size(int64_t v) {
  if (v < 0 || v > std::numeric_limits<blasint>::max()) {
    throw std::length_error("gemm: a matrix size or row stride beyond BLAS's int");
  }
  return static_cast<blasint>(v);
}

// The float and double products alike, through cblas_sgemm or cblas_dgemm.
template <typename T, typename Blas>
void gemm_through(Blas blas, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, bool trans_a,
                  const T* b, int64_t ldb, bool trans_b, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS wants leading dimensions of at least 1 even then
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    }
    return;
  }
  one_thread_per_call();
  blas(CblasRowMajor, op(trans_a), op(trans_b), blas_size(m), blas_size(n), blas_size(k), T(1), a,
       blas_size(lda), b, blas_size(ldb), beta, c, blas_size(ldc));
}

}  // namespace

void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a,
          const float* b, int64_t ldb, bool trans_b, float beta, float* c, int64_t ldc) {
  gemm_through(cblas_sgemm, m, n, k, a, lda, trans_a, b, ldb, trans_b, beta, c, ldc);
}

void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a,
          const double* b, int64_t ldb, bool trans_b, double beta, double* c, int64_t ldc) {
  gemm_through(cblas_dgemm, m, n, k, a, lda, trans_a, b, ldb, trans_b, beta, c, ldc);
}

const char* gemm_kernels() {
  one_thread_per_call();
  return openblas_get_corename();
}

}  // namespace trnsim::base
