#include "kernels/block_checksum.hpp"

#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr long kMaxBlocks = 1024;

using u64 = unsigned long long;

// Word i of the range, little-endian, from an 8-byte aligned base or byte by byte.
template <bool ALIGNED>
__device__ __forceinline__ u64 load_word(const unsigned char* base, long i) {
  if (ALIGNED) return reinterpret_cast<const u64*>(base)[i];
  u64 w = 0;
  for (int b = 7; b >= 0; --b) w = (w << 8) | base[i * 8 + b];
  return w;
}

// Grid-stride partial sums per thread, a shared-memory tree per block, then one integer
// atomicAdd per block and sum: all in integers mod 2^64, so the result does not depend on the
// order (unlike a floating-point atomic).
template <bool ALIGNED>
__global__ void __launch_bounds__(kThreads) checksum_kernel(const unsigned char* base, long words, u64* out) {
  __shared__ u64 r0[kThreads];
  __shared__ u64 r1[kThreads];
  u64 s0 = 0, s1 = 0;
  for (long i = static_cast<long>(blockIdx.x) * kThreads + threadIdx.x; i < words;
       i += static_cast<long>(gridDim.x) * kThreads) {
    const u64 w = load_word<ALIGNED>(base, i);
    s0 += w;
    s1 += static_cast<u64>(i + 1) * w;
  }
  const int tid = threadIdx.x;
  r0[tid] = s0;
  r1[tid] = s1;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (tid < s) {
      r0[tid] += r0[tid + s];
      r1[tid] += r1[tid + s];
    }
    __syncthreads();
  }
  if (tid == 0) {
    atomicAdd(&out[0], r0[0]);
    atomicAdd(&out[1], r1[0]);
  }
}

}  // namespace

// buf: device or managed memory; out: host memory. Queued on the default stream after earlier
// ops; returns once the two sums are on the host.
void block_checksum(const void* buf, long row_bytes, long a, long b, std::uint64_t* out) {
  const long words = (b - a) * row_bytes / 8;
  if (words <= 0) {
    out[0] = 0;
    out[1] = 0;
    return;
  }
  const auto* base = static_cast<const unsigned char*>(buf) + a * row_bytes;
  cuda_impl::stream_buffer sums(2 * sizeof(u64));
  u64* d = sums.as<u64>();
  CUDA_CHECK(cudaMemsetAsync(d, 0, 2 * sizeof(u64), nullptr));
  long blocks = (words + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  if (reinterpret_cast<std::uintptr_t>(base) % 8 == 0)
    checksum_kernel<true><<<static_cast<unsigned>(blocks), kThreads>>>(base, words, d);
  else
    checksum_kernel<false><<<static_cast<unsigned>(blocks), kThreads>>>(base, words, d);
  CUDA_CHECK_LAUNCH();
  u64 host[2] = {0, 0};
  // Default-stream copy into pageable memory: waits for the kernel, returns with the data.
  CUDA_CHECK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
  out[0] = static_cast<std::uint64_t>(host[0]);
  out[1] = static_cast<std::uint64_t>(host[1]);
}

}  // namespace anchorage::kernels::cuda
