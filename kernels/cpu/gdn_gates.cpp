#include "kernels/gdn_gates.hpp"

#include <cmath>

namespace anchorage::kernels::cpu {

void gdn_gates(const float* a, const float* b, const float* a_log, const float* dt_bias, float* g,
               float* beta, int rows, int heads) {
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      const long i = static_cast<long>(r) * heads + h;
      const float x = a[i] + dt_bias[h];
      const float sp = x > 20.0f ? x : std::log1p(std::exp(x));
      g[i] = -std::exp(a_log[h]) * sp;
      beta[i] = 1.0f / (1.0f + std::exp(-b[i]));
    }
  }
}

}  // namespace anchorage::kernels::cpu
