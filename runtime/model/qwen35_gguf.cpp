#include "runtime/model/qwen35_gguf.hpp"

#include "runtime/model/qwen35_config.hpp"

#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/weight_type.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/gguf_meta.hpp"
#include "runtime/model/qwen35_gguf_tensors.hpp"
#include "runtime/model/qwen35_gguf_vocab.hpp"
#include "runtime/model/qwen35_names.hpp"

namespace anchorage {
namespace {

using kv_list = std::vector<std::pair<std::string, gguf_value>>;

constexpr const char* dense_arch = "qwen35";
constexpr const char* moe_arch = "qwen35moe";

// The full_attention_interval that gives c's pattern under llama.cpp's rule, or 0 when none does.
int attention_interval(const model_config& c) {
  for (int interval = 1; interval <= c.n_layers; ++interval) {
    bool ok = true;
    for (int i = 0; i < c.n_layers && ok; ++i) ok = c.is_gdn(i) == ((i + 1) % interval != 0);
    if (ok) return interval;
  }
  return 0;
}

void add_config(kv_list& kv, const model_config& c) {
  const std::string arch = qwen35_gguf_architecture(c);
  auto key = [&](const std::string& k) { return arch + "." + k; };
  auto u32 = [&](const std::string& k, int v) {
    kv.emplace_back(key(k), gguf_value::u32(static_cast<std::uint32_t>(v)));
  };
  kv.emplace_back("general.architecture", gguf_value::str(arch));
  kv.emplace_back("general.name", gguf_value::str(c.preset.empty() ? "anchorage-" + arch : c.preset));
  kv.emplace_back("general.alignment", gguf_value::u32(32));
  u32("block_count", c.n_layers + (c.mtp ? 1 : 0));
  if (c.mtp) u32("nextn_predict_layers", 1);
  u32("context_length", c.ctx_size);
  u32("embedding_length", c.d_model);
  if (c.is_moe()) {
    u32("expert_count", c.n_experts);
    u32("expert_used_count", c.experts_used);
    u32("expert_feed_forward_length", c.expert_hidden);
    u32("expert_shared_feed_forward_length", c.shared_hidden);
  } else {
    u32("feed_forward_length", c.mlp_hidden);
  }
  u32("attention.head_count", c.n_q);
  u32("attention.head_count_kv", c.n_kv);
  u32("attention.key_length", c.head_dim);
  u32("attention.value_length", c.head_dim);
  kv.emplace_back(key("attention.layer_norm_rms_epsilon"), gguf_value::f32(c.norm_eps));
  kv.emplace_back(key("rope.freq_base"), gguf_value::f32(c.rope_base));
  u32("rope.dimension_count", c.rotary_dims());
  kv.emplace_back(key("rope.dimension_sections"), gguf_value::int_array(gguf_type::int32, {11, 11, 10, 0}));
  u32("ssm.conv_kernel", c.conv_kernel);
  u32("ssm.state_size", c.gdn_dk);
  u32("ssm.group_count", c.gdn_hk);
  u32("ssm.time_step_rank", c.gdn_hv);
  u32("ssm.inner_size", c.gdn_hv * c.gdn_dv);
  if (const int interval = attention_interval(c); interval > 0) {
    u32("full_attention_interval", interval);
  } else {
    std::vector<bool> recurrent;
    for (int i = 0; i < c.n_layers; ++i) recurrent.push_back(c.is_gdn(i));
    if (c.mtp) recurrent.push_back(false);
    kv.emplace_back(key("attention.recurrent_layers"), gguf_value::bool_array(recurrent));
  }
}

// Typed reads of required and optional metadata under the file's architecture prefix; errors
// name the file and the key.
struct meta : gguf_meta {
  std::string arch;
  std::string key(const std::string& k) const { return arch + "." + k; }
  bool has(const std::string& k) const { return r.find(k) != nullptr; }
  int integer(const std::string& k) const {
    const gguf_value& v = need(k);
    if (!v.is_integer()) fail(k, std::string("has type ") + to_string(v.type) + ", expected an integer");
    if (v.i < 0 || v.i > (1LL << 31) - 1) fail(k, "is out of range: " + std::to_string(v.i));
    return static_cast<int>(v.i);
  }
  int integer_or(const std::string& k, int fallback) const { return has(k) ? integer(k) : fallback; }
  float real(const std::string& k) const {
    const gguf_value& v = need(k);
    if (!v.is_float()) fail(k, std::string("has type ") + to_string(v.type) + ", expected a float");
    return static_cast<float>(v.f);
  }
};

// The qwen35moe keys. Without the expert lengths, llama.cpp's loader (qwen35moe.cpp
// load_arch_tensors) takes feed_forward_length / expert_used_count for the routed experts and
// feed_forward_length for the shared one; so does this.
void read_experts(const meta& m, model_config& c) {
  const std::string count = m.key("expert_count"), used = m.key("expert_used_count");
  c.n_experts = m.integer(count);
  if (c.n_experts == 0) m.fail(count, "is 0: a qwen35moe file needs at least one expert");
  c.experts_used = m.integer(used);
  if (c.experts_used == 0 || c.experts_used > c.n_experts)
    m.fail(used, "is " + std::to_string(c.experts_used) + ", it must be between 1 and expert_count (" +
                     std::to_string(c.n_experts) + ")");
  const std::string ff = m.key("feed_forward_length"), expert_ff = m.key("expert_feed_forward_length"),
                    shared_ff = m.key("expert_shared_feed_forward_length");
  c.expert_hidden = m.has(expert_ff) || !m.has(ff) ? m.integer(expert_ff) : m.integer(ff) / c.experts_used;
  c.shared_hidden = m.has(shared_ff) || !m.has(ff) ? m.integer(shared_ff) : m.integer(ff);
  c.mlp_hidden = m.integer_or(ff, c.expert_hidden);  // unused by a MoE model; the presets' convention
  // The fused form when block 0 has it (llama.cpp's create_tensor_gate_up_exps tries it first).
  c.experts_fused = m.r.find_tensor("blk.0.ffn_gate_up_exps.weight") != nullptr;
}

model_config read_config(const gguf_reader& r) {
  const gguf_value& a = meta{{r}, ""}.need("general.architecture");
  if (a.type != gguf_type::string || (a.s != dense_arch && a.s != moe_arch))
    throw model_load_error(r.path() + ": general.architecture is '" + a.s + "', expected '" + dense_arch +
                           "' or '" + moe_arch + "'");
  const meta m{{r}, a.s};
  auto key = [&](const std::string& k) { return m.key(k); };
  model_config c;
  c.layout = model_layout::qwen35;
  c.preset = r.find("general.name") ? r.find("general.name")->s : "gguf";
  const int blocks = m.integer(key("block_count"));
  const int nextn = m.integer_or(key("nextn_predict_layers"), 0);
  if (nextn > 1)
    m.fail(key("nextn_predict_layers"), "is " + std::to_string(nextn) + ", Anchorage reads 0 or 1");
  c.mtp = nextn == 1;
  c.n_layers = blocks - nextn;
  if (c.n_layers <= 0) m.fail(key("block_count"), "leaves no layers");
  apply_qwen35_serving_defaults(c, m.integer_or(key("context_length"), 0));
  c.d_model = m.integer(key("embedding_length"));
  if (a.s == moe_arch)
    read_experts(m, c);
  else
    c.mlp_hidden = m.integer(key("feed_forward_length"));
  c.n_q = m.integer(key("attention.head_count"));
  c.n_kv = m.integer(key("attention.head_count_kv"));
  c.head_dim = m.integer(key("attention.key_length"));
  if (m.integer_or(key("attention.value_length"), c.head_dim) != c.head_dim)
    m.fail(key("attention.value_length"), "differs from key_length");
  c.norm_eps = m.real(key("attention.layer_norm_rms_epsilon"));
  c.rope_base = m.real(key("rope.freq_base"));
  const int rot = m.integer_or(key("rope.dimension_count"), c.head_dim);
  c.rope_dims = rot == c.head_dim ? 0 : rot;
  c.conv_kernel = m.integer(key("ssm.conv_kernel"));
  c.gdn_dk = c.gdn_dv = m.integer(key("ssm.state_size"));
  c.gdn_hk = m.integer(key("ssm.group_count"));
  c.gdn_hv = m.integer(key("ssm.time_step_rank"));
  if (m.integer(key("ssm.inner_size")) != c.gdn_hv * c.gdn_dv)
    m.fail(key("ssm.inner_size"), "is not time_step_rank * state_size");
  c.pattern.clear();
  if (const gguf_value* rec = r.find(key("attention.recurrent_layers"))) {
    if (rec->type != gguf_type::array || static_cast<int>(rec->ints.size()) < c.n_layers)
      m.fail(key("attention.recurrent_layers"), "must be an array with one entry per block");
    for (int i = 0; i < c.n_layers; ++i) c.pattern += rec->ints[static_cast<std::size_t>(i)] != 0 ? 'G' : 'A';
  } else {
    const int interval = m.integer_or(key("full_attention_interval"), 4);
    if (interval <= 0) m.fail(key("full_attention_interval"), "must be positive");
    for (int i = 0; i < c.n_layers; ++i) c.pattern += (i + 1) % interval != 0 ? 'G' : 'A';
  }
  const gguf_tensor_info* embd = r.find_tensor("token_embd.weight");
  if (embd == nullptr || embd->ne.size() != 2)
    throw model_load_error(r.path() + ": missing 2-D tensor 'token_embd.weight'");
  c.vocab = static_cast<int>(embd->ne[1]);
  c.tied_embeddings = r.find_tensor("output.weight") == nullptr;
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw model_load_error(r.path() + ": " + e.what());
  }
  return c;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The PyTorch-order shape llama.cpp stores a tensor with: conv1d and shared_expert_gate are
// squeezed, the rest unchanged.
std::vector<std::int64_t> gguf_shape(const tensor_spec& s) {
  if (s.name.find("linear_attn.conv1d") != std::string::npos) return {s.shape.front(), s.shape.back()};
  if (ends_with(s.name, "mlp.shared_expert_gate.weight")) return {s.shape.back()};
  return s.shape;
}

// Whether two PyTorch-order shapes agree once their leading 1s are dropped, as llama.cpp's loader
// compares them (a 2-D ne [H, 1] passes for a 1-D {H}).
bool same_shape(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  auto trimmed = [](const std::vector<std::int64_t>& s) {
    auto it = s.begin();
    while (it != s.end() && *it == 1) ++it;
    return std::vector<std::int64_t>(it, s.end());
  };
  return trimmed(a) == trimmed(b);
}

// The 1-D tensors, ssm_conv1d and the router (ffn_gate_inp) stay F32 under every type, as
// llama.cpp's converter writes them and llama-quantize leaves them.
bool stays_f32(const std::string& hf_name, const std::vector<std::int64_t>& shape) {
  return shape.size() <= 1 || hf_name.find("conv1d") != std::string::npos ||
         ends_with(hf_name, "mlp.gate.weight");
}

// The experts' gate and up of a fused config (mlp.experts.gate_up_proj [E, 2I, H]) as the two
// tensors llama.cpp's converter writes, under the split config's names; empty for another config.
tensor_map split_experts(const model_config& c, const tensor_map& w) {
  tensor_map out;
  if (!c.is_moe() || !c.experts_fused) return out;
  const std::string fused = "mlp.experts.gate_up_proj";
  const auto rows = static_cast<std::size_t>(c.expert_hidden) * static_cast<std::size_t>(c.d_model);
  for (const auto& s : qwen35_weight_specs(c)) {
    if (!ends_with(s.name, fused)) continue;
    const std::string prefix = s.name.substr(0, s.name.size() - fused.size()) + "mlp.experts.";
    const tensor& t = w.at(s.name);
    tensor gate{{c.n_experts, c.expert_hidden, c.d_model}, {}}, up = gate;
    gate.data.reserve(rows * static_cast<std::size_t>(c.n_experts));
    up.data.reserve(gate.data.capacity());
    for (std::size_t e = 0; e < static_cast<std::size_t>(c.n_experts); ++e) {
      const auto first = t.data.begin() + static_cast<std::ptrdiff_t>(2 * rows * e);
      gate.data.insert(gate.data.end(), first, first + static_cast<std::ptrdiff_t>(rows));
      up.data.insert(up.data.end(), first + static_cast<std::ptrdiff_t>(rows),
                     first + static_cast<std::ptrdiff_t>(2 * rows));
    }
    out.emplace(prefix + "gate_proj", std::move(gate));
    out.emplace(prefix + "up_proj", std::move(up));
  }
  return out;
}

// llama-quant.cpp's use_more_bits: the first and last eighth of the layers and every third one between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The block of a "blk.N.*" name; -1 for another.
int block_of(const std::string& gguf_name) {
  if (gguf_name.compare(0, 4, "blk.") != 0) return -1;
  return std::stoi(gguf_name.substr(4, gguf_name.find('.', 4) - 4));
}

// The Q4_K_M / Q5_K_M choice for a quantizable tensor (model-formats.md section 1.5; the
// ffn_down rule covers ffn_down_exps and ffn_down_shexp, their block read from the name).
ggml_type k_mix_type(const std::string& gname, const model_config& c, ggml_type base) {
  if (gname == "output.weight" || (gname == "token_embd.weight" && c.tied_embeddings)) return ggml_type::q6_k;
  const int blocks = c.n_layers + (c.mtp ? 1 : 0);  // n_layer_all; also n_attention_wv (one per block)
  const bool attn_v_like = ends_with(gname, ".attn_v.weight") || ends_with(gname, ".attn_qkv.weight");
  const bool ffn_down = gname.find(".ffn_down") != std::string::npos;
  // llama-quant.cpp's rules for exactly 8 experts (written for Mixtral; no released Qwen3.5 has 8).
  if (c.n_experts == 8 && (attn_v_like || ends_with(gname, ".attn_k.weight"))) return ggml_type::q8_0;
  if (c.n_experts == 8 && ends_with(gname, ".attn_output.weight") && base == ggml_type::q4_k)
    return ggml_type::q5_k;
  if ((attn_v_like || ffn_down) && use_more_bits(block_of(gname), blocks)) return ggml_type::q6_k;
  return base;
}

}  // namespace

const char* qwen35_gguf_architecture(const model_config& c) { return c.is_moe() ? moe_arch : dense_arch; }

const char* to_string(gguf_dtype d) {
  switch (d) {
    case gguf_dtype::f32:
      return "f32";
    case gguf_dtype::f16:
      return "f16";
    case gguf_dtype::bf16:
      return "bf16";
    case gguf_dtype::q8_0:
      return "q8_0";
    case gguf_dtype::q4_0:
      return "q4_0";
    case gguf_dtype::q4_k:
      return "q4_k";
    case gguf_dtype::q5_k:
      return "q5_k";
    case gguf_dtype::q6_k:
      return "q6_k";
    case gguf_dtype::q4_k_m:
      return "q4_k_m";
    case gguf_dtype::q5_k_m:
      return "q5_k_m";
  }
  return "?";
}

gguf_dtype gguf_dtype_from_string(const std::string& name) {
  std::string known;
  for (gguf_dtype d :
       {gguf_dtype::f32, gguf_dtype::f16, gguf_dtype::bf16, gguf_dtype::q8_0, gguf_dtype::q4_0,
        gguf_dtype::q4_k, gguf_dtype::q5_k, gguf_dtype::q6_k, gguf_dtype::q4_k_m, gguf_dtype::q5_k_m}) {
    if (name == to_string(d)) return d;
    known += (known.empty() ? "" : "|") + std::string(to_string(d));
  }
  throw std::invalid_argument("unknown GGUF type '" + name + "' (known: " + known + ")");
}

std::uint32_t llama_file_type(gguf_dtype d) {
  switch (d) {
    case gguf_dtype::f32:
      return 0;
    case gguf_dtype::f16:
      return 1;
    case gguf_dtype::bf16:
      return 32;
    case gguf_dtype::q8_0:
      return 7;
    case gguf_dtype::q4_0:
      return 2;
    case gguf_dtype::q4_k:
      return 14;
    case gguf_dtype::q5_k:
      return 16;
    case gguf_dtype::q6_k:
      return 18;
    case gguf_dtype::q4_k_m:
      return 15;
    case gguf_dtype::q5_k_m:
      return 17;
  }
  return 0;
}

ggml_type qwen35_gguf_tensor_type(const std::string& hf_name, const std::vector<std::int64_t>& gguf_shape,
                                  const model_config& c, gguf_dtype dtype) {
  const std::string gname = qwen35_gguf_name(hf_name, c);
  if (stays_f32(hf_name, gguf_shape)) return ggml_type::f32;
  ggml_type t = ggml_type::f32;
  switch (dtype) {
    case gguf_dtype::f32:
      return ggml_type::f32;
    case gguf_dtype::f16:
      return ggml_type::f16;
    case gguf_dtype::bf16:
      return ggml_type::bf16;
    case gguf_dtype::q8_0:
      t = ggml_type::q8_0;
      break;
    case gguf_dtype::q4_0:
      t = ggml_type::q4_0;
      break;
    case gguf_dtype::q4_k:
      t = ggml_type::q4_k;
      break;
    case gguf_dtype::q5_k:
      t = ggml_type::q5_k;
      break;
    case gguf_dtype::q6_k:
      t = ggml_type::q6_k;
      break;
    case gguf_dtype::q4_k_m:
      t = k_mix_type(gname, c, ggml_type::q4_k);
      break;
    case gguf_dtype::q5_k_m:
      t = k_mix_type(gname, c, ggml_type::q5_k);
      break;
  }
  const std::int64_t ne0 = gguf_shape.back();
  auto fits = [&](ggml_type x) {
    return kernels::row_bytes(*kernels::weight_type_from_ggml(static_cast<std::uint32_t>(x)), ne0)
        .has_value();
  };
  if (!fits(t) && (t == ggml_type::q4_k || t == ggml_type::q5_k || t == ggml_type::q6_k)) t = ggml_type::q8_0;
  if (!fits(t)) t = ggml_type::f16;
  return t;
}

void save_qwen35_gguf(const std::string& path, const model_config& c, const tensor_map& weights,
                      const nlohmann::json& tokenizer_json, const std::string& chat_template,
                      gguf_dtype dtype) {
  if (c.layout != model_layout::qwen35)
    throw std::invalid_argument("qwen35 gguf: the config is not the qwen35 layout");
  if (c.gdn_dk != c.gdn_dv)
    throw std::invalid_argument("qwen35 gguf: llama.cpp needs gdn_dk == gdn_dv (ssm.state_size is both)");
  c.validate();
  try {
    check_tensors(weights, qwen35_weight_specs(c), "qwen35 gguf export");
  } catch (const safetensors_error& e) {
    throw std::invalid_argument(e.what());
  }
  kv_list kv;
  add_config(kv, c);
  add_qwen35_vocab(kv, tokenizer_json, c.vocab);
  if (!chat_template.empty()) kv.emplace_back("tokenizer.chat_template", gguf_value::str(chat_template));

  kv.emplace_back("general.file_type", gguf_value::u32(llama_file_type(dtype)));
  kv.emplace_back("general.quantization_version", gguf_value::u32(2));

  // Fused experts are written as llama.cpp's converter writes them: gate and up apart.
  model_config written = c;
  written.experts_fused = false;
  const tensor_map split = split_experts(c, weights);
  const auto specs = qwen35_weight_specs(written);
  std::vector<tensor> converted;
  converted.reserve(specs.size());
  std::vector<gguf_tensor_out> out;
  for (const auto& s : specs) {
    const auto it = split.find(s.name);
    converted.push_back(qwen35_to_gguf(s.name, it != split.end() ? it->second : weights.at(s.name), written));
  }
  for (std::size_t i = 0; i < specs.size(); ++i)
    out.push_back({qwen35_gguf_name(specs[i].name, written), &converted[i],
                   qwen35_gguf_tensor_type(specs[i].name, converted[i].shape, written, dtype)});
  save_gguf(path, kv, out);
}

loaded_model load_qwen35_gguf(const std::string& path) {
  // Shared: the weights kept as stored point into its mapping and keep it alive.
  const auto reader = std::make_shared<const gguf_reader>(path);
  const gguf_reader& r = *reader;
  loaded_model m;
  m.source = path;
  m.config = read_config(r);
  const auto specs = qwen35_weight_specs(m.config);
  // Every tensor's presence, shape, type and ne0 first (the reader checked the extents), so a file
  // that cannot load is refused before any conversion.
  for (const auto& s : specs) {
    const std::string gname = qwen35_gguf_name(s.name, m.config);
    const gguf_tensor_info* info = r.find_tensor(gname);
    if (info == nullptr) throw model_load_error(path + ": missing tensor '" + gname + "' (" + s.name + ")");
    const std::vector<std::int64_t> expected = gguf_shape(s);
    if (!same_shape(info->shape(), expected))
      throw model_load_error(path + ": tensor '" + gname + "' has shape " + shape_string(info->shape()) +
                             " (PyTorch order), expected " + shape_string(expected));
    r.check_readable(*info);
  }
  for (const auto& s : specs) {
    const std::string gname = qwen35_gguf_name(s.name, m.config);
    const gguf_tensor_info& info = *r.find_tensor(gname);
    if (info.type != static_cast<std::uint32_t>(ggml_type::f32))
      m.stored_types.emplace(s.name, ggml_type_name(info.type));
    // A matrix (a stack of the experts' matrices included; conv1d's [C, 1, K] filter is not one)
    // stays as the file stores it, float32 too (the file's mapping, not a copy: an F32 file costs
    // about its size in memory); the rest (norms, biases, the filter) is converted.
    const bool matrix = s.shape.size() >= 2 && s.name.find("linear_attn.conv1d") == std::string::npos;
    if (matrix) {
      stored_weight w;
      w.shape = s.shape;
      w.type = *kernels::weight_type_from_ggml(info.type);
      w.data = r.bytes(info);
      w.owner = reader;
      w.order = qwen35_gguf_v_head_order(s.name, m.config);
      m.stored.emplace(s.name, std::move(w));
      continue;
    }
    tensor t = r.read(gname);
    t.shape = gguf_shape(s);  // the same values; a shape that differed by leading 1s made canonical
    m.weights.emplace(s.name, qwen35_from_gguf(s.name, t, m.config));
  }
  m.tokenizer = qwen35_tokenizer_from_gguf(r);
  m.tokenizer_config = qwen35_tokenizer_config_from_gguf(r);
  if (const gguf_value* t = r.find("tokenizer.chat_template")) m.chat_template = t->s;
  return m;
}

}  // namespace anchorage
