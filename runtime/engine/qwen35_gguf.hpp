#pragma once
// A qwen35-layout model as llama.cpp's `qwen35` GGUF (general.architecture "qwen35"), both ways.
// The tensor conventions are in qwen35_gguf_tensors.hpp, the tokenizer's in qwen35_gguf_vocab.hpp.
//
// Metadata written (conversion/qwen.py Qwen3_5TextModel; read by src/models/qwen35.cpp):
//   qwen35.block_count (n_layers, + 1 with the mtp layer), qwen35.nextn_predict_layers (1, with mtp),
//   context_length (ctx_size), embedding_length, feed_forward_length, attention.head_count,
//   head_count_kv, key_length = value_length = head_dim, attention.layer_norm_rms_epsilon,
//   rope.freq_base, rope.dimension_count (rotary_dims), rope.dimension_sections [11, 11, 10, 0]
//   (text positions are equal in every section, so the sections do not change the result),
//   ssm.conv_kernel, ssm.state_size (gdn_dk), ssm.group_count (gdn_hk), ssm.time_step_rank (gdn_hv),
//   ssm.inner_size (gdn_hv * gdn_dv), full_attention_interval when the pattern follows llama.cpp's
//   rule (layer i is attention iff (i + 1) % interval == 0), else attention.recurrent_layers
//   (bool per block), general.name (the preset), general.alignment 32.
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/core/tensor.hpp"
#include "runtime/engine/loaded_model.hpp"
#include "runtime/engine/model_config.hpp"

namespace anchorage {

enum class gguf_dtype { f32, f16 };

// Writes `weights` (qwen35_weight_specs(c), Hugging Face names and values) as a qwen35 GGUF. With
// f16 the matrices are stored as F16 and the 1-D tensors and ssm_conv1d stay F32, as llama.cpp's
// converter does. `tokenizer_json` may be null (the byte vocabulary is written); an empty
// chat_template is left out. Throws std::invalid_argument when c is not the qwen35 layout, has
// gdn_dk != gdn_dv (llama.cpp reads one head size for both), or the weights do not match
// qwen35_weight_specs(c); std::runtime_error on an I/O failure.
void save_qwen35_gguf(const std::string& path, const model_config& c, const tensor_map& weights,
                      const nlohmann::json& tokenizer_json, const std::string& chat_template,
                      gguf_dtype dtype);

// Reads a qwen35 GGUF (`--model FILE.gguf`): the config from the metadata (layout qwen35; grid,
// gdn_chunk and seed at their defaults; ctx_size from context_length), the weights under the
// Hugging Face names and conventions (qwen35_from_gguf), the tokenizer as a tokenizer.json document
// and a tokenizer_config.json-shaped one (qwen35_gguf_vocab.hpp), the chat template. Throws
// model_load_error naming the file and the key or tensor: another architecture ("... is 'llama',
// expected 'qwen35'"), a missing key, a missing or mis-shaped tensor, a quantized tensor type, a
// truncated file.
loaded_model load_qwen35_gguf(const std::string& path);

}  // namespace anchorage
