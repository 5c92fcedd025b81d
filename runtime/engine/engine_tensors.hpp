#pragma once
// Private to the engine: the tensors its forward reads, under the engine's own names (the
// reference layout's names of model_weights.cpp, plus attn.q_norm / attn.k_norm for the qwen35
// layout), and how each is made from the model's weights. For the reference layout every tensor
// is copied as it is; for the qwen35 layout the Hugging Face tensors are converted once:
//   - zero-centred norm weights become 1 + w, so the plain rmsnorm kernel applies;
//   - mlp.gate_proj and mlp.up_proj are stacked as mlp.gate_up [gate | up] for the swiglu kernel;
//   - a mixture-of-experts MLP becomes moe.router, moe.expert.{e}.gate_up and moe.expert.{e}.down
//     (expert e's rows of the stacked tensors: a slice, never a copy, of weights kept as stored),
//     moe.shared.gate_up, moe.shared.down and moe.shared_gate;
//   - conv1d [C, 1, K] is read as [C, K] (the same floats);
//   - q_proj keeps its rows ([query | gate] per head, 2 * n_q * head_dim rows);
//   - with tied embeddings lm_head is the embedding (an alias, no copy).
// A matrix the loader kept as stored (loaded_model::stored) is not converted: its entry names the
// stored weights it is made of (mlp.gate_up: gate's rows, then up's), unless its stack mixes a
// stored weight with a float32 one, which is then converted whole.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/stored_weight.hpp"

namespace anchorage {

// Rows [first, first + count) of a weight kept as stored (a routed expert's slice of a stacked
// [E, rows, cols] tensor, or the whole weight).
struct stored_rows {
  const stored_weight* weight;
  std::int64_t first = 0;
  std::int64_t count = 0;
};

struct engine_tensor {
  std::string name;                      // the engine's name ("layers.3.attn.q")
  std::size_t numel;                     // floats; 0 for an alias
  std::string alias_of;                  // non-empty: the same memory as that engine tensor
  std::function<void(float* dst)> fill;  // writes numel floats
  // Non-empty: kept as stored, these rows one after another (numel 0, no fill).
  std::vector<stored_rows> stored;
};

// The list for `c` over `w` and `stored` (together already checked against weight_specs(c)); the
// fills and the stored entries read `w` and `stored`, which must outlive them.
std::vector<engine_tensor> engine_tensors(const model_config& c, const tensor_map& w,
                                          const stored_weights& stored = {});

}  // namespace anchorage
