#include "runtime/engine/engine_moe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace anchorage {

void moe_route(const float* logits, int m, int n_experts, int used, int* chosen, float* weight) {
  std::vector<float> p(static_cast<std::size_t>(n_experts));
  std::vector<int> order(static_cast<std::size_t>(n_experts));
  for (int r = 0; r < m; ++r) {
    const float* l = logits + static_cast<long>(r) * n_experts;
    const float top = *std::max_element(l, l + n_experts);
    float total = 0.0f;
    for (int e = 0; e < n_experts; ++e) total += p[static_cast<std::size_t>(e)] = std::exp(l[e] - top);
    for (float& v : p) v /= total;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + used, order.end(), [&](int a, int b) {
      const float pa = p[static_cast<std::size_t>(a)], pb = p[static_cast<std::size_t>(b)];
      return pa > pb || (pa == pb && a < b);
    });
    std::sort(order.begin(), order.begin() + used);
    float kept = 0.0f;
    for (int j = 0; j < used; ++j) kept += p[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
    for (int j = 0; j < used; ++j) {
      const int e = order[static_cast<std::size_t>(j)];
      chosen[static_cast<long>(r) * used + j] = e;
      weight[static_cast<long>(r) * used + j] = p[static_cast<std::size_t>(e)] / kept;
    }
  }
}

void moe_block(const kernels::ops& k, bool rows_kernel, const engine_weights& w, const std::string& prefix,
               int m, const float* xn, float* xs, moe_scratch& s, linear_scratch& ls) {
  if (w.where() != kernels::backend::cpu)
    throw std::logic_error("moe_block: mixture-of-experts layers run on the cpu backend only");
  const model_config& c = w.config();
  const int d = c.d_model, ne = c.n_experts, used = c.experts_used, ih = c.expert_hidden,
            sh = c.shared_hidden;
  const auto um = static_cast<std::size_t>(m), ud = static_cast<std::size_t>(d);
  s.logits.resize(um * static_cast<std::size_t>(ne));
  s.chosen.resize(um * static_cast<std::size_t>(used));
  s.weight.resize(um * static_cast<std::size_t>(used));
  s.in.resize(um * ud);
  s.out.resize(um * ud);
  s.acc.assign(um * ud, 0.0f);
  s.proj.resize(um * static_cast<std::size_t>(2 * std::max(ih, sh)));
  s.mix.resize(um * static_cast<std::size_t>(std::max(ih, sh)));
  s.shared.resize(um * ud);
  s.gate.resize(um);
  s.rows.resize(um);

  linear(k, rows_kernel, m, ne, d, xn, d, w.linear(prefix + "router"), 0.0f, s.logits.data(), ne, ls);
  moe_route(s.logits.data(), m, ne, used, s.chosen.data(), s.weight.data());

  for (int e = 0; e < ne; ++e) {
    int n = 0;
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < used; ++j)
        if (s.chosen[static_cast<std::size_t>(r * used + j)] == e) s.rows[static_cast<std::size_t>(n++)] = r;
    if (n == 0) continue;
    for (int i = 0; i < n; ++i)
      std::copy_n(xn + static_cast<long>(s.rows[static_cast<std::size_t>(i)]) * d, d,
                  s.in.data() + static_cast<long>(i) * d);
    const std::string x = prefix + "expert." + std::to_string(e) + ".";
    linear(k, rows_kernel, n, 2 * ih, d, s.in.data(), d, w.linear(x + "gate_up"), 0.0f, s.proj.data(), 2 * ih,
           ls);
    k.swiglu(s.proj.data(), s.mix.data(), n, ih);
    linear(k, rows_kernel, n, d, ih, s.mix.data(), ih, w.linear(x + "down"), 0.0f, s.out.data(), d, ls);
    // Each row visits its experts in ascending order: its sum does not depend on the other rows.
    for (int i = 0; i < n; ++i) {
      const int r = s.rows[static_cast<std::size_t>(i)];
      float wt = 0.0f;
      for (int j = 0; j < used; ++j)
        if (s.chosen[static_cast<std::size_t>(r * used + j)] == e)
          wt = s.weight[static_cast<std::size_t>(r * used + j)];
      float* a = s.acc.data() + static_cast<long>(r) * d;
      const float* o = s.out.data() + static_cast<long>(i) * d;
      for (int t = 0; t < d; ++t) a[t] += wt * o[t];
    }
  }

  linear(k, rows_kernel, m, 2 * sh, d, xn, d, w.linear(prefix + "shared.gate_up"), 0.0f, s.proj.data(),
         2 * sh, ls);
  k.swiglu(s.proj.data(), s.mix.data(), m, sh);
  linear(k, rows_kernel, m, d, sh, s.mix.data(), sh, w.linear(prefix + "shared.down"), 0.0f, s.shared.data(),
         d, ls);
  linear(k, rows_kernel, m, 1, d, xn, d, w.linear(prefix + "shared_gate"), 0.0f, s.gate.data(), 1, ls);
  for (int r = 0; r < m; ++r) {
    const float g = 1.0f / (1.0f + std::exp(-s.gate[static_cast<std::size_t>(r)]));
    const float* a = s.acc.data() + static_cast<long>(r) * d;
    const float* sv = s.shared.data() + static_cast<long>(r) * d;
    float* y = xs + static_cast<long>(r) * d;
    for (int t = 0; t < d; ++t) y[t] += a[t] + g * sv[t];
  }
}

}  // namespace anchorage
