// config.json -> model_config for the qwen35 layout; see qwen35_config.hpp.
#include "runtime/engine/qwen35_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "runtime/core/log.hpp"
#include "runtime/engine/loaded_model.hpp"

namespace anchorage {
namespace {

using json = nlohmann::json;

// Reads keys of one JSON object (the text config), each error naming the file and the key path.
struct key_reader {
  const json& obj;
  std::string source;
  std::string prefix;  // "text_config." or ""

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw model_load_error(source + ": '" + prefix + key + "' " + what);
  }
  bool has(const std::string& key) const { return obj.contains(key) && !obj[key].is_null(); }

  int integer(const std::string& key) const {
    if (!has(key)) fail(key, "is missing");
    return integer_value(key, obj[key]);
  }
  int integer(const std::string& key, int fallback) const { return has(key) ? integer(key) : fallback; }
  int integer_value(const std::string& key, const json& v) const {
    if (!v.is_number_integer()) fail(key, "must be an integer, got " + v.dump());
    const auto n = v.get<std::int64_t>();
    if (n < 0 || n > std::numeric_limits<int>::max()) fail(key, "is out of range: " + v.dump());
    return static_cast<int>(n);
  }
  double number(const json& o, const std::string& key, double fallback) const {
    if (!o.contains(key) || o[key].is_null()) return fallback;
    if (!o[key].is_number()) fail(key, "must be a number, got " + o[key].dump());
    return o[key].get<double>();
  }
  bool boolean(const json& o, const std::string& key, bool fallback) const {
    if (!o.contains(key) || o[key].is_null()) return fallback;
    if (!o[key].is_boolean()) fail(key, "must be true or false, got " + o[key].dump());
    return o[key].get<bool>();
  }
};

bool is_qwen35_type(const std::string& t) { return t == "qwen3_5" || t == "qwen3_5_text"; }

bool has_qwen35_architecture(const json& j) {
  if (!j.contains("architectures") || !j["architectures"].is_array()) return false;
  for (const json& a : j["architectures"])
    if (a == "Qwen3_5ForConditionalGeneration" || a == "Qwen3_5ForCausalLM") return true;
  return false;
}

// Refuses anything but a Qwen3.5 dense model by model_type (top level and text_config).
void check_model_type(const json& top, const json* text, const std::string& source) {
  for (const json* o : {&top, text}) {
    if (o == nullptr || !o->contains("model_type")) continue;
    const json& v = (*o)["model_type"];
    const std::string where = o == &top ? "model_type" : "text_config.model_type";
    if (!v.is_string()) throw model_load_error(source + ": '" + where + "' must be a string");
    const std::string t = v.get<std::string>();
    if (t.rfind("qwen3_5_moe", 0) == 0)
      throw model_load_error(source + ": " + where + " '" + t +
                             "' is a mixture-of-experts model, which the engine does not run");
    if (!is_qwen35_type(t))
      throw model_load_error(source + ": " + where + " '" + t +
                             "' is not supported (expected qwen3_5 or qwen3_5_text)");
  }
  if (!top.contains("model_type") && !has_qwen35_architecture(top))
    throw model_load_error(source +
                           ": no 'model_type' and no Qwen3.5 'architectures' "
                           "(Qwen3_5ForConditionalGeneration or Qwen3_5ForCausalLM)");
}

std::string pattern_of(const key_reader& r, int n_layers) {
  std::string pattern;
  if (r.has("layer_types")) {
    const json& types = r.obj["layer_types"];
    if (!types.is_array()) r.fail("layer_types", "must be a list");
    for (const json& t : types) {
      if (t == "linear_attention") {
        pattern += 'G';
      } else if (t == "full_attention") {
        pattern += 'A';
      } else {
        r.fail("layer_types", "holds " + t.dump() + " (expected linear_attention or full_attention)");
      }
    }
    if (static_cast<int>(pattern.size()) != n_layers)
      r.fail("layer_types", "has " + std::to_string(pattern.size()) + " entries, num_hidden_layers is " +
                                std::to_string(n_layers));
    return pattern;
  }
  const int interval = r.integer("full_attention_interval", 4);
  if (interval < 1) r.fail("full_attention_interval", "must be at least 1");
  for (int i = 0; i < n_layers; ++i) pattern += (i + 1) % interval == 0 ? 'A' : 'G';
  return pattern;
}

// The engine runs a gated, bias-free, dense attention with plain (or text-only mrope) rotary.
void refuse_unsupported(const key_reader& r, const json& rope) {
  for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts"})
    if (r.has(key) && !(r.obj[key].is_number_integer() && r.obj[key].get<std::int64_t>() == 0))
      r.fail(key, "= " + r.obj[key].dump() + ": mixture-of-experts models are not supported");
  if (!r.boolean(r.obj, "attn_output_gate", true))
    r.fail("attn_output_gate", "is false: the engine runs Qwen3.5's gated attention only");
  if (r.boolean(r.obj, "attention_bias", false))
    r.fail("attention_bias", "is true: attention biases are not supported");
  for (const char* key : {"rope_type", "type"}) {
    if (!rope.contains(key)) continue;
    const json& t = rope[key];
    if (t != "default" && t != "mrope")
      r.fail(std::string("rope_parameters.") + key,
             "= " + t.dump() + ": only the default rotary is supported");
  }
}

}  // namespace

model_config qwen35_config_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw model_load_error(source + ": not a JSON object");
  const bool nested = j.contains("text_config");
  if (nested && !j["text_config"].is_object())
    throw model_load_error(source + ": 'text_config' must be an object");
  const json& text = nested ? j["text_config"] : j;
  check_model_type(j, nested ? &text : nullptr, source);
  const key_reader r{text, source, nested ? "text_config." : ""};

  json rope = json::object();  // rope_parameters, or the older rope_scaling, or nothing
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (!r.has(key)) continue;
    if (!text[key].is_object()) r.fail(key, "must be an object");
    rope = text[key];
    break;
  }
  refuse_unsupported(r, rope);

  model_config c;
  c.preset.clear();
  c.layout = model_layout::qwen35;
  c.vocab = r.integer("vocab_size");
  c.d_model = r.integer("hidden_size");
  c.n_layers = r.integer("num_hidden_layers");
  c.pattern = pattern_of(r, c.n_layers);
  c.mlp_hidden = r.integer("intermediate_size");
  c.norm_eps = static_cast<float>(r.number(text, "rms_norm_eps", 1e-6));
  c.gdn_hk = r.integer("linear_num_key_heads");
  c.gdn_hv = r.integer("linear_num_value_heads");
  c.gdn_dk = r.integer("linear_key_head_dim");
  c.gdn_dv = r.integer("linear_value_head_dim");
  c.conv_kernel = r.integer("linear_conv_kernel_dim", 4);
  c.n_q = r.integer("num_attention_heads");
  c.n_kv = r.integer("num_key_value_heads");
  c.head_dim = r.integer("head_dim");

  const double theta = r.number(rope, "rope_theta", r.number(text, "rope_theta", -1.0));
  if (theta <= 0) r.fail("rope_parameters.rope_theta", "is missing (nor is there a flat rope_theta)");
  c.rope_base = static_cast<float>(theta);
  const double factor =
      r.number(rope, "partial_rotary_factor", r.number(text, "partial_rotary_factor", 0.25));
  const double dims = c.head_dim * factor;
  if (factor <= 0 || factor > 1 || dims != std::floor(dims) || static_cast<int>(dims) % 2 != 0)
    r.fail("partial_rotary_factor", "= " + std::to_string(factor) + " does not give an even number of the " +
                                        std::to_string(c.head_dim) + " head dimensions");
  c.rope_dims = static_cast<int>(dims);

  c.tied_embeddings = j.contains("tie_word_embeddings") && nested
                          ? key_reader{j, source, ""}.boolean(j, "tie_word_embeddings", false)
                          : r.boolean(text, "tie_word_embeddings", false);
  const int mtp_layers = r.integer("mtp_num_hidden_layers", 0);
  if (mtp_layers > 1)
    log_warn() << source << ": mtp_num_hidden_layers is " << mtp_layers
               << "; the engine runs one draft layer, mtp.layers.0";
  c.mtp = mtp_layers >= 1;

  c.gdn_chunk = qwen35_default_gdn_chunk;
  c.ctx_size = qwen35_default_ctx;
  const int max_position = r.integer("max_position_embeddings", 0);
  if (max_position > 0) c.ctx_size = std::min(c.ctx_size, max_position);
  c.grid = qwen35_default_grid;
  while (c.grid > c.ctx_size && c.grid > c.gdn_chunk) c.grid /= 2;  // stays a multiple of 64
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw model_load_error(source + ": " + e.what());
  }
  return c;
}

}  // namespace anchorage
