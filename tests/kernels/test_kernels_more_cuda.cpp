// The CUDA kernels against the CPU reference, continued (test_kernels_cuda.cpp): attention,
// embed, add, the block checksum, run-to-run bit identity of the cuda:: ops, and the Qwen3.5
// layout's partial rotary and sigmoid gate. Skipped without a device.
#include <catch2/catch.hpp>

#ifdef ANCHORAGE_HAVE_CUDA

#include "tests/support/cuda_parity.hpp"

using namespace anchorage::testing::cuda_parity;

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

TEST_CASE("cuda gemm_rows matches cpu", "[cuda]") {
  SKIP_WITHOUT_CUDA();
  const int m = 5, n = 300, k = 256, lda = k + 3, ldc = n + 1;
  const float beta = GENERATE(0.0f, 1.0f);
  const auto a = random_floats(static_cast<std::size_t>(m) * lda, 71);
  const auto b = random_floats(static_cast<std::size_t>(n) * k, 72);
  const auto c = random_floats(static_cast<std::size_t>(m) * ldc, 73);
  auto c_cpu = c;
  kn::cpu::gemm_rows(m, n, k, a.data(), lda, b.data(), k, beta, c_cpu.data(), ldc);

  managed<float> da(a), db(b), dc(c);
  kn::cuda::gemm_rows(m, n, k, da.get(), lda, db.get(), k, beta, dc.get(), ldc);
  wait_cuda();
  expect_close(c_cpu, dc.download(), kRtol, kAtol, "gemm_rows");
}

#endif  // ANCHORAGE_HAVE_CUDA
