#pragma once
#include "kernels/op.hpp"
// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, for `rows` rows of `dim`; x and y may alias.
// Row strides: x_stride, y_stride (floats).
ANCHORAGE_OP(void, rmsnorm,
             (const float* x, int x_stride, const float* w, float* y, int y_stride, int rows, int dim,
              float eps))
