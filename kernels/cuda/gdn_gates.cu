#include "kernels/gdn_gates.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

__global__ void gdn_gates_kernel(const float* a, const float* b, const float* a_log, const float* dt_bias,
                                 float* g, float* beta, int rows, int heads) {
  const long total = static_cast<long>(rows) * heads;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const int h = static_cast<int>(i % heads);
    const float x = a[i] + dt_bias[h];
    const float sp = x > 20.0f ? x : log1pf(expf(x));
    g[i] = -expf(a_log[h]) * sp;
    beta[i] = 1.0f / (1.0f + expf(-b[i]));
  }
}

}  // namespace

void gdn_gates(const float* a, const float* b, const float* a_log, const float* dt_bias, float* g,
               float* beta, int rows, int heads) {
  const long total = static_cast<long>(rows) * heads;
  if (total <= 0) return;
  const int threads = cuda_impl::kElementThreads;
  gdn_gates_kernel<<<cuda_impl::grid_for(total, threads), threads>>>(a, b, a_log, dt_bias, g, beta, rows,
                                                                     heads);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
