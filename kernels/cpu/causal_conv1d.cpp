#include "kernels/causal_conv1d.hpp"

#include <cmath>

#include "kernels/cpu/fast_exp.hpp"
#include <cstring>
#include <vector>

namespace anchorage::kernels::cpu {

void causal_conv1d(const float* x, const float* w, float* tail, float* y, int rows, int channels, int ksize) {
  const int hist = ksize - 1;
  const std::size_t ch = static_cast<std::size_t>(channels);
  // in = [old tail | x], row t of x at in + (hist + t) * ch
  std::vector<float> in((static_cast<std::size_t>(hist) + rows) * ch);
  std::memcpy(in.data(), tail, static_cast<std::size_t>(hist) * ch * sizeof(float));
  std::memcpy(in.data() + hist * ch, x, static_cast<std::size_t>(rows) * ch * sizeof(float));
  std::vector<float> wt(static_cast<std::size_t>(ksize) * ch);  // tap-major for unit stride
  for (std::size_t c = 0; c < ch; ++c)
    for (int j = 0; j < ksize; ++j) wt[j * ch + c] = w[c * ksize + j];
  for (int t = 0; t < rows; ++t) {
    float* yt = y + t * ch;
    const float* w0 = wt.data();
    const float* i0 = in.data() + t * ch;  // input row t - hist
    for (std::size_t c = 0; c < ch; ++c) yt[c] = w0[c] * i0[c];
    for (int j = 1; j < ksize; ++j) {
      const float* wj = wt.data() + j * ch;
      const float* ij = in.data() + (t + j) * ch;
      for (std::size_t c = 0; c < ch; ++c) yt[c] += wj[c] * ij[c];
    }
    for (std::size_t c = 0; c < ch; ++c) yt[c] = fast_silu(yt[c]);
  }
  if (hist > 0) std::memcpy(tail, in.data() + rows * ch, static_cast<std::size_t>(hist) * ch * sizeof(float));
}

}  // namespace anchorage::kernels::cpu
