#include "kernels/rmsnorm.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row: each thread sums the squares of its strided elements in order, then a
// fixed tree over the block; x and y may alias (every read of the row precedes the tree's
// barriers, every write follows them).
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const float* x, int x_stride, const float* w, float* y, int y_stride, int dim, float eps) {
  __shared__ float red[kThreads];
  const float* xr = x + static_cast<long>(blockIdx.x) * x_stride;
  float* yr = y + static_cast<long>(blockIdx.x) * y_stride;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < dim; i += kThreads) ss += xr[i] * xr[i];
  ss = cuda_impl::block_sum<kThreads>(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += kThreads) yr[i] = xr[i] * inv * w[i];
}

}  // namespace

void rmsnorm(const float* x, int x_stride, const float* w, float* y, int y_stride, int rows, int dim,
             float eps) {
  if (rows <= 0 || dim <= 0) return;
  rmsnorm_kernel<<<rows, kThreads>>>(x, x_stride, w, y, y_stride, dim, eps);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
