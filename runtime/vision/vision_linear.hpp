#pragma once
// A linear layer as PyTorch's nn.Linear computes it, in float32 through OpenBLAS.
#include <cstddef>

namespace anchorage {

// y[rows, out] = x[rows, in] * weight^T + bias, with `weight` [out, in] row-major (PyTorch's
// layout) and `bias` [out] (nullptr for none). With `accumulate` the result is added to what y
// holds (a residual connection) instead of replacing it. x and y must not overlap. Rows of x are
// `in` floats apart and rows of y `out` floats apart. Thread-safe for distinct y.
void vision_linear(const float* x, int rows, int in, const float* weight, const float* bias, int out,
                   float* y, bool accumulate = false);

}  // namespace anchorage
