#pragma once
// A block-wide sum in double for the vision ops (kernels/cuda/common.cuh has the float ones).
#include <cuda_runtime.h>

namespace anchorage::vision_cuda {

// Sum of one value per thread over the block, by a fixed shared-memory tree (deterministic).
// THREADS is blockDim.x, a power of two; red holds THREADS doubles. Every thread gets the sum.
// Must be called by all threads of the block.
template <int THREADS>
__device__ __forceinline__ double block_sum_double(double v, double* red) {
  static_assert((THREADS & (THREADS - 1)) == 0, "THREADS must be a power of two");
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
#pragma unroll
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = red[tid] + red[tid + s];
    __syncthreads();
  }
  const double r = red[0];
  __syncthreads();  // red may be reused right after
  return r;
}

}  // namespace anchorage::vision_cuda
