#include "kernels/gdn_step.hpp"

#include <cmath>
#include <vector>

namespace anchorage::kernels::cpu {

void gdn_step(const float* qkv, const float* g, const float* beta, float* s, float* o, const gdn_shape& sh) {
  const int group = sh.hv / sh.hk;
  std::vector<float> d(static_cast<std::size_t>(sh.dv));
  for (int t = 0; t < sh.tokens; ++t) {
    const float* row = qkv + static_cast<long>(t) * sh.stride;
    for (int h = 0; h < sh.hv; ++h) {
      const int kh = h / group;
      const float* q = row + kh * sh.dk;
      const float* k = row + sh.hk * sh.dk + kh * sh.dk;
      const float* v = row + 2 * sh.hk * sh.dk + h * sh.dv;
      float* st = s + static_cast<long>(h) * sh.dk * sh.dv;
      const float decay = std::exp(g[static_cast<long>(t) * sh.hv + h]);
      const float b = beta[static_cast<long>(t) * sh.hv + h];
      const long n = static_cast<long>(sh.dk) * sh.dv;
      for (long i = 0; i < n; ++i) st[i] *= decay;
      // d = b (v - S^T k), accumulated row by row of S
      for (int j = 0; j < sh.dv; ++j) d[j] = 0.0f;
      for (int i = 0; i < sh.dk; ++i) {
        const float ki = k[i];
        const float* srow = st + static_cast<long>(i) * sh.dv;
        for (int j = 0; j < sh.dv; ++j) d[j] += srow[j] * ki;
      }
      for (int j = 0; j < sh.dv; ++j) d[j] = b * (v[j] - d[j]);
      // S += k d^T
      for (int i = 0; i < sh.dk; ++i) {
        const float ki = k[i];
        float* srow = st + static_cast<long>(i) * sh.dv;
        for (int j = 0; j < sh.dv; ++j) srow[j] += ki * d[j];
      }
      // o = S^T (scale q)
      float* out = o + static_cast<long>(t) * sh.hv * sh.dv + static_cast<long>(h) * sh.dv;
      for (int j = 0; j < sh.dv; ++j) out[j] = 0.0f;
      for (int i = 0; i < sh.dk; ++i) {
        const float qi = q[i] * sh.scale;
        const float* srow = st + static_cast<long>(i) * sh.dv;
        for (int j = 0; j < sh.dv; ++j) out[j] += srow[j] * qi;
      }
    }
  }
}

}  // namespace anchorage::kernels::cpu
