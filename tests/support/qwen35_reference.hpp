#pragma once
// A naive scalar forward of the Qwen3.5 dense text model, written from the description of
// Hugging Face transformers' modeling_qwen3_5.py in docs/QWEN35.md ("The layout"), independent of the engine:
// double precision, plain loops, the per-token (sequential) delta rule, no kernels. It reads the tensors
// under their Hugging Face names. The MTP draft layer follows vLLM's qwen3_5_mtp.py: x =
// fc(cat[pre_fc_norm_embedding( embed(t)), pre_fc_norm_hidden(h_{t-1})]) with h the main model's final-normed
// hidden state, then mtp.layers.0, mtp.norm and the shared head.
#include <vector>

#include "runtime/core/tensor.hpp"
#include "runtime/core/token.hpp"
#include "runtime/model/model_config.hpp"

namespace anchorage::testing {

// Mistakes the reference can be told to make, to show that a comparison against it fails
// when the engine makes them (none in normal use).
struct qwen35_reference_faults {
  bool plain_norms = false;         // (w) instead of (1 + w) for the zero-centred norms
  bool tiled_value_heads = false;   // value head h reads key head h % Hk instead of h / (Hv/Hk)
  bool gate_first = false;          // q_proj per head read as [gate | query]
  bool interleaved_rotary = false;  // rotary pairs (2i, 2i+1) instead of (i, i + rope_dims/2)
};

class qwen35_reference {
 public:
  qwen35_reference(const model_config& c, const tensor_map& w, qwen35_reference_faults faults = {});

  // Runs token t at the next position (0, 1, ...).
  void forward(token_id t);
  // Logits at the last position; with c.mtp the draft layer's logits too.
  const std::vector<double>& logits() const { return logits_; }
  const std::vector<double>& draft_logits() const { return draft_; }

 private:
  using vec = std::vector<double>;
  const tensor& t(const std::string& name) const { return w_.at(name); }
  vec linear(const std::string& name, const vec& x) const;
  vec norm(const vec& x, const std::string& weight) const;  // zero-centred RMSNorm
  vec gdn(int layer, int index, const vec& x);
  vec attention(const std::string& prefix, int index, const vec& x);
  vec mlp(const std::string& prefix, const vec& x) const;
  vec head(const vec& h) const;
  void rotate(double* head_values) const;

  model_config c_;
  const tensor_map& w_;
  qwen35_reference_faults f_;
  int pos_ = 0;
  // per GDN layer: the last conv_kernel - 1 inputs (oldest first) and S [Hv][dk][dv]
  std::vector<std::vector<vec>> conv_;
  std::vector<vec> s_;
  // per attention layer (the draft layer last): K and V rows of every position
  std::vector<std::vector<vec>> k_, v_;
  vec h_prev_;  // final-normed hidden state of the previous position (zero before the first)
  vec logits_, draft_;
};

}  // namespace anchorage::testing
