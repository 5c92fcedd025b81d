// The CUDA kernels against the CPU reference: the same fixed-seed inputs through cpu:: on host
// copies and cuda:: on managed memory, compared with a per-op tolerance (exact for the integer
// and copy ops). Skipped without a device. The rest: test_kernels_more_cuda.cpp.
#include <catch2/catch.hpp>

#ifndef ANCHORAGE_HAVE_CUDA

// Built without nvcc: there are no cuda:: kernels to link against.
TEST_CASE("cuda kernels", "[cuda]") { WARN("CUDA kernels not built: skipped"); }

#else

#include "tests/support/cuda_parity.hpp"

using namespace anchorage::testing::cuda_parity;

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

TEST_CASE("cuda rope_multi matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int rows = 6, heads = 2, head_dim = 256, rot = 64, stride = heads * head_dim + 5;
  const int sections[3] = {11, 11, 10};
  const float base = 1e7f;
  const auto x = random_floats(static_cast<std::size_t>(rows) * stride, 43);
  std::vector<int> pos;
  for (int r = 0; r < rows; ++r) pos.insert(pos.end(), {900, 900 + r / 3, 900 + r % 3});
  auto x_cpu = x;
  kn::cpu::rope_multi(x_cpu.data(), stride, rows, heads, head_dim, rot, pos.data(), sections, base);

  managed<float> dx(x);
  kn::cuda::rope_multi(dx.get(), stride, rows, heads, head_dim, rot, pos.data(), sections, base);
  wait_cuda();
  expect_close(x_cpu, dx.download(), kRtol, kAtol, "rope_multi");
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

#endif  // ANCHORAGE_HAVE_CUDA
