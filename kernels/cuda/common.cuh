#pragma once
// Helpers shared by the kernels/cuda/*.cu files (internal to the CUDA backend).
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda/check.cuh"

namespace anchorage::kernels::cuda_impl {

// Threads per block of the element-wise kernels.
constexpr int kElementThreads = 256;

// Blocks for a grid-stride loop over n items (at least 1, capped: the loops stride).
inline unsigned grid_for(long n, int threads) {
  constexpr long kMaxBlocks = 1L << 20;
  long blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks);
}

// After a launch: reports a failed launch (bad configuration, no device) right away; errors
// during execution surface at the next synchronising call (device_sync).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// Temporary device memory ordered on the default stream (cudaMallocAsync / cudaFreeAsync when
// the device supports memory pools, else cudaMalloc / cudaFree): freeing after queued kernels is
// safe and does not synchronise the host. Defined in device.cu.
void* stream_alloc(std::size_t bytes);
void stream_free(void* p) noexcept;

class stream_buffer {
 public:
  explicit stream_buffer(std::size_t bytes) : p_(stream_alloc(bytes)) {}
  ~stream_buffer() { stream_free(p_); }
  stream_buffer(const stream_buffer&) = delete;
  stream_buffer& operator=(const stream_buffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_;
};

// Sum of one value per thread over the block, by a fixed shared-memory tree (deterministic), in
// T (float, or double where a sum needs it). THREADS is blockDim.x, a power of two; red holds
// THREADS values. Every thread gets the sum. Must be called by all threads of the block.
template <int THREADS, class T>
__device__ __forceinline__ T block_sum(T v, T* red) {
  static_assert((THREADS & (THREADS - 1)) == 0, "THREADS must be a power of two");
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
#pragma unroll
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = red[tid] + red[tid + s];
    __syncthreads();
  }
  const T r = red[0];
  __syncthreads();  // red may be reused right after
  return r;
}

template <int THREADS>
__device__ __forceinline__ float block_max(float v, float* red) {
  static_assert((THREADS & (THREADS - 1)) == 0, "THREADS must be a power of two");
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
#pragma unroll
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

}  // namespace anchorage::kernels::cuda_impl
