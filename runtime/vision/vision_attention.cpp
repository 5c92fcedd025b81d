// vision_attention: rotary in place, then scores, softmax and the weighted sum by sgemm over tiles
// of queries, reading q, k and v straight from the qkv rows (strided); see vision_attention.hpp.
#include "runtime/vision/vision_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <cblas.h>

namespace anchorage {
namespace {

constexpr int query_tile = 256;  // the scores of a tile are query_tile x n floats

void softmax_rows(float* s, int rows, int n) {
  for (int r = 0; r < rows; ++r) {
    float* row = s + static_cast<std::size_t>(r) * n;
    const float m = *std::max_element(row, row + n);
    double sum = 0.0;
    for (int j = 0; j < n; ++j) {
      row[j] = std::exp(row[j] - m);
      sum += row[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int j = 0; j < n; ++j) row[j] *= inv;
  }
}

}  // namespace

void vision_attention(float* qkv, int n, int heads, int head_dim, const vision_rotary& rotary, float* out,
                      std::vector<float>& scratch) {
  const int hidden = heads * head_dim, stride = 3 * hidden;
  for (int p = 0; p < n; ++p) {
    float* row = qkv + static_cast<std::size_t>(p) * stride;
    for (int h = 0; h < heads; ++h) {
      apply_vision_rotary(row + h * head_dim, rotary, p);           // q
      apply_vision_rotary(row + hidden + h * head_dim, rotary, p);  // k
    }
  }
  const int tile = std::min(n, query_tile);
  scratch.resize(static_cast<std::size_t>(tile) * n);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  for (int h = 0; h < heads; ++h) {
    const float* k = qkv + hidden + h * head_dim;
    const float* v = qkv + 2 * hidden + h * head_dim;
    for (int q0 = 0; q0 < n; q0 += tile) {
      const int m = std::min(tile, n - q0);
      const float* q = qkv + static_cast<std::size_t>(q0) * stride + h * head_dim;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, head_dim, scale, q, stride, k, stride, 0.0f,
                  scratch.data(), n);
      softmax_rows(scratch.data(), m, n);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, head_dim, n, 1.0f, scratch.data(), n, v,
                  stride, 0.0f, out + static_cast<std::size_t>(q0) * hidden + h * head_dim, hidden);
    }
  }
}

}  // namespace anchorage
