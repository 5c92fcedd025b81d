#include "kernels/swiglu.hpp"

#include <cmath>

namespace anchorage::kernels::cpu {

void swiglu(const float* in, float* out, int rows, int hidden) {
  for (int r = 0; r < rows; ++r) {
    const float* gate = in + 2L * r * hidden;
    const float* up = gate + hidden;
    float* o = out + static_cast<long>(r) * hidden;
    for (int i = 0; i < hidden; ++i) o[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }
}

}  // namespace anchorage::kernels::cpu
