#include "kernels/add.hpp"

namespace anchorage::kernels::cpu {

void add(float* x, const float* y, long n) {
  for (long i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace anchorage::kernels::cpu
