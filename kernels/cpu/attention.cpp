#include "kernels/attention.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/cpu/fast_exp.hpp"

namespace anchorage::kernels::cpu {
namespace {

constexpr int row_block = attention_row_block;
constexpr int key_block = attention_key_block;

// Max and sum over eight fixed lanes: the order is the code's, the same bits every run.
float lane_max(const float* x, int n) {
  float m8[8];
  for (int l = 0; l < 8; ++l) m8[l] = x[0];
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) m8[l] = x[j + l] > m8[l] ? x[j + l] : m8[l];
  float m = m8[0];
  for (int l = 1; l < 8; ++l) m = m8[l] > m ? m8[l] : m;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// exp(x - m) over a row, in place: the hot loop, built for AVX2 too and picked at load time
// (the same machine always runs the same clone, so results stay bit-reproducible there).
__attribute__((target_clones("avx2", "default"))) void exp_row(float* x, int n, float m) {
  for (int j = 0; j < n; ++j) x[j] = fast_exp(x[j] - m);
}

float lane_sum(const float* x, int n) {
  float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) s8[l] += x[j + l];
  float s = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
  for (; j < n; ++j) s += x[j];
  return s;
}

}  // namespace

// Tiled ("flash") attention: the query heads sharing a kv head are stacked into one matrix;
// blocks of its rows meet blocks of keys, with a running max and sum per row, so no score
// matrix larger than one tile is ever written. Keys past a row's position are skipped.
void attention(const float* q, const float* k, const float* v, float* o, const attention_shape& sh,
               float* scratch) {
  const int group = sh.n_q / sh.n_kv;
  const int rows = group * sh.m;
  const int hd = sh.head_dim;
  float* qs = scratch;                            // rows * hd
  float* os = qs + static_cast<long>(rows) * hd;  // rows * hd
  float* mx = os + static_cast<long>(rows) * hd;  // rows
  float* sum = mx + rows;                         // rows
  float* s = sum + rows;                          // row_block * key_block
  auto pos = [&](int r) { return sh.pos0 + r % sh.m; };
  const float neg_inf = -std::numeric_limits<float>::infinity();

  for (int kh = 0; kh < sh.n_kv; ++kh) {
    for (int gi = 0; gi < group; ++gi)
      for (int i = 0; i < sh.m; ++i)
        std::memcpy(qs + (static_cast<long>(gi) * sh.m + i) * hd,
                    q + static_cast<long>(i) * sh.q_stride + static_cast<long>(kh * group + gi) * hd,
                    sizeof(float) * static_cast<std::size_t>(hd));
    std::fill(os, os + static_cast<long>(rows) * hd, 0.0f);
    std::fill(mx, mx + rows, neg_inf);
    std::fill(sum, sum + rows, 0.0f);
    const float* kk = k + static_cast<long>(kh) * hd;
    const float* vv = v + static_cast<long>(kh) * hd;

    for (int r0 = 0; r0 < rows; r0 += row_block) {
      const int r1 = std::min(rows, r0 + row_block);
      int kmax = 0;
      for (int r = r0; r < r1; ++r) kmax = std::max(kmax, pos(r) + 1);
      for (int k0 = 0; k0 < kmax; k0 += key_block) {
        const int n = std::min(key_block, kmax - k0);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, n, hd, sh.scale,
                    qs + static_cast<long>(r0) * hd, hd, kk + static_cast<long>(k0) * sh.kv_stride,
                    sh.kv_stride, 0.0f, s, n);
        for (int r = r0; r < r1; ++r) {
          float* row = s + static_cast<long>(r - r0) * n;
          const int valid = std::min(n, pos(r) + 1 - k0);
          if (valid <= 0) {
            std::memset(row, 0, sizeof(float) * static_cast<std::size_t>(n));
            continue;
          }
          const float m_new = std::max(mx[r], lane_max(row, valid));
          const float keep = mx[r] == neg_inf ? 0.0f : fast_exp(mx[r] - m_new);
          exp_row(row, valid, m_new);
          if (valid < n) std::memset(row + valid, 0, sizeof(float) * static_cast<std::size_t>(n - valid));
          sum[r] = sum[r] * keep + lane_sum(row, valid);
          float* orow = os + static_cast<long>(r) * hd;
          for (int x = 0; x < hd; ++x) orow[x] *= keep;
          mx[r] = m_new;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hd, n, 1.0f, s, n,
                    vv + static_cast<long>(k0) * sh.kv_stride, sh.kv_stride, 1.0f,
                    os + static_cast<long>(r0) * hd, hd);
      }
    }
    for (int gi = 0; gi < group; ++gi)
      for (int i = 0; i < sh.m; ++i) {
        const int r = gi * sh.m + i;
        const float inv = 1.0f / sum[r];
        float* dst = o + static_cast<long>(i) * sh.o_stride + static_cast<long>(kh * group + gi) * hd;
        const float* src = os + static_cast<long>(r) * hd;
        for (int x = 0; x < hd; ++x) dst[x] = src[x] * inv;
      }
  }
}

}  // namespace anchorage::kernels::cpu
