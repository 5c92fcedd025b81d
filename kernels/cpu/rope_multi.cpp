#include "kernels/rope_multi.hpp"

#include "kernels/cpu/rope_rows.hpp"

namespace anchorage::kernels::cpu {

void rope_multi(float* x, int stride, int rows, int heads, int head_dim, int rot_dims, const int* pos,
                const int* sections, float base) {
  for (int r = 0; r < rows; ++r) {
    const int* row_pos = pos + 3 * r;
    rope_row(x + static_cast<long>(r) * stride, heads, head_dim, rot_dims, base, [row_pos, sections](int i) {
      return static_cast<double>(row_pos[rope_multi_axis(i, sections)]);
    });
  }
}

}  // namespace anchorage::kernels::cpu
