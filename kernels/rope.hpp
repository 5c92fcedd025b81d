#pragma once
#include "kernels/op.hpp"
// Rotary position embedding, "rotate half" (NeoX) form, in place. Row r is at position pos0 + r;
// it holds `heads` heads of `head_dim` floats starting at x + r*stride. For i < head_dim/2:
// theta_i = pos * base^(-2i/head_dim); (x_i, x_{i+d/2}) -> (x_i cos - x_{i+d/2} sin, x_i sin + x_{i+d/2}
// cos). Angles are computed in double precision.
ANCHORAGE_OP(void, rope, (float* x, int stride, int rows, int heads, int head_dim, int pos0, float base))
