#include "kernels/rope.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

// One thread per (row, head, i < rot_dims/2) pair; the angle in double, as on the CPU.
__global__ void rope_kernel(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, int pos0,
                            float base) {
  const int half = rot_dims / 2;
  const long total = static_cast<long>(rows) * heads * half;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % half);
    const long rest = idx / half;
    const int h = static_cast<int>(rest % heads);
    const int r = static_cast<int>(rest / heads);
    const double pos = static_cast<double>(pos0 + r);
    const double theta = pos * pow(static_cast<double>(base), -2.0 * i / rot_dims);
    double sd, cd;
    sincos(theta, &sd, &cd);
    const float c = static_cast<float>(cd);
    const float s = static_cast<float>(sd);
    float* xh = x + static_cast<long>(r) * stride + static_cast<long>(h) * head_dim;
    const float a = xh[i];
    const float b = xh[i + half];
    xh[i] = a * c - b * s;
    xh[i + half] = a * s + b * c;
  }
}

}  // namespace

void rope(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, int pos0, float base) {
  const long total = static_cast<long>(rows) * heads * (rot_dims / 2);
  if (total <= 0) return;
  const int threads = cuda_impl::kElementThreads;
  rope_kernel<<<cuda_impl::grid_for(total, threads), threads>>>(x, stride, rows, heads, head_dim, rot_dims,
                                                                pos0, base);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
