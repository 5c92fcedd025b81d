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

inline void store(float* c, float v, float beta) { *c = beta == 0.0f ? v : beta * *c + v; }

}  // namespace

__attribute__((target_clones("avx512f", "avx2", "default"))) void gemm_rows(int m, int n, int k,
                                                                            const float* a, int lda,
                                                                            const float* b, int ldb,
                                                                            float beta, float* c, int ldc) {
  float out[rows_at_once];
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
