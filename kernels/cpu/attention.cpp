#include "kernels/attention.hpp"

#include <cblas.h>

#include <cmath>

namespace anchorage::kernels::cpu {

void attention(const float* q, const float* k, const float* v, float* o,
               const attention_shape& sh, float* scratch) {
  const int len = sh.pos0 + sh.m;
  const int group = sh.n_q / sh.n_kv;
  for (int h = 0; h < sh.n_q; ++h) {
    const int kh = h / group;
    const float* qh = q + static_cast<long>(h) * sh.head_dim;
    const float* kh_rows = k + static_cast<long>(kh) * sh.head_dim;
    const float* vh_rows = v + static_cast<long>(kh) * sh.head_dim;
    float* p = scratch;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, sh.m, len, sh.head_dim, sh.scale, qh,
                sh.q_stride, kh_rows, sh.kv_stride, 0.0f, p, len);
    for (int i = 0; i < sh.m; ++i) {
      float* row = p + static_cast<long>(i) * len;
      const int last = sh.pos0 + i;  // inclusive
      float mx = row[0];
      for (int j = 1; j <= last; ++j) mx = row[j] > mx ? row[j] : mx;
      float sum = 0.0f;
      for (int j = 0; j <= last; ++j) {
        row[j] = std::exp(row[j] - mx);
        sum += row[j];
      }
      const float inv = 1.0f / sum;
      for (int j = 0; j <= last; ++j) row[j] *= inv;
      for (int j = last + 1; j < len; ++j) row[j] = 0.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, sh.m, sh.head_dim, len, 1.0f, p, len,
                vh_rows, sh.kv_stride, 0.0f, o + static_cast<long>(h) * sh.head_dim, sh.o_stride);
  }
}

}  // namespace anchorage::kernels::cpu
