#include "runtime/engine/engine_tensors.hpp"

#include <cstring>

#include "runtime/engine/model_weights.hpp"

namespace anchorage {
namespace {

using fill_fn = std::function<void(float*)>;

fill_fn copy_of(const tensor& t) {
  return [&t](float* dst) { std::memcpy(dst, t.data.data(), t.data.size() * sizeof(float)); };
}

// Qwen3_5RMSNorm applies (1 + w): stored here as the factor itself.
fill_fn one_plus(const tensor& t) {
  return [&t](float* dst) {
    for (std::size_t i = 0; i < t.data.size(); ++i) dst[i] = 1.0f + t.data[i];
  };
}

fill_fn stacked(const tensor& a, const tensor& b) {
  return [&a, &b](float* dst) {
    std::memcpy(dst, a.data.data(), a.data.size() * sizeof(float));
    std::memcpy(dst + a.data.size(), b.data.data(), b.data.size() * sizeof(float));
  };
}

// A stored weight's values converted, for a stack that mixes it with float32 weights.
fill_fn converted(const stored_weight& sw) {
  return [&sw](float* dst) {
    const tensor t = to_f32(sw);
    std::memcpy(dst, t.data.data(), t.data.size() * sizeof(float));
  };
}

class qwen35_list {
 public:
  qwen35_list(const tensor_map& w, const stored_weights& stored, std::vector<engine_tensor>& out)
      : w_(w), stored_(stored), out_(out) {}

  const tensor& hf(const std::string& name) const { return w_.at(name); }
  const stored_weight* kept(const std::string& name) const {
    const auto it = stored_.find(name);
    return it == stored_.end() ? nullptr : &it->second;
  }
  void copy(const std::string& to, const std::string& from) {
    if (const stored_weight* sw = kept(from))
      out_.push_back({to, 0, "", nullptr, {sw}});
    else
      add(to, hf(from).data.size(), copy_of(hf(from)));
  }
  void norm(const std::string& to, const std::string& from) {
    add(to, hf(from).data.size(), one_plus(hf(from)));
  }
  void add(const std::string& to, std::size_t n, fill_fn f) { out_.push_back({to, n, "", std::move(f), {}}); }

  void attention(const std::string& to, const std::string& from) {
    norm(to + "attn_norm", from + "input_layernorm.weight");
    copy(to + "attn.q", from + "self_attn.q_proj.weight");
    copy(to + "attn.k", from + "self_attn.k_proj.weight");
    copy(to + "attn.v", from + "self_attn.v_proj.weight");
    copy(to + "attn.o", from + "self_attn.o_proj.weight");
    norm(to + "attn.q_norm", from + "self_attn.q_norm.weight");
    norm(to + "attn.k_norm", from + "self_attn.k_norm.weight");
  }

  void mlp(const std::string& to, const std::string& from) {
    norm(to + "mlp_norm", from + "post_attention_layernorm.weight");
    const std::string gate_name = from + "mlp.gate_proj.weight", up_name = from + "mlp.up_proj.weight";
    const stored_weight* gate_kept = kept(gate_name);
    const stored_weight* up_kept = kept(up_name);
    if (gate_kept && up_kept) {
      out_.push_back({to + "mlp.gate_up", 0, "", nullptr, {gate_kept, up_kept}});
    } else if (!gate_kept && !up_kept) {
      const tensor& gate = hf(gate_name);
      const tensor& up = hf(up_name);
      add(to + "mlp.gate_up", gate.data.size() + up.data.size(), stacked(gate, up));
    } else {  // one of each: both as float32
      const auto numel = [&](const std::string& n, const stored_weight* sw) {
        return sw ? static_cast<std::size_t>(sw->rows() * sw->cols()) : hf(n).data.size();
      };
      const auto fill = [&](const std::string& n, const stored_weight* sw) {
        return sw ? converted(*sw) : copy_of(hf(n));
      };
      const std::size_t n_gate = numel(gate_name, gate_kept);
      fill_fn g = fill(gate_name, gate_kept), u = fill(up_name, up_kept);
      add(to + "mlp.gate_up", n_gate + numel(up_name, up_kept), [g, u, n_gate](float* dst) {
        g(dst);
        u(dst + n_gate);
      });
    }
    copy(to + "mlp.down", from + "mlp.down_proj.weight");
  }

  void gdn(const std::string& to, const std::string& from) {
    const std::string g = from + "linear_attn.";
    norm(to + "attn_norm", from + "input_layernorm.weight");
    copy(to + "gdn.qkv", g + "in_proj_qkv.weight");
    copy(to + "gdn.z", g + "in_proj_z.weight");
    copy(to + "gdn.a", g + "in_proj_a.weight");
    copy(to + "gdn.b", g + "in_proj_b.weight");
    copy(to + "gdn.conv", g + "conv1d.weight");  // [C, 1, K]: the floats of [C, K]
    copy(to + "gdn.a_log", g + "A_log");
    copy(to + "gdn.dt_bias", g + "dt_bias");
    copy(to + "gdn.norm", g + "norm.weight");  // Qwen3_5RMSNormGated: plain w
    copy(to + "gdn.out", g + "out_proj.weight");
  }

 private:
  const tensor_map& w_;
  const stored_weights& stored_;
  std::vector<engine_tensor>& out_;
};

void qwen35_tensors(const model_config& c, const tensor_map& w, const stored_weights& stored,
                    std::vector<engine_tensor>& out) {
  qwen35_list l(w, stored, out);
  l.copy("embed", "model.embed_tokens.weight");
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string to = "layers." + std::to_string(i) + ".",
                      from = "model.layers." + std::to_string(i) + ".";
    if (c.is_gdn(i))
      l.gdn(to, from);
    else
      l.attention(to, from);
    l.mlp(to, from);
  }
  l.norm("final_norm", "model.norm.weight");
  if (c.tied_embeddings)
    out.push_back({"lm_head", 0, "embed", nullptr, {}});
  else
    l.copy("lm_head", "lm_head.weight");
  if (c.mtp) {
    l.norm("mtp.norm_h", "mtp.pre_fc_norm_hidden.weight");
    l.norm("mtp.norm_e", "mtp.pre_fc_norm_embedding.weight");
    l.copy("mtp.in", "mtp.fc.weight");
    l.attention("mtp.", "mtp.layers.0.");
    l.mlp("mtp.", "mtp.layers.0.");
    l.norm("mtp.final_norm", "mtp.norm.weight");
  }
}

}  // namespace

std::vector<engine_tensor> engine_tensors(const model_config& c, const tensor_map& w,
                                          const stored_weights& stored) {
  std::vector<engine_tensor> out;
  if (c.layout == model_layout::qwen35) {
    qwen35_tensors(c, w, stored, out);
    return out;
  }
  for (const auto& s : weight_specs(c)) {
    if (const auto it = stored.find(s.name); it != stored.end()) {
      out.push_back({s.name, 0, "", nullptr, {&it->second}});
      continue;
    }
    const tensor& t = w.at(s.name);
    out.push_back({s.name, t.data.size(), "", copy_of(t), {}});
  }
  return out;
}

}  // namespace anchorage
