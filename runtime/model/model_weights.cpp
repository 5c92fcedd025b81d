#include "runtime/model/model_weights.hpp"

#include <xxhash.h>

#include <cmath>

#include "runtime/model/qwen35_names.hpp"

namespace anchorage {
namespace {

std::vector<std::int64_t> dims(std::initializer_list<int> d) { return {d.begin(), d.end()}; }

void add_block_specs(std::vector<tensor_spec>& s, const std::string& p, const model_config& c) {
  s.push_back({p + "mlp_norm", dims({c.d_model})});
  s.push_back({p + "mlp.gate_up", dims({2 * c.mlp_hidden, c.d_model})});
  s.push_back({p + "mlp.down", dims({c.d_model, c.mlp_hidden})});
}

void add_attention_specs(std::vector<tensor_spec>& s, const std::string& p, const model_config& c) {
  s.push_back({p + "attn_norm", dims({c.d_model})});
  s.push_back({p + "attn.q", dims({c.n_q * c.head_dim, c.d_model})});
  s.push_back({p + "attn.k", dims({c.n_kv * c.head_dim, c.d_model})});
  s.push_back({p + "attn.v", dims({c.n_kv * c.head_dim, c.d_model})});
  s.push_back({p + "attn.o", dims({c.d_model, c.n_q * c.head_dim})});
}

// splitmix64: a small, well-mixed stream; one per tensor.
struct stream {
  std::uint64_t x;
  std::uint64_t next() {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform() {
    return static_cast<float>(static_cast<double>(next() >> 40) * (1.0 / 16777216.0));
  }  // [0, 1)
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<tensor_spec> weight_specs(const model_config& c) {
  if (c.layout == model_layout::qwen35) return qwen35_weight_specs(c);
  std::vector<tensor_spec> s;
  s.push_back({"embed", dims({c.vocab, c.d_model})});
  const int ch = c.conv_channels(), hv = c.gdn_hv;
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    if (c.is_gdn(i)) {
      s.push_back({p + "attn_norm", dims({c.d_model})});
      s.push_back({p + "gdn.qkv", dims({ch, c.d_model})});
      s.push_back({p + "gdn.z", dims({hv * c.gdn_dv, c.d_model})});
      s.push_back({p + "gdn.a", dims({hv, c.d_model})});
      s.push_back({p + "gdn.b", dims({hv, c.d_model})});
      s.push_back({p + "gdn.conv", dims({ch, c.conv_kernel})});
      s.push_back({p + "gdn.a_log", dims({hv})});
      s.push_back({p + "gdn.dt_bias", dims({hv})});
      s.push_back({p + "gdn.norm", dims({c.gdn_dv})});
      s.push_back({p + "gdn.out", dims({c.d_model, hv * c.gdn_dv})});
    } else {
      add_attention_specs(s, p, c);
    }
    add_block_specs(s, p, c);
  }
  s.push_back({"final_norm", dims({c.d_model})});
  s.push_back({"lm_head", dims({c.vocab, c.d_model})});
  if (c.mtp) {
    s.push_back({"mtp.norm_h", dims({c.d_model})});
    s.push_back({"mtp.norm_e", dims({c.d_model})});
    s.push_back({"mtp.in", dims({c.d_model, 2 * c.d_model})});
    add_attention_specs(s, "mtp.", c);
    add_block_specs(s, "mtp.", c);
    s.push_back({"mtp.final_norm", dims({c.d_model})});
  }
  return s;
}

tensor_map random_weights(const model_config& c, std::uint64_t seed) {
  tensor_map out;
  for (const auto& spec : weight_specs(c)) {
    tensor t;
    t.shape = spec.shape;
    t.data.resize(static_cast<std::size_t>(t.numel()));
    stream rng{XXH3_64bits_withSeed(spec.name.data(), spec.name.size(), seed)};
    const std::string& n = spec.name;
    const qwen35_norm_kind norm =
        c.layout == model_layout::qwen35 ? qwen35_norm_of(n) : qwen35_norm_kind::none;
    if (norm == qwen35_norm_kind::zero_centred) {
      // stored as w, applied as 1 + w: small values off zero, so that a missed offset shows
      for (auto& v : t.data) v = 0.2f * rng.uniform() - 0.1f;
    } else if (norm == qwen35_norm_kind::plain) {
      for (auto& v : t.data) v = 0.9f + 0.2f * rng.uniform();
    } else if (ends_with(n, "norm") || ends_with(n, "norm_h") || ends_with(n, "norm_e")) {
      for (auto& v : t.data) v = 1.0f;
    } else if (ends_with(n, "a_log") || ends_with(n, "A_log")) {
      for (auto& v : t.data) v = std::log(1.0f + 15.0f * rng.uniform());  // A in [1, 16)
    } else if (ends_with(n, "dt_bias")) {
      // softplus(dt_bias) = dt, dt log-uniform in [1e-3, 1e-1)
      for (auto& v : t.data) {
        const float dt = std::exp(std::log(1e-3f) + rng.uniform() * (std::log(1e-1f) - std::log(1e-3f)));
        v = dt + std::log(-std::expm1(-dt));
      }
    } else {
      // uniform in [-s, s) with s = 1/sqrt(fan_in); the embedding uses fan_in 1
      const bool embedding = n == "embed" || n == "model.embed_tokens.weight";
      const float fan_in = embedding ? 1.0f : static_cast<float>(spec.shape.back());
      // A router's logits spread wider (4x), so that the chosen experts stand clear of the rest.
      const float s = (ends_with(n, "mlp.gate.weight") ? 4.0f : 1.0f) / std::sqrt(fan_in);
      for (auto& v : t.data) v = (2.0f * rng.uniform() - 1.0f) * s;
    }
    out.emplace(spec.name, std::move(t));
  }
  return out;
}

tensor_map load_weights(const std::string& path, const model_config& c) {
  safetensors_file f = load_safetensors(path);
  check_tensors(f.tensors, weight_specs(c), path);
  return std::move(f.tensors);
}

void save_weights(const std::string& path, const tensor_map& w, const model_config& c) {
  check_tensors(w, weight_specs(c), "weights to save");
  save_safetensors(path, w, {{"format", "anchorage"}, {"preset", c.preset}});
}

std::uint64_t weights_digest(const tensor_map& w, const std::map<std::string, std::string>& stored_types,
                             const stored_weights& stored) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (const auto& [name, t] : w) {
    XXH3_64bits_update(st, name.data(), name.size() + 1);
    XXH3_64bits_update(st, t.shape.data(), t.shape.size() * sizeof(std::int64_t));
    XXH3_64bits_update(st, t.data.data(), t.data.size() * sizeof(float));
    // A stored type other than float32 after the values (none: the digest is what it always was).
    if (auto it = stored_types.find(name); it != stored_types.end())
      XXH3_64bits_update(st, it->second.data(), it->second.size() + 1);
  }
  for (const auto& [name, sw] : stored) {
    const std::string type = kernels::weight_type_name(sw.type);
    const std::int64_t order[] = {static_cast<std::int64_t>(sw.order.along), sw.order.first, sw.order.hd,
                                  sw.order.hk, sw.order.r_per_k};
    XXH3_64bits_update(st, "stored", 7);
    XXH3_64bits_update(st, name.data(), name.size() + 1);
    XXH3_64bits_update(st, sw.shape.data(), sw.shape.size() * sizeof(std::int64_t));
    XXH3_64bits_update(st, type.data(), type.size() + 1);
    XXH3_64bits_update(st, order, sizeof order);
    XXH3_64bits_update(st, sw.data, sw.bytes());
  }
  const std::uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace anchorage
