#pragma once
#include "kernels/op.hpp"
// In place: every group of `dim` floats (`heads` per row, row stride `stride`) divided by
// sqrt(sum of squares + eps).
ANCHORAGE_OP(void, l2norm, (float* x, int stride, int rows, int heads, int dim, float eps))
