#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace anchorage {

// Shape of the reference hybrid model. Layer i is a Gated DeltaNet layer ('G') or an attention
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
  // serving shape
  int grid = 32;           // --prefix-chunk
  int ctx_size = 32768;    // --ctx-size
  std::uint64_t seed = 1;  // random weights

  bool is_gdn(int layer) const { return pattern[layer % pattern.size()] == 'G'; }
  int count_gdn() const;
  int count_attention() const;
  int conv_channels() const { return 2 * gdn_hk * gdn_dk + gdn_hv * gdn_dv; }
  int kv_row() const { return n_kv * head_dim; }  // floats of one layer's K (or V) row

  // Throws std::invalid_argument naming the first inconsistent field (e.g. a grid that is
  // not a multiple of gdn_chunk, a pattern with letters other than G and A).
  void validate() const;
};

// "tiny", "tiny-mtp" (tests), "small" (served default, about 40M parameters), "small-mtp".
// Throws std::invalid_argument for an unknown name, listing the known ones.
model_config preset_config(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace anchorage
