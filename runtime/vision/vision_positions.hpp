#pragma once
// Where each patch of a frame sits, and the two position signals built from it: the learned
// position table resampled to the frame's grid, and the 2-D rotary angles. Patches are visited in
// merge-block order, the order of the processor's rows: (block_row, block_col, in_row, in_col),
// so each merge x merge block of patches is contiguous.
#include <vector>

namespace anchorage {

struct patch_position {
  int row = 0;  // in patch units, from the top of the frame
  int col = 0;
};

// The grid_h * grid_w positions of one frame in merge-block order. grid_h and grid_w must be
// multiples of `merge` (the caller checks).
std::vector<patch_position> merge_block_positions(int grid_h, int grid_w, int merge);

// One patch's bilinear taps into the `side` x `side` position table: the table rows of its four
// neighbours, (lo_y, lo_x), (lo_y, hi_x), (hi_y, lo_x), (hi_y, hi_x), and their weights, as
// interpolate_position_table reads them (so a device can do the same sums from the same taps).
struct position_taps {
  int row[4];
  float weight[4];
};
std::vector<position_taps> position_table_taps(int side, const std::vector<patch_position>& positions,
                                               int grid_h, int grid_w);

// The learned `side` x `side` position table (`table`, [side * side, hidden], row-major over
// (row, col)) resampled bilinearly to grid_h x grid_w with align_corners = True: patch (r, c)
// reads table coordinate (r (side - 1) / (grid_h - 1), c (side - 1) / (grid_w - 1)), 0 on an axis
// of length 1, from its four neighbours (floor and floor + 1, clamped to side - 1) with linear
// weights (position_table_taps): entry p is the sum of weight[k] * table[row[k]] over k = 0, 1, 2, 3,
// in that order. One row of `hidden` floats per entry of `positions`, in that order.
std::vector<float> interpolate_position_table(const float* table, int side, int hidden,
                                              const std::vector<patch_position>& positions, int grid_h,
                                              int grid_w);

// The rotary angles' cosines and sines, `half` = head_dim / 2 of each per patch: entry k < head_dim / 4
// is row * inv_freq[k], entry head_dim / 4 + k is col * inv_freq[k], inv_freq[k] = theta^(-4k / head_dim)
// (Hugging Face: theta^(-2k / dim) with dim = head_dim / 2). The full head_dim angle vector repeats
// these twice, so dimension i and i + half share an angle.
struct vision_rotary {
  int half = 0;
  std::vector<float> cos, sin;  // [positions.size(), half]
};
vision_rotary make_vision_rotary(const std::vector<patch_position>& positions, int head_dim, double theta);

// Rotates one head's vector `x` (head_dim = 2 * r.half floats) of the patch with index `p` the NeoX way:
// x[i], x[i + half] -> x[i] cos - x[i + half] sin, x[i + half] cos + x[i] sin.
inline void apply_vision_rotary(float* x, const vision_rotary& r, int p) {
  const float* c = r.cos.data() + static_cast<long>(p) * r.half;
  const float* s = r.sin.data() + static_cast<long>(p) * r.half;
  for (int i = 0; i < r.half; ++i) {
    const float a = x[i], b = x[i + r.half];
    x[i] = a * c[i] - b * s[i];
    x[i + r.half] = b * c[i] + a * s[i];
  }
}

}  // namespace anchorage
