#include "kernels/gemm.hpp"

#include <cblas.h>

namespace anchorage::kernels::cpu {

void gemm(bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  if (m == 1 && trans_b) {  // one row (decode, the LM head): y = B a, a matrix-vector product
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, alpha, b, ldb, a, 1, beta, c, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

}  // namespace anchorage::kernels::cpu
