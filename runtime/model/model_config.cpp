#include "runtime/model/model_config.hpp"

#include <stdexcept>

namespace anchorage {

const char* to_string(model_layout l) { return l == model_layout::qwen35 ? "qwen35" : "reference"; }

int model_config::count_gdn() const {
  int n = 0;
  for (int i = 0; i < n_layers; ++i) n += is_gdn(i) ? 1 : 0;
  return n;
}

int model_config::count_attention() const { return n_layers - count_gdn(); }

void model_config::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("model config: " + what); };
  if (pattern.empty() || pattern.find_first_not_of("GA") != std::string::npos)
    fail("pattern '" + pattern + "' must be a non-empty string of G and A");
  if (vocab <= 0 || d_model <= 0 || n_layers <= 0 || mlp_hidden <= 0) fail("sizes must be positive");
  if (gdn_hk <= 0 || gdn_hv % gdn_hk != 0) fail("gdn_hv must be a positive multiple of gdn_hk");
  if (gdn_dk <= 0 || gdn_dv <= 0 || conv_kernel < 1) fail("gdn head sizes must be positive");
  if (n_kv <= 0 || n_q % n_kv != 0) fail("n_q must be a positive multiple of n_kv");
  if (head_dim <= 0 || head_dim % 2 != 0) fail("head_dim must be positive and even");
  if (rope_dims < 0 || rope_dims > head_dim || rope_dims % 2 != 0)
    fail("rope_dims must be even and between 0 and head_dim");
  if (layout == model_layout::qwen35 && static_cast<int>(pattern.size()) != n_layers)
    fail("the qwen35 layout needs one pattern letter per layer (" + std::to_string(n_layers) + "), got '" +
         pattern + "'");
  if (tied_embeddings && layout != model_layout::qwen35) fail("tied embeddings need the qwen35 layout");
  if (gdn_chunk <= 0) fail("gdn_chunk must be positive");
  if (grid <= 0 || grid % gdn_chunk != 0)
    fail("the grid (--prefix-chunk) is " + std::to_string(grid) + ", it must be a positive multiple of " +
         std::to_string(gdn_chunk));
  if (n_experts < 0) fail("n_experts must not be negative");
  if (n_experts > 0) {
    if (layout != model_layout::qwen35) fail("mixture-of-experts layers need the qwen35 layout");
    if (experts_used < 1 || experts_used > n_experts)
      fail("experts_used is " + std::to_string(experts_used) + ", it must be between 1 and n_experts (" +
           std::to_string(n_experts) + ")");
    if (expert_hidden <= 0 || shared_hidden <= 0) fail("expert_hidden and shared_hidden must be positive");
  }
  if (ctx_size < grid)
    fail("--ctx-size " + std::to_string(ctx_size) + " is below one grid chunk (" + std::to_string(grid) +
         ")");
}

model_config preset_config(const std::string& name) {
  model_config c;
  c.preset = name;
  if (name == "tiny" || name == "tiny-mtp") {
    c.mtp = name == "tiny-mtp";
    c.validate();
    return c;
  }
  if (name == "small" || name == "small-mtp") {
    c.d_model = 512;
    c.n_layers = 12;
    c.mlp_hidden = 1536;
    c.gdn_hk = 4;
    c.gdn_hv = 8;
    c.gdn_dk = 64;
    c.gdn_dv = 64;
    c.gdn_chunk = 64;
    c.n_q = 4;
    c.n_kv = 2;
    c.head_dim = 64;
    c.grid = 1024;
    c.ctx_size = 131072;
    c.mtp = name == "small-mtp";
    c.validate();
    return c;
  }
  if (name == "qwen35-tiny" || name == "qwen35-tiny-mtp") {
    c.layout = model_layout::qwen35;
    c.pattern = "GGGAGGGA";
    c.head_dim = 32;
    c.rope_dims = 8;  // a quarter of the head, as Qwen3.5's partial_rotary_factor 0.25
    c.rope_base = 10000000.0f;
    c.mtp = name == "qwen35-tiny-mtp";
    c.validate();
    return c;
  }
  if (name == "qwen35moe-tiny" || name == "qwen35moe-tiny-mtp") {
    c = preset_config(name == "qwen35moe-tiny" ? "qwen35-tiny" : "qwen35-tiny-mtp");
    c.preset = name;
    c.n_experts = 8;
    c.experts_used = 2;
    c.expert_hidden = 32;
    c.shared_hidden = 64;
    c.mlp_hidden = c.expert_hidden;
    c.validate();
    return c;
  }
  if (name == "qwen35moe-small") {
    c = preset_config("qwen35-small");
    c.preset = name;
    c.n_experts = 16;
    c.experts_used = 4;
    c.expert_hidden = 256;
    c.shared_hidden = 512;
    c.mlp_hidden = c.expert_hidden;
    c.validate();
    return c;
  }
  // Qwen3.5-0.8B's text model as its config.json states it (docs/QWEN35.md; shared reference
  // qwen35.md): 24 layers of width 1024 in the 3:1 pattern, the tied 248,320-row embedding,
  // random weights. A model whose layers dominate (about 500M of its 750M parameters), for
  // measuring the engine where the products do, as a downloaded checkpoint of that size would.
  if (name == "qwen35-0.8b-shape") {
    c.layout = model_layout::qwen35;
    c.vocab = 248320;
    c.tied_embeddings = true;
    c.d_model = 1024;
    c.n_layers = 24;
    c.pattern.clear();
    for (int i = 0; i < 6; ++i) c.pattern += "GGGA";
    c.mlp_hidden = 3584;
    c.gdn_hk = 16;
    c.gdn_hv = 16;
    c.gdn_dk = 128;
    c.gdn_dv = 128;
    c.gdn_chunk = 64;
    c.conv_kernel = 4;
    c.n_q = 8;
    c.n_kv = 2;
    c.head_dim = 256;
    c.rope_dims = 64;  // partial_rotary_factor 0.25
    c.rope_base = 10000000.0f;
    c.norm_eps = 1e-6f;
    c.grid = 1024;
    c.ctx_size = 32768;
    c.validate();
    return c;
  }
  if (name == "qwen35-small") {
    c.layout = model_layout::qwen35;
    c.vocab = 151936;
    c.tied_embeddings = true;
    c.d_model = 256;
    c.n_layers = 8;
    c.pattern = "GGGAGGGA";
    c.mlp_hidden = 1024;
    c.gdn_hk = 2;
    c.gdn_hv = 4;
    c.gdn_dk = 64;
    c.gdn_dv = 64;
    c.gdn_chunk = 64;
    c.n_q = 4;
    c.n_kv = 2;
    c.head_dim = 64;
    c.rope_dims = 16;
    c.rope_base = 10000000.0f;
    c.grid = 1024;
    c.ctx_size = 131072;
    c.validate();
    return c;
  }
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown model preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> preset_names() {
  return {"tiny",           "tiny-mtp",           "small",          "small-mtp",
          "qwen35-tiny",    "qwen35-tiny-mtp",    "qwen35-small",   "qwen35-0.8b-shape",
          "qwen35moe-tiny", "qwen35moe-tiny-mtp", "qwen35moe-small"};
}

}  // namespace anchorage
