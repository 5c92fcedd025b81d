// The CPU reference kernels against plain definitions, and the properties the engine's
// exactness rests on.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/ops.hpp"

using namespace anchorage::kernels;

namespace {

std::vector<float> random_vec(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

struct gdn_inputs {
  gdn_shape sh;
  std::vector<float> qkv, g, beta;
};

gdn_inputs make_gdn(int tokens, int chunk, std::uint64_t seed) {
  gdn_inputs in;
  in.sh = {tokens, 2, 4, 16, 8, 0, 0.25f, chunk};
  in.sh.stride = 2 * in.sh.hk * in.sh.dk + in.sh.hv * in.sh.dv;
  in.qkv = random_vec(static_cast<std::size_t>(tokens) * in.sh.stride, seed);
  cpu::l2norm(in.qkv.data(), in.sh.stride, tokens, in.sh.hk, in.sh.dk, 1e-6f);
  cpu::l2norm(in.qkv.data() + in.sh.hk * in.sh.dk, in.sh.stride, tokens, in.sh.hk, in.sh.dk, 1e-6f);
  in.g = random_vec(static_cast<std::size_t>(tokens) * in.sh.hv, seed + 1, -0.5f, -0.01f);
  in.beta = random_vec(static_cast<std::size_t>(tokens) * in.sh.hv, seed + 2, 0.05f, 0.95f);
  return in;
}

}  // namespace

TEST_CASE("the chunked delta rule computes the per-token recurrence", "[kernels]") {
  const int tokens = GENERATE(1, 7, 16, 45);
  gdn_inputs in = make_gdn(tokens, 16, 5);
  const auto& sh = in.sh;
  const std::size_t state_n = static_cast<std::size_t>(sh.hv) * sh.dk * sh.dv;
  const auto s0 = random_vec(state_n, 9, -0.3f, 0.3f);
  std::vector<float> s_chunk = s0, s_step = s0;
  std::vector<float> o_chunk(static_cast<std::size_t>(tokens) * sh.hv * sh.dv);
  std::vector<float> o_step(o_chunk.size());
  std::vector<float> scratch(static_cast<std::size_t>(gdn_chunk_scratch(sh)));
  cpu::gdn_chunk(in.qkv.data(), in.g.data(), in.beta.data(), s_chunk.data(), o_chunk.data(), sh,
                 scratch.data());
  cpu::gdn_step(in.qkv.data(), in.g.data(), in.beta.data(), s_step.data(), o_step.data(), sh);
  INFO("tokens " << tokens);
  CHECK(max_abs_diff(o_chunk, o_step) < 2e-5f);
  CHECK(max_abs_diff(s_chunk, s_step) < 2e-5f);
  CHECK(max_abs_diff(s_chunk, s0) > 1e-3f);  // the state did move
}

TEST_CASE("the chunked delta rule's bits depend on where sub-chunks start", "[kernels][exact]") {
  // Two runs over the same 32 rows, one in a single call and one split at row 5, agree to
  // rounding but not bit for bit: the reason resumes must start on the grid.
  gdn_inputs in = make_gdn(32, 16, 21);
  auto sh = in.sh;
  const std::size_t state_n = static_cast<std::size_t>(sh.hv) * sh.dk * sh.dv;
  std::vector<float> s_whole(state_n, 0.0f), s_split(state_n, 0.0f);
  std::vector<float> o(static_cast<std::size_t>(32) * sh.hv * sh.dv);
  std::vector<float> scratch(static_cast<std::size_t>(gdn_chunk_scratch(sh)));
  cpu::gdn_chunk(in.qkv.data(), in.g.data(), in.beta.data(), s_whole.data(), o.data(), sh, scratch.data());
  auto first = sh;
  first.tokens = 5;
  cpu::gdn_chunk(in.qkv.data(), in.g.data(), in.beta.data(), s_split.data(), o.data(), first, scratch.data());
  auto rest = sh;
  rest.tokens = 27;
  cpu::gdn_chunk(in.qkv.data() + 5 * sh.stride, in.g.data() + 5 * sh.hv, in.beta.data() + 5 * sh.hv,
                 s_split.data(), o.data(), rest, scratch.data());
  CHECK(max_abs_diff(s_whole, s_split) < 2e-5f);
  CHECK(std::memcmp(s_whole.data(), s_split.data(), state_n * sizeof(float)) != 0);
  // ... while the same split twice is bit-identical (determinism).
  std::vector<float> s_again(state_n, 0.0f);
  cpu::gdn_chunk(in.qkv.data(), in.g.data(), in.beta.data(), s_again.data(), o.data(), sh, scratch.data());
  CHECK(std::memcmp(s_whole.data(), s_again.data(), state_n * sizeof(float)) == 0);
}

TEST_CASE("causal attention matches its definition", "[kernels]") {
  const int m = 5, pos0 = 7, nq = 4, nkv = 2, hd = 8, len = pos0 + m;
  const int kv_stride = 3 * nkv * hd;  // as if two more layers shared the rows
  const auto q = random_vec(static_cast<std::size_t>(m) * nq * hd, 1);
  const auto k = random_vec(static_cast<std::size_t>(len) * kv_stride, 2);
  const auto v = random_vec(static_cast<std::size_t>(len) * kv_stride, 3);
  const attention_shape sh{m, pos0, nq, nkv, hd, nq * hd, kv_stride, nq * hd, 0.35f};
  std::vector<float> o(static_cast<std::size_t>(m) * nq * hd),
      scratch(static_cast<std::size_t>(attention_scratch(sh)));
  cpu::attention(q.data(), k.data(), v.data(), o.data(), sh, scratch.data());

  std::vector<float> want(o.size());
  for (int i = 0; i < m; ++i)
    for (int h = 0; h < nq; ++h) {
      const int kh = h / (nq / nkv);
      std::vector<double> s(static_cast<std::size_t>(pos0 + i + 1));
      double mx = -1e300, sum = 0.0;
      for (int j = 0; j <= pos0 + i; ++j) {
        double dot = 0.0;
        for (int x = 0; x < hd; ++x) dot += q[i * nq * hd + h * hd + x] * k[j * kv_stride + kh * hd + x];
        s[j] = dot * sh.scale;
        mx = std::max(mx, s[j]);
      }
      for (auto& x : s) sum += (x = std::exp(x - mx));
      for (int x = 0; x < hd; ++x) {
        double acc = 0.0;
        for (int j = 0; j <= pos0 + i; ++j) acc += s[j] / sum * v[j * kv_stride + kh * hd + x];
        want[i * nq * hd + h * hd + x] = static_cast<float>(acc);
      }
    }
  CHECK(max_abs_diff(o, want) < 1e-5f);
}

TEST_CASE("the short convolution carries its tail across calls exactly", "[kernels][exact]") {
  const int rows = 11, ch = 6, ks = 4;
  const auto x = random_vec(static_cast<std::size_t>(rows) * ch, 4);
  const auto w = random_vec(static_cast<std::size_t>(ch) * ks, 5);
  std::vector<float> tail_a((ks - 1) * ch, 0.0f), tail_b = tail_a;
  std::vector<float> ya(x.size()), yb(x.size());
  cpu::causal_conv1d(x.data(), w.data(), tail_a.data(), ya.data(), rows, ch, ks);
  cpu::causal_conv1d(x.data(), w.data(), tail_b.data(), yb.data(), 4, ch, ks);
  cpu::causal_conv1d(x.data() + 4 * ch, w.data(), tail_b.data(), yb.data() + 4 * ch, rows - 4, ch, ks);
  CHECK(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(tail_a.data(), tail_b.data(), tail_a.size() * sizeof(float)) == 0);
  // the tail is the last ks-1 inputs
  CHECK(std::memcmp(tail_a.data(), x.data() + (rows - ks + 1) * ch, tail_a.size() * sizeof(float)) == 0);
  // y at row 0 from a zero tail: silu(w[c][ks-1] * x[0][c])
  const float pre = w[ks - 1] * x[0];
  CHECK(ya[0] == Approx(pre / (1.0f + std::exp(-pre))).epsilon(1e-6));
}

TEST_CASE("block checksums see every word and its place", "[kernels]") {
  std::vector<std::uint64_t> buf(64);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = i * 0x9e3779b97f4a7c15ULL;
  const long row_bytes = 4 * 8;  // 16 rows of four words
  std::uint64_t a[2], b[2];
  cpu::block_checksum(buf.data(), row_bytes, 2, 6, a);
  std::uint64_t s0 = 0, s1 = 0;
  for (std::uint64_t i = 0; i < 16; ++i) {
    s0 += buf[8 + i];
    s1 += (i + 1) * buf[8 + i];
  }
  CHECK(a[0] == s0);
  CHECK(a[1] == s1);
  std::swap(buf[9], buf[10]);  // same words, other order: the first sum agrees, the second not
  cpu::block_checksum(buf.data(), row_bytes, 2, 6, b);
  CHECK(b[0] == a[0]);
  CHECK(b[1] != a[1]);
  buf[30] ^= 1;  // outside the range: no change
  cpu::block_checksum(buf.data(), row_bytes, 2, 6, a);
  CHECK(a[0] == b[0]);
}

TEST_CASE("block_checksum equals its plain definition at every length (lanes and tail)", "[kernels]") {
  std::vector<std::uint64_t> buf(5000);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = (i + 1) * 0xd1b54a32d192ed03ULL ^ (i << 7);
  for (long row_words : {1L, 3L, 8L, 13L}) {
    const long rows = static_cast<long>(buf.size()) / row_words;
    for (long a : {0L, 1L, 5L}) {
      for (long b : {a + 1, a + 2, a + 9, a + 64, rows}) {
        if (b > rows || b <= a) continue;
        std::uint64_t got[2];
        cpu::block_checksum(buf.data(), row_words * 8, a, b, got);
        std::uint64_t s0 = 0, s1 = 0;
        for (long i = 0; i < (b - a) * row_words; ++i) {
          const std::uint64_t w = buf[static_cast<std::size_t>(a * row_words + i)];
          s0 += w;
          s1 += static_cast<std::uint64_t>(i + 1) * w;
        }
        INFO(row_words << " words a row, rows [" << a << ", " << b << ")");
        CHECK(got[0] == s0);
        CHECK(got[1] == s1);
      }
    }
  }
}

TEST_CASE("small kernels match their definitions", "[kernels]") {
  SECTION("rmsnorm") {
    const auto x = random_vec(2 * 8, 1), w = random_vec(8, 2);
    std::vector<float> y(16);
    cpu::rmsnorm(x.data(), 8, w.data(), y.data(), 8, 2, 8, 1e-6f);
    double ss = 0;
    for (int i = 0; i < 8; ++i) ss += x[8 + i] * x[8 + i];
    CHECK(y[8 + 3] == Approx(x[8 + 3] / std::sqrt(ss / 8 + 1e-6) * w[3]).epsilon(1e-5));
  }
  SECTION("rope keeps the norm of each pair and is the identity at position 0") {
    auto x = random_vec(3 * 8, 3);
    const auto x0 = x;
    cpu::rope(x.data(), 8, 3, 1, 8, 8, 0, 10000.0f);
    CHECK(std::memcmp(x.data(), x0.data(), 8 * sizeof(float)) == 0);
    for (int r = 1; r < 3; ++r)
      for (int i = 0; i < 4; ++i) {
        const float before = std::hypot(x0[r * 8 + i], x0[r * 8 + i + 4]);
        CHECK(std::hypot(x[r * 8 + i], x[r * 8 + i + 4]) == Approx(before).epsilon(1e-5));
      }
    CHECK(x[8] != x0[8]);
  }
  SECTION("gates") {
    const float a = 0.3f, b = -1.2f, alog = std::log(4.0f), dtb = 0.1f;
    float g, beta;
    cpu::gdn_gates(&a, &b, &alog, &dtb, &g, &beta, 1, 1);
    CHECK(g == Approx(-4.0 * std::log1p(std::exp(0.4))).epsilon(1e-5));
    CHECK(beta == Approx(1.0 / (1.0 + std::exp(1.2))).epsilon(1e-5));
  }
  SECTION("gemm with a Linear weight and with beta accumulating") {
    const auto a = random_vec(3 * 4, 1), w = random_vec(5 * 4, 2);
    std::vector<float> c(3 * 5, 1.0f);
    cpu::gemm(true, 3, 5, 4, 1.0f, a.data(), 4, w.data(), 4, 1.0f, c.data(), 5);
    double want = 1.0;
    for (int i = 0; i < 4; ++i) want += a[2 * 4 + i] * w[1 * 4 + i];
    CHECK(c[2 * 5 + 1] == Approx(want).epsilon(1e-5));
    std::vector<float> one(5, 0.0f);  // the one-row path
    cpu::gemm(true, 1, 5, 4, 1.0f, a.data() + 8, 4, w.data(), 4, 0.0f, one.data(), 5);
    CHECK(one[1] == Approx(want - 1.0).epsilon(1e-5));
  }
}
