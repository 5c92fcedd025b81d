#pragma once
// A Hugging Face Qwen3.5 config.json as the model_config the engine runs (layout qwen35).
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/model/model_config.hpp"

namespace anchorage {

// The serving fields a checkpoint's config gets (the server's flags may override them later).
inline constexpr int qwen35_default_gdn_chunk = 64;  // the chunk of the chunked delta rule
inline constexpr int qwen35_default_grid = 1024;     // --prefix-chunk
inline constexpr int qwen35_default_ctx = 32768;     // --ctx-size, capped at max_position_embeddings

// What a checkpoint is served with unless flags say otherwise, whatever its file format: the
// chunked delta rule's chunk qwen35_default_gdn_chunk, --ctx-size qwen35_default_ctx capped at the
// model's trained context (`max_positions`, 0 for none), --prefix-chunk qwen35_default_grid halved
// until it fits the context (a multiple of the chunk still).
void apply_qwen35_serving_defaults(model_config& c, int max_positions);

// Reads `j`, the official multimodal form (architectures Qwen3_5ForConditionalGeneration,
// model_type qwen3_5, the text model's keys nested under "text_config") or the flat text-only
// form (Qwen3_5ForCausalLM, qwen3_5_text), of the dense model or of the mixture-of-experts one
// (Qwen3_5MoeForConditionalGeneration / Qwen3_5MoeForCausalLM, qwen3_5_moe / qwen3_5_moe_text).
// `source` (the file) starts every error message.
//
//   hidden_size -> d_model, num_hidden_layers -> n_layers, intermediate_size -> mlp_hidden (dense),
//   vocab_size -> vocab, rms_norm_eps -> norm_eps (default 1e-6),
//   layer_types (or full_attention_interval, default 4) -> pattern ('G' linear_attention,
//   'A' full_attention), num_attention_heads / num_key_value_heads / head_dim -> n_q / n_kv /
//   head_dim, linear_num_key_heads / linear_num_value_heads / linear_key_head_dim /
//   linear_value_head_dim / linear_conv_kernel_dim (default 4) -> gdn_hk / gdn_hv / gdn_dk /
//   gdn_dv / conv_kernel, rope_parameters.rope_theta (or a flat rope_theta) -> rope_base,
//   head_dim * partial_rotary_factor (default 0.25) -> rope_dims, tie_word_embeddings (top
//   level, else text_config, default false), mtp_num_hidden_layers >= 1 -> mtp (one draft layer,
//   mtp.layers.0) (the loader turns it off when the weights lack mtp.*), max_position_embeddings caps
//   ctx_size.
//   Mixture of experts (every layer, the draft layer too): num_experts / num_experts_per_tok /
//   moe_intermediate_size / shared_expert_intermediate_size (all required) -> n_experts /
//   experts_used / expert_hidden (also mlp_hidden) / shared_hidden, experts_fused true (the form
//   the loader gives the weights in).
//
// Throws model_load_error naming the file and the key for a missing or mistyped key, another
// model_type, model_type and architectures that disagree on dense against mixture-of-experts, and
// what the engine cannot run: experts in a dense config (num_experts > 0), num_experts_per_tok
// above num_experts, a decoder_sparse_step other than 1 or a non-empty mlp_only_layers (dense
// layers in a mixture-of-experts model), norm_topk_prob false, an ungated attention
// (attn_output_gate false), attention biases, rope scaling other than the default (mrope is fine:
// text-only positions make it plain rope), a config validate() refuses.
model_config qwen35_config_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace anchorage
