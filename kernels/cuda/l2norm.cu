#include "kernels/l2norm.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

constexpr int kThreads = 128;

// One block per (row, head) group, in place; fixed-tree sum of squares.
__global__ void __launch_bounds__(kThreads)
    l2norm_kernel(float* x, int stride, int heads, int dim, float eps) {
  __shared__ float red[kThreads];
  const int r = blockIdx.x / heads;
  const int h = blockIdx.x % heads;
  float* v = x + static_cast<long>(r) * stride + static_cast<long>(h) * dim;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < dim; i += kThreads) ss += v[i] * v[i];
  ss = cuda_impl::block_sum<kThreads>(ss, red);
  const float inv = 1.0f / sqrtf(ss + eps);
  for (int i = threadIdx.x; i < dim; i += kThreads) v[i] *= inv;
}

}  // namespace

void l2norm(float* x, int stride, int rows, int heads, int dim, float eps) {
  const long groups = static_cast<long>(rows) * heads;
  if (groups <= 0 || dim <= 0) return;
  l2norm_kernel<<<static_cast<unsigned>(groups), kThreads>>>(x, stride, heads, dim, eps);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
