#include "runtime/engine/engine_tensors.hpp"

#include <cstring>

#include "kernels/dequantize.hpp"
#include "runtime/model/model_weights.hpp"

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

std::int64_t rows_in(const tensor& t) {
  return t.shape.empty() ? 1 : static_cast<std::int64_t>(t.data.size()) / t.shape.back();
}

// Rows [first, first + count) of a stored weight's values, as float32.
void convert_rows(const stored_weight& sw, std::int64_t first, std::int64_t count, float* dst) {
  const std::int64_t cols = sw.cols();
  if (sw.order.along != v_head_order::axis::none) {  // value heads to put back: the whole tensor
    const tensor t = to_f32(sw);
    std::memcpy(dst, t.data.data() + first * cols, static_cast<std::size_t>(count * cols) * sizeof(float));
    return;
  }
  const auto row = static_cast<std::size_t>(kernels::row_bytes(sw.type, cols).value_or(0));
  for (std::int64_t r = 0; r < count; ++r)
    kernels::dequantize_row(sw.type, sw.data + static_cast<std::size_t>(first + r) * row, dst + r * cols,
                            static_cast<int>(cols));
}

class qwen35_list {
 public:
  // Rows [first, first + count) of the model's tensor `name`; count -1: from first to the end.
  struct rows_of {
    std::string name;
    std::int64_t first = 0;
    std::int64_t count = -1;
  };

  qwen35_list(const tensor_map& w, const stored_weights& stored, std::vector<engine_tensor>& out)
      : w_(w), stored_(stored), out_(out) {}

  const tensor& hf(const std::string& name) const { return w_.at(name); }
  const stored_weight* kept(const std::string& name) const {
    const auto it = stored_.find(name);
    return it == stored_.end() ? nullptr : &it->second;
  }
  void copy(const std::string& to, const std::string& from) { stack(to, {{from}}); }
  void norm(const std::string& to, const std::string& from) {
    add(to, hf(from).data.size(), one_plus(hf(from)));
  }
  void add(const std::string& to, std::size_t n, fill_fn f) { out_.push_back({to, n, "", std::move(f), {}}); }

  // `to` is the rows of `parts`, one after another: the stored rows themselves when every part is
  // kept as stored, float32 otherwise (a kept part converted).
  void stack(const std::string& to, std::vector<rows_of> parts) {
    std::vector<stored_rows> slices;
    std::size_t numel = 0;
    for (rows_of& r : parts) {
      const stored_weight* sw = kept(r.name);
      const std::int64_t rows = sw ? sw->rows() : rows_in(hf(r.name));
      if (r.count < 0) r.count = rows - r.first;
      if (sw) slices.push_back({sw, r.first, r.count});
      numel += static_cast<std::size_t>(r.count * (sw ? sw->cols() : hf(r.name).shape.back()));
    }
    if (slices.size() == parts.size()) {
      out_.push_back({to, 0, "", nullptr, std::move(slices)});
      return;
    }
    std::vector<fill_fn> fills;
    std::vector<std::size_t> at;
    std::size_t off = 0;
    for (const rows_of& r : parts) {
      const std::int64_t first = r.first, count = r.count;
      if (const stored_weight* sw = kept(r.name)) {
        fills.push_back([sw, first, count](float* dst) { convert_rows(*sw, first, count, dst); });
        off += static_cast<std::size_t>(count * sw->cols());
      } else {
        const tensor& t = hf(r.name);
        const auto cols = static_cast<std::size_t>(t.shape.back());
        fills.push_back([&t, first, count, cols](float* dst) {
          std::memcpy(dst, t.data.data() + static_cast<std::size_t>(first) * cols,
                      static_cast<std::size_t>(count) * cols * sizeof(float));
        });
        off += static_cast<std::size_t>(count) * cols;
      }
      at.push_back(off);
    }
    add(to, numel, [fills, at](float* dst) {
      std::size_t from = 0;
      for (std::size_t i = 0; i < fills.size(); ++i) {
        fills[i](dst + from);
        from = at[i];
      }
    });
  }

  void attention(const std::string& to, const std::string& from) {
    norm(to + "attn_norm", from + "input_layernorm.weight");
    copy(to + "attn.q", from + "self_attn.q_proj.weight");
    copy(to + "attn.k", from + "self_attn.k_proj.weight");
    copy(to + "attn.v", from + "self_attn.v_proj.weight");
    copy(to + "attn.o", from + "self_attn.o_proj.weight");
    norm(to + "attn.q_norm", from + "self_attn.q_norm.weight");
    norm(to + "attn.k_norm", from + "self_attn.k_norm.weight");
  }

  void mlp(const std::string& to, const std::string& from, const model_config& c) {
    norm(to + "mlp_norm", from + "post_attention_layernorm.weight");
    if (c.is_moe()) {
      moe(to + "moe.", from + "mlp.", c);
      return;
    }
    stack(to + "mlp.gate_up", {{from + "mlp.gate_proj.weight"}, {from + "mlp.up_proj.weight"}});
    copy(to + "mlp.down", from + "mlp.down_proj.weight");
  }

  // Expert e's gate and up are rows [e 2I, (e + 1) 2I) of the fused tensor, or rows [e I, (e + 1) I)
  // of each of the two; its down rows [e H, (e + 1) H).
  void moe(const std::string& to, const std::string& from, const model_config& c) {
    const std::int64_t i = c.expert_hidden, h = c.d_model;
    copy(to + "router", from + "gate.weight");
    for (int e = 0; e < c.n_experts; ++e) {
      const std::string x = to + "expert." + std::to_string(e) + ".";
      if (c.experts_fused)
        stack(x + "gate_up", {{from + "experts.gate_up_proj", 2 * i * e, 2 * i}});
      else
        stack(x + "gate_up", {{from + "experts.gate_proj", i * e, i}, {from + "experts.up_proj", i * e, i}});
      stack(x + "down", {{from + "experts.down_proj", h * e, h}});
    }
    stack(to + "shared.gate_up",
          {{from + "shared_expert.gate_proj.weight"}, {from + "shared_expert.up_proj.weight"}});
    copy(to + "shared.down", from + "shared_expert.down_proj.weight");
    copy(to + "shared_gate", from + "shared_expert_gate.weight");
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
    l.mlp(to, from, c);
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
    l.mlp("mtp.", "mtp.layers.0.", c);
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
      out.push_back({s.name, 0, "", nullptr, {{&it->second, 0, it->second.rows()}}});
      continue;
    }
    const tensor& t = w.at(s.name);
    out.push_back({s.name, t.data.size(), "", copy_of(t), {}});
  }
  return out;
}

}  // namespace anchorage
