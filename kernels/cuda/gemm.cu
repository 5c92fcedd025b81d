#include "kernels/gemm.hpp"

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cublas_handle.cuh"

namespace anchorage::kernels::cuda {

// Row-major C = alpha A op(B) + beta C through column-major cuBLAS: a row-major matrix is the
// column-major view of its transpose, so compute C^T = op(B)^T A^T, i.e. swap the operands.
//   A [m x k] row-major, ld lda  == column-major A^T [k x m]            -> CUBLAS_OP_N
//   B [k x n] row-major (!trans_b) == column-major B^T [n x k] = op(B)^T -> CUBLAS_OP_N
//   B [n x k] row-major (trans_b)  == column-major B^T [k x n]; op(B)^T = B -> CUBLAS_OP_T
void gemm(bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  CUBLAS_CHECK(cublasSgemm(cuda_impl::cublas_handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m,
                           k, &alpha, b, ldb, a, lda, &beta, c, ldc));
}

}  // namespace anchorage::kernels::cuda
