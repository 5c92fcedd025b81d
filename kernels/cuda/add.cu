#include "kernels/add.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

__global__ void add_kernel(float* x, const float* y, long n) {
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

}  // namespace

void add(float* x, const float* y, long n) {
  if (n <= 0) return;
  const int threads = cuda_impl::kElementThreads;
  add_kernel<<<cuda_impl::grid_for(n, threads), threads>>>(x, y, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
