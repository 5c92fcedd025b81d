#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace anchorage {

// Which model the config describes. `reference` is Anchorage's own hybrid model (its tensor
// names in model_weights.cpp). `qwen35` is the Qwen3.5 dense text model as Hugging Face
// transformers defines it (docs/QWEN35.md): zero-centred RMSNorm weights (1 + w) everywhere except
// the GDN's gated norm; gated attention (q_proj gives query and gate interleaved per head, a
// sigmoid gate before o_proj) with per-head q and k norms and half-split rotary on the first
// rope_dims of each head; value head h reads key head h / (gdn_hv / gdn_hk); a SwiGLU MLP with
// separate gate and up projections; one letter of `pattern` per layer; its tensors under the
// Hugging Face text-only names (weight_specs).
enum class model_layout { reference, qwen35 };

const char* to_string(model_layout l);

// Shape of a hybrid model. Layer i is a Gated DeltaNet layer ('G') or an attention
// layer ('A') by pattern[i % pattern.size()].
struct model_config {
  std::string preset;
  int vocab = 272;
  int d_model = 64;
  int n_layers = 8;
  std::string pattern = "GGGA";
  int mlp_hidden = 128;
  float norm_eps = 1e-6f;
  // Gated DeltaNet
  int gdn_hk = 2;  // query/key heads
  int gdn_hv = 4;  // value heads (a multiple of gdn_hk)
  int gdn_dk = 16;
  int gdn_dv = 16;
  int conv_kernel = 4;
  int gdn_chunk = 16;  // sub-chunk of the chunked form; the grid is a multiple of it
  // attention
  int n_q = 4;
  int n_kv = 2;
  int head_dim = 16;
  float rope_base = 10000.0f;
  // draft layer (multi-token prediction): its own K/V rows and the mtp.h_last section
  bool mtp = false;
  // the model family and its options
  model_layout layout = model_layout::reference;
  int rope_dims = 0;  // rotary dimensions at the start of each head; 0 means head_dim
  // qwen35: the interleaved multimodal rotary's sections (temporal, height, width) over the
  // rotary frequency pairs (kernels/rope_multi.hpp); only image rows make them matter.
  std::array<int, 3> mrope_section{11, 11, 10};
  bool tied_embeddings = false;  // qwen35: the output projection is the token embedding
  // Mixture of experts (the qwen35 layout only; Qwen3.5 MoE, llama.cpp's qwen35moe): with
  // n_experts > 0 every layer's MLP (the draft layer's too) is a router over n_experts routed
  // experts, of which experts_used run for each row (softmax over all, top-k, the k weights
  // renormalised to sum to 1), each a SwiGLU MLP of width expert_hidden, plus a shared SwiGLU
  // expert of width shared_hidden scaled by sigmoid(shared_expert_gate . x). mlp_hidden is unused.
  int n_experts = 0;
  int experts_used = 0;
  int expert_hidden = 0;
  int shared_hidden = 0;
  // How the routed experts' gate and up projections are stored: one [E, 2I, H] tensor (Hugging
  // Face's mlp.experts.gate_up_proj, gate rows first) or two [E, I, H] (a GGUF's ffn_gate_exps and
  // ffn_up_exps, named mlp.experts.gate_proj and mlp.experts.up_proj here). The same arithmetic.
  bool experts_fused = true;
  // serving shape
  int grid = 32;           // --prefix-chunk
  int ctx_size = 32768;    // --ctx-size
  std::uint64_t seed = 1;  // random weights

  bool is_gdn(int layer) const { return pattern[layer % pattern.size()] == 'G'; }
  int count_gdn() const;
  int count_attention() const;
  int conv_channels() const { return 2 * gdn_hk * gdn_dk + gdn_hv * gdn_dv; }
  int kv_row() const { return n_kv * head_dim; }  // floats of one layer's K (or V) row
  int rotary_dims() const { return rope_dims == 0 ? head_dim : rope_dims; }
  bool is_moe() const { return n_experts > 0; }

  // Throws std::invalid_argument naming the first inconsistent field (e.g. a grid that is
  // not a multiple of gdn_chunk, a pattern with letters other than G and A).
  void validate() const;
};

// "tiny", "tiny-mtp" (tests), "small" (about 40M parameters), "small-mtp": the reference layout.
// "qwen35-tiny", "qwen35-tiny-mtp" (tests; gdn_hv > gdn_hk, the byte tokenizer's vocabulary) and
// "qwen35-small" (about 40M parameters with Qwen3's 151,936-id vocabulary, tied embeddings): the
// Qwen3.5 layout; "qwen35-0.8b-shape" (Qwen3.5-0.8B's text model as its config.json states it,
// random weights: about 750M parameters, 500M of them in the layers). "qwen35moe-tiny", "qwen35moe-tiny-mtp"
// (tests: 8 experts, 2 used) and "qwen35moe-small" (qwen35-small's trunk with 16 experts of 256, 4 used, and
// a shared expert of 512): the Qwen3.5 MoE layout. Throws std::invalid_argument for an unknown name, listing
// the known ones.
model_config preset_config(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace anchorage
