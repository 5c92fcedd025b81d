// The CUDA kernels against the CPU reference: the same fixed-seed inputs through cpu:: on host
// copies and cuda:: on managed memory, compared with a per-op tolerance (exact for the integer
// and copy ops), plus run-to-run bit identity of the cuda:: ops. Skipped without a device.
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

#ifndef ANCHORAGE_HAVE_CUDA

// Built without nvcc: there are no cuda:: kernels to link against.
TEST_CASE("cuda kernels", "[cuda]") { WARN("CUDA kernels not built: skipped"); }

#else

namespace {

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

void wait_cuda() { kn::device_sync(kn::backend::cuda); }

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// |got - want| <= atol + rtol |want| everywhere; reports the count and the worst element.
void expect_close(const std::vector<float>& want, const std::vector<float>& got, float rtol, float atol,
                  const std::string& what) {
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
void expect_equal(const std::vector<T>& want, const std::vector<T>& got, const std::string& what) {
  INFO(what);
  REQUIRE(want.size() == got.size());
  CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(T)) == 0);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

constexpr float kRtol = 1e-4f;
constexpr float kAtol = 1e-4f;

// L2-normalises every head of q and k in place (the gated delta rule's precondition).
void normalise_qk(std::vector<float>& qkv, int tokens, int stride, int hk, int dk) {
  kn::cpu::l2norm(qkv.data(), stride, tokens, 2 * hk, dk, 1e-6f);
}

// A fixed gated-delta-rule problem: qkv rows with padding, gates, an initial state.
struct gdn_problem {
  kn::gdn_shape sh;
  std::vector<float> qkv, g, beta, s0;
};

gdn_problem make_gdn(int tokens, int hk, int hv, int dk, int dv, int chunk, std::uint32_t seed) {
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

attention_problem make_attention(int m, int pos0, int n_q, int n_kv, int head_dim, std::uint32_t seed) {
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
std::vector<float> check_attention(const attention_problem& p, const std::string& what) {
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

}  // namespace

TEST_CASE("cuda gemm matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int m = 37, n = 53, k = 71;
  const int lda = k + 3, ldc = n + 5;
  for (bool trans_b : {false, true}) {
    const int ldb = trans_b ? k + 2 : n + 4;
    const std::size_t b_rows = trans_b ? n : k;
    const auto a = random_floats(static_cast<std::size_t>(m) * lda, 11);
    const auto b = random_floats(b_rows * ldb, 12);
    const auto c0 = random_floats(static_cast<std::size_t>(m) * ldc, 13);
    const float alpha = 0.75f, beta = 0.5f;
    auto c_cpu = c0;
    kn::cpu::gemm(trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c_cpu.data(), ldc);

    managed<float> da(a), db(b), dc(c0);
    kn::cuda::gemm(trans_b, m, n, k, alpha, da.get(), lda, db.get(), ldb, beta, dc.get(), ldc);
    wait_cuda();
    expect_close(c_cpu, dc.download(), kRtol, kAtol, trans_b ? "gemm trans_b" : "gemm");

    // beta = 0 overwrites C, even garbage
    std::vector<float> nan_c(c0.size(), std::nanf(""));
    auto c_cpu0 = c0;
    kn::cpu::gemm(trans_b, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c_cpu0.data(), ldc);
    dc.upload(nan_c);
    kn::cuda::gemm(trans_b, m, n, k, 1.0f, da.get(), lda, db.get(), ldb, 0.0f, dc.get(), ldc);
    wait_cuda();
    auto got = dc.download();
    // padding columns of C were NaN on the device and c0 on the CPU: compare the m x n part only
    std::vector<float> want_mn, got_mn;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        want_mn.push_back(c_cpu0[static_cast<std::size_t>(i) * ldc + j]);
        got_mn.push_back(got[static_cast<std::size_t>(i) * ldc + j]);
      }
    expect_close(want_mn, got_mn, kRtol, kAtol, "gemm beta=0");
  }
}

TEST_CASE("cuda rmsnorm matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 5, dim = 300, xs = dim + 9, ys = dim + 4;
  const float eps = 1e-6f;
  const auto x = random_floats(static_cast<std::size_t>(rows) * xs, 21, -3.0f, 3.0f);
  const auto w = random_floats(dim, 22, 0.5f, 1.5f);
  std::vector<float> y_cpu(static_cast<std::size_t>(rows) * ys, 0.0f);
  kn::cpu::rmsnorm(x.data(), xs, w.data(), y_cpu.data(), ys, rows, dim, eps);

  managed<float> dx(x), dw(w), dy(y_cpu.size());
  kn::cuda::rmsnorm(dx.get(), xs, dw.get(), dy.get(), ys, rows, dim, eps);
  wait_cuda();
  expect_close(y_cpu, dy.download(), kRtol, kAtol, "rmsnorm");

  // in place (x and y alias)
  auto inplace_cpu = x;
  kn::cpu::rmsnorm(inplace_cpu.data(), xs, w.data(), inplace_cpu.data(), xs, rows, dim, eps);
  kn::cuda::rmsnorm(dx.get(), xs, dw.get(), dx.get(), xs, rows, dim, eps);
  wait_cuda();
  expect_close(inplace_cpu, dx.download(), kRtol, kAtol, "rmsnorm in place");
}

TEST_CASE("cuda gated_rmsnorm matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 3, heads = 4, dim = 129;
  const float eps = 1e-6f;
  const std::size_t n = static_cast<std::size_t>(rows) * heads * dim;
  const auto x = random_floats(n, 31, -2.0f, 2.0f);
  const auto z = random_floats(n, 32, -4.0f, 4.0f);
  const auto w = random_floats(dim, 33, 0.5f, 1.5f);
  std::vector<float> y_cpu(n, 0.0f);
  kn::cpu::gated_rmsnorm(x.data(), z.data(), w.data(), y_cpu.data(), rows, heads, dim, eps);

  managed<float> dx(x), dz(z), dw(w), dy(n);
  kn::cuda::gated_rmsnorm(dx.get(), dz.get(), dw.get(), dy.get(), rows, heads, dim, eps);
  wait_cuda();
  expect_close(y_cpu, dy.download(), kRtol, kAtol, "gated_rmsnorm");

  kn::cuda::gated_rmsnorm(dx.get(), dz.get(), dw.get(), dx.get(), rows, heads, dim, eps);
  wait_cuda();
  expect_close(y_cpu, dx.download(), kRtol, kAtol, "gated_rmsnorm in place");
}

TEST_CASE("cuda rope matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 7, heads = 3, head_dim = 64, stride = heads * head_dim + 6, pos0 = 1000;
  const float base = 1e6f;
  const auto x = random_floats(static_cast<std::size_t>(rows) * stride, 41);
  auto x_cpu = x;
  kn::cpu::rope(x_cpu.data(), stride, rows, heads, head_dim, head_dim, pos0, base);

  managed<float> dx(x);
  kn::cuda::rope(dx.get(), stride, rows, heads, head_dim, head_dim, pos0, base);
  wait_cuda();
  expect_close(x_cpu, dx.download(), kRtol, kAtol, "rope");
}

TEST_CASE("cuda swiglu matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 6, hidden = 333;
  const auto in = random_floats(static_cast<std::size_t>(rows) * 2 * hidden, 51, -6.0f, 6.0f);
  std::vector<float> out_cpu(static_cast<std::size_t>(rows) * hidden, 0.0f);
  kn::cpu::swiglu(in.data(), out_cpu.data(), rows, hidden);

  managed<float> din(in), dout(out_cpu.size());
  kn::cuda::swiglu(din.get(), dout.get(), rows, hidden);
  wait_cuda();
  expect_close(out_cpu, dout.download(), kRtol, kAtol, "swiglu");
}

TEST_CASE("cuda causal_conv1d matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int channels = 70, ksize = 4, hist = ksize - 1;
  const auto w = random_floats(static_cast<std::size_t>(channels) * ksize, 61);
  // a prefill longer than the history, then decode-sized calls shorter than it
  for (int rows : {9, 1, 2, 3}) {
    const auto x = random_floats(static_cast<std::size_t>(rows) * channels, 62 + rows, -2.0f, 2.0f);
    const auto tail = random_floats(static_cast<std::size_t>(hist) * channels, 70 + rows);
    auto tail_cpu = tail;
    std::vector<float> y_cpu(static_cast<std::size_t>(rows) * channels, 0.0f);
    kn::cpu::causal_conv1d(x.data(), w.data(), tail_cpu.data(), y_cpu.data(), rows, channels, ksize);

    managed<float> dx(x), dw(w), dtail(tail), dy(y_cpu.size());
    kn::cuda::causal_conv1d(dx.get(), dw.get(), dtail.get(), dy.get(), rows, channels, ksize);
    wait_cuda();
    const std::string what = "causal_conv1d rows=" + std::to_string(rows);
    expect_close(y_cpu, dy.download(), kRtol, kAtol, what);
    expect_equal(tail_cpu, dtail.download(), what + " tail");  // a copy of inputs: exact
  }
}

TEST_CASE("cuda l2norm matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 4, heads = 5, dim = 96, stride = heads * dim + 11;
  const float eps = 1e-6f;
  const auto x = random_floats(static_cast<std::size_t>(rows) * stride, 81, -3.0f, 3.0f);
  auto x_cpu = x;
  kn::cpu::l2norm(x_cpu.data(), stride, rows, heads, dim, eps);

  managed<float> dx(x);
  kn::cuda::l2norm(dx.get(), stride, rows, heads, dim, eps);
  wait_cuda();
  expect_close(x_cpu, dx.download(), kRtol, kAtol, "l2norm");
}

TEST_CASE("cuda gdn_gates matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 9, heads = 6;
  const std::size_t n = static_cast<std::size_t>(rows) * heads;
  auto a = random_floats(n, 91, -8.0f, 8.0f);
  a[3] = 25.0f;  // softplus taken as x above 20
  a[10] = 19.5f;
  const auto b = random_floats(n, 92, -6.0f, 6.0f);
  const auto a_log = random_floats(heads, 93, -2.0f, 1.0f);
  const auto dt_bias = random_floats(heads, 94, -1.0f, 1.0f);
  std::vector<float> g_cpu(n), beta_cpu(n);
  kn::cpu::gdn_gates(a.data(), b.data(), a_log.data(), dt_bias.data(), g_cpu.data(), beta_cpu.data(), rows,
                     heads);

  managed<float> da(a), db(b), dal(a_log), ddt(dt_bias), dg(n), dbeta(n);
  kn::cuda::gdn_gates(da.get(), db.get(), dal.get(), ddt.get(), dg.get(), dbeta.get(), rows, heads);
  wait_cuda();
  expect_close(g_cpu, dg.download(), kRtol, kAtol, "gdn_gates g");
  expect_close(beta_cpu, dbeta.download(), kRtol, kAtol, "gdn_gates beta");
}

TEST_CASE("cuda gdn_chunk matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  // hv = 2 hk; 40 tokens in sub-chunks of 16: 16, 16 and a short 8.
  const auto p = make_gdn(40, 2, 4, 32, 48, 16, 101);
  const auto& sh = p.sh;
  const std::size_t o_size = static_cast<std::size_t>(sh.tokens) * sh.hv * sh.dv;

  auto s_cpu = p.s0;
  std::vector<float> o_cpu(o_size, 0.0f);
  std::vector<float> scratch(static_cast<std::size_t>(kn::gdn_chunk_scratch(sh)));
  kn::cpu::gdn_chunk(p.qkv.data(), p.g.data(), p.beta.data(), s_cpu.data(), o_cpu.data(), sh, scratch.data());

  managed<float> qkv(p.qkv), g(p.g), beta(p.beta), s(p.s0), o(o_size);
  managed<float> dscratch(static_cast<std::size_t>(kn::gdn_chunk_scratch(sh)));
  kn::cuda::gdn_chunk(qkv.get(), g.get(), beta.get(), s.get(), o.get(), sh, dscratch.get());
  wait_cuda();
  expect_close(o_cpu, o.download(), kRtol, kAtol, "gdn_chunk o");
  expect_close(s_cpu, s.download(), kRtol, kAtol, "gdn_chunk state");

  // The chunked form continues from a state: a second call picks up where the first left off.
  kn::cpu::gdn_chunk(p.qkv.data(), p.g.data(), p.beta.data(), s_cpu.data(), o_cpu.data(), sh, scratch.data());
  kn::cuda::gdn_chunk(qkv.get(), g.get(), beta.get(), s.get(), o.get(), sh, dscratch.get());
  wait_cuda();
  expect_close(o_cpu, o.download(), kRtol, kAtol, "gdn_chunk o, second call");
  expect_close(s_cpu, s.download(), kRtol, kAtol, "gdn_chunk state, second call");
}

TEST_CASE("cuda gdn_chunk agrees with cuda gdn_step", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  // The two forms of the same recurrence (different arithmetic, so a looser tolerance).
  const auto p = make_gdn(21, 1, 2, 16, 24, 8, 111);
  const auto& sh = p.sh;
  const std::size_t o_size = static_cast<std::size_t>(sh.tokens) * sh.hv * sh.dv;
  managed<float> qkv(p.qkv), g(p.g), beta(p.beta), s_chunk(p.s0), s_step(p.s0), o_chunk(o_size),
      o_step(o_size);
  managed<float> dscratch(static_cast<std::size_t>(kn::gdn_chunk_scratch(sh)));
  kn::cuda::gdn_chunk(qkv.get(), g.get(), beta.get(), s_chunk.get(), o_chunk.get(), sh, dscratch.get());
  kn::cuda::gdn_step(qkv.get(), g.get(), beta.get(), s_step.get(), o_step.get(), sh);
  wait_cuda();
  expect_close(o_step.download(), o_chunk.download(), 1e-3f, 1e-3f, "chunk vs step o");
  expect_close(s_step.download(), s_chunk.download(), 1e-3f, 1e-3f, "chunk vs step state");
}

TEST_CASE("cuda gdn_step matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const auto p = make_gdn(3, 2, 4, 32, 160, 64, 121);  // dv > one block of columns
  const auto& sh = p.sh;
  const std::size_t o_size = static_cast<std::size_t>(sh.tokens) * sh.hv * sh.dv;
  auto s_cpu = p.s0;
  std::vector<float> o_cpu(o_size, 0.0f);
  kn::cpu::gdn_step(p.qkv.data(), p.g.data(), p.beta.data(), s_cpu.data(), o_cpu.data(), sh);

  managed<float> qkv(p.qkv), g(p.g), beta(p.beta), s(p.s0), o(o_size);
  kn::cuda::gdn_step(qkv.get(), g.get(), beta.get(), s.get(), o.get(), sh);
  wait_cuda();
  expect_close(o_cpu, o.download(), kRtol, kAtol, "gdn_step o");
  expect_close(s_cpu, s.download(), kRtol, kAtol, "gdn_step state");
}

TEST_CASE("cuda attention matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  // n_q = 2 n_kv, pos0 > 0; then a window longer than one tile of keys; then a decode row.
  check_attention(make_attention(5, 7, 4, 2, 40, 131), "attention m=5 pos0=7");
  check_attention(make_attention(3, 300, 4, 2, 64, 141), "attention m=3 pos0=300");
  check_attention(make_attention(1, 129, 8, 4, 128, 151), "attention m=1 pos0=129");
  check_attention(make_attention(130, 0, 2, 1, 32, 161), "attention m=130 pos0=0");
}

TEST_CASE("cuda embed matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int vocab = 50, dim = 77, rows = 13;
  const auto table = random_floats(static_cast<std::size_t>(vocab) * dim, 171);
  std::vector<std::int32_t> ids(rows);
  std::mt19937 rng(172);
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % vocab);
  ids[0] = vocab - 1;
  std::vector<float> out_cpu(static_cast<std::size_t>(rows) * dim, 0.0f);
  kn::cpu::embed(ids.data(), table.data(), out_cpu.data(), rows, dim);

  managed<std::int32_t> dids(ids);
  managed<float> dtable(table), dout(out_cpu.size());
  kn::cuda::embed(dids.get(), dtable.get(), dout.get(), rows, dim);
  wait_cuda();
  expect_equal(out_cpu, dout.download(), "embed");
}

TEST_CASE("cuda add matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const long n = 100003;
  const auto x = random_floats(static_cast<std::size_t>(n), 181, -10.0f, 10.0f);
  const auto y = random_floats(static_cast<std::size_t>(n), 182, -10.0f, 10.0f);
  auto x_cpu = x;
  kn::cpu::add(x_cpu.data(), y.data(), n);

  managed<float> dx(x), dy(y);
  kn::cuda::add(dx.get(), dy.get(), n);
  wait_cuda();
  expect_equal(x_cpu, dx.download(), "add");
}

TEST_CASE("cuda block_checksum matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const long row_bytes = 24;
  const long rows = 200000;  // 600000 words: more than one pass of the grid
  std::vector<std::uint64_t> words(static_cast<std::size_t>(rows * row_bytes / 8));
  std::mt19937_64 rng(191);
  for (auto& w : words) w = rng();
  managed<std::uint64_t> dbuf(words);

  struct range {
    long a, b;
  };
  for (const range r : {range{0, rows}, range{3, 1000}, range{17, 18}, range{5, 5}}) {
    std::uint64_t want[2] = {1, 1}, got[2] = {2, 2};
    kn::cpu::block_checksum(words.data(), row_bytes, r.a, r.b, want);
    kn::cuda::block_checksum(dbuf.get(), row_bytes, r.a, r.b, got);  // got: host memory
    INFO("rows [" << r.a << ", " << r.b << ")");
    CHECK(got[0] == want[0]);
    CHECK(got[1] == want[1]);
  }
  // queued work before the checksum is seen by it (same stream, no explicit sync)
  managed<float> f(std::vector<float>(64, 1.0f));
  managed<float> ones(std::vector<float>(64, 1.0f));
  kn::cuda::add(f.get(), ones.get(), 64);
  std::uint64_t got[2];
  kn::cuda::block_checksum(f.get(), 8, 0, 32, got);
  std::vector<float> twos(64, 2.0f);
  std::uint64_t want[2];
  kn::cpu::block_checksum(twos.data(), 8, 0, 32, want);
  CHECK(got[0] == want[0]);
  CHECK(got[1] == want[1]);
}

TEST_CASE("cuda ops are deterministic", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  SECTION("gemm") {
    const int m = 64, n = 96, k = 200;
    const auto a = random_floats(static_cast<std::size_t>(m) * k, 201);
    const auto b = random_floats(static_cast<std::size_t>(n) * k, 202);
    managed<float> da(a), db(b), c1(static_cast<std::size_t>(m) * n), c2(static_cast<std::size_t>(m) * n);
    kn::cuda::gemm(true, m, n, k, 1.0f, da.get(), k, db.get(), k, 0.0f, c1.get(), n);
    kn::cuda::gemm(true, m, n, k, 1.0f, da.get(), k, db.get(), k, 0.0f, c2.get(), n);
    wait_cuda();
    CHECK(same_bits(c1.download(), c2.download()));
  }
  SECTION("rmsnorm") {
    const int rows = 8, dim = 1024;
    const auto x = random_floats(static_cast<std::size_t>(rows) * dim, 211);
    const auto w = random_floats(dim, 212);
    managed<float> dx(x), dw(w), y1(x.size()), y2(x.size());
    kn::cuda::rmsnorm(dx.get(), dim, dw.get(), y1.get(), dim, rows, dim, 1e-6f);
    kn::cuda::rmsnorm(dx.get(), dim, dw.get(), y2.get(), dim, rows, dim, 1e-6f);
    wait_cuda();
    CHECK(same_bits(y1.download(), y2.download()));
  }
  SECTION("attention") {
    const auto p = make_attention(6, 250, 4, 2, 64, 221);
    const std::size_t o_size = static_cast<std::size_t>(p.sh.m) * p.sh.o_stride;
    managed<float> q(p.q), k(p.k), v(p.v), o1(o_size), o2(o_size);
    managed<float> scratch(static_cast<std::size_t>(kn::attention_scratch(p.sh)));
    kn::cuda::attention(q.get(), k.get(), v.get(), o1.get(), p.sh, scratch.get());
    kn::cuda::attention(q.get(), k.get(), v.get(), o2.get(), p.sh, scratch.get());
    wait_cuda();
    CHECK(same_bits(o1.download(), o2.download()));
  }
  SECTION("gdn_chunk and gdn_step") {
    const auto p = make_gdn(50, 2, 4, 32, 32, 16, 231);
    const std::size_t o_size = static_cast<std::size_t>(p.sh.tokens) * p.sh.hv * p.sh.dv;
    managed<float> qkv(p.qkv), g(p.g), beta(p.beta);
    managed<float> s1(p.s0), s2(p.s0), o1(o_size), o2(o_size);
    managed<float> scratch(static_cast<std::size_t>(kn::gdn_chunk_scratch(p.sh)));
    kn::cuda::gdn_chunk(qkv.get(), g.get(), beta.get(), s1.get(), o1.get(), p.sh, scratch.get());
    kn::cuda::gdn_chunk(qkv.get(), g.get(), beta.get(), s2.get(), o2.get(), p.sh, scratch.get());
    wait_cuda();
    CHECK(same_bits(o1.download(), o2.download()));
    CHECK(same_bits(s1.download(), s2.download()));

    s1.upload(p.s0);
    s2.upload(p.s0);
    kn::cuda::gdn_step(qkv.get(), g.get(), beta.get(), s1.get(), o1.get(), p.sh);
    kn::cuda::gdn_step(qkv.get(), g.get(), beta.get(), s2.get(), o2.get(), p.sh);
    wait_cuda();
    CHECK(same_bits(o1.download(), o2.download()));
    CHECK(same_bits(s1.download(), s2.download()));
  }
  SECTION("l2norm, gated_rmsnorm, causal_conv1d, rope") {
    const int rows = 5, heads = 4, dim = 64;
    const std::size_t n = static_cast<std::size_t>(rows) * heads * dim;
    const auto x = random_floats(n, 241);
    const auto z = random_floats(n, 242);
    const auto w = random_floats(static_cast<std::size_t>(heads) * dim, 243);
    managed<float> a(x), b(x), dz(z), dw(w), y1(n), y2(n);
    kn::cuda::l2norm(a.get(), heads * dim, rows, heads, dim, 1e-6f);
    kn::cuda::l2norm(b.get(), heads * dim, rows, heads, dim, 1e-6f);
    kn::cuda::rope(a.get(), heads * dim, rows, heads, dim, dim, 17, 10000.0f);
    kn::cuda::rope(b.get(), heads * dim, rows, heads, dim, dim, 17, 10000.0f);
    kn::cuda::gated_rmsnorm(a.get(), dz.get(), dw.get(), y1.get(), rows, heads, dim, 1e-6f);
    kn::cuda::gated_rmsnorm(b.get(), dz.get(), dw.get(), y2.get(), rows, heads, dim, 1e-6f);
    wait_cuda();
    CHECK(same_bits(a.download(), b.download()));
    CHECK(same_bits(y1.download(), y2.download()));

    const int channels = heads * dim, ksize = 4;
    managed<float> cw(random_floats(static_cast<std::size_t>(channels) * ksize, 244));
    managed<float> t1(std::vector<float>(static_cast<std::size_t>(ksize - 1) * channels, 0.25f));
    managed<float> t2(std::vector<float>(static_cast<std::size_t>(ksize - 1) * channels, 0.25f));
    kn::cuda::causal_conv1d(dz.get(), cw.get(), t1.get(), y1.get(), rows, channels, ksize);
    kn::cuda::causal_conv1d(dz.get(), cw.get(), t2.get(), y2.get(), rows, channels, ksize);
    wait_cuda();
    CHECK(same_bits(y1.download(), y2.download()));
    CHECK(same_bits(t1.download(), t2.download()));
  }
}

TEST_CASE("cuda rope on the first rot_dims of each head matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 9, heads = 3, head_dim = 64, rot_dims = 16, stride = heads * head_dim + 4, pos0 = 4000;
  const float base = 1e7f;
  const auto x = random_floats(static_cast<std::size_t>(rows) * stride, 45);
  auto x_cpu = x;
  kn::cpu::rope(x_cpu.data(), stride, rows, heads, head_dim, rot_dims, pos0, base);

  managed<float> dx(x);
  kn::cuda::rope(dx.get(), stride, rows, heads, head_dim, rot_dims, pos0, base);
  wait_cuda();
  const auto got = dx.download();
  expect_close(x_cpu, got, kRtol, kAtol, "partial rope");
  // the floats past rot_dims pass through untouched
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h)
      for (int i = rot_dims; i < head_dim; ++i) {
        const std::size_t at =
            static_cast<std::size_t>(r) * stride + static_cast<std::size_t>(h) * head_dim + i;
        REQUIRE(got[at] == x[at]);
      }
}

TEST_CASE("cuda sigmoid_gate matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  // rows are heads: x [rows][dim] contiguous, the gate the second half of [query | gate] rows
  const int rows = 12, dim = 40;
  const auto x = random_floats(static_cast<std::size_t>(rows) * dim, 61);
  const auto gate = random_floats(static_cast<std::size_t>(rows) * 2 * dim, 62, -8.0f, 8.0f);
  auto x_cpu = x;
  kn::cpu::sigmoid_gate(x_cpu.data(), dim, gate.data() + dim, 2 * dim, rows, dim);

  managed<float> dx(x), dg(gate);
  kn::cuda::sigmoid_gate(dx.get(), dim, dg.get() + dim, 2 * dim, rows, dim);
  wait_cuda();
  expect_close(x_cpu, dx.download(), kRtol, kAtol, "sigmoid_gate");
}

#endif  // ANCHORAGE_HAVE_CUDA
