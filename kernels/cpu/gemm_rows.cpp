#include "kernels/gemm_rows.hpp"

namespace anchorage::kernels::cpu {
namespace {

// 16 floats: one AVX-512 register, two AVX2 ones; GCC lowers it for the default clone.
typedef float v16 __attribute__((vector_size(64)));
constexpr int lanes = 16;
constexpr int rows_at_once = 4;

// out[r] = A row r . b for R rows of A: 16 running sums per row over k, added in lane order,
// then the tail of k past the last multiple of 16.
template <int R>
inline __attribute__((always_inline)) void dot_rows(const float* a, long lda, const float* b, int k,
                                                    float* out) {
  v16 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = v16{};
  int i = 0;
  for (; i + lanes <= k; i += lanes) {
    v16 w;
    __builtin_memcpy(&w, b + i, sizeof w);
    for (int r = 0; r < R; ++r) {
      v16 x;
      __builtin_memcpy(&x, a + r * lda + i, sizeof x);
      acc[r] += x * w;
    }
  }
  for (int r = 0; r < R; ++r) {
    float s = 0.0f;
    for (int l = 0; l < lanes; ++l) s += acc[r][l];
    for (int t = i; t < k; ++t) s += a[r * lda + t] * b[t];
    out[r] = s;
  }
}

// dot_rows<1> for C rows of B at once against one row of A: out[c] = a . B row c, each output
// its own 16 running sums over k, added in lane order, then its tail: the same operations in the
// same order as dot_rows<1> on that row alone (so the same bits), with C independent sums in
// flight instead of one (a decode's single row is otherwise bound by one sum's latency).
template <int C>
inline __attribute__((always_inline)) void dot_cols(const float* a, const float* b, long ldb, int k,
                                                    float* out) {
  v16 acc[C];
  for (int q = 0; q < C; ++q) acc[q] = v16{};
  int i = 0;
  for (; i + lanes <= k; i += lanes) {
    v16 x;
    __builtin_memcpy(&x, a + i, sizeof x);
    for (int q = 0; q < C; ++q) {
      v16 w;
      __builtin_memcpy(&w, b + q * ldb + i, sizeof w);
      acc[q] += x * w;
    }
  }
  for (int q = 0; q < C; ++q) {
    float s = 0.0f;
    for (int l = 0; l < lanes; ++l) s += acc[q][l];
    for (int t = i; t < k; ++t) s += a[t] * b[q * ldb + t];
    out[q] = s;
  }
}

inline void store(float* c, float v, float beta) { *c = beta == 0.0f ? v : beta * *c + v; }
constexpr int cols_at_once = 4;

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void gemm_rows(int m, int n, int k,
                                                                            const float* a, int lda,
                                                                            const float* b, int ldb,
                                                                            float beta, float* c, int ldc) {
  float out[rows_at_once];
  if (m == 1) {  // one row (a decode): several weight rows at once, each output as dot_rows<1> makes it
    float o[cols_at_once];
    int j = 0;
    for (; j + cols_at_once <= n; j += cols_at_once) {
      dot_cols<cols_at_once>(a, b + static_cast<long>(j) * ldb, ldb, k, o);
      for (int q = 0; q < cols_at_once; ++q) store(c + j + q, o[q], beta);
    }
    for (; j < n; ++j) {
      dot_rows<1>(a, lda, b + static_cast<long>(j) * ldb, k, out);
      store(c + j, out[0], beta);
    }
    return;
  }
  for (int j = 0; j < n; ++j) {
    const float* bj = b + static_cast<long>(j) * ldb;
    int r0 = 0;
    for (; r0 + rows_at_once <= m; r0 += rows_at_once) {
      dot_rows<rows_at_once>(a + static_cast<long>(r0) * lda, lda, bj, k, out);
      for (int r = 0; r < rows_at_once; ++r) store(c + static_cast<long>(r0 + r) * ldc + j, out[r], beta);
    }
    for (; r0 < m; ++r0) {
      dot_rows<1>(a + static_cast<long>(r0) * lda, lda, bj, k, out);
      store(c + static_cast<long>(r0) * ldc + j, out[0], beta);
    }
  }
}

}  // namespace anchorage::kernels::cpu
