// Patch positions, the resampled position table, the rotary angles; see vision_positions.hpp.
#include "runtime/vision/vision_positions.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace anchorage {
namespace {

// One axis of an align_corners = True bilinear resample: the lower source index, the upper one
// (clamped) and the upper one's weight.
struct axis_tap {
  int lo = 0, hi = 0;
  double frac = 0.0;
};

axis_tap tap(int index, int length, int side) {
  const double src = length > 1 ? static_cast<double>(index) * (side - 1) / (length - 1) : 0.0;
  axis_tap t;
  t.lo = std::min(static_cast<int>(src), side - 1);
  t.hi = std::min(t.lo + 1, side - 1);
  t.frac = src - t.lo;
  return t;
}

}  // namespace

std::vector<patch_position> merge_block_positions(int grid_h, int grid_w, int merge) {
  std::vector<patch_position> out;
  out.reserve(static_cast<std::size_t>(grid_h) * grid_w);
  for (int br = 0; br < grid_h / merge; ++br)
    for (int bc = 0; bc < grid_w / merge; ++bc)
      for (int ir = 0; ir < merge; ++ir)
        for (int ic = 0; ic < merge; ++ic) out.push_back({br * merge + ir, bc * merge + ic});
  return out;
}

std::vector<position_taps> position_table_taps(int side, const std::vector<patch_position>& positions,
                                               int grid_h, int grid_w) {
  std::vector<position_taps> out(positions.size());
  for (std::size_t p = 0; p < positions.size(); ++p) {
    const axis_tap y = tap(positions[p].row, grid_h, side), x = tap(positions[p].col, grid_w, side);
    out[p] = position_taps{
        {y.lo * side + x.lo, y.lo * side + x.hi, y.hi * side + x.lo, y.hi * side + x.hi},
        {static_cast<float>((1 - y.frac) * (1 - x.frac)), static_cast<float>((1 - y.frac) * x.frac),
         static_cast<float>(y.frac * (1 - x.frac)), static_cast<float>(y.frac * x.frac)}};
  }
  return out;
}

std::vector<float> interpolate_position_table(const float* table, int side, int hidden,
                                              const std::vector<patch_position>& positions, int grid_h,
                                              int grid_w) {
  const std::vector<position_taps> taps = position_table_taps(side, positions, grid_h, grid_w);
  std::vector<float> out(positions.size() * static_cast<std::size_t>(hidden));
  for (std::size_t p = 0; p < positions.size(); ++p) {
    const float* w = taps[p].weight;
    const float* src[4] = {table + static_cast<std::size_t>(taps[p].row[0]) * hidden,
                           table + static_cast<std::size_t>(taps[p].row[1]) * hidden,
                           table + static_cast<std::size_t>(taps[p].row[2]) * hidden,
                           table + static_cast<std::size_t>(taps[p].row[3]) * hidden};
    float* dst = out.data() + p * hidden;
    for (int i = 0; i < hidden; ++i)
      dst[i] = w[0] * src[0][i] + w[1] * src[1][i] + w[2] * src[2][i] + w[3] * src[3][i];
  }
  return out;
}

vision_rotary make_vision_rotary(const std::vector<patch_position>& positions, int head_dim, double theta) {
  vision_rotary r;
  r.half = head_dim / 2;
  const int quarter = head_dim / 4;
  std::vector<double> inv_freq(quarter);
  for (int k = 0; k < quarter; ++k) inv_freq[k] = std::pow(theta, -2.0 * k / r.half);
  r.cos.resize(positions.size() * r.half);
  r.sin.resize(positions.size() * r.half);
  for (std::size_t p = 0; p < positions.size(); ++p) {
    for (int k = 0; k < r.half; ++k) {
      const double angle =
          k < quarter ? positions[p].row * inv_freq[k] : positions[p].col * inv_freq[k - quarter];
      r.cos[p * r.half + k] = static_cast<float>(std::cos(angle));
      r.sin[p * r.half + k] = static_cast<float>(std::sin(angle));
    }
  }
  return r;
}

}  // namespace anchorage
