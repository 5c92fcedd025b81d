#include "kernels/rope_multi.hpp"

#include <vector>

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

// One thread per (row, head, i < rot_dims/2) pair; the angle in double, as on the CPU. `pos`
// holds each frequency pair's position per row (rows x half), chosen on the host.
__global__ void rope_multi_kernel(float* x, int stride, int rows, int heads, int head_dim, int rot_dims,
                                  const int* pos, float base) {
  const int half = rot_dims / 2;
  const long total = static_cast<long>(rows) * heads * half;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % half);
    const long rest = idx / half;
    const int h = static_cast<int>(rest % heads);
    const int r = static_cast<int>(rest / heads);
    const double p = static_cast<double>(pos[static_cast<long>(r) * half + i]);
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

}  // namespace

void rope_multi(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, const int* pos,
                const int* sections, float base) {
  const int half = rot_dims / 2;
  const long total = static_cast<long>(rows) * heads * half;
  if (total <= 0) return;
  std::vector<int> per_pair(static_cast<std::size_t>(rows) * half);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < half; ++i)
      per_pair[static_cast<std::size_t>(r) * half + i] = pos[3 * r + rope_multi_axis(i, sections)];
  int* dpos = nullptr;
  CUDA_CHECK(cudaMalloc(&dpos, per_pair.size() * sizeof(int)));
  CUDA_CHECK(cudaMemcpy(dpos, per_pair.data(), per_pair.size() * sizeof(int), cudaMemcpyHostToDevice));
  const int threads = cuda_impl::kElementThreads;
  rope_multi_kernel<<<cuda_impl::grid_for(total, threads), threads>>>(x, stride, rows, heads, head_dim,
                                                                      rot_dims, dpos, base);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFree(dpos));  // cudaFree waits for the kernel that reads it
}

}  // namespace anchorage::kernels::cuda
