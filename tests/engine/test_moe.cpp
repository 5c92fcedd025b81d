// The Qwen3.5 MoE layout's MLP (runtime/engine/engine_moe.hpp): the routing, one block against a
// double-precision reference computed from the Hugging Face tensors, and the two stored forms of
// the experts' gate and up giving the same bits. The tiers' exactness on a MoE preset runs with the
// dense presets (test_resident_prefix, test_state_store, test_engine_batch: qwen35moe-tiny-mtp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/engine/engine_moe.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("moe routing: a softmax over every expert, the top k renormalised, a tie to the lower index",
          "[moe][engine]") {
  // Row 0: experts 3 and 2 lead; row 1: four equal logits, so experts 0 and 1.
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 3.0f, 0.5f, 0.5f, 0.5f, 0.5f};
  std::vector<int> chosen(4);
  std::vector<float> weight(4);
  moe_route(logits.data(), 2, 4, 2, chosen.data(), weight.data());
  CHECK(chosen == std::vector<int>{2, 3, 0, 1});
  // Renormalised over the two: e^2 / (e^2 + e^3), not e^2 over all four.
  CHECK(weight[0] == Approx(1.0 / (1.0 + std::exp(1.0))).epsilon(1e-6));
  CHECK(weight[1] == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  CHECK(weight[0] + weight[1] == Approx(1.0f));
  CHECK(weight[2] == Approx(0.5f));
  CHECK(weight[3] == Approx(0.5f));
}

namespace {

double silu(double v) { return v / (1.0 + std::exp(-v)); }

// y = W x for W [rows x cols] starting `first` rows into `t`.
std::vector<double> times(const tensor& t, long first, long rows, const float* x) {
  const long cols = static_cast<long>(t.shape.back());
  std::vector<double> y(static_cast<std::size_t>(rows));
  for (long r = 0; r < rows; ++r)
    for (long c = 0; c < cols; ++c)
      y[static_cast<std::size_t>(r)] +=
          static_cast<double>(t.data[static_cast<std::size_t>((first + r) * cols + c)]) * x[c];
  return y;
}

std::vector<double> swiglu_mlp(const tensor& gate, long gate_first, const tensor& up, long up_first,
                               const tensor& down, long down_first, long hidden, long d, const float* x) {
  const std::vector<double> g = times(gate, gate_first, hidden, x), u = times(up, up_first, hidden, x);
  std::vector<float> mix(static_cast<std::size_t>(hidden));
  for (long i = 0; i < hidden; ++i)
    mix[static_cast<std::size_t>(i)] =
        static_cast<float>(silu(g[static_cast<std::size_t>(i)]) * u[static_cast<std::size_t>(i)]);
  return times(down, down_first, d, mix.data());
}

}  // namespace

TEST_CASE("a MoE block equals a double-precision reference from the Hugging Face tensors", "[moe][engine]") {
  const model_config c = test_config("qwen35moe-tiny");
  const tensor_map& w = test_weights(c);
  const engine_weights ew(c, w);
  const int d = c.d_model, m = 7, used = c.experts_used, ih = c.expert_hidden;
  std::vector<float> xn(static_cast<std::size_t>(m * d)), xs(xn.size());
  std::uint64_t s = 12345;
  for (std::size_t i = 0; i < xn.size(); ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    xn[i] = static_cast<float>(static_cast<double>(s >> 40) / 16777216.0 * 4.0 - 2.0);
    xs[i] = static_cast<float>(i % 13) * 0.01f;
  }
  const std::vector<float> before = xs;
  moe_scratch ms;
  linear_scratch ls;
  const std::string layer = "model.layers.2.mlp.";
  moe_block(kernels::ops_for(kernels::backend::cpu), false, ew, "layers.2.moe.", m, xn.data(), xs.data(), ms,
            ls);

  const tensor& router = w.at(layer + "gate.weight");
  const tensor& gate_up = w.at(layer + "experts.gate_up_proj");
  const tensor& down = w.at(layer + "experts.down_proj");
  std::vector<int> seen(static_cast<std::size_t>(c.n_experts));
  for (int r = 0; r < m; ++r) {
    const float* x = xn.data() + r * d;
    const std::vector<double> logits = times(router, 0, c.n_experts, x);
    double top = logits[0], total = 0.0;
    for (double l : logits) top = std::max(top, l);
    std::vector<double> p;
    for (double l : logits) total += p.emplace_back(std::exp(l - top));
    for (double& v : p) v /= total;
    std::vector<int> order(static_cast<std::size_t>(c.n_experts));
    for (int e = 0; e < c.n_experts; ++e) order[static_cast<std::size_t>(e)] = e;
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return p[static_cast<std::size_t>(a)] > p[static_cast<std::size_t>(b)]; });
    double kept = 0.0;
    for (int j = 0; j < used; ++j) kept += p[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
    std::vector<double> want(static_cast<std::size_t>(d));
    for (int j = 0; j < used; ++j) {
      const int e = order[static_cast<std::size_t>(j)];
      ++seen[static_cast<std::size_t>(e)];
      const std::vector<double> o = swiglu_mlp(gate_up, 2L * ih * e, gate_up, 2L * ih * e + ih, down,
                                               static_cast<long>(d) * e, ih, d, x);
      for (int t = 0; t < d; ++t)
        want[static_cast<std::size_t>(t)] +=
            p[static_cast<std::size_t>(e)] / kept * o[static_cast<std::size_t>(t)];
    }
    const std::vector<double> sh = swiglu_mlp(
        w.at(layer + "shared_expert.gate_proj.weight"), 0, w.at(layer + "shared_expert.up_proj.weight"), 0,
        w.at(layer + "shared_expert.down_proj.weight"), 0, c.shared_hidden, d, x);
    const double g = 1.0 / (1.0 + std::exp(-times(w.at(layer + "shared_expert_gate.weight"), 0, 1, x)[0]));
    for (int t = 0; t < d; ++t) {
      const double expect = before[static_cast<std::size_t>(r * d + t)] + want[static_cast<std::size_t>(t)] +
                            g * sh[static_cast<std::size_t>(t)];
      INFO("row " << r << " column " << t);
      CHECK(xs[static_cast<std::size_t>(r * d + t)] == Approx(expect).margin(2e-5));
    }
  }
  // The rows spread over several experts: the check covers the slicing of more than one.
  int used_experts = 0;
  for (int n : seen) used_experts += n > 0 ? 1 : 0;
  CHECK(used_experts >= 4);
}

TEST_CASE("experts stored as one gate_up tensor or as gate and up compute the same bits",
          "[moe][engine][exact]") {
  const model_config fused = test_config("qwen35moe-tiny-mtp");
  model_config split = fused;
  split.experts_fused = false;
  const tensor_map& w = test_weights(fused);
  tensor_map ws;
  const long ih = fused.expert_hidden, h = fused.d_model, per = ih * h;
  for (const auto& [name, t] : w) {
    const std::string suffix = "mlp.experts.gate_up_proj";
    if (name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      ws.emplace(name, t);
      continue;
    }
    const std::string stem = name.substr(0, name.size() - std::string("gate_up_proj").size());
    tensor g, u;
    g.shape = u.shape = {fused.n_experts, ih, h};
    for (int e = 0; e < fused.n_experts; ++e) {
      const auto at = t.data.begin() + 2 * per * e;
      g.data.insert(g.data.end(), at, at + per);
      u.data.insert(u.data.end(), at + per, at + 2 * per);
    }
    ws.emplace(stem + "gate_proj", std::move(g));
    ws.emplace(stem + "up_proj", std::move(u));
  }
  engine a(fused, w), b(split, ws);
  const std::vector<token_id> ids = test_tokens(100);
  a.prefill(ids);
  b.prefill(ids);
  CHECK(a.last_logits() == b.last_logits());
  for (int i = 0; i < 4; ++i) {
    a.decode(ids[static_cast<std::size_t>(i)]);
    b.decode(ids[static_cast<std::size_t>(i)]);
  }
  CHECK(a.last_logits() == b.last_logits());
  CHECK(a.last_draft_logits() == b.last_draft_logits());
}

TEST_CASE("a MoE model is refused where its config does not hold together", "[moe][engine]") {
  model_config c = test_config("qwen35moe-tiny");
  SECTION("more experts used than there are") {
    c.experts_used = c.n_experts + 1;
    CHECK_THROWS_WITH(c.validate(), Catch::Contains("experts_used"));
  }
  SECTION("the reference layout") {
    c.layout = model_layout::reference;
    c.pattern = "GGGA";
    CHECK_THROWS_WITH(c.validate(), Catch::Contains("qwen35 layout"));
  }
  SECTION("the cuda backend") {
    if (kernels::cuda_available())
      CHECK_THROWS_WITH(engine_weights(c, test_weights(c), kernels::backend::cuda),
                        Catch::Contains("mixture-of-experts"));
  }
}
