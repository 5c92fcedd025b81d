#pragma once
#include "kernels/op.hpp"
// The Gated DeltaNet output norm: for every row and head h (groups of `dim` floats, `heads` per
// row, rows contiguous at heads*dim), y = rmsnorm(x) * w * silu(z). w has `dim` entries shared
// by all heads. x and y may alias; z has the same shape as x.
ANCHORAGE_OP(void, gated_rmsnorm,
             (const float* x, const float* z, const float* w, float* y, int rows, int heads, int dim,
              float eps))
