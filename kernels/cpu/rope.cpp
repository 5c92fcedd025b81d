#include "kernels/rope.hpp"

#include "kernels/cpu/rope_rows.hpp"

namespace anchorage::kernels::cpu {

void rope(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, int pos0, float base) {
  for (int r = 0; r < rows; ++r) {
    const double pos = static_cast<double>(pos0 + r);
    rope_row(x + static_cast<long>(r) * stride, heads, head_dim, rot_dims, base, [pos](int) { return pos; });
  }
}

}  // namespace anchorage::kernels::cpu
