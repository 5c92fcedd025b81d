#include "kernels/embed.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

__global__ void embed_kernel(const std::int32_t* ids, const float* table, float* out, int rows, int dim) {
  const long total = static_cast<long>(rows) * dim;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const long r = idx / dim;
    const long i = idx % dim;
    out[idx] = table[static_cast<long>(ids[r]) * dim + i];
  }
}

}  // namespace

void embed(const std::int32_t* ids, const float* table, float* out, int rows, int dim) {
  const long total = static_cast<long>(rows) * dim;
  if (total <= 0) return;
  const int threads = cuda_impl::kElementThreads;
  embed_kernel<<<cuda_impl::grid_for(total, threads), threads>>>(ids, table, out, rows, dim);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
