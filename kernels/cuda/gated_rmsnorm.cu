#include "kernels/gated_rmsnorm.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

constexpr int kThreads = 128;

// One block per (row, head) group of dim floats, groups contiguous; fixed-tree sum of squares.
__global__ void __launch_bounds__(kThreads)
    gated_rmsnorm_kernel(const float* x, const float* z, const float* w, float* y, int dim, float eps) {
  __shared__ float red[kThreads];
  const long off = static_cast<long>(blockIdx.x) * dim;
  const float* xg = x + off;
  const float* zg = z + off;
  float* yg = y + off;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < dim; i += kThreads) ss += xg[i] * xg[i];
  ss = cuda_impl::block_sum<kThreads>(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += kThreads) {
    const float gate = zg[i] / (1.0f + expf(-zg[i]));
    yg[i] = xg[i] * inv * w[i] * gate;
  }
}

}  // namespace

void gated_rmsnorm(const float* x, const float* z, const float* w, float* y, int rows, int heads, int dim,
                   float eps) {
  const long groups = static_cast<long>(rows) * heads;
  if (groups <= 0 || dim <= 0) return;
  gated_rmsnorm_kernel<<<static_cast<unsigned>(groups), kThreads>>>(x, z, w, y, dim, eps);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
