#pragma once
// The rotation loop shared by cpu::rope and cpu::rope_multi (internal to the CPU backend).
#include <cmath>

namespace anchorage::kernels::cpu {

// Rotates the first rot_dims floats of each of the `heads` heads of one row (xr, heads
// head_dim floats apart), frequency pair i at position pos_of(i) (a double): theta_i =
// pos_of(i) * base^(-2i/rot_dims) in double precision, then (x_i, x_{i+half}) -> (x_i cos -
// x_{i+half} sin, x_i sin + x_{i+half} cos) in float. Both ops go through here so that a row
// whose positions are all p gets from rope_multi exactly the bits rope gives at p.
template <class PosOf>
inline void rope_row(float* xr, int heads, int head_dim, int rot_dims, float base, PosOf pos_of) {
  const int half = rot_dims / 2;
  for (int i = 0; i < half; ++i) {
    const double theta = pos_of(i) * std::pow(static_cast<double>(base), -2.0 * i / rot_dims);
    const float c = static_cast<float>(std::cos(theta));
    const float s = static_cast<float>(std::sin(theta));
    for (int h = 0; h < heads; ++h) {
      float* xh = xr + static_cast<long>(h) * head_dim;
      const float a = xh[i];
      const float b = xh[i + half];
      xh[i] = a * c - b * s;
      xh[i + half] = a * s + b * c;
    }
  }
}

}  // namespace anchorage::kernels::cpu
