#pragma once
#include "kernels/op.hpp"
// C[m x n] = alpha * A[m x k] * op(B) + beta * C, row-major.
// trans_b: B is [n x k] (a Linear weight, PyTorch layout) and op(B) = B^T; else B is [k x n].
ANCHORAGE_OP(void, gemm,
             (bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
              int ldb, float beta, float* c, int ldc))
