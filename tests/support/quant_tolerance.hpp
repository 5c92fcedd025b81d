#pragma once
// The bound the stored-type kernels' tests hold a product to (tests/kernels/test_quant_*.cpp).
#include <cmath>
#include <cstdint>

#include "kernels/dequantize.hpp"
#include "kernels/weight_type.hpp"

namespace anchorage::testing {

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
