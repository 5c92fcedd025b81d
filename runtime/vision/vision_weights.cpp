// The vision encoder's tensors: names, shape checks, random weights; see vision_weights.hpp.
#include "runtime/vision/vision_weights.hpp"

#include <cmath>
#include <utility>

namespace anchorage {
namespace {

std::vector<std::int64_t> dims(std::initializer_list<int> d) { return {d.begin(), d.end()}; }

std::string block_prefix(const std::string& prefix, int i) {
  return prefix + "blocks." + std::to_string(i) + ".";
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// splitmix64, one stream per tensor (seeded from the seed and the tensor's place in the list).
struct stream {
  std::uint64_t x;
  std::uint64_t next() {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float symmetric() {
    return static_cast<float>(static_cast<double>(next() >> 40) * (2.0 / 16777216.0) - 1.0);
  }
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<float> take(tensor_map& tensors, const std::string& name) {
  return std::move(tensors.at(name).data);
}

}  // namespace

std::vector<tensor_spec> vision_weight_specs(const vision_config& c, const std::string& prefix) {
  const int h = c.hidden_size, merged = c.merged_hidden();
  std::vector<tensor_spec> s;
  s.push_back({prefix + "patch_embed.proj.weight",
               dims({h, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size})});
  s.push_back({prefix + "patch_embed.proj.bias", dims({h})});
  s.push_back({prefix + "pos_embed.weight", dims({c.num_position_embeddings, h})});
  for (int i = 0; i < c.depth; ++i) {
    const std::string p = block_prefix(prefix, i);
    s.push_back({p + "norm1.weight", dims({h})});
    s.push_back({p + "norm1.bias", dims({h})});
    s.push_back({p + "attn.qkv.weight", dims({3 * h, h})});
    s.push_back({p + "attn.qkv.bias", dims({3 * h})});
    s.push_back({p + "attn.proj.weight", dims({h, h})});
    s.push_back({p + "attn.proj.bias", dims({h})});
    s.push_back({p + "norm2.weight", dims({h})});
    s.push_back({p + "norm2.bias", dims({h})});
    s.push_back({p + "mlp.linear_fc1.weight", dims({c.intermediate_size, h})});
    s.push_back({p + "mlp.linear_fc1.bias", dims({c.intermediate_size})});
    s.push_back({p + "mlp.linear_fc2.weight", dims({h, c.intermediate_size})});
    s.push_back({p + "mlp.linear_fc2.bias", dims({h})});
  }
  s.push_back({prefix + "merger.norm.weight", dims({h})});
  s.push_back({prefix + "merger.norm.bias", dims({h})});
  s.push_back({prefix + "merger.linear_fc1.weight", dims({merged, merged})});
  s.push_back({prefix + "merger.linear_fc1.bias", dims({merged})});
  s.push_back({prefix + "merger.linear_fc2.weight", dims({c.out_hidden_size, merged})});
  s.push_back({prefix + "merger.linear_fc2.bias", dims({c.out_hidden_size})});
  return s;
}

vision_weights load_vision_weights(const vision_config& config, tensor_map&& tensors,
                                   const std::string& source) {
  config.validate();
  // "model.visual." unless only the short form is there (so a checkpoint with neither is told
  // about the full names).
  bool full = false, short_form = false;
  for (const auto& entry : tensors) {
    full = full || starts_with(entry.first, vision_prefix);
    short_form = short_form || starts_with(entry.first, vision_short_prefix);
  }
  const std::string prefix = !full && short_form ? vision_short_prefix : vision_prefix;
  tensor_map mine;
  for (auto it = tensors.begin(); it != tensors.end();) {
    if (starts_with(it->first, prefix)) {
      mine.insert(tensors.extract(it++));
    } else {
      ++it;
    }
  }
  check_tensors(mine, vision_weight_specs(config, prefix), source);

  vision_weights w;
  w.config = config;
  w.patch_weight = take(mine, prefix + "patch_embed.proj.weight");
  w.patch_bias = take(mine, prefix + "patch_embed.proj.bias");
  w.pos_embed = take(mine, prefix + "pos_embed.weight");
  for (int i = 0; i < config.depth; ++i) {
    const std::string p = block_prefix(prefix, i);
    vision_block_weights b;
    b.norm1_weight = take(mine, p + "norm1.weight");
    b.norm1_bias = take(mine, p + "norm1.bias");
    b.qkv_weight = take(mine, p + "attn.qkv.weight");
    b.qkv_bias = take(mine, p + "attn.qkv.bias");
    b.proj_weight = take(mine, p + "attn.proj.weight");
    b.proj_bias = take(mine, p + "attn.proj.bias");
    b.norm2_weight = take(mine, p + "norm2.weight");
    b.norm2_bias = take(mine, p + "norm2.bias");
    b.fc1_weight = take(mine, p + "mlp.linear_fc1.weight");
    b.fc1_bias = take(mine, p + "mlp.linear_fc1.bias");
    b.fc2_weight = take(mine, p + "mlp.linear_fc2.weight");
    b.fc2_bias = take(mine, p + "mlp.linear_fc2.bias");
    w.blocks.push_back(std::move(b));
  }
  w.merger_norm_weight = take(mine, prefix + "merger.norm.weight");
  w.merger_norm_bias = take(mine, prefix + "merger.norm.bias");
  w.merger_fc1_weight = take(mine, prefix + "merger.linear_fc1.weight");
  w.merger_fc1_bias = take(mine, prefix + "merger.linear_fc1.bias");
  w.merger_fc2_weight = take(mine, prefix + "merger.linear_fc2.weight");
  w.merger_fc2_bias = take(mine, prefix + "merger.linear_fc2.bias");
  return w;
}

tensor_map random_vision_weights(const vision_config& config, std::uint64_t seed) {
  config.validate();
  tensor_map out;
  std::uint64_t index = 0;
  for (const tensor_spec& spec : vision_weight_specs(config)) {
    tensor t;
    t.shape = spec.shape;
    t.data.resize(static_cast<std::size_t>(t.numel()));
    stream r{seed * 0x100000001b3ULL + (++index) * 0x9e3779b97f4a7c15ULL};
    const bool norm = spec.name.find("norm") != std::string::npos;
    if (norm && ends_with(spec.name, ".weight")) {
      for (float& v : t.data) v = 1.0f + 0.1f * r.symmetric();
    } else if (norm || ends_with(spec.name, ".bias")) {
      const float scale = norm ? 0.1f : 0.05f;
      for (float& v : t.data) v = scale * r.symmetric();
    } else if (ends_with(spec.name, "pos_embed.weight")) {
      for (float& v : t.data) v = 0.5f * r.symmetric();
    } else {
      // A uniform in [-a, a) has standard deviation a / sqrt(3); fan_in is the row length.
      const double fan_in = static_cast<double>(t.numel() / spec.shape[0]);
      const float a = static_cast<float>(std::sqrt(3.0 / fan_in));
      for (float& v : t.data) v = a * r.symmetric();
    }
    out.emplace(spec.name, std::move(t));
  }
  return out;
}

}  // namespace anchorage
