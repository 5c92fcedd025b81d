// vision_cuda::rotary; see vision_ops.hpp.
#include "runtime/vision/cuda/vision_ops.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::vision_cuda {
namespace {

// One thread per (row p, part q or k, head, i < half): the NeoX pair (i, i + half) of that head,
// rotated by row p's angle i, as apply_vision_rotary.
__global__ void rotary_kernel(float* qkv, int n, int heads, int head_dim, const float* cos,
                              const float* sin) {
  const int half = head_dim / 2, hidden = heads * head_dim;
  const long total = static_cast<long>(n) * 2 * heads * half;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % half);
    long rest = idx / half;
    const int h = static_cast<int>(rest % heads);
    rest /= heads;
    const int part = static_cast<int>(rest % 2);  // 0: q, 1: k
    const long p = rest / 2;
    float* x = qkv + p * 3 * hidden + static_cast<long>(part) * hidden + static_cast<long>(h) * head_dim;
    const float c = cos[p * half + i], s = sin[p * half + i];
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

}  // namespace

void rotary(float* qkv, int n, int heads, int head_dim, const float* cos, const float* sin) {
  const long total = static_cast<long>(n) * 2 * heads * (head_dim / 2);
  if (total <= 0) return;
  const int threads = kernels::cuda_impl::kElementThreads;
  rotary_kernel<<<kernels::cuda_impl::grid_for(total, threads), threads>>>(qkv, n, heads, head_dim, cos, sin);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::vision_cuda
