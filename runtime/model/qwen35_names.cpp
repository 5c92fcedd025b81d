#include "runtime/model/qwen35_names.hpp"

#include <string>

namespace anchorage {
namespace {

std::vector<std::int64_t> dims(std::initializer_list<int> d) { return {d.begin(), d.end()}; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void add_attention(std::vector<tensor_spec>& s, const std::string& p, const model_config& c) {
  const int q = c.n_q * c.head_dim, kv = c.n_kv * c.head_dim;
  s.push_back({p + "self_attn.q_proj.weight", dims({2 * q, c.d_model})});  // query and gate per head
  s.push_back({p + "self_attn.k_proj.weight", dims({kv, c.d_model})});
  s.push_back({p + "self_attn.v_proj.weight", dims({kv, c.d_model})});
  s.push_back({p + "self_attn.o_proj.weight", dims({c.d_model, q})});
  s.push_back({p + "self_attn.q_norm.weight", dims({c.head_dim})});
  s.push_back({p + "self_attn.k_norm.weight", dims({c.head_dim})});
}

// Qwen3_5MoeSparseMoeBlock: the router, the routed experts stacked [E, ...], the shared expert
// and its gate (model_config.hpp says which form the experts' gate and up take).
void add_moe(std::vector<tensor_spec>& s, const std::string& p, const model_config& c) {
  const int e = c.n_experts, h = c.d_model, i = c.expert_hidden;
  s.push_back({p + "mlp.gate.weight", dims({e, h})});
  if (c.experts_fused) {
    s.push_back({p + "mlp.experts.gate_up_proj", dims({e, 2 * i, h})});
  } else {
    s.push_back({p + "mlp.experts.gate_proj", dims({e, i, h})});
    s.push_back({p + "mlp.experts.up_proj", dims({e, i, h})});
  }
  s.push_back({p + "mlp.experts.down_proj", dims({e, h, i})});
  s.push_back({p + "mlp.shared_expert.gate_proj.weight", dims({c.shared_hidden, h})});
  s.push_back({p + "mlp.shared_expert.up_proj.weight", dims({c.shared_hidden, h})});
  s.push_back({p + "mlp.shared_expert.down_proj.weight", dims({h, c.shared_hidden})});
  s.push_back({p + "mlp.shared_expert_gate.weight", dims({1, h})});
}

void add_norms_and_mlp(std::vector<tensor_spec>& s, const std::string& p, const model_config& c) {
  s.push_back({p + "input_layernorm.weight", dims({c.d_model})});
  s.push_back({p + "post_attention_layernorm.weight", dims({c.d_model})});
  if (c.is_moe()) {
    add_moe(s, p, c);
    return;
  }
  s.push_back({p + "mlp.gate_proj.weight", dims({c.mlp_hidden, c.d_model})});
  s.push_back({p + "mlp.up_proj.weight", dims({c.mlp_hidden, c.d_model})});
  s.push_back({p + "mlp.down_proj.weight", dims({c.d_model, c.mlp_hidden})});
}

}  // namespace

std::vector<tensor_spec> qwen35_weight_specs(const model_config& c) {
  std::vector<tensor_spec> s;
  s.push_back({"model.embed_tokens.weight", dims({c.vocab, c.d_model})});
  const int ch = c.conv_channels(), hv = c.gdn_hv, vd = c.gdn_hv * c.gdn_dv;
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add_norms_and_mlp(s, p, c);
    if (c.is_gdn(i)) {
      const std::string g = p + "linear_attn.";
      s.push_back({g + "in_proj_qkv.weight", dims({ch, c.d_model})});
      s.push_back({g + "in_proj_z.weight", dims({vd, c.d_model})});
      s.push_back({g + "in_proj_b.weight", dims({hv, c.d_model})});
      s.push_back({g + "in_proj_a.weight", dims({hv, c.d_model})});
      s.push_back({g + "conv1d.weight", dims({ch, 1, c.conv_kernel})});
      s.push_back({g + "dt_bias", dims({hv})});
      s.push_back({g + "A_log", dims({hv})});
      s.push_back({g + "norm.weight", dims({c.gdn_dv})});
      s.push_back({g + "out_proj.weight", dims({c.d_model, vd})});
    } else {
      add_attention(s, p, c);
    }
  }
  s.push_back({"model.norm.weight", dims({c.d_model})});
  if (!c.tied_embeddings) s.push_back({"lm_head.weight", dims({c.vocab, c.d_model})});
  if (c.mtp) {
    s.push_back({"mtp.fc.weight", dims({c.d_model, 2 * c.d_model})});
    s.push_back({"mtp.pre_fc_norm_embedding.weight", dims({c.d_model})});
    s.push_back({"mtp.pre_fc_norm_hidden.weight", dims({c.d_model})});
    s.push_back({"mtp.norm.weight", dims({c.d_model})});
    add_norms_and_mlp(s, "mtp.layers.0.", c);
    add_attention(s, "mtp.layers.0.", c);
  }
  return s;
}

qwen35_norm_kind qwen35_norm_of(const std::string& n) {
  if (ends_with(n, "linear_attn.norm.weight")) return qwen35_norm_kind::plain;
  if (ends_with(n, "norm.weight") || ends_with(n, "layernorm.weight")) return qwen35_norm_kind::zero_centred;
  return qwen35_norm_kind::none;
}

}  // namespace anchorage
