#pragma once
// The qwen35 tensors between Hugging Face's names and values and llama.cpp's `qwen35` GGUF
// (convert_hf_to_gguf.py: conversion/qwen.py Qwen3_5TextModel and its bases; src/models/qwen35.cpp):
//   - names: model.layers.{i}.linear_attn.in_proj_qkv.weight -> blk.{i}.attn_qkv.weight, ...; the
//     mtp.* draft layer becomes block n_layers (mtp.fc -> blk.N.nextn.eh_proj, mtp.norm ->
//     blk.N.nextn.shared_head_norm, mtp.layers.0.* -> blk.N.*);
//   - every norm weight except linear_attn.norm.weight is stored as 1 + w;
//   - A_log is stored as ssm_a = -exp(A_log); dt_bias as ssm_dt.bias;
//   - conv1d [C, 1, K] is squeezed to [C, K];
//   - a mixture-of-experts MLP (qwen35moe: conversion/qwen.py Qwen3_5MoeTextModel; src/models/
//     qwen35moe.cpp) keeps its values and its PyTorch-order shapes: mlp.gate -> ffn_gate_inp [E, H],
//     mlp.experts.gate_proj / up_proj -> ffn_gate_exps / ffn_up_exps [E, I, H], the fused
//     mlp.experts.gate_up_proj -> ffn_gate_up_exps [E, 2I, H] (gate rows first, as llama.cpp's
//     build_moe_ffn reads it), mlp.experts.down_proj -> ffn_down_exps [E, H, I],
//     mlp.shared_expert.{gate,up,down}_proj -> ffn_{gate,up,down}_shexp, and
//     mlp.shared_expert_gate [1, H] squeezed to ffn_gate_inp_shexp [H] (the converter squeezes it);
//   - when gdn_hv != gdn_hk the value heads go from grouped order (value head k*R + r reads key
//     head k, R = hv/hk) to tiled order (position r*Hk + k) in the V rows of in_proj_qkv and the
//     V channels of conv1d, the rows of in_proj_z/b/a, A_log, dt_bias and the columns of out_proj,
//     so that ggml's broadcast (value head j reads key head j % Hk) matches.
#include <string>

#include "runtime/core/tensor.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/stored_weight.hpp"

namespace anchorage {

// The GGUF name of a tensor of qwen35_weight_specs(c). Throws std::invalid_argument for another name.
std::string qwen35_gguf_name(const std::string& hf_name, const model_config& c);

// The tensor as llama.cpp stores it (its PyTorch-order shape, the reverse of the GGUF ne).
tensor qwen35_to_gguf(const std::string& hf_name, const tensor& hf, const model_config& c);

// The inverse: the GGUF tensor back under the Hugging Face convention and shape (a conv1d of
// [C, K] and a shared_expert_gate of [H] get their unit dimension back). Exact for
// renames, squeezes and reorders; `1 + w` and `-exp(A_log)` are undone in float arithmetic
// (w = (1 + w) - 1 and A_log = log(-ssm_a)), so those come back within a few float ulps.
tensor qwen35_from_gguf(const std::string& hf_name, const tensor& gguf, const model_config& c);

// Where the GGUF keeps the tensor's value heads tiled (axis none for every tensor the reorder
// leaves alone, and for every tensor when gdn_hv == gdn_hk): the one statement of the reorder that
// qwen35_to_gguf, qwen35_from_gguf and a weight kept as stored (stored_weight.hpp) all follow.
v_head_order qwen35_gguf_v_head_order(const std::string& hf_name, const model_config& c);

}  // namespace anchorage
