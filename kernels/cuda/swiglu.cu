#include "kernels/swiglu.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

__global__ void swiglu_kernel(const float* in, float* out, int rows, int hidden) {
  const long total = static_cast<long>(rows) * hidden;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const long r = idx / hidden;
    const long i = idx % hidden;
    const float* gate = in + 2L * r * hidden;
    const float gv = gate[i];
    out[idx] = gv / (1.0f + expf(-gv)) * gate[hidden + i];
  }
}

}  // namespace

void swiglu(const float* in, float* out, int rows, int hidden) {
  const long total = static_cast<long>(rows) * hidden;
  if (total <= 0) return;
  const int threads = cuda_impl::kElementThreads;
  swiglu_kernel<<<cuda_impl::grid_for(total, threads), threads>>>(in, out, rows, hidden);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
