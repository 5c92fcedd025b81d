#pragma once
// The shape of the Qwen3.5 vision encoder (Hugging Face `Qwen3_5VisionConfig`, the `vision_config`
// object of a Qwen3.5 config.json), and the presets the tests and benchmarks run.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace anchorage {

// The activation inside each block's MLP (`hidden_act`). The merger always uses the exact erf GELU.
enum class vision_activation {
  gelu_tanh,  // "gelu_pytorch_tanh" (Qwen3.5's value), "gelu_new", "gelu_fast": the tanh approximation
  gelu_erf,   // "gelu": the exact 0.5 x (1 + erf(x / sqrt 2))
};

const char* to_string(vision_activation a);

struct vision_config {
  int depth = 27;  // ViT blocks
  int hidden_size = 1152;
  int num_heads = 16;
  int intermediate_size = 4304;  // block MLP width
  vision_activation hidden_act = vision_activation::gelu_tanh;
  int in_channels = 3;
  int patch_size = 16;
  int temporal_patch_size = 2;
  int spatial_merge_size = 2;          // merge_size x merge_size patches become one language-model embedding
  int out_hidden_size = 3584;          // the language model's hidden size
  int num_position_embeddings = 2304;  // a learned side x side table, side = 48
  // Hugging Face's Qwen3_5VisionRotaryEmbedding defaults theta to 10000 and the vision model does not
  // pass one; a config's vision rope_parameters.rope_theta (or rope_theta) overrides it.
  double rope_theta = 10000.0;
  // Fixed by Hugging Face (every vision LayerNorm is built with eps=1e-6); no config key sets it.
  float layer_norm_eps = 1e-6f;

  int head_dim() const { return hidden_size / num_heads; }
  // Values of one patch row, in (channel, temporal, y, x) order: 3 * 2 * 16 * 16 = 1536.
  int patch_values() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
  int merge_unit() const { return spatial_merge_size * spatial_merge_size; }
  int position_side() const;                                        // sqrt(num_position_embeddings)
  int merged_hidden() const { return hidden_size * merge_unit(); }  // the merger's input width

  // Throws std::invalid_argument naming the first inconsistent field: a size below 1, a
  // hidden_size not divisible by num_heads, a head_dim not divisible by 4 (the 2-D rotary gives a
  // quarter of each head to the row frequencies and a quarter to the column ones, each twice), a
  // num_position_embeddings that is not a perfect square, a rope_theta not above 1.
  void validate() const;
};

// Reads the `vision_config` object of `config_json` (a Qwen3.5 config.json, dense or MoE) or, when
// `config_json` has no such key but has "depth" and "hidden_size", `config_json` itself. Keys as
// Hugging Face names them; those absent take Qwen3_5VisionConfig's defaults above:
//   depth, hidden_size, num_heads, intermediate_size, hidden_act, in_channels, patch_size,
//   temporal_patch_size, spatial_merge_size, out_hidden_size, num_position_embeddings,
//   rope_parameters.rope_theta or rope_theta.
// Throws std::invalid_argument starting with `source` and naming the key ("vision_config.num_heads
// must be an integer, got \"16\"") for a mistyped or out-of-range value, an unknown hidden_act,
// deepstack_visual_indexes that are not empty (Qwen3-VL's DeepStack; Qwen3.5 has none), or a
// config validate() refuses.
vision_config vision_config_from_json(const nlohmann::json& config_json, const std::string& source);

// Test presets, with the real patch geometry (3 x 2 x 16 x 16 patches, 2 x 2 merge, a 48 x 48
// position table) and a small trunk. tiny: depth 2, hidden 64, 4 heads (head_dim 16), MLP 176 (not
// a multiple of 64, on purpose). small: depth 4, hidden 128, 4 heads (head_dim 32), MLP 352.
vision_config tiny_vision_config(int out_hidden_size);
vision_config small_vision_config(int out_hidden_size);

}  // namespace anchorage
