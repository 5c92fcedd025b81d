// gemm_rows (kernels/gemm_rows.hpp), the decode batch's dense product, against a plain
// double-precision definition, and against the BLAS GEMM the prefill uses.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "kernels/ops.hpp"
#include "tests/support/random_floats.hpp"

using namespace anchorage::kernels;
using anchorage::testing::random_floats;

TEST_CASE("gemm_rows computes A B^T + beta C for a few rows", "[kernels][batch]") {
  const int m = GENERATE(1, 2, 3, 4, 5, 8, 11);
  const int k = GENERATE(16, 100, 256);
  const float beta = GENERATE(0.0f, 1.0f);
  INFO("m " << m << ", k " << k << ", beta " << beta);
  const int n = 37, lda = k + 3, ldb = k + 5, ldc = n + 2;  // strides wider than the rows
  const auto a = random_floats(static_cast<std::size_t>(m) * lda, 1);
  const auto b = random_floats(static_cast<std::size_t>(n) * ldb, 2);
  const auto c0 = random_floats(static_cast<std::size_t>(m) * ldc, 3);
  auto c = c0, blas = c0;
  cpu::gemm_rows(m, n, k, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  cpu::gemm(true, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, beta, blas.data(), ldc);
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; ++j) {
      double want = beta * static_cast<double>(c0[static_cast<std::size_t>(r * ldc + j)]);
      for (int i = 0; i < k; ++i)
        want += static_cast<double>(a[static_cast<std::size_t>(r * lda + i)]) *
                b[static_cast<std::size_t>(j * ldb + i)];
      const float got = c[static_cast<std::size_t>(r * ldc + j)];
      REQUIRE(std::fabs(got - want) <= 1e-5 * std::sqrt(static_cast<double>(k)) * (1.0 + std::fabs(want)));
      REQUIRE(std::fabs(got - blas[static_cast<std::size_t>(r * ldc + j)]) <= 1e-4f);
    }
    // The padding between rows of C is not written.
    for (int j = n; j < ldc && r + 1 < m; ++j)
      REQUIRE(c[static_cast<std::size_t>(r * ldc + j)] == c0[static_cast<std::size_t>(r * ldc + j)]);
  }
}

TEST_CASE("gemm_rows gives a row the same bits whatever the row beside it", "[kernels][batch]") {
  // Deterministic: the same inputs, the same bits; and row r of the result does not read
  // the other rows of A (changing them leaves it alone).
  const int m = 6, n = 50, k = 256;
  auto a = random_floats(static_cast<std::size_t>(m) * k, 4);
  const auto b = random_floats(static_cast<std::size_t>(n) * k, 5);
  std::vector<float> c1(static_cast<std::size_t>(m) * n), c2(c1.size());
  cpu::gemm_rows(m, n, k, a.data(), k, b.data(), k, 0.0f, c1.data(), n);
  for (int i = 0; i < k; ++i) a[static_cast<std::size_t>(k + i)] += 0.5f;  // row 1 only
  cpu::gemm_rows(m, n, k, a.data(), k, b.data(), k, 0.0f, c2.data(), n);
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < n; ++j) {
      const std::size_t at = static_cast<std::size_t>(r * n + j);
      if (r == 1)
        CHECK(c1[at] != c2[at]);
      else
        CHECK(c1[at] == c2[at]);
    }
}
