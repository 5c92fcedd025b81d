#include "kernels/gdn_chunk.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace anchorage::kernels::cpu {
namespace {

// One value head over one sub-chunk of c rows starting at row t0.
struct head_chunk {
  const gdn_shape& sh;
  const float* q;  // row t0, head kh; rows at sh.stride
  const float* k;
  const float* v;
  const float* g;     // g[t * hv + h] for the sub-chunk's rows
  const float* beta;  // same indexing
  float* s;           // [dk][dv]
  float* o;           // row t0, head h; rows at hv*dv
  int c;
  int h;
};

void run_head_chunk(const head_chunk& x, float* scratch) {
  const gdn_shape& sh = x.sh;
  const int c = x.c, dk = sh.dk, dv = sh.dv, hv = sh.hv, ld = sh.stride;
  float* t = scratch;       // c*c : A, then T
  float* qk = t + c * c;    // c*c
  float* u = qk + c * c;    // c*dv: VB, then U
  float* vn = u + c * dv;   // c*dv
  float* qs = vn + c * dv;  // c*dv
  float* w = qs + c * dv;   // c*dk: KB, then W
  float* kd = w + c * dk;   // c*dk
  float* gc = kd + c * dk;  // c

  float acc = 0.0f;
  for (int i = 0; i < c; ++i) {
    acc += x.g[static_cast<long>(i) * hv];
    gc[i] = acc;
  }
  auto beta = [&](int i) { return x.beta[static_cast<long>(i) * hv]; };

  // A = strictly-lower(-(beta_i k_i . k_j) exp(G_i - G_j))
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, c, dk, 1.0f, x.k, ld, x.k, ld, 0.0f, t, c);
  for (int i = 0; i < c; ++i)
    for (int j = 0; j < c; ++j)
      t[i * c + j] = j < i ? -beta(i) * t[i * c + j] * std::exp(gc[i] - gc[j]) : 0.0f;
  // T = (I - A)^-1 in the reference's forward substitution: row i, in order, from rows m < i
  // already solved: T[i][j] = A[i][j] + sum_{j<m<i} A[i][m] T[m][j].
  for (int i = 1; i < c; ++i) {
    float* ti = t + i * c;
    for (int j = 0; j < i; ++j) {
      float sum = ti[j];
      for (int m = j + 1; m < i; ++m) sum += ti[m] * t[m * c + j];
      qk[j] = sum;  // qk as a row buffer: row i must read its old values while it is rewritten
    }
    for (int j = 0; j < i; ++j) ti[j] = qk[j];
  }
  for (int i = 0; i < c; ++i) t[i * c + i] = 1.0f;

  // U = T (beta v);  W = T (beta exp(G) k)
  for (int i = 0; i < c; ++i) {
    const float* vi = x.v + static_cast<long>(i) * ld;
    const float* ki = x.k + static_cast<long>(i) * ld;
    const float bv = beta(i), bk = beta(i) * std::exp(gc[i]);
    for (int j = 0; j < dv; ++j) qs[i * dv + j] = bv * vi[j];
    for (int j = 0; j < dk; ++j) kd[i * dk + j] = bk * ki[j];
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, dv, c, 1.0f, t, c, qs, dv, 0.0f, u, dv);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, dk, c, 1.0f, t, c, kd, dk, 0.0f, w, dk);
  // Vn = U - W S
  std::copy(u, u + c * dv, vn);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, dv, dk, -1.0f, w, dk, x.s, dv, 1.0f, vn, dv);

  // o = exp(G) * scale * (q S) + (causal(scale q k^T) * exp(G_i - G_j)) Vn
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, c, dk, sh.scale, x.q, ld, x.k, ld, 0.0f, qk, c);
  for (int i = 0; i < c; ++i)
    for (int j = 0; j < c; ++j) qk[i * c + j] = j <= i ? qk[i * c + j] * std::exp(gc[i] - gc[j]) : 0.0f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, dv, dk, sh.scale, x.q, ld, x.s, dv, 0.0f, qs, dv);
  const int ldo = hv * dv;
  for (int i = 0; i < c; ++i) {
    const float e = std::exp(gc[i]);
    float* oi = x.o + static_cast<long>(i) * ldo;
    for (int j = 0; j < dv; ++j) oi[j] = e * qs[i * dv + j];
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, dv, c, 1.0f, qk, c, vn, dv, 1.0f, x.o, ldo);

  // S = exp(G_last) S + sum_j (exp(G_last - G_j) k_j) Vn_j^T
  const float glast = gc[c - 1];
  for (int i = 0; i < c; ++i) {
    const float e = std::exp(glast - gc[i]);
    const float* ki = x.k + static_cast<long>(i) * ld;
    for (int j = 0; j < dk; ++j) kd[i * dk + j] = e * ki[j];
  }
  const float eg = std::exp(glast);
  for (long i = 0; i < static_cast<long>(dk) * dv; ++i) x.s[i] *= eg;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dk, dv, c, 1.0f, kd, dk, vn, dv, 1.0f, x.s, dv);
}

}  // namespace

void gdn_chunk(const float* qkv, const float* g, const float* beta, float* s, float* o, const gdn_shape& sh,
               float* scratch) {
  const int group = sh.hv / sh.hk;
  for (int t0 = 0; t0 < sh.tokens; t0 += sh.chunk) {
    const int c = std::min(sh.chunk, sh.tokens - t0);
    const float* row = qkv + static_cast<long>(t0) * sh.stride;
    for (int h = 0; h < sh.hv; ++h) {
      const int kh = h / group;
      head_chunk x{sh,
                   row + kh * sh.dk,
                   row + sh.hk * sh.dk + kh * sh.dk,
                   row + 2 * sh.hk * sh.dk + h * sh.dv,
                   g + static_cast<long>(t0) * sh.hv + h,
                   beta + static_cast<long>(t0) * sh.hv + h,
                   s + static_cast<long>(h) * sh.dk * sh.dv,
                   o + static_cast<long>(t0) * sh.hv * sh.dv + static_cast<long>(h) * sh.dv,
                   c,
                   h};
      run_head_chunk(x, scratch);
    }
  }
}

}  // namespace anchorage::kernels::cpu
