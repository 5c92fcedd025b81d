// vision_cuda::linear: the bias laid down, then one cuBLAS sgemm; see vision_ops.hpp.
#include "runtime/vision/cuda/vision_ops.hpp"

#include "kernels/cuda/common.cuh"
#include "kernels/gemm.hpp"

namespace anchorage::vision_cuda {
namespace {

// y = (accumulate ? y : 0) + bias, row by row (the CPU's fill then +=: 0 + bias, bit for bit).
__global__ void bias_kernel(float* y, long rows, int out, const float* bias, bool accumulate) {
  const long total = rows * out;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    float v = accumulate ? y[idx] : 0.0f;
    if (bias != nullptr) v += bias[idx % out];
    y[idx] = v;
  }
}

}  // namespace

void linear(const float* x, int rows, int in, const float* weight, const float* bias, int out, float* y,
            bool accumulate) {
  if (rows <= 0 || out <= 0) return;
  if (!accumulate || bias != nullptr) {
    const long total = static_cast<long>(rows) * out;
    const int threads = kernels::cuda_impl::kElementThreads;
    bias_kernel<<<kernels::cuda_impl::grid_for(total, threads), threads>>>(y, rows, out, bias, accumulate);
    CUDA_CHECK_LAUNCH();
  }
  if (in <= 0) return;
  kernels::cuda::gemm(true, rows, out, in, 1.0f, x, in, weight, in, 1.0f, y, out);
}

}  // namespace anchorage::vision_cuda
