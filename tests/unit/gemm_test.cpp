// base::gemm (OpenBLAS) against a plain triple loop in double: every combination of transposes,
// row strides wider than the matrices, beta 0 and 1, and the empty cases.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/gemm.hpp"

namespace {

// Element (r, c) of a row-major matrix stored with row stride ld, read through op().
template <typename T>
T at(const std::vector<T>& x, int64_t ld, bool trans, int64_t r, int64_t c) {
  return trans ? x[static_cast<size_t>(c * ld + r)] : x[static_cast<size_t>(r * ld + c)];
}

template <typename T>
void check_against_loops(int64_t m, int64_t n, int64_t k, bool ta, bool tb, T beta) {
  const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
  std::vector<T> a(static_cast<size_t>((ta ? k : m) * lda + 1));
  std::vector<T> b(static_cast<size_t>((tb ? n : k) * ldb + 1));
  std::vector<T> c(static_cast<size_t>(m * ldc + 1));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(std::sin(0.37 * i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<T>(std::cos(0.11 * i));
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<T>(0.5 + 0.01 * i);
  const std::vector<T> c0 = c;
  trnsim::base::gemm(m, n, k, a.data(), lda, ta, b.data(), ldb, tb, beta, c.data(), ldc);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t col = 0; col < ldc; ++col) {
      const size_t i = static_cast<size_t>(r * ldc + col);
      if (col >= n) {  // the padding beyond each row is left alone
        CHECK(c[i] == c0[i]);
        continue;
      }
      double want = static_cast<double>(beta) * static_cast<double>(c0[i]);
      for (int64_t j = 0; j < k; ++j) {
        want +=
            static_cast<double>(at(a, lda, ta, r, j)) * static_cast<double>(at(b, ldb, tb, j, col));
      }
      // fp32: K sums of terms below 1 in size, each rounding by at most 2^-24 of the sum.
      const double tolerance = sizeof(T) == 4 ? 1e-5 * (k + 1) : 1e-13 * (k + 1);
      CHECK(std::abs(static_cast<double>(c[i]) - want) <= tolerance);
    }
  }
}

}  // namespace

TEST_CASE("gemm: every transpose combination, strided rows and beta agree with plain loops") {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const int beta : {0, 1}) {
        INFO("trans_a " << ta << " trans_b " << tb << " beta " << beta);
        check_against_loops<float>(37, 29, 131, ta, tb, static_cast<float>(beta));
        check_against_loops<double>(37, 29, 131, ta, tb, static_cast<double>(beta));
        check_against_loops<float>(128, 512, 128, ta, tb, static_cast<float>(beta));
      }
    }
  }
}

TEST_CASE("gemm: K = 0 scales C by beta, M or N = 0 touches nothing") {
  check_against_loops<float>(4, 3, 0, false, false, 0.0f);
  check_against_loops<float>(4, 3, 0, true, true, 1.0f);
  check_against_loops<double>(4, 3, 0, false, true, 0.0);
  std::vector<float> c{1.0f, 2.0f};
  trnsim::base::gemm(0, 2, 4, static_cast<const float*>(nullptr), 4, false, nullptr, 2, false, 0.0f,
                     c.data(), 2);
  CHECK(c == std::vector<float>{1.0f, 2.0f});
}

TEST_CASE("gemm: OpenBLAS names the kernels it chose for this processor") {
  const std::string name = trnsim::base::gemm_kernels();
  CHECK_FALSE(name.empty());
}

TEST_CASE("gemm: a size beyond BLAS's int is refused, not wrapped") {
  const int64_t huge = int64_t{1} << 31;
  std::vector<float> c(1);
  CHECK_THROWS_AS(trnsim::base::gemm(huge, 1, 1, static_cast<const float*>(nullptr), 1, false,
                                     nullptr, 1, false, 0.0f, c.data(), 1),
                  std::length_error);
}
