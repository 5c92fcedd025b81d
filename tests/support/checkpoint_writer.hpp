#pragma once
// Writes Hugging Face Qwen3.5 checkpoint directories for the loader's tests: config.json in the
// official multimodal form (or the flat text-only one), safetensors shards under the real names
// with a model.safetensors.index.json (or one model.safetensors), optional tokenizer files.
//
// The config is written from the model_config field by field here, independently of
// runtime/model/qwen35_config.cpp, so that a test compares two separate codings of the format.
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/tensor.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/safetensors.hpp"

namespace anchorage::testing {

struct checkpoint_options {
  bool multimodal = true;  // Qwen3_5ForConditionalGeneration, keys under text_config; else flat
  int shards = 3;          // 0: one model.safetensors without an index
  safetensors_dtype dtype = safetensors_dtype::bf16;
  bool f32_ssm_params = false;      // A_log and dt_bias as F32 (as some official checkpoints store them)
  bool visual = true;               // add model.visual.* tensors (the text model ignores them)
  int max_position = 262144;        // max_position_embeddings
  bool tokenizer_files = false;     // tokenizer.json, tokenizer_config.json (with a chat_template)
  bool chat_template_file = false;  // chat_template.jinja
  // A real vision tower (with `visual`, in the multimodal form): when `vision_weights` is not empty
  // (tensors under "model.visual." names), they are written in place of the two placeholder
  // tensors, renamed to `vision_store_prefix` + the rest ("visual." for the short form), and rounded
  // to `dtype` like the rest. `vision_config`, when not null, is config.json's vision_config in
  // place of the placeholder {depth 1, hidden_size 8}; `vision_shard` puts every vision tensor
  // in a shard of its own, "model-vision.safetensors" (with `shards` > 0), as some exports do.
  tensor_map vision_weights;
  std::string vision_store_prefix = "model.visual.";
  nlohmann::json vision_config;
  bool vision_shard = false;
  std::string preprocessor_config;  // not empty: written as preprocessor_config.json
};

// config.json for `c` (layout qwen35) in the form `o` asks for.
nlohmann::json qwen35_config_json(const model_config& c, const checkpoint_options& o = {});

// Writes config.json and `weights` (text-only names, as qwen35_weight_specs gives them) under the
// checkpoint's names into `dir` (created if needed). Values are rounded to o.dtype.
void write_checkpoint(const std::string& dir, const model_config& c, const tensor_map& weights,
                      const checkpoint_options& o = {});

// The values `w` holds once stored as dtype `d` (round to nearest even); f32 returns `w`.
tensor_map round_to(const tensor_map& w, safetensors_dtype d);

// The vision tower's tensors named as `store_prefix` + the part after "model.visual.".
tensor_map renamed_vision(const tensor_map& vision, const std::string& store_prefix);

// The checkpoint name of a text-only tensor name in the multimodal form.
std::string multimodal_name(const std::string& text_name);

// A safetensors file written byte by byte: the 8-byte length, `header`, then `data`.
void write_raw_safetensors(const std::string& path, const nlohmann::json& header, const std::string& data);

// The tokenizer files write_checkpoint writes (for comparison in tests).
nlohmann::json test_tokenizer_json();
nlohmann::json test_tokenizer_config_json();
inline constexpr const char* test_chat_template_file =
    "{{ messages[0]['content'] }} (from chat_template.jinja)";

}  // namespace anchorage::testing
