#include "kernels/causal_conv1d.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

// in(t, c) for t in [-hist, rows): the tail, then x.
__device__ __forceinline__ float conv_in(const float* x, const float* tail, int t, int c, int channels,
                                         int hist) {
  return t < 0 ? tail[static_cast<long>(t + hist) * channels + c] : x[static_cast<long>(t) * channels + c];
}

// Pass 1: one thread per (t, c) output; reads the old tail, never writes it.
__global__ void conv_kernel(const float* x, const float* w, const float* tail, float* y, int rows,
                            int channels, int ksize) {
  const int hist = ksize - 1;
  const long total = static_cast<long>(rows) * channels;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(idx / channels);
    const int c = static_cast<int>(idx % channels);
    const float* wc = w + static_cast<long>(c) * ksize;
    float acc = 0.0f;
    for (int j = 0; j < ksize; ++j) acc += wc[j] * conv_in(x, tail, t - hist + j, c, channels, hist);
    y[idx] = acc / (1.0f + expf(-acc));
  }
}

// Pass 2 (queued after pass 1 on the same stream): one thread per channel rewrites its column
// of the tail with the last hist inputs of [old tail | x]. Slot i takes input rows - hist + i;
// when that is still in the old tail it is old slot rows + i > i, which this thread has not yet
// overwritten because it goes in increasing i.
__global__ void tail_kernel(const float* x, float* tail, int rows, int channels, int hist) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < channels; c += gridDim.x * blockDim.x) {
    for (int i = 0; i < hist; ++i)
      tail[static_cast<long>(i) * channels + c] = conv_in(x, tail, rows - hist + i, c, channels, hist);
  }
}

}  // namespace

void causal_conv1d(const float* x, const float* w, float* tail, float* y, int rows, int channels, int ksize) {
  if (rows <= 0 || channels <= 0 || ksize <= 0) return;
  const int threads = cuda_impl::kElementThreads;
  const long total = static_cast<long>(rows) * channels;
  conv_kernel<<<cuda_impl::grid_for(total, threads), threads>>>(x, w, tail, y, rows, channels, ksize);
  CUDA_CHECK_LAUNCH();
  const int hist = ksize - 1;
  if (hist > 0) {
    tail_kernel<<<cuda_impl::grid_for(channels, threads), threads>>>(x, tail, rows, channels, hist);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace anchorage::kernels::cuda
