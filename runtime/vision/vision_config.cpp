// vision_config: presets, validation and config.json reading; see vision_config.hpp.
#include "runtime/vision/vision_config.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace anchorage {
namespace {

using json = nlohmann::json;

// The largest s with s * s <= n, or -1 when n is not a perfect square.
int exact_square_root(int n) {
  if (n < 1) return -1;
  int s = static_cast<int>(std::sqrt(static_cast<double>(n)));
  while (static_cast<std::int64_t>(s) * s > n) --s;
  while (static_cast<std::int64_t>(s + 1) * (s + 1) <= n) ++s;
  return static_cast<std::int64_t>(s) * s == n ? s : -1;
}

void require_positive(int value, const char* field) {
  if (value < 1)
    throw std::invalid_argument(std::string("vision config: ") + field + " must be at least 1, got " +
                                std::to_string(value));
}

// Reads keys of the vision_config object, each error naming the file and the key path.
struct key_reader {
  const json& obj;
  std::string source;
  std::string prefix;  // "vision_config." or ""

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(source + ": " + prefix + key + " " + what);
  }
  bool has(const std::string& key) const { return obj.contains(key) && !obj[key].is_null(); }
  int integer(const std::string& key, int fallback) const {
    if (!has(key)) return fallback;
    const json& v = obj[key];
    if (!v.is_number_integer()) fail(key, "must be an integer, got " + v.dump());
    const auto n = v.get<std::int64_t>();
    if (n < 1 || n > std::numeric_limits<int>::max()) fail(key, "is out of range: " + v.dump());
    return static_cast<int>(n);
  }
  double number(const json& o, const std::string& key, const std::string& path, double fallback) const {
    if (!o.contains(key) || o[key].is_null()) return fallback;
    if (!o[key].is_number()) fail(path, "must be a number, got " + o[key].dump());
    return o[key].get<double>();
  }
};

vision_activation activation_of(const key_reader& r) {
  if (!r.has("hidden_act")) return vision_activation::gelu_tanh;
  const json& v = r.obj["hidden_act"];
  if (!v.is_string()) r.fail("hidden_act", "must be a string, got " + v.dump());
  const std::string s = v.get<std::string>();
  if (s == "gelu_pytorch_tanh" || s == "gelu_new" || s == "gelu_fast") return vision_activation::gelu_tanh;
  if (s == "gelu") return vision_activation::gelu_erf;
  r.fail("hidden_act",
         "'" + s + "' is not supported (expected gelu_pytorch_tanh, gelu_new, gelu_fast or gelu)");
}

double rope_theta_of(const key_reader& r) {
  double theta = r.number(r.obj, "rope_theta", "rope_theta", 10000.0);
  if (r.has("rope_parameters")) {
    const json& rope = r.obj["rope_parameters"];
    if (!rope.is_object()) r.fail("rope_parameters", "must be an object, got " + rope.dump());
    theta = r.number(rope, "rope_theta", "rope_parameters.rope_theta", theta);
  }
  return theta;
}

}  // namespace

const char* to_string(vision_activation a) {
  switch (a) {
    case vision_activation::gelu_tanh:
      return "gelu_pytorch_tanh";
    case vision_activation::gelu_erf:
      return "gelu";
  }
  return "?";
}

int vision_config::position_side() const { return exact_square_root(num_position_embeddings); }

void vision_config::validate() const {
  require_positive(depth, "depth");
  require_positive(hidden_size, "hidden_size");
  require_positive(num_heads, "num_heads");
  require_positive(intermediate_size, "intermediate_size");
  require_positive(in_channels, "in_channels");
  require_positive(patch_size, "patch_size");
  require_positive(temporal_patch_size, "temporal_patch_size");
  require_positive(spatial_merge_size, "spatial_merge_size");
  require_positive(out_hidden_size, "out_hidden_size");
  require_positive(num_position_embeddings, "num_position_embeddings");
  if (hidden_size % num_heads != 0)
    throw std::invalid_argument("vision config: hidden_size " + std::to_string(hidden_size) +
                                " is not divisible by num_heads " + std::to_string(num_heads));
  if (head_dim() % 4 != 0)
    throw std::invalid_argument("vision config: head_dim " + std::to_string(head_dim()) +
                                " (hidden_size / num_heads) is not divisible by 4, as the 2-D rotary needs");
  if (position_side() < 0)
    throw std::invalid_argument("vision config: num_position_embeddings " +
                                std::to_string(num_position_embeddings) + " is not a perfect square");
  if (!(rope_theta > 1.0) || !std::isfinite(rope_theta))
    throw std::invalid_argument("vision config: rope_theta must be a finite number above 1, got " +
                                std::to_string(rope_theta));
  if (!(layer_norm_eps > 0.0f)) throw std::invalid_argument("vision config: layer_norm_eps must be positive");
}

vision_config vision_config_from_json(const json& config_json, const std::string& source) {
  if (!config_json.is_object()) throw std::invalid_argument(source + ": not a JSON object");
  const bool nested = config_json.contains("vision_config");
  if (!nested && !(config_json.contains("depth") && config_json.contains("hidden_size")))
    throw std::invalid_argument(source + ": no 'vision_config' object (a text-only checkpoint?)");
  const json& obj = nested ? config_json["vision_config"] : config_json;
  if (!obj.is_object()) throw std::invalid_argument(source + ": vision_config must be an object");
  const key_reader r{obj, source, nested ? "vision_config." : ""};

  vision_config c;
  c.depth = r.integer("depth", c.depth);
  c.hidden_size = r.integer("hidden_size", c.hidden_size);
  c.num_heads = r.integer("num_heads", c.num_heads);
  c.intermediate_size = r.integer("intermediate_size", c.intermediate_size);
  c.hidden_act = activation_of(r);
  c.in_channels = r.integer("in_channels", c.in_channels);
  c.patch_size = r.integer("patch_size", c.patch_size);
  c.temporal_patch_size = r.integer("temporal_patch_size", c.temporal_patch_size);
  c.spatial_merge_size = r.integer("spatial_merge_size", c.spatial_merge_size);
  c.out_hidden_size = r.integer("out_hidden_size", c.out_hidden_size);
  c.num_position_embeddings = r.integer("num_position_embeddings", c.num_position_embeddings);
  c.rope_theta = rope_theta_of(r);
  if (r.has("deepstack_visual_indexes")) {
    const json& d = r.obj["deepstack_visual_indexes"];
    if (!d.is_array() || !d.empty())
      r.fail("deepstack_visual_indexes",
             "= " + d.dump() + ": DeepStack (Qwen3-VL) is not supported; Qwen3.5 has none");
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(source + ": " + e.what());
  }
  return c;
}

vision_config tiny_vision_config(int out_hidden_size) {
  vision_config c;
  c.depth = 2;
  c.hidden_size = 64;
  c.num_heads = 4;
  c.intermediate_size = 176;
  c.out_hidden_size = out_hidden_size;
  return c;
}

vision_config small_vision_config(int out_hidden_size) {
  vision_config c;
  c.depth = 4;
  c.hidden_size = 128;
  c.num_heads = 4;
  c.intermediate_size = 352;
  c.out_hidden_size = out_hidden_size;
  return c;
}

}  // namespace anchorage
