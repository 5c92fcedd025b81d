#include "kernels/gemm.hpp"

#include <cblas.h>

#include "kernels/gemm_rows.hpp"

namespace anchorage::kernels::cpu {

void gemm(bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  // One row by a Linear weight (the last prompt row's LM head, a decode outside a batch): the
  // row kernel, whose every output has the same bits however many threads run or how the rows
  // are split. OpenBLAS's sgemv does not promise that: on a core without AVX-512 (its Haswell
  // kernels) two threads gave other bits than one.
  if (m == 1 && trans_b && alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) {
    gemm_rows(1, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (m == 1 && trans_b) {  // y = alpha B a + beta y, a matrix-vector product
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, alpha, b, ldb, a, 1, beta, c, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

}  // namespace anchorage::kernels::cpu
