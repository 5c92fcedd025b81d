// vision_cuda::attention: rotary in place, then per head and query tile two cuBLAS sgemms around a
// row softmax, reading q, k and v straight from the qkv rows (strided), as vision_attention.cpp
// does with OpenBLAS; see vision_ops.hpp.
#include "runtime/vision/cuda/vision_ops.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/gemm.hpp"

namespace anchorage::vision_cuda {
namespace {

constexpr int kThreads = 256;

// One block per score row: its max by a fixed float tree, exp(s - max) in place, the sum of those in
// double by a fixed tree, then each times the float 1 / sum (the CPU's softmax_rows).
__global__ void __launch_bounds__(kThreads) softmax_rows_kernel(float* scores, int n) {
  __shared__ float red_max[kThreads];
  __shared__ double red_sum[kThreads];
  float* row = scores + static_cast<long>(blockIdx.x) * n;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += kThreads) m = fmaxf(m, row[j]);
  m = kernels::cuda_impl::block_max<kThreads>(m, red_max);
  double sum = 0.0;
  for (int j = threadIdx.x; j < n; j += kThreads) {
    const float e = expf(row[j] - m);
    row[j] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / kernels::cuda_impl::block_sum<kThreads>(sum, red_sum));
  for (int j = threadIdx.x; j < n; j += kThreads) row[j] *= inv;
}

}  // namespace

void attention(float* qkv, int n, int heads, int head_dim, const float* cos, const float* sin, float* out,
               float* scores, int query_tile) {
  if (n <= 0 || heads <= 0 || head_dim <= 0) return;
  rotary(qkv, n, heads, head_dim, cos, sin);
  const int hidden = heads * head_dim, stride = 3 * hidden;
  const int tile = std::max(1, std::min(n, query_tile));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  for (int h = 0; h < heads; ++h) {
    const float* k = qkv + hidden + h * head_dim;
    const float* v = qkv + 2 * hidden + h * head_dim;
    for (int q0 = 0; q0 < n; q0 += tile) {
      const int m = std::min(tile, n - q0);
      const float* q = qkv + static_cast<long>(q0) * stride + h * head_dim;
      kernels::cuda::gemm(true, m, n, head_dim, scale, q, stride, k, stride, 0.0f, scores, n);
      softmax_rows_kernel<<<m, kThreads>>>(scores, n);
      CUDA_CHECK_LAUNCH();
      kernels::cuda::gemm(false, m, head_dim, n, 1.0f, scores, n, v, stride, 0.0f,
                          out + static_cast<long>(q0) * hidden + h * head_dim, hidden);
    }
  }
}

}  // namespace anchorage::vision_cuda
