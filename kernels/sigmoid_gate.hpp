#pragma once
#include "kernels/op.hpp"
// The output gate of gated attention, in place: for `rows` rows of `dim` floats,
// x[r*x_stride + i] *= sigmoid(gate[r*gate_stride + i]), sigmoid(v) = 1 / (1 + exp(-v)).
// A row may be one head (rows = tokens * heads) so that the gate can sit inside a wider row.
ANCHORAGE_OP(void, sigmoid_gate,
             (float* x, int x_stride, const float* gate, int gate_stride, int rows, int dim))
