// vision_gelu; see vision_gelu.hpp.
#include "runtime/vision/vision_gelu.hpp"

#include <cmath>

namespace anchorage {

void vision_gelu_tanh(float* x, std::size_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
}

void vision_gelu_erf(float* x, std::size_t n) {
  const float r = 0.7071067811865476f;  // 1 / sqrt 2
  for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * r));
}

}  // namespace anchorage
