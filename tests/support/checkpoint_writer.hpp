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
  bool visual = true;               // add model.visual.* tensors (the loader must ignore them)
  int max_position = 262144;        // max_position_embeddings
  bool tokenizer_files = false;     // tokenizer.json, tokenizer_config.json (with a chat_template)
  bool chat_template_file = false;  // chat_template.jinja
};

// config.json for `c` (layout qwen35) in the form `o` asks for.
nlohmann::json qwen35_config_json(const model_config& c, const checkpoint_options& o = {});

// Writes config.json and `weights` (text-only names, as qwen35_weight_specs gives them) under the
// checkpoint's names into `dir` (created if needed). Values are rounded to o.dtype.
void write_checkpoint(const std::string& dir, const model_config& c, const tensor_map& weights,
                      const checkpoint_options& o = {});

// The values `w` holds once stored as dtype `d` (round to nearest even); f32 returns `w`.
tensor_map round_to(const tensor_map& w, safetensors_dtype d);

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
