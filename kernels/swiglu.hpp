#pragma once
#include "kernels/op.hpp"
// out[r][i] = silu(in[r][i]) * in[r][hidden + i]: `in` rows hold [gate | up], 2*hidden floats.
ANCHORAGE_OP(void, swiglu, (const float* in, float* out, int rows, int hidden))
