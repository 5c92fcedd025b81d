#include "kernels/attention.hpp"

#include <cmath>

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

constexpr int kThreads = 128;  // also the number of keys per tile

// One block per (query row i, query head h), blockIdx.x = i * n_q + h. The block walks the keys
// 0 .. pos0+i in tiles of kThreads, in order, with an online softmax:
//   1. thread t scores key tile0 + t: scale * (q . k), the dot in increasing d (masked: -inf);
//   2. tile max and new running max by a fixed tree; p_t = exp(s_t - max), zero when masked;
//   3. tile sum of p by a fixed tree; running sum = sum * exp(old max - new max) + tile sum;
//   4. thread d keeps acc[d] = acc[d] * exp(old max - new max) + sum_t p_t v[t][d] (t in order);
// and writes o = acc / sum at the end. Every reduction has a fixed shape: deterministic. The
// math is the CPU's softmax(scale q K^T) V, with the normalisation applied once at the end.
// The caller's scratch is not needed (nothing is materialised beyond one tile per block).
__global__ void __launch_bounds__(kThreads)
    attention_kernel(const float* q, const float* k, const float* v, float* o, attention_shape sh) {
  extern __shared__ float smem[];
  const int hd = sh.head_dim;
  float* qs = smem;           // hd: the query row
  float* acc = qs + hd;       // hd: unnormalised output
  float* p = acc + hd;        // kThreads: the tile's probabilities
  float* red = p + kThreads;  // kThreads: reduction buffer

  const int tid = threadIdx.x;
  const int h = blockIdx.x % sh.n_q;
  const int i = blockIdx.x / sh.n_q;
  const int kh = h / (sh.n_q / sh.n_kv);
  const int last = sh.pos0 + i;  // inclusive
  const float* qi = q + static_cast<long>(i) * sh.q_stride + static_cast<long>(h) * hd;
  const float* kb = k + static_cast<long>(kh) * hd;
  const float* vb = v + static_cast<long>(kh) * hd;

  for (int d = tid; d < hd; d += kThreads) {
    qs[d] = qi[d];
    acc[d] = 0.0f;
  }
  __syncthreads();

  float run_max = -INFINITY;
  float run_sum = 0.0f;
  for (int tile0 = 0; tile0 <= last; tile0 += kThreads) {
    const int j = tile0 + tid;
    const bool live = j <= last;
    float s = -INFINITY;
    if (live) {
      const float* kj = kb + static_cast<long>(j) * sh.kv_stride;
      float dot = 0.0f;
      for (int d = 0; d < hd; ++d) dot += qs[d] * kj[d];
      s = sh.scale * dot;
    }
    const float tile_max = cuda_impl::block_max<kThreads>(s, red);
    const float new_max = fmaxf(run_max, tile_max);  // finite: key tile0 <= last is live
    const float e = live ? expf(s - new_max) : 0.0f;
    p[tid] = e;
    const float tile_sum = cuda_impl::block_sum<kThreads>(e, red);  // its barriers publish p
    const float corr = expf(run_max - new_max);                     // 0 on the first tile
    run_sum = run_sum * corr + tile_sum;
    run_max = new_max;
    const int n = min(kThreads, last + 1 - tile0);
    for (int d = tid; d < hd; d += kThreads) {
      float a = acc[d] * corr;
      const float* vd = vb + static_cast<long>(tile0) * sh.kv_stride + d;
      for (int t = 0; t < n; ++t) a += p[t] * vd[static_cast<long>(t) * sh.kv_stride];
      acc[d] = a;
    }
    __syncthreads();  // p is rewritten by the next tile
  }

  float* oi = o + static_cast<long>(i) * sh.o_stride + static_cast<long>(h) * hd;
  const float inv = 1.0f / run_sum;
  for (int d = tid; d < hd; d += kThreads) oi[d] = acc[d] * inv;
}

}  // namespace

void attention(const float* q, const float* k, const float* v, float* o, const attention_shape& shape,
               float* scratch) {
  (void)scratch;
  if (shape.m <= 0 || shape.n_q <= 0 || shape.head_dim <= 0) return;
  const long blocks = static_cast<long>(shape.m) * shape.n_q;
  const std::size_t smem = (2 * static_cast<std::size_t>(shape.head_dim) + 2 * kThreads) * sizeof(float);
  if (smem > 48 * 1024) {
    CUDA_CHECK(cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)));
  }
  attention_kernel<<<static_cast<unsigned>(blocks), kThreads, smem>>>(q, k, v, o, shape);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
