// The kernels the Qwen3.5 layout adds or extends (rotary on part of each head, the attention
// output gate) against their plain definitions.
#include <catch2/catch.hpp>

#include <cmath>
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

}  // namespace

TEST_CASE("rope rotates the first rot_dims of each head in half-split pairs", "[kernels][qwen35]") {
  const int rows = 3, heads = 2, head_dim = 16, rot = 8, stride = heads * head_dim + 3, pos0 = 5;
  const double base = 1e7;
  const auto x0 = random_vec(static_cast<std::size_t>(rows) * stride, 11);
  auto x = x0;
  cpu::rope(x.data(), stride, rows, heads, head_dim, rot, pos0, static_cast<float>(base));
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      const int at = r * stride + h * head_dim;
      for (int i = 0; i < rot / 2; ++i) {
        const double theta = (pos0 + r) * std::pow(base, -2.0 * i / rot);
        const double a = x0[at + i], b = x0[at + i + rot / 2];
        CHECK(x[at + i] == Approx(a * std::cos(theta) - b * std::sin(theta)).margin(1e-6));
        CHECK(x[at + i + rot / 2] == Approx(a * std::sin(theta) + b * std::cos(theta)).margin(1e-6));
      }
      for (int i = rot; i < head_dim; ++i) CHECK(x[at + i] == x0[at + i]);
    }
  // the padding between rows is not touched
  CHECK(x[2 * head_dim] == x0[2 * head_dim]);
}

TEST_CASE("rope with rot_dims == head_dim is the whole-head rotation", "[kernels][qwen35]") {
  const auto x0 = random_vec(4 * 16, 12);
  auto a = x0, b = x0;
  cpu::rope(a.data(), 16, 4, 1, 16, 16, 3, 10000.0f);
  // the whole-head form by its definition: pairs (i, i + 8), theta_i = pos * base^(-2i/16)
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 8; ++i) {
      const double theta = (3 + r) * std::pow(10000.0, -2.0 * i / 16);
      const float c = static_cast<float>(std::cos(theta)), s = static_cast<float>(std::sin(theta));
      const float u = x0[r * 16 + i], v = x0[r * 16 + i + 8];
      b[r * 16 + i] = u * c - v * s;
      b[r * 16 + i + 8] = u * s + v * c;
    }
  CHECK(a == b);
}

TEST_CASE("sigmoid_gate multiplies by the sigmoid of a strided gate", "[kernels][qwen35]") {
  const int rows = 4, dim = 6;
  const auto x0 = random_vec(rows * dim, 21);
  const auto gate = random_vec(rows * 2 * dim, 22, -6.0f, 6.0f);
  auto x = x0;
  cpu::sigmoid_gate(x.data(), dim, gate.data() + dim, 2 * dim, rows, dim);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < dim; ++i) {
      const double g = gate[r * 2 * dim + dim + i];
      CHECK(x[r * dim + i] == Approx(x0[r * dim + i] / (1.0 + std::exp(-g))).epsilon(1e-6).margin(1e-7));
    }
}
