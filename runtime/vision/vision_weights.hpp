#pragma once
// The Qwen3.5 vision encoder's weights, float32, read from tensors under the Hugging Face names
// (`model.visual.` + the names below; some checkpoints drop the `model.`):
//   patch_embed.proj.weight [hidden, in_channels, temporal_patch, patch, patch], .bias [hidden]
//   pos_embed.weight [num_position_embeddings, hidden]
//   blocks.N.norm1.{weight,bias} [hidden], blocks.N.norm2.{weight,bias} [hidden]   (LayerNorm)
//   blocks.N.attn.qkv.weight [3 hidden, hidden], .bias [3 hidden]                   ([q | k | v] rows)
//   blocks.N.attn.proj.weight [hidden, hidden], .bias [hidden]
//   blocks.N.mlp.linear_fc1.weight [intermediate, hidden], .bias [intermediate]
//   blocks.N.mlp.linear_fc2.weight [hidden, intermediate], .bias [hidden]
//   merger.norm.{weight,bias} [hidden]
//   merger.linear_fc1.weight [merged, merged], .bias [merged]        (merged = hidden * merge^2)
//   merger.linear_fc2.weight [out_hidden, merged], .bias [out_hidden]
// Linear weights are [out, in], row-major, as PyTorch stores them.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/model/safetensors.hpp"
#include "runtime/vision/vision_config.hpp"

namespace anchorage {

inline constexpr const char* vision_prefix = "model.visual.";
inline constexpr const char* vision_short_prefix = "visual.";

struct vision_block_weights {
  std::vector<float> norm1_weight, norm1_bias;
  std::vector<float> qkv_weight, qkv_bias;  // [3 hidden, hidden], [3 hidden]
  std::vector<float> proj_weight, proj_bias;
  std::vector<float> norm2_weight, norm2_bias;
  std::vector<float> fc1_weight, fc1_bias;  // [intermediate, hidden]
  std::vector<float> fc2_weight, fc2_bias;  // [hidden, intermediate]
};

struct vision_weights {
  vision_config config;
  std::vector<float> patch_weight;  // [hidden, patch_values()], a row in (C, T, y, x) order
  std::vector<float> patch_bias;
  std::vector<float> pos_embed;  // [side * side, hidden], row-major over (row, col) of the table
  std::vector<vision_block_weights> blocks;
  std::vector<float> merger_norm_weight, merger_norm_bias;
  std::vector<float> merger_fc1_weight, merger_fc1_bias;  // [merged, merged]
  std::vector<float> merger_fc2_weight, merger_fc2_bias;  // [out_hidden, merged]
};

// The tensors `config` needs, under `prefix` + the names above, in the order listed there.
std::vector<tensor_spec> vision_weight_specs(const vision_config& config,
                                             const std::string& prefix = vision_prefix);

// The vision weights among `tensors` (a whole checkpoint's tensors may be passed: only names under
// the prefix are looked at; the prefix is "visual." when names have it and none has "model.visual.",
// else "model.visual.").
// Every tensor of vision_weight_specs must be there with its shape and no other tensor under the
// prefix (a DeepStack merger of Qwen3-VL, say), else throws safetensors_error whose message starts
// with `source` and names each tensor (check_tensors' lines). Moves the data out of `tensors`.
// Throws std::invalid_argument if config.validate() does.
vision_weights load_vision_weights(const vision_config& config, tensor_map&& tensors,
                                   const std::string& source);

// Random weights for `config` under the "model.visual." names, the same for the same seed:
// LayerNorm weights in 1 +- 0.1 and biases in +- 0.1; linear weights uniform with standard
// deviation 1 / sqrt(fan_in) so activations keep about unit scale through the blocks (and the
// attention's scores spread enough that the softmax is far from uniform); linear biases in +- 0.05;
// the position table in +- 0.5.
tensor_map random_vision_weights(const vision_config& config, std::uint64_t seed);

}  // namespace anchorage
