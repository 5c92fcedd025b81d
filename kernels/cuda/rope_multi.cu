#include "kernels/rope_multi.hpp"

#include <cstddef>
#include <vector>

#include "kernels/cuda/rope_rows.cuh"

namespace anchorage::kernels::cuda {
namespace {

// Each frequency pair's position per row (rows x half, device memory), chosen on the host.
struct pair_pos {
  const int* pos;
  int half;
  __device__ double operator()(int r, int i) const {
    return static_cast<double>(pos[static_cast<long>(r) * half + i]);
  }
};

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
  // Scratch from the stream-ordered pool, like every cuda:: op's: freed (to the pool) after the
  // kernel that reads it, without a cudaMalloc / cudaFree per call. The copy from pageable memory
  // has read per_pair by the time it returns and is queued on the default stream before the kernel.
  const std::size_t bytes = per_pair.size() * sizeof(int);
  cuda_impl::stream_buffer dpos(bytes);
  CUDA_CHECK(cudaMemcpyAsync(dpos.as<int>(), per_pair.data(), bytes, cudaMemcpyHostToDevice, nullptr));
  cuda_impl::launch_rope_rows(x, stride, rows, heads, head_dim, rot_dims, base,
                              pair_pos{dpos.as<int>(), half});
}

}  // namespace anchorage::kernels::cuda
