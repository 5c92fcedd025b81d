#pragma once
#include "kernels/op.hpp"
// Gated DeltaNet gates, per row and value head h (`heads` per row, rows contiguous):
//   g[r][h]    = -exp(a_log[h]) * softplus(a[r][h] + dt_bias[h])   (log decay, <= 0)
//   beta[r][h] = sigmoid(b[r][h])
// softplus(x) = log1p(exp(x)), taken as x for x > 20.
ANCHORAGE_OP(void, gdn_gates,
             (const float* a, const float* b, const float* a_log, const float* dt_bias, float* g, float* beta,
              int rows, int heads))
