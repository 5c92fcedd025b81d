#pragma once
// Private to the engine: the tensors its forward reads, under the engine's own names (the
// reference layout's names of model_weights.cpp, plus attn.q_norm / attn.k_norm for the qwen35
// layout), and how each is made from the model's weights. For the reference layout every tensor
// is copied as it is; for the qwen35 layout the Hugging Face tensors are converted once:
//   - zero-centred norm weights become 1 + w, so the plain rmsnorm kernel applies;
//   - mlp.gate_proj and mlp.up_proj are stacked as mlp.gate_up [gate | up] for the swiglu kernel;
//   - conv1d [C, 1, K] is read as [C, K] (the same floats);
//   - q_proj keeps its rows ([query | gate] per head, 2 * n_q * head_dim rows);
//   - with tied embeddings lm_head is the embedding (an alias, no copy).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/engine/model_config.hpp"

namespace anchorage {

struct engine_tensor {
  std::string name;                      // the engine's name ("layers.3.attn.q")
  std::size_t numel;                     // floats; 0 for an alias
  std::string alias_of;                  // non-empty: the same memory as that engine tensor
  std::function<void(float* dst)> fill;  // writes numel floats
};

// The list for `c` over `w` (already checked against weight_specs(c)); the fills read `w`, which
// must outlive them.
std::vector<engine_tensor> engine_tensors(const model_config& c, const tensor_map& w);

}  // namespace anchorage
