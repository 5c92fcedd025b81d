#include "kernels/sigmoid_gate.hpp"

#include <cmath>

namespace anchorage::kernels::cpu {

void sigmoid_gate(float* x, int x_stride, const float* gate, int gate_stride, int rows, int dim) {
  for (int r = 0; r < rows; ++r) {
    float* xr = x + static_cast<long>(r) * x_stride;
    const float* gr = gate + static_cast<long>(r) * gate_stride;
    for (int i = 0; i < dim; ++i) xr[i] *= 1.0f / (1.0f + std::exp(-gr[i]));
  }
}

}  // namespace anchorage::kernels::cpu
