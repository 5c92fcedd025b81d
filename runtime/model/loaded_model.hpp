#pragma once
// A checkpoint read from disk (`--model PATH`): a Hugging Face directory (runtime/model/model_dir)
// or a GGUF file (runtime/model/qwen35_gguf), in the one form the server starts from.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <map>
#include <optional>
#include <string>

#include "runtime/core/tensor.hpp"
#include "runtime/model/loaded_vision.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/stored_weight.hpp"

namespace anchorage {

// A checkpoint that cannot be loaded. The message names the file and, where there is one, the
// tensor or key: "model.safetensors: tensor 'model.layers.3.mlp.up_proj.weight' has dtype I8 ...".
struct model_load_error : std::runtime_error {
  explicit model_load_error(const std::string& message) : std::runtime_error(message) {}
};

struct loaded_model {
  model_config config;  // layout qwen35, shapes from the checkpoint; grid and ctx_size defaults
  // The weights under the Hugging Face text-only names (weight_specs(config)): each name is in
  // exactly one of `weights` (float32) and `stored` (a matrix kept in the file's own type, F16,
  // BF16, a GGUF block type or a GGUF's F32, mapped from the file; see stored_weight.hpp). Norms,
  // vectors, the convolution and a safetensors checkpoint's F32 tensors are in `weights`.
  tensor_map weights;
  stored_weights stored;
  std::string source;  // the path given
  // The tokenizer as a tokenizer.json document (for a GGUF file, built from its tokenizer.ggml.*
  // metadata); null when the checkpoint has none.
  nlohmann::json tokenizer;
  nlohmann::json tokenizer_config;  // tokenizer_config.json; null when absent
  std::string chat_template;        // chat_template.jinja, tokenizer_config's or the GGUF's; may be empty
  // The type each weight is stored in, under its Hugging Face name ("Q4_K", "BF16", ...), where
  // the file stores it in a type other than float32 (a GGUF's; empty for safetensors, whose
  // values are exact in F32). Part of the weights' digest: a cache written under one stored
  // type is never read under another (weights_digest).
  std::map<std::string, std::string> stored_types;
  // The vision tower, when the checkpoint has one (a Hugging Face folder whose config.json has a
  // vision_config and whose shards hold model.visual.* tensors); empty for a text-only checkpoint
  // and for a GGUF file (its tower is a separate mmproj file: load_mmproj). Not part of the
  // weights' digest (weights_digest covers `weights` and `stored` only): see vision_digest.
  std::optional<loaded_vision> vision;
};

// Converts every weight in `m.stored` to float32 into `m.weights` (to_f32), leaving `stored`
// empty: --weight-storage f32, the cuda backend (whose ops read float32 weights), and code that
// reads the values. stored_types is kept: the file's types stay part of the digest.
void convert_stored_to_f32(loaded_model& m);

}  // namespace anchorage
