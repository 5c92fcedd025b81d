// vision_cuda::layer_norm; see vision_ops.hpp.
#include "runtime/vision/cuda/vision_ops.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::vision_cuda {
namespace {

constexpr int kThreads = 256;

// One block per row. Each thread sums its strided elements in order, in double, then a fixed tree:
// the mean, then the squared deviations from it (two passes, as the CPU). x and y may alias: a
// thread writes only the elements it alone read, after the last barrier.
__global__ void __launch_bounds__(kThreads) layer_norm_kernel(const float* x, int width, const float* weight,
                                                              const float* bias, float eps, float* y) {
  __shared__ double red[kThreads];
  const float* in = x + static_cast<long>(blockIdx.x) * width;
  float* out = y + static_cast<long>(blockIdx.x) * width;
  double sum = 0.0;
  for (int i = threadIdx.x; i < width; i += kThreads) sum += in[i];
  const double mean = kernels::cuda_impl::block_sum<kThreads>(sum, red) / width;
  double squares = 0.0;
  for (int i = threadIdx.x; i < width; i += kThreads) {
    const double d = in[i] - mean;
    squares += d * d;
  }
  const double inv =
      1.0 / sqrt(kernels::cuda_impl::block_sum<kThreads>(squares, red) / width + static_cast<double>(eps));
  for (int i = threadIdx.x; i < width; i += kThreads)
    out[i] = static_cast<float>((in[i] - mean) * inv) * weight[i] + bias[i];
}

}  // namespace

void layer_norm(const float* x, int rows, int width, const float* weight, const float* bias, float eps,
                float* y) {
  if (rows <= 0 || width <= 0) return;
  layer_norm_kernel<<<rows, kThreads>>>(x, width, weight, bias, eps, y);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::vision_cuda
