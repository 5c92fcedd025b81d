#include "tests/support/checkpoint_writer.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "runtime/model/half_float.hpp"

namespace anchorage::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

json text_keys(const model_config& c, const checkpoint_options& o) {
  json layer_types = json::array();
  for (char letter : c.pattern) layer_types.push_back(letter == 'G' ? "linear_attention" : "full_attention");
  const double factor = static_cast<double>(c.rotary_dims()) / c.head_dim;
  json t = {
      {"model_type", "qwen3_5_text"},
      {"vocab_size", c.vocab},
      {"hidden_size", c.d_model},
      {"num_hidden_layers", c.n_layers},
      {"intermediate_size", c.mlp_hidden},
      {"rms_norm_eps", static_cast<double>(c.norm_eps)},
      {"num_attention_heads", c.n_q},
      {"num_key_value_heads", c.n_kv},
      {"head_dim", c.head_dim},
      {"linear_num_key_heads", c.gdn_hk},
      {"linear_num_value_heads", c.gdn_hv},
      {"linear_key_head_dim", c.gdn_dk},
      {"linear_value_head_dim", c.gdn_dv},
      {"linear_conv_kernel_dim", c.conv_kernel},
      {"attn_output_gate", true},
      {"attention_bias", false},
      {"hidden_act", "silu"},
      {"mlp_only_layers", json::array()},
      {"mamba_ssm_dtype", "float32"},
      {"mtp_num_hidden_layers", c.mtp ? 1 : 0},
      {"mtp_use_dedicated_embeddings", false},
      {"max_position_embeddings", o.max_position},
      {"tie_word_embeddings", c.tied_embeddings},
      {"eos_token_id", c.vocab - 1},
      {"dtype", "bfloat16"},
  };
  std::string by_interval;
  for (int i = 0; i < c.n_layers; ++i) by_interval += (i + 1) % 4 == 0 ? 'A' : 'G';
  if (o.multimodal) {
    t["layer_types"] = layer_types;
    t["full_attention_interval"] = 4;
    t["rope_parameters"] = {{"mrope_interleaved", true},
                            {"mrope_section", {11, 11, 10}},
                            {"rope_type", "default"},
                            {"rope_theta", static_cast<double>(c.rope_base)},
                            {"partial_rotary_factor", factor}};
  } else {
    // The older flat spelling: rope keys at the top, the pattern from the interval when it fits.
    if (c.pattern == by_interval) {
      t["full_attention_interval"] = 4;
    } else {
      t["layer_types"] = layer_types;
    }
    t["rope_theta"] = static_cast<double>(c.rope_base);
    t["partial_rotary_factor"] = factor;
  }
  return t;
}

}  // namespace

json qwen35_config_json(const model_config& c, const checkpoint_options& o) {
  json t = text_keys(c, o);
  if (!o.multimodal) {
    t["architectures"] = {"Qwen3_5ForCausalLM"};
    return t;
  }
  return {
      {"architectures", {"Qwen3_5ForConditionalGeneration"}},
      {"model_type", "qwen3_5"},
      {"image_token_id", 248056},
      {"video_token_id", 248057},
      {"vision_start_token_id", 248053},
      {"vision_end_token_id", 248054},
      {"tie_word_embeddings", c.tied_embeddings},
      {"transformers_version", "4.57.0.dev0"},
      {"text_config", t},
      {"vision_config",
       o.vision_config.is_null()
           ? json{{"model_type", "qwen3_5"}, {"depth", 1}, {"hidden_size", 8}, {"out_hidden_size", c.d_model}}
           : o.vision_config}};
}

tensor_map renamed_vision(const tensor_map& vision, const std::string& store_prefix) {
  static const std::string full = "model.visual.";
  tensor_map out;
  for (const auto& [name, t] : vision) {
    if (!starts_with(name, full)) throw std::invalid_argument("not a model.visual.* name: " + name);
    out.emplace(store_prefix + name.substr(full.size()), t);
  }
  return out;
}

std::string multimodal_name(const std::string& text_name) {
  return starts_with(text_name, "model.") ? "model.language_model." + text_name.substr(6) : text_name;
}

tensor_map round_to(const tensor_map& w, safetensors_dtype d) {
  tensor_map out = w;
  if (d == safetensors_dtype::f32) return out;
  for (auto& [name, t] : out)
    for (float& v : t.data)
      v = d == safetensors_dtype::f16 ? f16_to_float(float_to_f16(v)) : bf16_to_float(float_to_bf16(v));
  return out;
}

void write_checkpoint(const std::string& dir, const model_config& c, const tensor_map& weights,
                      const checkpoint_options& o) {
  fs::create_directories(dir);
  write_text(fs::path(dir) / "config.json", qwen35_config_json(c, o).dump(2));

  tensor_map stored;
  for (const auto& [name, t] : weights) stored.emplace(o.multimodal ? multimodal_name(name) : name, t);
  tensor_map vision;
  if (o.visual && o.vision_weights.empty()) {
    vision["model.visual.patch_embed.proj.weight"] = tensor{{8, 3, 2, 2}, std::vector<float>(96, 0.5f)};
    vision["model.visual.blocks.0.attn.qkv.weight"] = tensor{{24, 8}, std::vector<float>(192, -0.25f)};
  } else if (o.visual) {
    vision = renamed_vision(o.vision_weights, o.vision_store_prefix);
  }
  const bool own_shard = o.vision_shard && o.shards > 0;
  if (!own_shard) stored.insert(vision.begin(), vision.end());
  safetensors_write_options options;
  options.dtype = o.dtype;
  if (o.f32_ssm_params)
    for (const auto& [name, t] : stored)
      if (ends_with(name, "A_log") || ends_with(name, "dt_bias"))
        options.per_tensor[name] = safetensors_dtype::f32;
  if (o.shards == 0) {
    save_safetensors((fs::path(dir) / "model.safetensors").string(), stored, {{"format", "pt"}}, options);
  } else {
    std::vector<tensor_map> parts(static_cast<std::size_t>(o.shards));
    json weight_map = json::object();
    std::size_t i = 0;
    for (auto& [name, t] : stored) {
      const std::size_t s = i++ % parts.size();
      char file[64];
      std::snprintf(file, sizeof file, "model-%05zu-of-%05d.safetensors", s + 1, o.shards);
      weight_map[name] = file;
      parts[s].emplace(name, std::move(t));
    }
    for (std::size_t s = 0; s < parts.size(); ++s) {
      char file[64];
      std::snprintf(file, sizeof file, "model-%05zu-of-%05d.safetensors", s + 1, o.shards);
      save_safetensors((fs::path(dir) / file).string(), parts[s], {{"format", "pt"}}, options);
    }
    if (own_shard && !vision.empty()) {
      const char* file = "model-vision.safetensors";
      for (const auto& [name, t] : vision) weight_map[name] = file;
      save_safetensors((fs::path(dir) / file).string(), vision, {{"format", "pt"}}, options);
    }
    write_text(fs::path(dir) / "model.safetensors.index.json",
               json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump(2));
  }
  if (o.tokenizer_files) {
    write_text(fs::path(dir) / "tokenizer.json", test_tokenizer_json().dump());
    write_text(fs::path(dir) / "tokenizer_config.json", test_tokenizer_config_json().dump());
  }
  if (o.chat_template_file) write_text(fs::path(dir) / "chat_template.jinja", test_chat_template_file);
  if (!o.preprocessor_config.empty())
    write_text(fs::path(dir) / "preprocessor_config.json", o.preprocessor_config);
}

void write_raw_safetensors(const std::string& path, const json& header, const std::string& data) {
  const std::string text = header.dump();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>(text.size() >> (8 * i));
  write_text(path, bytes + text + data);
}

json test_tokenizer_json() {
  return {{"version", "1.0"},
          {"added_tokens", {{{"id", 3}, {"content", "<|im_end|>"}, {"special", true}}}},
          {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}}};
}

json test_tokenizer_config_json() {
  return {{"eos_token", "<|im_end|>"},
          {"chat_template", "{{ messages[0]['content'] }} (from tokenizer_config.json)"}};
}

}  // namespace anchorage::testing
