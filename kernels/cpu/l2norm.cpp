#include "kernels/l2norm.hpp"

#include <cmath>

namespace anchorage::kernels::cpu {

void l2norm(float* x, int stride, int rows, int heads, int dim, float eps) {
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      float* v = x + static_cast<long>(r) * stride + static_cast<long>(h) * dim;
      float ss = 0.0f;
      for (int i = 0; i < dim; ++i) ss += v[i] * v[i];
      const float inv = 1.0f / std::sqrt(ss + eps);
      for (int i = 0; i < dim; ++i) v[i] *= inv;
    }
  }
}

}  // namespace anchorage::kernels::cpu
