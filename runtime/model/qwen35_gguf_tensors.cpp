#include "runtime/model/qwen35_gguf_tensors.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

#include "runtime/model/qwen35_names.hpp"

namespace anchorage {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The part of a layer tensor's name after "model.layers.{i}." (or "mtp.layers.0.") -> its GGUF suffix.
const std::map<std::string, std::string>& layer_names() {
  static const std::map<std::string, std::string> m = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
      {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
      {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
      {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
      {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
      {"linear_attn.dt_bias", "ssm_dt.bias"},
      {"linear_attn.A_log", "ssm_a"},
      {"linear_attn.norm.weight", "ssm_norm.weight"},
      {"linear_attn.out_proj.weight", "ssm_out.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.experts.gate_up_proj", "ffn_gate_up_exps.weight"},
      {"mlp.experts.gate_proj", "ffn_gate_exps.weight"},
      {"mlp.experts.up_proj", "ffn_up_exps.weight"},
      {"mlp.experts.down_proj", "ffn_down_exps.weight"},
      {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
      {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
  };
  return m;
}

// Moves value-head blocks of `hd` elements along one axis of a [rows, cols] matrix: along the rows
// starting at row `first` (by_rows) or along the columns. Grouped index (k*R + r)*hd + d and tiled
// index (r*Hk + k)*hd + d; `to_tiled` picks the direction.
tensor reorder_v_heads(const tensor& in, bool by_rows, std::int64_t first, const model_config& c, int hd,
                       bool to_tiled) {
  const std::int64_t hk = c.gdn_hk, r_per_k = c.gdn_hv / c.gdn_hk;
  const std::int64_t rows = in.shape.empty() ? 1 : in.shape[0];
  const std::int64_t cols = rows == 0 ? 0 : in.numel() / rows;
  tensor out = in;
  auto grouped = [&](std::int64_t k, std::int64_t r, std::int64_t d) { return (k * r_per_k + r) * hd + d; };
  auto tiled = [&](std::int64_t k, std::int64_t r, std::int64_t d) { return (r * hk + k) * hd + d; };
  for (std::int64_t k = 0; k < hk; ++k)
    for (std::int64_t r = 0; r < r_per_k; ++r)
      for (std::int64_t d = 0; d < hd; ++d) {
        const std::int64_t src = to_tiled ? grouped(k, r, d) : tiled(k, r, d);
        const std::int64_t dst = to_tiled ? tiled(k, r, d) : grouped(k, r, d);
        if (by_rows) {
          for (std::int64_t j = 0; j < cols; ++j)
            out.data[static_cast<std::size_t>((first + dst) * cols + j)] =
                in.data[static_cast<std::size_t>((first + src) * cols + j)];
        } else {
          for (std::int64_t i = 0; i < rows; ++i)
            out.data[static_cast<std::size_t>(i * cols + dst)] =
                in.data[static_cast<std::size_t>(i * cols + src)];
        }
      }
  return out;
}

// Applies the V-head reorder to a linear_attn tensor (identity when hv == hk or for other tensors).
tensor reorder_gdn(const std::string& n, tensor t, const model_config& c, bool to_tiled) {
  const v_head_order o = qwen35_gguf_v_head_order(n, c);
  if (o.along == v_head_order::axis::none) return t;
  return reorder_v_heads(t, o.along == v_head_order::axis::rows, o.first, c, o.hd, to_tiled);
}

}  // namespace

std::string qwen35_gguf_name(const std::string& n, const model_config& c) {
  if (n == "model.embed_tokens.weight") return "token_embd.weight";
  if (n == "model.norm.weight") return "output_norm.weight";
  if (n == "lm_head.weight") return "output.weight";
  const std::string mtp_block = "blk." + std::to_string(c.n_layers) + ".";
  if (n == "mtp.fc.weight") return mtp_block + "nextn.eh_proj.weight";
  if (n == "mtp.pre_fc_norm_embedding.weight") return mtp_block + "nextn.enorm.weight";
  if (n == "mtp.pre_fc_norm_hidden.weight") return mtp_block + "nextn.hnorm.weight";
  if (n == "mtp.norm.weight") return mtp_block + "nextn.shared_head_norm.weight";
  std::string block, rest;
  if (starts_with(n, "mtp.layers.0.")) {
    block = mtp_block;
    rest = n.substr(13);
  } else if (starts_with(n, "model.layers.")) {
    const std::size_t dot = n.find('.', 13);
    if (dot == std::string::npos) throw std::invalid_argument("qwen35 gguf: no GGUF name for '" + n + "'");
    block = "blk." + n.substr(13, dot - 13) + ".";
    rest = n.substr(dot + 1);
  }
  const auto it = layer_names().find(rest);
  if (block.empty() || it == layer_names().end())
    throw std::invalid_argument("qwen35 gguf: no GGUF name for '" + n + "'");
  return block + it->second;
}

tensor qwen35_to_gguf(const std::string& n, const tensor& hf, const model_config& c) {
  tensor t = reorder_gdn(n, hf, c, true);
  if (qwen35_norm_of(n) == qwen35_norm_kind::zero_centred) {
    for (float& v : t.data) v = v + 1.0f;
  } else if (ends_with(n, "linear_attn.A_log")) {
    for (float& v : t.data) v = -std::exp(v);
  } else if (ends_with(n, "linear_attn.conv1d.weight")) {
    t.shape = {hf.shape.front(), hf.shape.back()};  // [C, 1, K] -> [C, K]
  } else if (ends_with(n, "mlp.shared_expert_gate.weight")) {
    t.shape = {hf.shape.back()};  // [1, H] -> [H]
  }
  return t;
}

v_head_order qwen35_gguf_v_head_order(const std::string& n, const model_config& c) {
  v_head_order o;
  if (c.gdn_hv == c.gdn_hk || n.find(".linear_attn.") == std::string::npos) return o;
  o.hk = c.gdn_hk;
  o.r_per_k = c.gdn_hv / c.gdn_hk;
  o.along = v_head_order::axis::rows;
  if (ends_with(n, "in_proj_qkv.weight") || ends_with(n, "conv1d.weight")) {
    o.first = 2LL * c.gdn_hk * c.gdn_dk;
    o.hd = c.gdn_dv;
  } else if (ends_with(n, "in_proj_z.weight")) {
    o.hd = c.gdn_dv;
  } else if (ends_with(n, "in_proj_b.weight") || ends_with(n, "in_proj_a.weight") || ends_with(n, "A_log") ||
             ends_with(n, "dt_bias")) {
    o.hd = 1;
  } else if (ends_with(n, "out_proj.weight")) {
    o.along = v_head_order::axis::columns;
    o.hd = c.gdn_dv;
  } else {
    o.along = v_head_order::axis::none;
  }
  return o;
}

tensor qwen35_from_gguf(const std::string& n, const tensor& g, const model_config& c) {
  tensor t = g;
  if (qwen35_norm_of(n) == qwen35_norm_kind::zero_centred) {
    for (float& v : t.data) v = v - 1.0f;
  } else if (ends_with(n, "linear_attn.A_log")) {
    for (float& v : t.data) v = std::log(-v);
  } else if (ends_with(n, "linear_attn.conv1d.weight") && t.shape.size() == 2) {
    t.shape = {g.shape[0], 1, g.shape[1]};
  } else if (ends_with(n, "mlp.shared_expert_gate.weight")) {
    t.shape = {1, g.shape.back()};
  }
  return reorder_gdn(n, std::move(t), c, false);
}

}  // namespace anchorage
