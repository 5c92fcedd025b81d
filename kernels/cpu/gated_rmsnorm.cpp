#include "kernels/gated_rmsnorm.hpp"

#include <cmath>

#include "kernels/cpu/fast_exp.hpp"

namespace anchorage::kernels::cpu {

void gated_rmsnorm(const float* x, const float* z, const float* w, float* y, int rows, int heads, int dim,
                   float eps) {
  const long groups = static_cast<long>(rows) * heads;
  for (long g = 0; g < groups; ++g) {
    const float* xg = x + g * dim;
    const float* zg = z + g * dim;
    float* yg = y + g * dim;
    float ss = 0.0f;
    for (int i = 0; i < dim; ++i) ss += xg[i] * xg[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    for (int i = 0; i < dim; ++i) {
      const float gate = fast_silu(zg[i]);
      yg[i] = xg[i] * inv * w[i] * gate;
    }
  }
}

}  // namespace anchorage::kernels::cpu
