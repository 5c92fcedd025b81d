#include "kernels/rope_multi.hpp"

#include <cmath>

namespace anchorage::kernels::cpu {

void rope_multi(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, const int* pos,
                const int* sections, float base) {
  const int half = rot_dims / 2;
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < half; ++i) {
      const double p = static_cast<double>(pos[3 * r + rope_multi_axis(i, sections)]);
      const double theta = p * std::pow(static_cast<double>(base), -2.0 * i / rot_dims);
      const float c = static_cast<float>(std::cos(theta));
      const float s = static_cast<float>(std::sin(theta));
      for (int h = 0; h < heads; ++h) {
        float* xh = x + static_cast<long>(r) * stride + static_cast<long>(h) * head_dim;
        const float a = xh[i];
        const float b = xh[i + half];
        xh[i] = a * c - b * s;
        xh[i + half] = a * s + b * c;
      }
    }
  }
}

}  // namespace anchorage::kernels::cpu
