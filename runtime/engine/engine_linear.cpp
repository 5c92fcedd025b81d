#include "runtime/engine/engine_linear.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <sys/types.h>
#include <unistd.h>

#include "kernels/dequantize.hpp"
#include "kernels/quant_matmul.hpp"
#include "runtime/engine/compute_threads.hpp"

namespace anchorage {
namespace {

std::atomic<int> threads_wanted{0};  // 0: every core
std::atomic<product_activations> activations_wanted{product_activations::f32};

// The machine's cores for the stored products: the caller takes the first range of rows and
// each worker one more. One product at a time; a caller that finds the pool busy (another engine
// on another thread) runs its product alone. Results do not depend on the split.
//
// A child of fork() has none of the workers (and the pool's locks as they were at the fork): it
// runs every product alone and never touches them. The pool is never destroyed, so neither a
// child's exit nor the parent's joins a thread.
class row_pool {
 public:
  static row_pool& get() {
    static row_pool* pool = new row_pool;
    return *pool;
  }

  int cores() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int n, double work, const std::function<void(int, int)>& fn) {
    const int wanted = threads_wanted.load(std::memory_order_relaxed);
    const int parts = wanted > 0 ? std::min(wanted, cores()) : cores();
    if (parts == 1 || n < parts || work < 1 << 20 || ::getpid() != owner_) {
      fn(0, n);
      return;
    }
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) {
      fn(0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> g(m_);
      job_ = &fn;
      n_ = n;
      parts_ = parts;
      pending_ = parts - 1;
      ++generation_;
    }
    go_.notify_all();
    fn(0, bound(0 + 1));
    std::unique_lock<std::mutex> l(m_);
    done_.wait(l, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  row_pool() {
    openblas_set_num_threads(1);  // the pool shares the products out; BLAS never splits one itself
    const unsigned cores = std::thread::hardware_concurrency();
    for (unsigned i = 1; i < cores; ++i) workers_.emplace_back([this, i] { work(static_cast<int>(i)); });
  }

  int bound(int part) const { return static_cast<int>(static_cast<long>(n_) * part / parts_); }

  void work(int index) {
    std::uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> l(m_);
      go_.wait(l, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= parts_) continue;  // fewer parts than workers (--threads): not this one's
      const std::function<void(int, int)>* fn = job_;
      const int begin = bound(index), end = bound(index + 1);
      l.unlock();
      (*fn)(begin, end);
      l.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex busy_;  // held by the one product running on the pool
  std::mutex m_;
  std::condition_variable go_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int n_ = 0, parts_ = 1, pending_ = 0;
  std::uint64_t generation_ = 0;
  const pid_t owner_ = ::getpid();  // the process whose threads the workers are
  std::vector<std::thread> workers_;
};

// y[m x rows] = x W^T for one stored part, its weight rows split across the pool.
void stored_product(const linear_weight::part& p, int m, int kd, const float* x, int ldx, float* y, int ldy) {
  const auto row = static_cast<std::size_t>(kernels::row_bytes(p.type, kd).value_or(0));
  row_pool::get().run(p.rows, static_cast<double>(m) * p.rows * kd, [&](int begin, int end) {
    kernels::cpu::quant_matmul(p.type, m, end - begin, kd, x, ldx,
                               p.data + row * static_cast<std::size_t>(begin), y + begin, ldy);
  });
}

// The row form of a float32 weight (a decode, a decode batch, a verify round): its weight rows
// split across the pool as the stored products' are. gemm_rows computes each output from its own
// weight row and input row alone, so every output has the bits one call over all rows gives it.
void f32_rows_product(const kernels::ops& k, int m, int n, int kd, const float* x, int ldx, const float* w,
                      float beta, float* y, int ldy) {
  row_pool::get().run(n, static_cast<double>(m) * n * kd, [&](int begin, int end) {
    k.gemm_rows(m, end - begin, kd, x, ldx,
                w + static_cast<std::size_t>(begin) * static_cast<std::size_t>(kd), kd, beta, y + begin, ldy);
  });
}

// The prefill form for a chunk of at least panel_min_rows rows: `panel_rows` weight rows at a
// time are dequantized to float32 (kernels::dequantize_row, each weight once per chunk) and
// multiplied by the ops table's gemm, as a float32 weight would be, the panels shared out across
// the pool. A chunk's bits depend only on its rows and the weights, so a prefill resumed at a
// grid line runs exactly the chunks a cold one runs; they are not the bits quant_matvec gives a
// row, which is why decode batches and verify rounds keep the row kernels.
constexpr int panel_rows = 128;
constexpr int panel_min_rows = 32;

void panel_product(const kernels::ops& k, const linear_weight::part& p, int m, int kd, const float* x,
                   int ldx, float* y, int ldy) {
  const auto row = static_cast<std::size_t>(kernels::row_bytes(p.type, kd).value_or(0));
  const int panels = (p.rows + panel_rows - 1) / panel_rows;
  row_pool::get().run(panels, static_cast<double>(m) * p.rows * kd, [&](int begin, int end) {
    thread_local std::vector<float> panel;  // each thread's own dequantized rows
    panel.resize(static_cast<std::size_t>(panel_rows) * static_cast<std::size_t>(kd));
    for (int q = begin; q < end; ++q) {
      const int r0 = q * panel_rows, n = std::min(panel_rows, p.rows - r0);
      for (int r = 0; r < n; ++r)
        kernels::dequantize_row(p.type, p.data + row * static_cast<std::size_t>(r0 + r),
                                panel.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(kd),
                                kd);
      k.gemm(true, m, n, kd, 1.0f, x, ldx, panel.data(), kd, 0.0f, y + r0, ldy);
    }
  });
}

// Under product_activations::q8, for a type int8_reads names, both forms: the rows rounded to 8
// bits once (each row's blocks from that row alone), then panels of 16 weight rows multiplied as
// integers, shared out across the pool. int8_matmul gives every output the same bits whatever
// the other rows and the split, so a decode's rows are a prefill's bit for bit here too.
constexpr int int8_panel_rows = 16;

void int8_product(const linear_weight::part& p, int m, int kd, const float* x, int ldx, float* y, int ldy,
                  kernels::cpu::q8_activations& q8) {
  kernels::cpu::size_activations(m, kd, q8);
  // Rounding a value costs about what 16 multiply-adds of a product do: shared out from about
  // 64 rows of 1,024 values.
  row_pool::get().run(m, 16.0 * m * kd,
                      [&](int i0, int i1) { kernels::cpu::quantize_rows(i0, i1, x, ldx, q8); });
  const auto row = static_cast<std::size_t>(kernels::row_bytes(p.type, kd).value_or(0));
  const int panels = (p.rows + int8_panel_rows - 1) / int8_panel_rows;
  row_pool::get().run(panels, static_cast<double>(m) * p.rows * kd, [&](int begin, int end) {
    const int r0 = begin * int8_panel_rows, r1 = std::min(p.rows, end * int8_panel_rows);
    kernels::cpu::int8_matmul(p.type, q8, r1 - r0, p.data + row * static_cast<std::size_t>(r0), y + r0, ldy);
  });
}

// The prefill form of a float32 weight (two rows or more, not the row form): BLAS's gemm on
// panels of f32_panel_rows weight rows, shared out across the pool. BLAS itself runs on one
// thread (row_pool): OpenBLAS's products change bits with its thread count and with where it
// splits a product on some cores (its Haswell kernels, on a CPU without AVX-512), so the engine
// splits them where the thread count does not move the seams: the same bits on any --threads.
constexpr int f32_panel_rows = 256;

void f32_panel_product(const kernels::ops& k, int m, int n, int kd, const float* x, int ldx, const float* w,
                       float beta, float* y, int ldy) {
  const int panels = (n + f32_panel_rows - 1) / f32_panel_rows;
  row_pool::get().run(panels, static_cast<double>(m) * n * kd, [&](int begin, int end) {
    for (int q = begin; q < end; ++q) {
      const int r0 = q * f32_panel_rows, rows = std::min(f32_panel_rows, n - r0);
      k.gemm(true, m, rows, kd, 1.0f, x, ldx, w + static_cast<std::size_t>(r0) * static_cast<std::size_t>(kd),
             kd, beta, y + r0, ldy);
    }
  });
}

}  // namespace

void set_compute_threads(int n) {
  if (n < 1) n = 1;
  threads_wanted.store(n, std::memory_order_relaxed);
  (void)row_pool::get();  // its start keeps BLAS on one thread
}

std::optional<product_activations> product_activations_named(const std::string& name) {
  for (const auto a : {product_activations::f32, product_activations::q8, product_activations::automatic})
    if (name == to_string(a)) return a;
  return std::nullopt;
}

void set_product_activations(product_activations a) {
  activations_wanted.store(a, std::memory_order_relaxed);
}

product_activations current_product_activations() {
  const product_activations wanted = activations_wanted.load(std::memory_order_relaxed);
  if (wanted != product_activations::automatic) return wanted;
  return kernels::cpu::int8_vectors() ? product_activations::q8 : product_activations::f32;
}

const char* to_string(product_activations a) {
  switch (a) {
    case product_activations::f32:
      return "f32";
    case product_activations::q8:
      return "q8";
    case product_activations::automatic:
      return "auto";
  }
  return "?";
}

int compute_threads() {
  const int wanted = threads_wanted.load(std::memory_order_relaxed);
  return wanted > 0 ? std::min(wanted, row_pool::get().cores()) : row_pool::get().cores();
}

void linear(const kernels::ops& k, bool rows_kernel, int m, int n, int kd, const float* x, int ldx,
            const linear_weight& w, float beta, float* y, int ldy, linear_scratch& s) {
  if (w.f32 != nullptr) {
    const bool cpu = k.where == kernels::backend::cpu;
    if (cpu && (rows_kernel || m == 1))
      f32_rows_product(k, m, n, kd, x, ldx, w.f32, beta, y, ldy);
    else if (cpu)
      f32_panel_product(k, m, n, kd, x, ldx, w.f32, beta, y, ldy);
    else if (rows_kernel)
      k.gemm_rows(m, n, kd, x, ldx, w.f32, kd, beta, y, ldy);
    else
      k.gemm(true, m, n, kd, 1.0f, x, ldx, w.f32, kd, beta, y, ldy);
    return;
  }
  int off = 0;
  const bool panels = !rows_kernel && m >= panel_min_rows;
  const bool q8 = s.q8 && k.where == kernels::backend::cpu;
  for (const linear_weight::part& p : w.parts) {
    const auto product = [&](const float* a, int lda, float* c, int ldc) {
      if (q8 && kernels::cpu::int8_reads(p.type))
        int8_product(p, m, kd, a, lda, c, ldc, s.q8_rows);
      else if (panels)
        panel_product(k, p, m, kd, a, lda, c, ldc);
      else
        stored_product(p, m, kd, a, lda, c, ldc);
    };
    const float* in = x;
    int ld_in = ldx;
    if (p.order.along == v_head_order::axis::columns) {
      // The file's columns hold the value heads tiled: put the input's in the same order.
      if (p.order.span() != kd) throw std::logic_error("linear: a column order must span the whole row");
      s.in.resize(static_cast<std::size_t>(m) * kd);
      permute_v_heads(p.order, false, x, ldx, s.in.data(), kd, m);
      in = s.in.data();
      ld_in = kd;
    }
    if (beta == 0.0f && p.order.along != v_head_order::axis::rows) {
      product(in, ld_in, y + off, ldy);
    } else {
      if (beta != 0.0f && p.order.along == v_head_order::axis::rows)
        throw std::logic_error("linear: a row order is not accumulated");
      s.out.resize(static_cast<std::size_t>(m) * p.rows);
      product(in, ld_in, s.out.data(), p.rows);
      for (int i = 0; i < m; ++i) {
        const float* src = s.out.data() + static_cast<long>(i) * p.rows;
        float* dst = y + static_cast<long>(i) * ldy + off;
        if (beta != 0.0f) {
          for (int r = 0; r < p.rows; ++r) dst[r] += src[r];
          continue;
        }
        // The file's rows hold the value heads tiled from `first`: put them back in grouped order.
        const auto first = static_cast<int>(p.order.first), span = static_cast<int>(p.order.span());
        for (int r = 0; r < first; ++r) dst[r] = src[r];
        permute_v_heads(p.order, true, src + first, 0, dst + first, 0, 1);
        for (int r = first + span; r < p.rows; ++r) dst[r] = src[r];
      }
    }
    off += p.rows;
  }
  if (off != n) throw std::logic_error("linear: the stored parts do not make the rows asked for");
}

void attention_by_heads(const kernels::ops& k, const float* q, const float* keys, const float* values,
                        float* o, const kernels::attention_shape& sh, device_buffer& scratch) {
  if (k.where != kernels::backend::cpu || sh.n_kv < 2) {
    scratch.grow_to(static_cast<std::size_t>(kernels::attention_scratch(sh)));
    k.attention(q, keys, values, o, sh, scratch.data());
    return;
  }
  const int group = sh.n_q / sh.n_kv, hd = sh.head_dim;
  kernels::attention_shape one = sh;
  one.n_q = group;
  one.n_kv = 1;
  const auto per = static_cast<std::size_t>(kernels::attention_scratch(one));
  scratch.grow_to(per * static_cast<std::size_t>(sh.n_kv));
  float* base = scratch.data();
  const double keys_read = static_cast<double>(sh.pos0) + sh.m;
  row_pool::get().run(sh.n_kv, keys_read * sh.m * sh.n_q * hd, [&](int h0, int h1) {
    for (int h = h0; h < h1; ++h)
      k.attention(q + static_cast<long>(h) * group * hd, keys + static_cast<long>(h) * hd,
                  values + static_cast<long>(h) * hd, o + static_cast<long>(h) * group * hd, one,
                  base + per * static_cast<std::size_t>(h));
  });
}

void embed_rows(const kernels::ops& k, const std::int32_t* ids, const linear_weight& w, float* out, int m,
                int dim) {
  if (w.f32 != nullptr) {
    k.embed(ids, w.f32, out, m, dim);
    return;
  }
  const linear_weight::part& p = w.parts.front();
  const auto row = static_cast<std::size_t>(kernels::row_bytes(p.type, dim).value_or(0));
  for (int i = 0; i < m; ++i)
    kernels::dequantize_row(p.type, p.data + row * static_cast<std::size_t>(ids[i]),
                            out + static_cast<long>(i) * dim, dim);
}

}  // namespace anchorage
