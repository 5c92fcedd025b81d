// vision_layer_norm; see vision_layer_norm.hpp.
#include "runtime/vision/vision_layer_norm.hpp"

#include <cmath>
#include <cstddef>

namespace anchorage {

void vision_layer_norm(const float* x, int rows, int width, const float* weight, const float* bias, float eps,
                       float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<std::size_t>(r) * width;
    float* out = y + static_cast<std::size_t>(r) * width;
    double sum = 0.0;
    for (int i = 0; i < width; ++i) sum += in[i];
    const double mean = sum / width;
    double squares = 0.0;
    for (int i = 0; i < width; ++i) {
      const double d = in[i] - mean;
      squares += d * d;
    }
    const double inv = 1.0 / std::sqrt(squares / width + static_cast<double>(eps));
    for (int i = 0; i < width; ++i) out[i] = static_cast<float>((in[i] - mean) * inv) * weight[i] + bias[i];
  }
}

}  // namespace anchorage
