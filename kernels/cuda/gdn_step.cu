#include "kernels/gdn_step.hpp"

#include "kernels/cuda/common.cuh"

namespace anchorage::kernels::cuda {
namespace {

constexpr int kThreads = 128;

// Grid (hv, ceil(dv / kThreads)): thread (h, j) owns column j of head h's state S[dk][dv] and
// walks the tokens in order. Every quantity of the recurrence for column j depends only on that
// column (d_j = beta (v_j - sum_i S[i][j] k_i), S[i][j] += k_i d_j, o_j = sum_i S[i][j] q_i), so
// there is no communication, and each sum runs over i in increasing order, as on the CPU.
__global__ void __launch_bounds__(kThreads)
    gdn_step_kernel(const float* qkv, const float* g, const float* beta, float* s, float* o, gdn_shape sh) {
  const int h = blockIdx.x;
  const int j = blockIdx.y * kThreads + threadIdx.x;
  if (j >= sh.dv) return;
  const int group = sh.hv / sh.hk;
  const int kh = h / group;
  float* st = s + static_cast<long>(h) * sh.dk * sh.dv + j;  // column j, rows at sh.dv
  for (int t = 0; t < sh.tokens; ++t) {
    const float* row = qkv + static_cast<long>(t) * sh.stride;
    const float* q = row + kh * sh.dk;
    const float* k = row + sh.hk * sh.dk + kh * sh.dk;
    const float* v = row + 2 * sh.hk * sh.dk + h * sh.dv;
    const float decay = expf(g[static_cast<long>(t) * sh.hv + h]);
    const float b = beta[static_cast<long>(t) * sh.hv + h];
    // S <- exp(g) S, d = S^T k
    float d = 0.0f;
    for (int i = 0; i < sh.dk; ++i) {
      const float sv = st[static_cast<long>(i) * sh.dv] * decay;
      st[static_cast<long>(i) * sh.dv] = sv;
      d += sv * k[i];
    }
    d = b * (v[j] - d);
    // S <- S + k d^T, o = S^T (scale q)
    float acc = 0.0f;
    for (int i = 0; i < sh.dk; ++i) {
      const float sv = st[static_cast<long>(i) * sh.dv] + k[i] * d;
      st[static_cast<long>(i) * sh.dv] = sv;
      acc += sv * (q[i] * sh.scale);
    }
    o[static_cast<long>(t) * sh.hv * sh.dv + static_cast<long>(h) * sh.dv + j] = acc;
  }
}

}  // namespace

void gdn_step(const float* qkv, const float* g, const float* beta, float* s, float* o, const gdn_shape& sh) {
  if (sh.tokens <= 0 || sh.hv <= 0 || sh.dv <= 0) return;
  const dim3 grid(static_cast<unsigned>(sh.hv), static_cast<unsigned>((sh.dv + kThreads - 1) / kThreads));
  gdn_step_kernel<<<grid, kThreads>>>(qkv, g, beta, s, o, sh);
  CUDA_CHECK_LAUNCH();
}

}  // namespace anchorage::kernels::cuda
