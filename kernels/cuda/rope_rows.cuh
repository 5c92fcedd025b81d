#pragma once
// The kernel shared by cuda::rope and cuda::rope_multi (internal to the CUDA backend).
#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda_impl {

// One thread per (row, head, i < rot_dims/2) pair; the angle in double, as on the CPU
// (kernels/cpu/rope_rows.hpp): frequency pair i of row r is at position pos_of(r, i) (a double).
// Both ops run this body so that a row whose positions are all p gets from rope_multi exactly the
// bits rope gives at p.
template <class PosOf>
__global__ void rope_rows_kernel(float* x, int stride, int rows, int heads, int head_dim, int rot_dims,
                                 float base, PosOf pos_of) {
  const int half = rot_dims / 2;
  const long total = static_cast<long>(rows) * heads * half;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % half);
    const long rest = idx / half;
    const int h = static_cast<int>(rest % heads);
    const int r = static_cast<int>(rest / heads);
    const double p = pos_of(r, i);
    const double theta = p * pow(static_cast<double>(base), -2.0 * i / rot_dims);
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

// Queues rope_rows_kernel on the default stream (nothing when there is no pair to rotate).
template <class PosOf>
void launch_rope_rows(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, float base,
                      PosOf pos_of) {
  const long total = static_cast<long>(rows) * heads * (rot_dims / 2);
  if (total <= 0) return;
  const int threads = kElementThreads;
  rope_rows_kernel<<<grid_for(total, threads), threads>>>(x, stride, rows, heads, head_dim, rot_dims, base,
                                                          pos_of);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda_impl
