#pragma once
// A checkpoint's vision tower (the Qwen3.5 ViT and its merger) as read from disk, in the one form
// runtime/vision builds its encoder from: a Hugging Face folder's model.visual.* tensors
// (load_model_dir) or llama.cpp's mmproj GGUF (load_mmproj), either way under the Hugging Face
// names and with a Hugging Face vision_config. The shapes are not checked here against the config
// (runtime/vision's load_vision_weights does that), except an mmproj's, which are checked against
// its own metadata while its names are mapped.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/tensor.hpp"

namespace anchorage {

struct loaded_vision {
  // The `vision_config` object of a Hugging Face config.json (depth, hidden_size, num_heads, ...;
  // for an mmproj, built from its clip.vision.* metadata).
  nlohmann::json config;
  // Every tensor of the tower, float32, under "model.visual." + the Hugging Face name
  // ("model.visual.blocks.0.attn.qkv.weight"); a checkpoint that stores them as "visual.*" is
  // renamed to this form.
  tensor_map weights;
  // The text of preprocessor_config.json (runtime/image's image_processor_config_from_json reads
  // it); for an mmproj, a JSON document built from clip.vision.image_mean / image_std and the
  // patch and merge sizes; empty when the checkpoint has none (the processor's defaults apply).
  std::string processor_config;
  std::string source;  // the folder or the mmproj file
};

// XXH3-64 over the weights (in name order: the name, the shape, the float32 values), then the
// config (its compact dump) and the processor config's text: everything from decoded pixels to an
// image's embeddings that comes from the checkpoint. Apart from the text model's weights_digest,
// which never sees the vision tower (a model digests the same with or without one).
std::uint64_t vision_digest(const loaded_vision& v);

}  // namespace anchorage
