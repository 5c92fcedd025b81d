#pragma once
#include "kernels/op.hpp"
// Multimodal rotary position embedding (Qwen3.5's interleaved M-RoPE), "rotate half" (NeoX)
// form, in place, on the first `rot_dims` floats of each head. Row r has three positions,
// pos[3r] (temporal), pos[3r+1] (height) and pos[3r+2] (width); with half = rot_dims/2,
// frequency pair i < half takes the height position when i % 3 == 1 and i < 3*sections[1], the
// width position when i % 3 == 2 and i < 3*sections[2], and the temporal one otherwise
// (transformers' apply_interleaved_mrope). Then, as rope does: theta_i = p_i * base^(-2i/rot_dims)
// in double precision, (x_i, x_{i+half}) -> (x_i cos - x_{i+half} sin, x_i sin + x_{i+half} cos).
// A row whose three positions are equal gets exactly the bits rope gives at that position.
// `pos` and `sections` (3 ints) are host memory on both backends.
ANCHORAGE_OP(void, rope_multi,
             (float* x, int stride, int rows, int heads, int head_dim, int rot_dims, const int* pos,
              const int* sections, float base))

namespace anchorage::kernels {
// Which of the three positions frequency pair i reads (0 temporal, 1 height, 2 width).
inline int rope_multi_axis(int i, const int* sections) {
  if (i % 3 == 1 && i < 3 * sections[1]) return 1;
  if (i % 3 == 2 && i < 3 * sections[2]) return 2;
  return 0;
}
}  // namespace anchorage::kernels
