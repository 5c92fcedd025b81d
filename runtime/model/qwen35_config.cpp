// config.json -> model_config for the qwen35 layout; see qwen35_config.hpp.
#include "runtime/model/qwen35_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "runtime/core/log.hpp"
#include "runtime/model/loaded_model.hpp"

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

bool is_dense_type(const std::string& t) { return t == "qwen3_5" || t == "qwen3_5_text"; }
bool is_moe_type(const std::string& t) { return t == "qwen3_5_moe" || t == "qwen3_5_moe_text"; }

// Which Qwen3.5 model a config names, and what names it ("model_type 'qwen3_5_moe'").
struct model_kind {
  bool moe = false;
  std::string named_by;
};

// The Qwen3.5 architectures (dense or mixture-of-experts) that `top` lists.
std::vector<model_kind> qwen35_architectures(const json& top) {
  std::vector<model_kind> out;
  if (!top.contains("architectures") || !top["architectures"].is_array()) return out;
  for (const json& a : top["architectures"]) {
    if (!a.is_string()) continue;
    const std::string s = a.get<std::string>();
    if (s == "Qwen3_5ForConditionalGeneration" || s == "Qwen3_5ForCausalLM")
      out.push_back({false, "architecture '" + s + "'"});
    if (s == "Qwen3_5MoeForConditionalGeneration" || s == "Qwen3_5MoeForCausalLM")
      out.push_back({true, "architecture '" + s + "'"});
  }
  return out;
}

std::string kind_string(const model_kind& k) {
  return k.moe ? "a mixture-of-experts model" : "a dense model";
}

// Refuses anything but a Qwen3.5 model, dense or mixture-of-experts, by model_type (top level and
// text_config) and architectures; those given must all name the same kind.
model_kind check_model_type(const json& top, const json* text, const std::string& source) {
  std::vector<model_kind> named;
  for (const json* o : {&top, text}) {
    if (o == nullptr || !o->contains("model_type")) continue;
    const json& v = (*o)["model_type"];
    const std::string where = o == &top ? "model_type" : "text_config.model_type";
    if (!v.is_string()) throw model_load_error(source + ": '" + where + "' must be a string");
    const std::string t = v.get<std::string>();
    if (!is_dense_type(t) && !is_moe_type(t))
      throw model_load_error(source + ": " + where + " '" + t +
                             "' is not supported (expected qwen3_5, qwen3_5_text, qwen3_5_moe or "
                             "qwen3_5_moe_text)");
    named.push_back({is_moe_type(t), where + " '" + t + "'"});
  }
  const std::vector<model_kind> architectures = qwen35_architectures(top);
  if (!top.contains("model_type") && architectures.empty())
    throw model_load_error(
        source +
        ": no 'model_type' and no Qwen3.5 'architectures' (Qwen3_5ForConditionalGeneration, "
        "Qwen3_5ForCausalLM, Qwen3_5MoeForConditionalGeneration or Qwen3_5MoeForCausalLM)");
  named.insert(named.end(), architectures.begin(), architectures.end());
  for (const model_kind& k : named)
    if (k.moe != named.front().moe)
      throw model_load_error(source + ": " + named.front().named_by + " is " + kind_string(named.front()) +
                             " but " + k.named_by + " is " + kind_string(k));
  return named.front();
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

// The engine runs a gated, bias-free attention with plain (or text-only mrope) rotary.
void refuse_unsupported(const key_reader& r, const json& rope) {
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

// A dense model's config counts no experts (under any of the names MoE configs use).
void refuse_experts(const key_reader& r, const model_kind& kind) {
  for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts"})
    if (r.has(key) && !(r.obj[key].is_number_integer() && r.obj[key].get<std::int64_t>() == 0))
      r.fail(key, "= " + r.obj[key].dump() + " is inconsistent with " + kind.named_by +
                      ", a dense model (the mixture-of-experts model_type is qwen3_5_moe)");
}

// The experts of a mixture-of-experts config. Every layer of Qwen3.5 MoE is one: the
// Qwen2/Qwen3-MoE keys that make some layers dense are refused unless they keep them all sparse.
void read_experts(const key_reader& r, model_config& c) {
  c.n_experts = r.integer("num_experts");
  if (c.n_experts < 1) r.fail("num_experts", "must be at least 1");
  c.experts_used = r.integer("num_experts_per_tok");
  if (c.experts_used < 1) r.fail("num_experts_per_tok", "must be at least 1");
  if (c.experts_used > c.n_experts)
    r.fail("num_experts_per_tok", "= " + std::to_string(c.experts_used) + " is more than '" + r.prefix +
                                      "num_experts' = " + std::to_string(c.n_experts));
  c.expert_hidden = r.integer("moe_intermediate_size");
  if (c.expert_hidden < 1) r.fail("moe_intermediate_size", "must be at least 1");
  c.shared_hidden = r.integer("shared_expert_intermediate_size");
  if (c.shared_hidden < 1) r.fail("shared_expert_intermediate_size", "must be at least 1");
  c.mlp_hidden = c.expert_hidden;
  c.experts_fused = true;  // the loader stacks experts stored one by one into the fused form
  const std::string every = ": every layer of Qwen3.5 MoE is a mixture of experts";
  if (r.has("decoder_sparse_step") && r.integer("decoder_sparse_step") != 1)
    r.fail("decoder_sparse_step",
           "= " + r.obj["decoder_sparse_step"].dump() + " makes some layers dense" + every);
  if (r.has("mlp_only_layers")) {
    const json& dense = r.obj["mlp_only_layers"];
    if (!dense.is_array()) r.fail("mlp_only_layers", "must be a list");
    if (!dense.empty()) r.fail("mlp_only_layers", "= " + dense.dump() + " makes those layers dense" + every);
  }
  if (!r.boolean(r.obj, "norm_topk_prob", true))
    r.fail("norm_topk_prob",
           "is false: the engine always renormalises the chosen experts' weights, as "
           "Qwen3.5 MoE does");
}

}  // namespace

void apply_qwen35_serving_defaults(model_config& c, int max_positions) {
  c.gdn_chunk = qwen35_default_gdn_chunk;
  c.ctx_size = qwen35_default_ctx;
  if (max_positions > 0) c.ctx_size = std::min(c.ctx_size, max_positions);
  c.grid = qwen35_default_grid;
  while (c.grid > c.ctx_size && c.grid > c.gdn_chunk) c.grid /= 2;  // stays a multiple of the chunk
}

model_config qwen35_config_from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw model_load_error(source + ": not a JSON object");
  const bool nested = j.contains("text_config");
  if (nested && !j["text_config"].is_object())
    throw model_load_error(source + ": 'text_config' must be an object");
  const json& text = nested ? j["text_config"] : j;
  const model_kind kind = check_model_type(j, nested ? &text : nullptr, source);
  const key_reader r{text, source, nested ? "text_config." : ""};

  json rope = json::object();  // rope_parameters, or the older rope_scaling, or nothing
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (!r.has(key)) continue;
    if (!text[key].is_object()) r.fail(key, "must be an object");
    rope = text[key];
    break;
  }
  refuse_unsupported(r, rope);
  if (!kind.moe) refuse_experts(r, kind);

  model_config c;
  c.preset.clear();
  c.layout = model_layout::qwen35;
  c.vocab = r.integer("vocab_size");
  c.d_model = r.integer("hidden_size");
  c.n_layers = r.integer("num_hidden_layers");
  c.pattern = pattern_of(r, c.n_layers);
  if (kind.moe)
    read_experts(r, c);
  else
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
  if (rope.contains("mrope_section")) {
    const json& sec = rope["mrope_section"];
    const bool three = sec.is_array() && sec.size() >= 3 && sec[0].is_number_integer() &&
                       sec[1].is_number_integer() && sec[2].is_number_integer();
    if (!three) r.fail("rope_parameters.mrope_section", "must be an array of three integers");
    // Sections past the rotary pairs are cut as transformers' slices cut them.
    for (int a = 0; a < 3; ++a) {
      c.mrope_section[a] = sec[a].get<int>();
      if (c.mrope_section[a] < 0) r.fail("rope_parameters.mrope_section", "has a negative section");
    }
  }

  c.tied_embeddings = j.contains("tie_word_embeddings") && nested
                          ? key_reader{j, source, ""}.boolean(j, "tie_word_embeddings", false)
                          : r.boolean(text, "tie_word_embeddings", false);
  const int mtp_layers = r.integer("mtp_num_hidden_layers", 0);
  if (mtp_layers > 1)
    log_warn() << source << ": mtp_num_hidden_layers is " << mtp_layers
               << "; the engine runs one draft layer, mtp.layers.0";
  c.mtp = mtp_layers >= 1;

  apply_qwen35_serving_defaults(c, r.integer("max_position_embeddings", 0));
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw model_load_error(source + ": " + e.what());
  }
  return c;
}

}  // namespace anchorage
