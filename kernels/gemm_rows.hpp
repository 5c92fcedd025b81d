#pragma once
#include "kernels/op.hpp"
// The dense product of a decode batch: C[m x n] = A[m x k] B^T + beta C, row-major, B [n x k] (a
// Linear weight, PyTorch layout), for a few rows of A (the slots of runtime/engine/engine_batch).
// Each row of B is read once for all m rows: BLAS's GEMM packs B first and m GEMVs read it m
// times, both of which cost more than the product itself when m is small and B is large (the LM
// head). beta is 0 (C is overwritten) or 1 (C accumulates, a residual).
ANCHORAGE_OP(void, gemm_rows,
             (int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c,
              int ldc))
