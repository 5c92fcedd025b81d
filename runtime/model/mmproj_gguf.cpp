// Reading llama.cpp's mmproj GGUF for Qwen3.5's vision tower; see mmproj_gguf.hpp.
#include "runtime/model/mmproj_gguf.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/gguf_meta.hpp"

namespace anchorage {
namespace {

using json = nlohmann::json;
using shape_t = std::vector<std::int64_t>;

constexpr const char* hf_prefix = "model.visual.";
constexpr const char* qwen3vl_projector = "qwen3vl_merger";

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// Typed reads of the file's metadata; errors name the file and the key.
struct clip_meta : gguf_meta {
  int positive(const std::string& key) const {
    const gguf_value& v = need(key);
    if (!v.is_integer() || v.type == gguf_type::boolean)
      fail(key, std::string("has type ") + to_string(v.type) + ", expected an integer");
    if (v.i < 1 || v.i > (1LL << 31) - 1) fail(key, "is out of range: " + std::to_string(v.i));
    return static_cast<int>(v.i);
  }
  int positive_or(const std::string& key, int fallback) const {
    return r.find(key) != nullptr ? positive(key) : fallback;
  }
  bool flag(const std::string& key) const {  // false when absent
    const gguf_value* v = r.find(key);
    if (v == nullptr) return false;
    if (v->type != gguf_type::boolean)
      fail(key, std::string("has type ") + to_string(v->type) + ", expected bool");
    return v->i != 0;
  }
  std::string text(const std::string& key) const {
    const gguf_value& v = need(key);
    if (v.type != gguf_type::string)
      fail(key, std::string("has type ") + to_string(v.type) + ", expected a string");
    return v.s;
  }
  // Three floats (R, G, B).
  json channels(const std::string& key) const {
    const gguf_value& v = need(key);
    if (v.type != gguf_type::array || (v.elem != gguf_type::float32 && v.elem != gguf_type::float64) ||
        v.floats.size() != 3)
      fail(key, "must be an array of 3 floats");
    // As clip.cpp reads them: float32 values (a float64 array is narrowed the same way).
    json out = json::array();
    for (double x : v.floats) out.push_back(static_cast<double>(static_cast<float>(x)));
    return out;
  }
};

// The tower's shape, from the metadata.
struct tower {
  int depth, hidden, heads, ff, out_hidden, patch, merge, image_size, positions;
  int merged() const { return hidden * merge * merge; }
};

tower read_tower(const clip_meta& m) {
  const std::string path = m.r.path();
  const std::string arch = m.text("general.architecture");
  if (arch != "clip")
    m.fail("general.architecture", "is '" + arch + "', expected 'clip' (llama.cpp's mmproj file)");
  if (!m.flag("clip.has_vision_encoder"))
    throw model_load_error(path + ": no vision encoder (metadata 'clip.has_vision_encoder' is " +
                           (m.r.find("clip.has_vision_encoder") ? "false" : "absent") + ")");
  // A file with several encoders (Qwen3-Omni's) names the vision projector apart.
  const std::string projector_key = m.r.find("clip.vision.projector_type") != nullptr
                                        ? "clip.vision.projector_type"
                                        : "clip.projector_type";
  const std::string projector = m.text(projector_key);
  if (projector != qwen3vl_projector)
    m.fail(projector_key, "is '" + projector + "': Anchorage reads Qwen3.5's vision tower, projector '" +
                              qwen3vl_projector + "'");
  if (m.flag("clip.use_silu")) m.fail("clip.use_silu", "is true: Qwen3.5's vision blocks use GELU");
  if (!m.flag("clip.use_gelu"))
    m.fail("clip.use_gelu",
           "is not true: llama.cpp would run quick GELU, which Qwen3.5's tower does not use");
  if (const gguf_value* d = m.r.find("clip.vision.is_deepstack_layers")) {
    if (d->type != gguf_type::array || d->elem != gguf_type::boolean)
      m.fail("clip.vision.is_deepstack_layers", "must be an array of bools");
    if (std::any_of(d->ints.begin(), d->ints.end(), [](std::int64_t b) { return b != 0; }))
      m.fail("clip.vision.is_deepstack_layers",
             "marks DeepStack layers (Qwen3-VL's), which Qwen3.5 has none of and Anchorage does not run");
  }
  tower t{};
  t.depth = m.positive("clip.vision.block_count");
  t.hidden = m.positive("clip.vision.embedding_length");
  t.heads = m.positive("clip.vision.attention.head_count");
  t.ff = m.positive("clip.vision.feed_forward_length");
  t.out_hidden = m.positive("clip.vision.projection_dim");
  t.patch = m.positive("clip.vision.patch_size");
  t.merge = m.positive_or("clip.vision.spatial_merge_size", 2);
  t.image_size = m.positive("clip.vision.image_size");
  if (t.image_size % t.patch != 0)
    m.fail("clip.vision.image_size",
           "= " + std::to_string(t.image_size) +
               " is not a multiple of clip.vision.patch_size = " + std::to_string(t.patch));
  const std::int64_t side = t.image_size / t.patch;
  if (side * side > (1LL << 31) - 1) m.fail("clip.vision.image_size", "is out of range");
  t.positions = static_cast<int>(side * side);
  return t;
}

// One tensor to read: its GGUF name, the Hugging Face name (without the prefix) and shape.
struct mapped {
  std::string gguf;
  std::string hf;
  shape_t shape;
};

std::vector<mapped> tensor_plan(const tower& t) {
  const std::int64_t h = t.hidden, f = t.ff, m = t.merged(), p = t.patch;
  std::vector<mapped> plan = {
      {"v.patch_embd.weight", "patch_embed.proj.weight", {h, 3, p, p}},
      {"v.patch_embd.weight.1", "", {h, 3, p, p}},  // stacked into patch_embed.proj.weight
      {"v.patch_embd.bias", "patch_embed.proj.bias", {h}},
      {"v.position_embd.weight", "pos_embed.weight", {t.positions, h}},
  };
  for (int i = 0; i < t.depth; ++i) {
    const std::string g = "v.blk." + std::to_string(i) + ".", b = "blocks." + std::to_string(i) + ".";
    const std::pair<const char*, const char*> names[] = {
        {"attn_qkv", "attn.qkv"}, {"attn_out", "attn.proj"},    {"ln1", "norm1"},
        {"ln2", "norm2"},         {"ffn_up", "mlp.linear_fc1"}, {"ffn_down", "mlp.linear_fc2"}};
    for (const auto& [gguf, hf] : names) {
      const std::string gn = gguf;
      const shape_t w = gn == "attn_qkv"   ? shape_t{3 * h, h}
                        : gn == "ffn_up"   ? shape_t{f, h}
                        : gn == "ffn_down" ? shape_t{h, f}
                        : gn == "attn_out" ? shape_t{h, h}
                                           : shape_t{h};
      const shape_t bias = gn == "attn_qkv" ? shape_t{3 * h} : gn == "ffn_up" ? shape_t{f} : shape_t{h};
      plan.push_back({g + gn + ".weight", b + hf + ".weight", w});
      plan.push_back({g + gn + ".bias", b + hf + ".bias", bias});
    }
  }
  plan.push_back({"v.post_ln.weight", "merger.norm.weight", {h}});
  plan.push_back({"v.post_ln.bias", "merger.norm.bias", {h}});
  plan.push_back({"mm.0.weight", "merger.linear_fc1.weight", {m, m}});
  plan.push_back({"mm.0.bias", "merger.linear_fc1.bias", {m}});
  plan.push_back({"mm.2.weight", "merger.linear_fc2.weight", {t.out_hidden, m}});
  plan.push_back({"mm.2.bias", "merger.linear_fc2.bias", {t.out_hidden}});
  return plan;
}

shape_t without_leading_ones(shape_t s) {
  while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
  return s;
}

// Checks every tensor of `plan` (presence, shape, a type the reader reads) and that the file has
// no other tensor of the vision tower or its projector.
void check_plan(const gguf_reader& r, const std::vector<mapped>& plan) {
  std::vector<std::string> known;
  for (const mapped& t : plan) {
    known.push_back(t.gguf);
    const gguf_tensor_info* info = r.find_tensor(t.gguf);
    if (info == nullptr) throw model_load_error(r.path() + ": missing tensor '" + t.gguf + "'");
    if (without_leading_ones(info->shape()) != without_leading_ones(t.shape))
      throw model_load_error(r.path() + ": tensor '" + t.gguf + "' has shape " + shape_string(info->shape()) +
                             ", expected " + shape_string(t.shape) + " (from the clip.vision.* metadata)");
    r.check_readable(*info);
  }
  std::sort(known.begin(), known.end());
  for (const gguf_tensor_info& info : r.tensors()) {
    const bool tower_or_projector =
        (starts_with(info.name, "v.") || starts_with(info.name, "mm.")) && !starts_with(info.name, "mm.a.");
    if (tower_or_projector && !std::binary_search(known.begin(), known.end(), info.name))
      throw model_load_error(
          r.path() + ": tensor '" + info.name + "' is not part of a Qwen3.5 vision tower of this shape (" +
          (starts_with(info.name, "v.deepstack.") ? "Qwen3-VL's DeepStack, which Anchorage does not run"
                                                  : "Anchorage would not read it") +
          ")");
  }
}

// patch_embed.proj.weight [h, C, 2, p, p] from the two Conv2D kernels [h, C, p, p]: for each
// (output, channel), kernel t = 0's p x p values, then kernel t = 1's.
tensor stack_patch_kernels(const tensor& t0, const tensor& t1, const shape_t& kernel) {
  const std::int64_t h = kernel[0], c = kernel[1], pp = kernel[2] * kernel[3];
  tensor out;
  out.shape = {h, c, 2, kernel[2], kernel[3]};
  out.data.reserve(static_cast<std::size_t>(out.numel()));
  for (std::int64_t oc = 0; oc < h * c; ++oc)
    for (const tensor* k : {&t0, &t1}) {
      const auto from = k->data.begin() + oc * pp;
      out.data.insert(out.data.end(), from, from + pp);
    }
  return out;
}

json vision_config_of(const tower& t) {
  return {{"depth", t.depth},
          {"hidden_size", t.hidden},
          {"num_heads", t.heads},
          {"intermediate_size", t.ff},
          {"hidden_act", "gelu_pytorch_tanh"},
          {"in_channels", 3},
          {"patch_size", t.patch},
          {"temporal_patch_size", 2},
          {"spatial_merge_size", t.merge},
          {"out_hidden_size", t.out_hidden},
          {"num_position_embeddings", t.positions}};
}

std::string processor_config_of(const clip_meta& m, const tower& t) {
  json p = {{"image_mean", m.channels("clip.vision.image_mean")},
            {"image_std", m.channels("clip.vision.image_std")},
            {"patch_size", t.patch},
            {"merge_size", t.merge},
            {"temporal_patch_size", 2}};
  if (m.r.find("clip.vision.image_min_pixels") != nullptr)
    p["min_pixels"] = m.positive("clip.vision.image_min_pixels");
  if (m.r.find("clip.vision.image_max_pixels") != nullptr)
    p["max_pixels"] = m.positive("clip.vision.image_max_pixels");
  return p.dump(2);
}

}  // namespace

loaded_vision load_mmproj(const std::string& path) {
  const gguf_reader r(path);
  const clip_meta m{{r}};
  const tower t = read_tower(m);
  const std::vector<mapped> plan = tensor_plan(t);
  check_plan(r, plan);

  loaded_vision v;
  v.source = path;
  v.config = vision_config_of(t);
  v.processor_config = processor_config_of(m, t);
  std::int64_t values = 0;
  for (const mapped& x : plan) {
    if (x.hf.empty()) continue;  // the second patch kernel, read with the first
    tensor value = r.read(x.gguf);
    value.shape = x.shape;
    if (x.gguf == "v.patch_embd.weight") {
      tensor second = r.read("v.patch_embd.weight.1");
      value = stack_patch_kernels(value, second, x.shape);
    }
    values += value.numel();
    v.weights.emplace(hf_prefix + x.hf, std::move(value));
  }
  log_info() << "loaded " << path << ": mmproj vision tower, " << v.weights.size() << " tensors, " << values
             << " parameters, depth " << t.depth << ", hidden " << t.hidden << ", output " << t.out_hidden;
  return v;
}

}  // namespace anchorage
