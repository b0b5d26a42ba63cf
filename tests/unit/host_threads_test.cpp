// The host-side work around a functional run: inputs and references on several threads must
// give the same bytes as one thread, and the references must be exact enough for the checks.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/host_threads.hpp"
#include "isa/dtype.hpp"
#include "workloads/kernels/attention.hpp"
#include "workloads/kernels/kernel.hpp"
#include "workloads/kernels/matmul.hpp"
#include "workloads/kernels/tile_ops.hpp"

using trnsim::isa::DType;
using trnsim::workloads::SeededRandom;

namespace {

// Sets TRNSIM_THREADS for one scope.
struct ThreadLimit {
  explicit ThreadLimit(const char* v) { setenv("TRNSIM_THREADS", v, 1); }
  ~ThreadLimit() { unsetenv("TRNSIM_THREADS"); }
};

std::vector<float> bf16_normals(uint64_t seed, size_t n) {
  SeededRandom rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = trnsim::isa::round_to(DType::bf16, static_cast<float>(rng.normal()));
  return v;
}

}  // namespace

TEST_CASE("host threads: TRNSIM_THREADS limits them, anything but a positive number is ignored",
          "[unit][threads]") {
  const unsigned all = trnsim::base::host_threads();
  CHECK(all >= 1);
  {
    const ThreadLimit one("1");
    CHECK(trnsim::base::host_threads() == 1);
  }
  for (const char* ignored : {"0", "-3", "two", ""}) {
    const ThreadLimit bad(ignored);
    CHECK(trnsim::base::host_threads() == all);
  }
}

TEST_CASE("host threads: parallel_chunks runs every chunk once, in chunks of the grain",
          "[unit][threads]") {
  const ThreadLimit four("4");
  std::vector<int> seen(1000, 0);
  std::mutex m;
  std::vector<std::pair<size_t, size_t>> chunks;
  trnsim::base::parallel_chunks(seen.size(), 64, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) ++seen[i];
    const std::lock_guard<std::mutex> lock(m);
    chunks.emplace_back(b, e);
  });
  for (int s : seen) CHECK(s == 1);
  CHECK(chunks.size() == 16);  // 15 of 64 and one of 40
  for (const auto& [b, e] : chunks) CHECK((b % 64 == 0 && (e - b == 64 || e == 1000)));
  // An exception in a chunk reaches the caller.
  CHECK_THROWS_AS(trnsim::base::parallel_chunks(100, 1,
                                                [](size_t b, size_t) {
                                                  if (b == 37) throw std::runtime_error("chunk 37");
                                                }),
                  std::runtime_error);
}

TEST_CASE("inputs: fill_normal gives the values and state of normal() called in turn",
          "[unit][threads]") {
  const size_t n = 300001;  // several chunks and a short last one
  const std::vector<float> want = bf16_normals(42, n);
  SeededRandom one(42);
  for (size_t i = 0; i < n; ++i) one.normal();
  for (const char* threads : {"1", "2", "3"}) {
    const ThreadLimit limit(threads);
    SeededRandom rng(42);
    std::vector<float> got(n);
    rng.fill_normal(got.data(), n, [](double x) {
      return trnsim::isa::round_to(DType::bf16, static_cast<float>(x));
    });
    CHECK(got == want);
    CHECK(rng.next() == SeededRandom(one).next());
  }
}

TEST_CASE("references: matmul in single precision for bf16 is within 1% of the check's allowance",
          "[unit][matmul][threads]") {
  // A K long enough for fp32 sums to drift, a shape that is not a multiple of the tiles.
  const int64_t m = 130, k = 8192, n = 1030;
  const std::vector<float> a = bf16_normals(1, static_cast<size_t>(m * k));
  const std::vector<float> b = bf16_normals(2, static_cast<size_t>(k * n));
  const std::vector<float> exact = trnsim::workloads::matmul_reference(a, b, m, k, n);
  const std::vector<float> fast = trnsim::workloads::matmul_reference(a, b, m, k, n, DType::bf16);
  const trnsim::workloads::Tolerance t = trnsim::workloads::output_tolerance(DType::bf16, exact);
  double worst = 0;  // the reference's error over what the check allows at that element
  for (size_t i = 0; i < exact.size(); ++i) {
    const double allowed = t.atol + t.rtol * std::abs(exact[i]);
    worst = std::max(worst, std::abs(static_cast<double>(fast[i]) - exact[i]) / allowed);
  }
  CHECK(worst < 0.01);
  // The same bytes on one thread as on several.
  const ThreadLimit one("1");
  CHECK(trnsim::workloads::matmul_reference(a, b, m, k, n, DType::bf16) == fast);
  CHECK(trnsim::workloads::matmul_reference(a, b, m, k, n) == exact);
}

TEST_CASE("references: attention in single precision is within 1% of the fp16 check's allowance",
          "[unit][attention][threads]") {
  const int64_t heads = 2, seq = 2048, d = 128;
  const size_t n = static_cast<size_t>(heads * seq * d);
  const std::vector<float> q = bf16_normals(3, n), k = bf16_normals(4, n), v = bf16_normals(5, n);
  // fp16's is the tighter of the two checks that take the fp32 reference (lower_attention).
  const double u = trnsim::workloads::rounding_unit(DType::fp16);
  const double atol = 6 * u, rtol = 3 * u;
  for (bool causal : {false, true}) {
    const std::vector<float> exact =
        trnsim::workloads::attention_reference(q, k, v, heads, seq, d, causal);
    const std::vector<float> fast =
        trnsim::workloads::attention_reference(q, k, v, heads, seq, d, causal, DType::fp16);
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const double allowed = atol + rtol * std::abs(exact[i]);
      worst = std::max(worst, std::abs(static_cast<double>(fast[i]) - exact[i]) / allowed);
    }
    CHECK(worst < 0.01);
    const ThreadLimit one("1");
    CHECK(trnsim::workloads::attention_reference(q, k, v, heads, seq, d, causal, DType::fp16) ==
          fast);
  }
}
