#pragma once
// The CUDA parity tests' fixtures (tests/kernels/test_kernels*_cuda.cpp): device buffers, fixed-seed
// inputs, the per-op tolerances and the comparison. Only built with the CUDA kernels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/ops.hpp"

namespace kn = anchorage::kernels;

namespace anchorage::testing::cuda_parity {

#define SKIP_WITHOUT_CUDA()            \
  do {                                 \
    if (!kn::cuda_available()) {       \
      WARN("no CUDA device: skipped"); \
      return;                          \
    }                                  \
  } while (0)

// Managed memory holding n values of T, filled from / read back into host vectors.
template <class T>
class managed {
 public:
  explicit managed(std::size_t n) : n_(n) {
    p_ = static_cast<T*>(kn::device_alloc(kn::backend::cuda, std::max<std::size_t>(n, 1) * sizeof(T)));
  }
  explicit managed(const std::vector<T>& v) : managed(v.size()) { upload(v); }
  ~managed() { kn::device_free(kn::backend::cuda, p_); }
  managed(const managed&) = delete;
  managed& operator=(const managed&) = delete;

  T* get() { return p_; }
  // Host access: only after device_sync (no cuda:: work in flight).
  void upload(const std::vector<T>& v) {
    REQUIRE(v.size() == n_);
    if (n_ > 0) std::memcpy(p_, v.data(), n_ * sizeof(T));
  }
  std::vector<T> download() const { return std::vector<T>(p_, p_ + n_); }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

inline void wait_cuda() { kn::device_sync(kn::backend::cuda); }

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// |got - want| <= atol + rtol |want| everywhere; reports the count and the worst element.
inline void expect_close(const std::vector<float>& want, const std::vector<float>& got, float rtol,
                         float atol, const std::string& what) {
  REQUIRE(want.size() == got.size());
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double tol = atol + rtol * std::fabs(static_cast<double>(want[i]));
    const bool ok = diff <= tol;  // false for NaN
    if (!ok) ++bad;
    const double excess = ok ? diff - tol : 1e300;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  std::ostringstream msg;
  msg << what << ": " << bad << " of " << want.size() << " outside tolerance";
  if (!want.empty()) msg << "; worst at " << worst << ": want " << want[worst] << " got " << got[worst];
  INFO(msg.str());
  CHECK(bad == 0);
}

template <class T>
inline void expect_equal(const std::vector<T>& want, const std::vector<T>& got, const std::string& what) {
  INFO(what);
  REQUIRE(want.size() == got.size());
  CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(T)) == 0);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

constexpr float kRtol = 1e-4f;
constexpr float kAtol = 1e-4f;

// L2-normalises every head of q and k in place (the gated delta rule's precondition).
inline void normalise_qk(std::vector<float>& qkv, int tokens, int stride, int hk, int dk) {
  kn::cpu::l2norm(qkv.data(), stride, tokens, 2 * hk, dk, 1e-6f);
}

// A fixed gated-delta-rule problem: qkv rows with padding, gates, an initial state.
struct gdn_problem {
  kn::gdn_shape sh;
  std::vector<float> qkv, g, beta, s0;
};

inline gdn_problem make_gdn(int tokens, int hk, int hv, int dk, int dv, int chunk, std::uint32_t seed) {
  gdn_problem p;
  const int stride = 2 * hk * dk + hv * dv + 3;
  p.sh = kn::gdn_shape{tokens, hk, hv, dk, dv, stride, 1.0f / std::sqrt(static_cast<float>(dk)), chunk};
  p.qkv = random_floats(static_cast<std::size_t>(tokens) * stride, seed);
  normalise_qk(p.qkv, tokens, stride, hk, dk);
  // log decays in [-0.7, -0.01], beta in (0.05, 0.95), like gdn_gates would give
  p.g = random_floats(static_cast<std::size_t>(tokens) * hv, seed + 1, -0.7f, -0.01f);
  p.beta = random_floats(static_cast<std::size_t>(tokens) * hv, seed + 2, 0.05f, 0.95f);
  p.s0 = random_floats(static_cast<std::size_t>(hv) * dk * dv, seed + 3, -0.5f, 0.5f);
  return p;
}

struct attention_problem {
  kn::attention_shape sh;
  std::vector<float> q, k, v;
};

inline attention_problem make_attention(int m, int pos0, int n_q, int n_kv, int head_dim,
                                        std::uint32_t seed) {
  attention_problem p;
  const int q_stride = n_q * head_dim + 5;
  const int kv_stride = n_kv * head_dim + 7;
  const int o_stride = n_q * head_dim + 2;
  p.sh = kn::attention_shape{m,         pos0,     n_q,
                             n_kv,      head_dim, q_stride,
                             kv_stride, o_stride, 1.0f / std::sqrt(static_cast<float>(head_dim))};
  const int len = pos0 + m;
  p.q = random_floats(static_cast<std::size_t>(m) * q_stride, seed, -2.0f, 2.0f);
  p.k = random_floats(static_cast<std::size_t>(len) * kv_stride, seed + 1, -2.0f, 2.0f);
  p.v = random_floats(static_cast<std::size_t>(len) * kv_stride, seed + 2);
  return p;
}

// Runs attention on the CPU (reference) and CUDA, checks them, returns the CUDA output.
inline std::vector<float> check_attention(const attention_problem& p, const std::string& what) {
  const auto& sh = p.sh;
  const std::size_t o_size = static_cast<std::size_t>(sh.m) * sh.o_stride;
  std::vector<float> o_cpu(o_size, 0.0f);
  std::vector<float> scratch(static_cast<std::size_t>(kn::attention_scratch(sh)));
  kn::cpu::attention(p.q.data(), p.k.data(), p.v.data(), o_cpu.data(), sh, scratch.data());

  managed<float> q(p.q), k(p.k), v(p.v), o(o_size);
  managed<float> dscratch(static_cast<std::size_t>(kn::attention_scratch(sh)));
  kn::cuda::attention(q.get(), k.get(), v.get(), o.get(), sh, dscratch.get());
  wait_cuda();
  const auto o_gpu = o.download();
  expect_close(o_cpu, o_gpu, kRtol, kAtol, what);
  return o_gpu;
}

}  // namespace anchorage::testing::cuda_parity
