#pragma once
#include "kernels/op.hpp"
// x[i] += y[i] for i < n.
ANCHORAGE_OP(void, add, (float* x, const float* y, long n))
