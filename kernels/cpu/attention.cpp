#include "kernels/attention.hpp"

#include <cblas.h>

#include <cstring>

#include "kernels/cpu/fast_exp.hpp"

namespace anchorage::kernels::cpu {
namespace {

// Softmax of row[0..last] in place, zeros after it up to len. Max and sum run over eight
// fixed lanes: the order is the code's, so the result is the same bits every run.
void softmax_row(float* row, int last, int len) {
  const int n = last + 1;
  float mx8[8];
  for (int l = 0; l < 8; ++l) mx8[l] = row[0];
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) mx8[l] = row[j + l] > mx8[l] ? row[j + l] : mx8[l];
  float mx = mx8[0];
  for (int l = 1; l < 8; ++l) mx = mx8[l] > mx ? mx8[l] : mx;
  for (; j < n; ++j) mx = row[j] > mx ? row[j] : mx;

  for (int i = 0; i < n; ++i) row[i] = fast_exp(row[i] - mx);
  float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) s8[l] += row[j + l];
  float sum = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
  for (; j < n; ++j) sum += row[j];
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) row[i] *= inv;
  if (len > n) std::memset(row + n, 0, sizeof(float) * static_cast<std::size_t>(len - n));
}

}  // namespace

// The query heads that share a kv head are stacked into one matrix (group * m rows), so K and
// V are read once per kv head: scores = Q K^T, softmax per row, out = P V.
void attention(const float* q, const float* k, const float* v, float* o,
               const attention_shape& sh, float* scratch) {
  const int len = sh.pos0 + sh.m;
  const int group = sh.n_q / sh.n_kv;
  const int rows = group * sh.m;
  const int hd = sh.head_dim;
  float* p = scratch;                                     // rows * len
  float* qs = p + static_cast<long>(rows) * len;          // rows * hd
  float* os = qs + static_cast<long>(rows) * hd;          // rows * hd
  for (int kh = 0; kh < sh.n_kv; ++kh) {
    for (int gi = 0; gi < group; ++gi)
      for (int i = 0; i < sh.m; ++i)
        std::memcpy(qs + (static_cast<long>(gi) * sh.m + i) * hd,
                    q + static_cast<long>(i) * sh.q_stride + static_cast<long>(kh * group + gi) * hd,
                    sizeof(float) * static_cast<std::size_t>(hd));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, len, hd, sh.scale, qs, hd,
                k + static_cast<long>(kh) * hd, sh.kv_stride, 0.0f, p, len);
    for (int r = 0; r < rows; ++r) softmax_row(p + static_cast<long>(r) * len, sh.pos0 + r % sh.m, len);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, len, 1.0f, p, len,
                v + static_cast<long>(kh) * hd, sh.kv_stride, 0.0f, os, hd);
    for (int gi = 0; gi < group; ++gi)
      for (int i = 0; i < sh.m; ++i)
        std::memcpy(o + static_cast<long>(i) * sh.o_stride + static_cast<long>(kh * group + gi) * hd,
                    os + (static_cast<long>(gi) * sh.m + i) * hd, sizeof(float) * static_cast<std::size_t>(hd));
  }
}

}  // namespace anchorage::kernels::cpu
