#include "kernels/gdn_chunk.hpp"

#include <stdexcept>

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

constexpr int kThreads = 512;

// One block per value head h; the block walks the sub-chunks in order and updates its state
// S = s[h] ([dk][dv], global memory) in place. Each head has its own workspace in global memory
// (gdn_chunk_scratch(shape) floats per head, the CPU file's layout), so the heads run in
// parallel. A sub-chunk of c rows is the CPU file's sequence of steps, each a loop of the block's
// threads over output elements, separated by barriers:
//   0. G = cumulative sum of g (thread 0, in order)
//   1. A[i][j] = -(beta_i k_i . k_j) exp(G_i - G_j) for j < i, else 0      (into `qk`)
//   2. T = (I - A)^-1: one thread per column j, rows i = j+1 .. c-1 in order,
//      T[i][j] = A[i][j] + sum_{j<m<i} A[i][m] T[m][j]   (the CPU recursion, same order)
//   3. VB = beta v (into `qs`), KB = beta exp(G) k (into `kd`)
//   4. U = T VB, W = T KB
//   5. Vn = U - W S;  QK = causal(scale q k^T) * exp(G_i - G_j) (into `qk`); QS = scale q S
//   6. o = exp(G) QS + QK Vn;  KD = exp(G_last - G) k (into `kd`)
//   7. S = exp(G_last) S + KD^T Vn
// Every dot product runs over its index in increasing order: no atomics, fixed arithmetic, the
// same bits on every run.
__global__ void __launch_bounds__(kThreads)
    gdn_chunk_kernel(const float* qkv, const float* g, const float* beta, float* s, float* o, gdn_shape sh,
                     float* work, long per_head) {
  const int h = blockIdx.x;
  const int tid = threadIdx.x;
  const int kh = h / (sh.hv / sh.hk);
  const int C = sh.chunk, dk = sh.dk, dv = sh.dv, hv = sh.hv;
  const long ld = sh.stride;
  const long ldo = static_cast<long>(hv) * dv;

  float* t = work + static_cast<long>(h) * per_head;  // C*C: T
  float* qk = t + C * C;                              // C*C: A, then QK
  float* u = qk + C * C;                              // C*dv
  float* vn = u + C * dv;                             // C*dv
  float* qs = vn + C * dv;                            // C*dv: VB, then QS
  float* w = qs + C * dv;                             // C*dk
  float* kd = w + C * dk;                             // C*dk: KB, then KD
  float* gc = kd + C * dk;                            // C
  float* S = s + static_cast<long>(h) * dk * dv;

  for (int t0 = 0; t0 < sh.tokens; t0 += C) {
    const int c = min(C, sh.tokens - t0);
    const float* row = qkv + static_cast<long>(t0) * ld;
    const float* q = row + kh * dk;
    const float* k = row + sh.hk * dk + kh * dk;
    const float* v = row + 2 * sh.hk * dk + h * dv;
    const float* gh = g + static_cast<long>(t0) * hv + h;
    const float* bh = beta + static_cast<long>(t0) * hv + h;
    float* oh = o + static_cast<long>(t0) * ldo + static_cast<long>(h) * dv;

    // 0. cumulative log decay
    if (tid == 0) {
      float acc = 0.0f;
      for (int i = 0; i < c; ++i) {
        acc += gh[static_cast<long>(i) * hv];
        gc[i] = acc;
      }
    }
    __syncthreads();

    // 1. A, strictly lower
    for (int e = tid; e < c * c; e += kThreads) {
      const int i = e / c, j = e % c;
      float val = 0.0f;
      if (j < i) {
        const float* ki = k + i * ld;
        const float* kj = k + j * ld;
        float dot = 0.0f;
        for (int l = 0; l < dk; ++l) dot += ki[l] * kj[l];
        val = -bh[static_cast<long>(i) * hv] * dot * expf(gc[i] - gc[j]);
      }
      qk[e] = val;
    }
    __syncthreads();

    // 2. T = (I - A)^-1 by forward substitution, column by column (a column only needs A and
    //    its own earlier entries)
    for (int j = tid; j < c; j += kThreads) {
      for (int i = 0; i < j; ++i) t[i * c + j] = 0.0f;
      t[j * c + j] = 1.0f;
      for (int i = j + 1; i < c; ++i) {
        const float* ai = qk + i * c;
        float sum = ai[j];
        for (int m = j + 1; m < i; ++m) sum += ai[m] * t[m * c + j];
        t[i * c + j] = sum;
      }
    }
    // 3. VB = beta v, KB = beta exp(G) k (independent of steps 1-2's outputs)
    for (int e = tid; e < c * dv; e += kThreads) {
      const int i = e / dv, j = e % dv;
      qs[e] = bh[static_cast<long>(i) * hv] * v[i * ld + j];
    }
    for (int e = tid; e < c * dk; e += kThreads) {
      const int i = e / dk, l = e % dk;
      const float bk = bh[static_cast<long>(i) * hv] * expf(gc[i]);
      kd[e] = bk * k[i * ld + l];
    }
    __syncthreads();

    // 4. U = T VB, W = T KB (T is unit lower triangular: terms m > i are exact zeros)
    for (int e = tid; e < c * dv; e += kThreads) {
      const int i = e / dv, j = e % dv;
      const float* ti = t + i * c;
      float acc = 0.0f;
      for (int m = 0; m <= i; ++m) acc += ti[m] * qs[m * dv + j];
      u[e] = acc;
    }
    for (int e = tid; e < c * dk; e += kThreads) {
      const int i = e / dk, l = e % dk;
      const float* ti = t + i * c;
      float acc = 0.0f;
      for (int m = 0; m <= i; ++m) acc += ti[m] * kd[m * dk + l];
      w[e] = acc;
    }
    __syncthreads();

    // 5. Vn = U - W S;  QK;  QS = scale q S   (S is only read here)
    for (int e = tid; e < c * dv; e += kThreads) {
      const int i = e / dv, j = e % dv;
      const float* wi = w + i * dk;
      float acc = 0.0f;
      for (int l = 0; l < dk; ++l) acc += wi[l] * S[l * dv + j];
      vn[e] = u[e] - acc;
    }
    for (int e = tid; e < c * c; e += kThreads) {
      const int i = e / c, j = e % c;
      float val = 0.0f;
      if (j <= i) {
        const float* qi = q + i * ld;
        const float* kj = k + j * ld;
        float dot = 0.0f;
        for (int l = 0; l < dk; ++l) dot += qi[l] * kj[l];
        val = sh.scale * dot * expf(gc[i] - gc[j]);
      }
      qk[e] = val;
    }
    for (int e = tid; e < c * dv; e += kThreads) {
      const int i = e / dv, j = e % dv;
      const float* qi = q + i * ld;
      float acc = 0.0f;
      for (int l = 0; l < dk; ++l) acc += qi[l] * S[l * dv + j];
      qs[e] = sh.scale * acc;
    }
    __syncthreads();

    // 6. o = exp(G) QS + QK Vn;  KD = exp(G_last - G) k
    const float glast = gc[c - 1];
    for (int e = tid; e < c * dv; e += kThreads) {
      const int i = e / dv, j = e % dv;
      const float* qki = qk + i * c;
      float acc = 0.0f;
      for (int m = 0; m <= i; ++m) acc += qki[m] * vn[m * dv + j];
      oh[i * ldo + j] = acc + expf(gc[i]) * qs[e];
    }
    for (int e = tid; e < c * dk; e += kThreads) {
      const int i = e / dk, l = e % dk;
      kd[e] = expf(glast - gc[i]) * k[i * ld + l];
    }
    __syncthreads();

    // 7. S = exp(G_last) S + KD^T Vn
    const float eg = expf(glast);
    for (int e = tid; e < dk * dv; e += kThreads) {
      const int l = e / dv, j = e % dv;
      float acc = 0.0f;
      for (int i = 0; i < c; ++i) acc += kd[i * dk + l] * vn[i * dv + j];
      S[e] = S[e] * eg + acc;
    }
    __syncthreads();  // the next sub-chunk rewrites gc, qk, kd and reads S
  }
}

}  // namespace

// scratch (gdn_chunk_scratch(shape) floats, enough for one head) is not used: the heads run in
// parallel, each with its own workspace, taken from the stream-ordered pool for this call.
void gdn_chunk(const float* qkv, const float* g, const float* beta, float* s, float* o, const gdn_shape& sh,
               float* scratch) {
  (void)scratch;
  if (sh.tokens <= 0 || sh.hv <= 0) return;
  if (sh.chunk <= 0) throw std::invalid_argument("gdn_chunk: shape.chunk must be positive");
  const long per_head = gdn_chunk_scratch(sh);
  cuda_impl::stream_buffer work(static_cast<std::size_t>(per_head) * sh.hv * sizeof(float));
  gdn_chunk_kernel<<<static_cast<unsigned>(sh.hv), kThreads>>>(qkv, g, beta, s, o, sh, work.as<float>(),
                                                               per_head);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
