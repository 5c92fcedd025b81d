#include "kernels/rmsnorm.hpp"

#include <cmath>

namespace anchorage::kernels::cpu {

void rmsnorm(const float* x, int x_stride, const float* w, float* y, int y_stride, int rows, int dim,
             float eps) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<long>(r) * x_stride;
    float* yr = y + static_cast<long>(r) * y_stride;
    float ss = 0.0f;
    for (int i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    for (int i = 0; i < dim; ++i) yr[i] = xr[i] * inv * w[i];
  }
}

}  // namespace anchorage::kernels::cpu
