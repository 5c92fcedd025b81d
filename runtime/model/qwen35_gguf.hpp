#pragma once
// A qwen35-layout model as llama.cpp's `qwen35` GGUF (general.architecture "qwen35"), or, with
// mixture-of-experts layers, as its `qwen35moe` GGUF (Qwen3.5 MoE), both ways. The tensor
// conventions are in qwen35_gguf_tensors.hpp, the tokenizer's in qwen35_gguf_vocab.hpp.
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
// A qwen35moe file has the same keys under the prefix "qwen35moe." (conversion/qwen.py
// Qwen3_5MoeTextModel via Qwen2MoeModel; read by src/models/qwen35moe.cpp), without
// feed_forward_length, and with expert_count (n_experts), expert_used_count (experts_used),
// expert_feed_forward_length (expert_hidden) and expert_shared_feed_forward_length (shared_hidden).
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/loaded_model.hpp"
#include "runtime/model/model_config.hpp"

namespace anchorage {

// What the exporter stores the weight matrices as. The 1-D tensors (norms, ssm_a, ssm_dt.bias,
// ffn_gate_inp_shexp), ssm_conv1d and the router ffn_gate_inp always stay F32, as llama.cpp's
// converter and llama-quantize keep them; the experts' stacked matrices are matrices here (rows
// along ne0, as llama-quantize quantizes them).
//  - f32, f16, bf16: every other tensor in that type (convert_hf_to_gguf --outtype).
//  - q8_0, q4_0, q4_k, q5_k, q6_k: every other tensor in that type, as `llama-quantize --pure`.
//  - q4_k_m, q5_k_m: llama-quantize's Q4_K_M / Q5_K_M mix (model-formats.md section 1.5, the
//    category-based llama-quant.cpp @007dbbf3): output.weight (token_embd.weight when tied) Q6_K;
//    attn_v / attn_qkv and ffn_down Q6_K in the blocks where use_more_bits(i, n) holds (i the
//    block, n the blocks in the file, mtp block included), else Q4_K (Q5_K); the rest Q4_K (Q5_K).
//    ffn_down covers ffn_down_exps and ffn_down_shexp (llama-quant.cpp's FFN_DOWN category).
//    With exactly 8 experts, llama-quant.cpp's Mixtral rule applies as it does there: attn_v,
//    attn_qkv and attn_k Q8_0 in every block, attn_output Q5_K under Q4_K_M.
//    Older name-based llama.cpp trees store attn_qkv as Q5_K (Q4_K_M) or Q6_K (Q5_K_M) in every
//    layer instead; that variant is not written.
// A block type whose blocks the tensor's ne0 does not fill falls back as llama-quantize's
// tensor_type_fallback does, except that Q5_0/Q5_1 (llama.cpp's fallback for Q4_K/Q5_K) are not
// written by Anchorage: Q4_K, Q5_K and Q6_K fall back to Q8_0; anything whose ne0 is not a multiple
// of 32 to F16 (q8_0/q4_0 included).
enum class gguf_dtype { f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m, q5_k_m };

// "f32", "q4_k_m", ...; the names the exporter's --type takes.
const char* to_string(gguf_dtype d);
// "qwen35moe" for a config with experts, else "qwen35": the general.architecture written for c.
const char* qwen35_gguf_architecture(const model_config& c);
// The dtype named `name` (as to_string writes it); std::invalid_argument listing the names otherwise.
gguf_dtype gguf_dtype_from_string(const std::string& name);
// llama.cpp's general.file_type (enum llama_ftype) for a file written with `d`: ALL_F32 0,
// MOSTLY_F16 1, MOSTLY_Q4_0 2, MOSTLY_Q8_0 7, MOSTLY_Q4_K_S 14 (q4_k: what `llama-quantize --pure`
// writes for Q4_K_S), MOSTLY_Q4_K_M 15, MOSTLY_Q5_K_S 16 (q5_k), MOSTLY_Q5_K_M 17, MOSTLY_Q6_K 18,
// MOSTLY_BF16 32.
std::uint32_t llama_file_type(gguf_dtype d);

// The type save_qwen35_gguf stores tensor `hf_name` of qwen35_weight_specs(c) in, given its GGUF
// (PyTorch-order) shape, under `dtype` (the rules above). Throws std::invalid_argument for a name
// outside qwen35_weight_specs(c).
ggml_type qwen35_gguf_tensor_type(const std::string& hf_name, const std::vector<std::int64_t>& gguf_shape,
                                  const model_config& c, gguf_dtype dtype);

// Writes `weights` (qwen35_weight_specs(c), Hugging Face names and values) as a qwen35 GGUF (a
// qwen35moe one when c has experts), each tensor in qwen35_gguf_tensor_type's type, with
// general.file_type (llama_file_type) and general.quantization_version 2 (ggml's
// GGML_QNT_VERSION). The experts' gate and up are written apart, as ffn_gate_exps and ffn_up_exps
// (what llama.cpp's converter writes), whether c keeps them fused or not. `tokenizer_json` may be null (the
// byte vocabulary is written); an empty chat_template is left out. Throws std::invalid_argument when c is not
// the qwen35 layout, has gdn_dk != gdn_dv (llama.cpp reads one head size for both), or the weights do not
// match qwen35_weight_specs(c); std::runtime_error on an I/O failure.
void save_qwen35_gguf(const std::string& path, const model_config& c, const tensor_map& weights,
                      const nlohmann::json& tokenizer_json, const std::string& chat_template,
                      gguf_dtype dtype);

// Reads a qwen35 or qwen35moe GGUF (`--model FILE.gguf`): the config from the metadata (layout
// qwen35; gdn_chunk, ctx_size and grid as a Hugging Face checkpoint gets them,
// apply_qwen35_serving_defaults with context_length as the trained context), the weights
// under the Hugging Face names and conventions (qwen35_from_gguf), the tokenizer as a
// tokenizer.json document and a tokenizer_config.json-shaped one (qwen35_gguf_vocab.hpp), the chat
// template. In a qwen35moe file the experts' gate and up are ffn_gate_up_exps when block 0 has it
// (experts_fused, mlp.experts.gate_up_proj), else ffn_gate_exps and ffn_up_exps (mlp.experts.
// gate_proj and up_proj). As in llama.cpp's loader, a file without expert_feed_forward_length
// has feed_forward_length / expert_used_count, one without expert_shared_feed_forward_length has
// feed_forward_length; mlp_hidden (unused with experts) is feed_forward_length, else expert_hidden.
// A tensor's shape may differ from the expected one by leading 1s (ne [H, 1] for [H]), as
// llama.cpp's loader allows.
//
// Each tensor may be stored as F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K, in any mix (as
// llama-quantize's Q4_K_M/Q5_K_M files mix them). A matrix (a stack of the experts' matrices
// included) of another type than F32 is kept as stored (loaded_model::stored); every other tensor
// is converted to F32 (gguf_reader::read, kernels::dequantize_row). Every tensor's type, ne0 and
// extent are checked before any tensor is read.
//
// Throws model_load_error naming the file and the key or tensor: another architecture ("... is
// 'llama', expected 'qwen35' or 'qwen35moe'"), a missing key, an expert_count of 0 or an
// expert_used_count of 0 or above it, a missing or mis-shaped tensor, a tensor type
// Anchorage does not read (named as gguf-py and llama.cpp name it, or by number), an ne0 that does
// not fill its type's blocks, a truncated file or a tensor running into the next.
loaded_model load_qwen35_gguf(const std::string& path);

}  // namespace anchorage
