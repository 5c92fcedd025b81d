#pragma once
// Helpers for engine tests: engines from presets with random weights, and whole-state
// snapshots taken through the state adapter only.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine/engine.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/model_load.hpp"
#include "runtime/model/model_weights.hpp"

namespace anchorage::testing {

inline model_config test_config(const std::string& preset, int ctx = 4096) {
  model_config c = preset_config(preset);
  c.ctx_size = ctx;
  return c;
}

// qwen35-tiny made wide enough (d_model 256) that every matrix fills the K types' 256-value blocks,
// so a Q4_K/Q5_K/Q6_K export is that type and not the fallback; preset "qwen35-wide[-mtp]".
inline model_config qwen35_wide_config(bool mtp) {
  model_config c = preset_config(mtp ? "qwen35-tiny-mtp" : "qwen35-tiny");
  c.preset = mtp ? "qwen35-wide-mtp" : "qwen35-wide";
  c.d_model = 256;
  c.mlp_hidden = 256;
  c.gdn_dk = c.gdn_dv = 64;
  c.head_dim = 64;
  c.rope_dims = 16;
  c.ctx_size = 4096;
  c.validate();
  return c;
}

// qwen35moe-tiny made as wide (d_model, expert_hidden and shared_hidden 256) for the same reason;
// preset "qwen35moe-wide[-mtp]".
inline model_config qwen35moe_wide_config(bool mtp) {
  model_config c = qwen35_wide_config(mtp);
  const model_config moe = preset_config("qwen35moe-tiny");
  c.preset = mtp ? "qwen35moe-wide-mtp" : "qwen35moe-wide";
  c.n_experts = moe.n_experts;
  c.experts_used = moe.experts_used;
  c.expert_hidden = 256;
  c.shared_hidden = 256;
  c.mlp_hidden = c.expert_hidden;
  c.validate();
  return c;
}

// Every weight of a loaded checkpoint as float32 (the matrices kept as stored converted, as
// --weight-storage f32 loads them): for tests of the values a loader reads.
inline tensor_map as_f32(loaded_model m) {
  convert_stored_to_f32(m);
  return std::move(m.weights);
}

// Weights are shared per (preset, seed) so tests do not regenerate them.
inline const tensor_map& test_weights(const model_config& c, std::uint64_t seed = 7) {
  static std::map<std::pair<std::string, std::uint64_t>, tensor_map> cache;
  auto key = std::make_pair(c.preset, seed);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, random_weights(c, seed)).first;
  return it->second;
}

inline std::unique_ptr<engine> make_engine(const model_config& c, std::uint64_t seed = 7) {
  return std::make_unique<engine>(c, test_weights(c, seed));
}

// The same engine shared, as a slot, a board or a run holds it.
inline std::shared_ptr<engine> shared_engine(const model_config& c) {
  return std::shared_ptr<engine>(make_engine(c).release());
}

// Deterministic token ids in [0, 256): byte-level text.
inline std::vector<token_id> test_tokens(std::size_t n, std::uint64_t seed = 3) {
  std::vector<token_id> t(n);
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (auto& v : t) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<token_id>(x % 256);
  }
  return t;
}

// Every section whole and rows [0, length) of every view, through the adapter.
struct snapshot {
  std::size_t length = 0;
  std::vector<std::vector<unsigned char>> sections;
  std::vector<std::vector<unsigned char>> views;
};

inline snapshot take_snapshot(const state_adapter& s) {
  snapshot out;
  out.length = s.valid_length();
  const auto& l = s.layout();
  for (std::size_t i = 0; i < l.sections.size(); ++i) {
    out.sections.emplace_back(l.sections[i].bytes);
    s.copy_section_out(i, out.sections.back().data());
  }
  for (std::size_t i = 0; i < l.views.size(); ++i) {
    out.views.emplace_back(l.views[i].bytes_per_token * out.length);
    s.copy_rows_out(i, 0, out.length, out.views.back().data());
  }
  return out;
}

inline void restore_snapshot(state_adapter& s, const snapshot& snap) {
  const auto& l = s.layout();
  for (std::size_t i = 0; i < l.sections.size(); ++i) s.copy_section_in(i, snap.sections[i].data());
  for (std::size_t i = 0; i < l.views.size(); ++i) s.copy_rows_in(i, 0, snap.length, snap.views[i].data());
  s.set_valid_length(snap.length);
}

}  // namespace anchorage::testing
