// vision_linear: one sgemm after the bias is laid down; see vision_linear.hpp.
#include "runtime/vision/vision_linear.hpp"

#include <algorithm>

#include <cblas.h>

namespace anchorage {

void vision_linear(const float* x, int rows, int in, const float* weight, const float* bias, int out,
                   float* y, bool accumulate) {
  if (rows <= 0 || out <= 0) return;
  for (int r = 0; r < rows; ++r) {
    float* row = y + static_cast<std::size_t>(r) * out;
    if (!accumulate) std::fill(row, row + out, 0.0f);
    if (bias != nullptr)
      for (int o = 0; o < out; ++o) row[o] += bias[o];
  }
  if (in <= 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, x, in, weight, in, 1.0f, y, out);
}

}  // namespace anchorage
