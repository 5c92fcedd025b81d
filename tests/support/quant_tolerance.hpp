#pragma once
// What the stored-type kernels' tests share (tests/kernels/test_quant_*.cpp, test_int8_matmul.cpp):
// the rows they multiply and the bound they hold a product to.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/dequantize.hpp"
#include "kernels/quantize.hpp"
#include "kernels/weight_type.hpp"

namespace anchorage::testing {

// n weight rows of k values stored as t: rows of different scales, some all positive (K-type
// mins of zero), some with a few large values (a block scale set by one outlier).
inline std::vector<std::uint8_t> stored_rows(kernels::weight_type t, int n, int k, std::uint64_t seed) {
  const auto rb = static_cast<std::size_t>(*kernels::row_bytes(t, k));
  std::vector<std::uint8_t> w(rb * static_cast<std::size_t>(n));
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<std::size_t>(k));
  for (int r = 0; r < n; ++r) {
    const float s = 0.01f * static_cast<float>(1 + r % 5);
    std::uniform_real_distribution<float> d(r % 4 == 3 ? 0.0f : -s, s);
    for (auto& e : v) e = d(rng);
    if (r % 3 == 1) v[static_cast<std::size_t>(r) % v.size()] = 40.0f * s;
    kernels::quantize_row(t, v.data(), w.data() + rb * static_cast<std::size_t>(r), k);
  }
  return w;
}

// sum |w_j x_j| over a row, the scale of a dot product's rounding; for q4_K/q5_K the kernel
// sums d*sc*q*x and dmin*m*x apart, and each can exceed |w| by up to dmin * m, so their
// magnitudes are added too.
inline double dot_magnitude(kernels::weight_type t, const std::uint8_t* row, const float* w, const float* x,
                            int k) {
  double mag = 0.0;
  for (int j = 0; j < k; ++j) mag += std::fabs(static_cast<double>(w[j]) * x[j]);
  if (t == kernels::weight_type::q4_k || t == kernels::weight_type::q5_k) {
    const int bb = kernels::block_bytes(t);
    for (int b = 0; b < k / 256; ++b) {
      const std::uint8_t* blk = row + static_cast<long>(b) * bb;
      const double dmin = kernels::f16_to_f32(static_cast<std::uint16_t>(blk[2] | (blk[3] << 8)));
      for (int s = 0; s < 8; ++s) {
        int sc, m;
        kernels::k_scale_min(blk + 4, s, &sc, &m);
        double sx = 0.0;
        for (int l = 0; l < 32; ++l) sx += std::fabs(x[256 * b + 32 * s + l]);
        mag += 2.0 * std::fabs(dmin * m) * sx;
      }
    }
  }
  return mag;
}

}  // namespace anchorage::testing
