#include "kernels/causal_conv1d.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace anchorage::kernels::cpu {

void causal_conv1d(const float* x, const float* w, float* tail, float* y, int rows, int channels,
                   int ksize) {
  const int hist = ksize - 1;
  // in(t) for t in [-hist, rows): the tail then x.
  auto in = [&](int t, int c) -> float {
    return t < 0 ? tail[static_cast<long>(t + hist) * channels + c]
                 : x[static_cast<long>(t) * channels + c];
  };
  for (int t = 0; t < rows; ++t) {
    for (int c = 0; c < channels; ++c) {
      float acc = 0.0f;
      for (int j = 0; j < ksize; ++j) acc += w[static_cast<long>(c) * ksize + j] * in(t - hist + j, c);
      y[static_cast<long>(t) * channels + c] = acc / (1.0f + std::exp(-acc));
    }
  }
  // New tail: the last `hist` inputs of [old tail | x].
  std::vector<float> next(static_cast<std::size_t>(hist) * channels);
  for (int i = 0; i < hist; ++i) {
    const int t = rows - hist + i;
    for (int c = 0; c < channels; ++c) next[static_cast<std::size_t>(i) * channels + c] = in(t, c);
  }
  if (hist > 0) std::memcpy(tail, next.data(), next.size() * sizeof(float));
}

}  // namespace anchorage::kernels::cpu
