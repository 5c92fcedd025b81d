#pragma once
// The tensors of the Qwen3.5 layout under Hugging Face's text-only names (Qwen3_5ForCausalLM:
// "model.layers.{i}.linear_attn.in_proj_qkv.weight", ...), with PyTorch's [out, in] shapes.
// A multimodal checkpoint's "model.language_model." prefix is mapped to "model." on load.
#include <vector>

#include "runtime/model/model_config.hpp"
#include "runtime/model/safetensors.hpp"

namespace anchorage {

// Every tensor a qwen35-layout config reads, in a fixed order: the embedding, the layers, the
// final norm, lm_head (absent when tied_embeddings), then the mtp.* draft layer when c.mtp.
std::vector<tensor_spec> qwen35_weight_specs(const model_config& c);

// How a qwen35 tensor is initialised at random and how llama.cpp converts it.
enum class qwen35_norm_kind {
  none,          // not a norm weight
  zero_centred,  // RMSNorm weight applied as (1 + w): every norm except the GDN's gated one
  plain,         // the GDN's gated RMSNorm (linear_attn.norm.weight), applied as w
};
qwen35_norm_kind qwen35_norm_of(const std::string& name);

}  // namespace anchorage
