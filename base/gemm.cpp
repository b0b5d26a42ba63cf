#include "base/gemm.hpp"

#include <cblas.h>

#include <mutex>

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

}  // namespace

void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a,
          const float* b, int64_t ldb, bool trans_b, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS wants leading dimensions of at least 1 even then
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  one_thread_per_call();
  cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda),
              b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a,
          const double* b, int64_t ldb, bool trans_b, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
    }
    return;
  }
  one_thread_per_call();
  cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0, a, static_cast<blasint>(lda),
              b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

const char* gemm_kernels() {
  one_thread_per_call();
  return openblas_get_corename();
}

}  // namespace trnsim::base
