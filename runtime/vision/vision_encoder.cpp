// The encoder's forward, op by op; see vision_encoder.hpp.
#include "runtime/vision/vision_encoder.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>

#include "runtime/vision/vision_attention.hpp"
#include "runtime/vision/vision_gelu.hpp"
#include "runtime/vision/vision_layer_norm.hpp"
#include "runtime/vision/vision_linear.hpp"
#include "runtime/vision/vision_positions.hpp"

namespace anchorage {
namespace {

// One pre-norm block over all frames of `x` ([frames * per_frame, hidden]), in place.
struct block_buffers {
  std::vector<float> normed, qkv, attended, mlp, scores;
};

void run_block(const vision_config& c, const vision_block_weights& b, const vision_rotary& rotary, int frames,
               int per_frame, std::vector<float>& x, block_buffers& buf) {
  const int n = frames * per_frame, h = c.hidden_size, inter = c.intermediate_size;
  const float eps = c.layer_norm_eps;
  vision_layer_norm(x.data(), n, h, b.norm1_weight.data(), b.norm1_bias.data(), eps, buf.normed.data());
  vision_linear(buf.normed.data(), n, h, b.qkv_weight.data(), b.qkv_bias.data(), 3 * h, buf.qkv.data());
  for (int f = 0; f < frames; ++f)
    vision_attention(buf.qkv.data() + static_cast<std::size_t>(f) * per_frame * 3 * h, per_frame, c.num_heads,
                     c.head_dim(), rotary, buf.attended.data() + static_cast<std::size_t>(f) * per_frame * h,
                     buf.scores);
  vision_linear(buf.attended.data(), n, h, b.proj_weight.data(), b.proj_bias.data(), h, x.data(), true);

  vision_layer_norm(x.data(), n, h, b.norm2_weight.data(), b.norm2_bias.data(), eps, buf.normed.data());
  vision_linear(buf.normed.data(), n, h, b.fc1_weight.data(), b.fc1_bias.data(), inter, buf.mlp.data());
  if (c.hidden_act == vision_activation::gelu_tanh) {
    vision_gelu_tanh(buf.mlp.data(), buf.mlp.size());
  } else {
    vision_gelu_erf(buf.mlp.data(), buf.mlp.size());
  }
  vision_linear(buf.mlp.data(), n, inter, b.fc2_weight.data(), b.fc2_bias.data(), h, x.data(), true);
}

}  // namespace

void check_vision_grid(const vision_config& c, int grid_t, int grid_h, int grid_w) {
  const int m = c.spatial_merge_size;
  if (grid_t < 1 || grid_h < 1 || grid_w < 1 || grid_h % m != 0 || grid_w % m != 0)
    throw std::invalid_argument("encode_image: grid (" + std::to_string(grid_t) + ", " +
                                std::to_string(grid_h) + ", " + std::to_string(grid_w) +
                                ") needs t >= 1 and h, w positive multiples of " + "spatial_merge_size " +
                                std::to_string(m));
}

std::vector<float> encode_image(const vision_weights& w, const float* patches, int grid_t, int grid_h,
                                int grid_w) {
  const vision_config& c = w.config;
  check_vision_grid(c, grid_t, grid_h, grid_w);
  const int per_frame = grid_h * grid_w, n = grid_t * per_frame, h = c.hidden_size;
  const std::size_t rows = static_cast<std::size_t>(n);

  // 1-2. Patch embedding plus the resampled position table, frame by frame.
  std::vector<float> x(rows * h);
  vision_linear(patches, n, c.patch_values(), w.patch_weight.data(), w.patch_bias.data(), h, x.data());
  const std::vector<patch_position> positions = merge_block_positions(grid_h, grid_w, c.spatial_merge_size);
  const std::vector<float> pos =
      interpolate_position_table(w.pos_embed.data(), c.position_side(), h, positions, grid_h, grid_w);
  for (int f = 0; f < grid_t; ++f) {
    float* frame = x.data() + static_cast<std::size_t>(f) * per_frame * h;
    for (std::size_t i = 0; i < pos.size(); ++i) frame[i] += pos[i];
  }

  // 3. The blocks.
  const vision_rotary rotary = make_vision_rotary(positions, c.head_dim(), c.rope_theta);
  block_buffers buf;
  buf.normed.resize(rows * h);
  buf.qkv.resize(rows * 3 * h);
  buf.attended.resize(rows * h);
  buf.mlp.resize(rows * c.intermediate_size);
  for (const vision_block_weights& b : w.blocks) run_block(c, b, rotary, grid_t, per_frame, x, buf);
  buf = block_buffers{};

  // 4. The merger: consecutive rows of one merge block are one merged row once normalised.
  const int merged = c.merged_hidden(), tokens = n / c.merge_unit();
  vision_layer_norm(x.data(), n, h, w.merger_norm_weight.data(), w.merger_norm_bias.data(), c.layer_norm_eps,
                    x.data());
  std::vector<float> hidden(static_cast<std::size_t>(tokens) * merged);
  vision_linear(x.data(), tokens, merged, w.merger_fc1_weight.data(), w.merger_fc1_bias.data(), merged,
                hidden.data());
  vision_gelu_erf(hidden.data(), hidden.size());
  std::vector<float> out(static_cast<std::size_t>(tokens) * c.out_hidden_size);
  vision_linear(hidden.data(), tokens, merged, w.merger_fc2_weight.data(), w.merger_fc2_bias.data(),
                c.out_hidden_size, out.data());
  return out;
}

}  // namespace anchorage
