// vision_cuda::gelu_tanh and gelu_erf; see vision_ops.hpp.
#include "runtime/vision/cuda/vision_ops.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::vision_cuda {
namespace {

__global__ void gelu_tanh_kernel(float* x, long n) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
  }
}

__global__ void gelu_erf_kernel(float* x, long n) {
  const float r = 0.7071067811865476f;  // 1 / sqrt 2
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * r));
}

}  // namespace

void gelu_tanh(float* x, std::size_t n) {
  if (n == 0) return;
  const long total = static_cast<long>(n);
  const int threads = kernels::cuda_impl::kElementThreads;
  gelu_tanh_kernel<<<kernels::cuda_impl::grid_for(total, threads), threads>>>(x, total);
  CUDA_CHECK_LAUNCH();
}

void gelu_erf(float* x, std::size_t n) {
  if (n == 0) return;
  const long total = static_cast<long>(n);
  const int threads = kernels::cuda_impl::kElementThreads;
  gelu_erf_kernel<<<kernels::cuda_impl::grid_for(total, threads), threads>>>(x, total);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::vision_cuda
