#include "kernels/swiglu.hpp"

#include <cmath>

#include "kernels/cpu/fast_exp.hpp"

namespace anchorage::kernels::cpu {

void swiglu(const float* in, float* out, int rows, int hidden) {
  for (int r = 0; r < rows; ++r) {
    const float* gate = in + 2L * r * hidden;
    const float* up = gate + hidden;
    float* o = out + static_cast<long>(r) * hidden;
    for (int i = 0; i < hidden; ++i) o[i] = fast_silu(gate[i]) * up[i];
  }
}

}  // namespace anchorage::kernels::cpu
