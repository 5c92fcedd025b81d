#pragma once
#include "kernels/op.hpp"
// Rotary position embedding, "rotate half" (NeoX) form, in place, on the first `rot_dims` floats
// of each head (rot_dims even, <= head_dim; rot_dims == head_dim rotates the whole head). Row r is
// at position pos0 + r; it holds `heads` heads of `head_dim` floats starting at x + r*stride. With
// half = rot_dims/2, for i < half: theta_i = pos * base^(-2i/rot_dims);
// (x_i, x_{i+half}) -> (x_i cos - x_{i+half} sin, x_i sin + x_{i+half} cos). Floats rot_dims ..
// head_dim-1 of a head pass through. Angles are computed in double precision.
ANCHORAGE_OP(void, rope,
             (float* x, int stride, int rows, int heads, int head_dim, int rot_dims, int pos0, float base))
