#include "base/gemm.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace trnsim::base {

namespace {

// OpenBLAS, opened when the first product is computed rather than linked: its pthread build
// starts a thread per processor as it loads, and that thread spins for about 0.1 s of CPU
// waiting for work (sched_yield), in every run, timing-only ones included, which never compute
// a product. Opened with OPENBLAS_NUM_THREADS=1 in the environment (trnsim's main() sets it:
// single_threaded_blas()), it starts none. Each call runs on its caller's thread: callers that
// want more threads split the work over host_threads() themselves. In a process that has loaded
// OpenBLAS already (Debian's PyTorch), this is the same library, set to one thread per call.
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&openblas_get_corename) corename = nullptr;
};

const OpenBlas& open_blas() {
  static const OpenBlas blas = [] {
    void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      throw std::runtime_error(fmt::format(
          "functional runs compute their matrix products with OpenBLAS, which cannot be opened "
          "({}); install Debian's libopenblas0",
          dlerror()));
    }
    auto symbol = [lib](const char* name) {
      void* f = dlsym(lib, name);
      if (f == nullptr) {
        dlclose(lib);
        throw std::runtime_error(fmt::format("OpenBLAS (libopenblas.so.0) has no {}", name));
      }
      return f;
    };
    OpenBlas b;
    b.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(symbol("cblas_sgemm"));
    b.dgemm = reinterpret_cast<decltype(&cblas_dgemm)>(symbol("cblas_dgemm"));
    b.corename =
        reinterpret_cast<decltype(&openblas_get_corename)>(symbol("openblas_get_corename"));
    reinterpret_cast<decltype(&openblas_set_num_threads)>(symbol("openblas_set_num_threads"))(1);
    return b;
  }();
  return blas;
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
void gemm_through(Blas OpenBlas::*product, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                  bool trans_a, const T* b, int64_t ldb, bool trans_b, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS wants leading dimensions of at least 1 even then
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    }
    return;
  }
  (open_blas().*product)(CblasRowMajor, op(trans_a), op(trans_b), blas_size(m), blas_size(n),
                         blas_size(k), T(1), a, blas_size(lda), b, blas_size(ldb), beta, c,
                         blas_size(ldc));
}

}  // namespace

void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a,
          const float* b, int64_t ldb, bool trans_b, float beta, float* c, int64_t ldc) {
  gemm_through(&OpenBlas::sgemm, m, n, k, a, lda, trans_a, b, ldb, trans_b, beta, c, ldc);
}

void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a,
          const double* b, int64_t ldb, bool trans_b, double beta, double* c, int64_t ldc) {
  gemm_through(&OpenBlas::dgemm, m, n, k, a, lda, trans_a, b, ldb, trans_b, beta, c, ldc);
}

void single_threaded_blas() {
  setenv("OPENBLAS_NUM_THREADS", "1", 0);  // a user's own setting stays
}

const char* gemm_kernels() {
  return open_blas().corename();
}

}  // namespace trnsim::base
