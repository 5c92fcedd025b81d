#pragma once
// Assertions shared by the checkpoint-directory tests: a config read back equals the one written,
// field by field, and tensors are equal bit for bit; and the config.json of a Qwen3.5 MoE model.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/tensor.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_config.hpp"
#include "tests/model/model_checks.hpp"
#include "tests/support/checkpoint_writer.hpp"

namespace anchorage::testing {

// The model fields of `got` equal those of `want`; the serving fields are the loader's defaults
// (ctx_size capped at `max_position`).
inline void check_config_read_back(const model_config& got, const model_config& want, int max_position) {
  CHECK(got.layout == model_layout::qwen35);
  check_same_shape(got, want);
  CHECK(got.rope_dims == want.rotary_dims());
  CHECK(got.experts_fused);
  CHECK(got.gdn_chunk == qwen35_default_gdn_chunk);
  const int ctx = std::min(qwen35_default_ctx, max_position);
  CHECK(got.ctx_size == ctx);
  CHECK(got.grid == std::min(qwen35_default_grid, ctx));
}

// config.json for a mixture-of-experts `c` (a qwen35moe-* preset) as Hugging Face writes it
// (model-formats.md 2.1): qwen35_config_json's with the MoE model types and architectures, and
// the expert keys in place of intermediate_size and mlp_only_layers.
inline nlohmann::json qwen35moe_config_json(const model_config& c, const checkpoint_options& o = {}) {
  nlohmann::json j = qwen35_config_json(c, o);
  nlohmann::json& text = o.multimodal ? j["text_config"] : j;
  text["model_type"] = "qwen3_5_moe_text";
  text.erase("intermediate_size");
  text.erase("mlp_only_layers");
  text["num_experts"] = c.n_experts;
  text["num_experts_per_tok"] = c.experts_used;
  text["moe_intermediate_size"] = c.expert_hidden;
  text["shared_expert_intermediate_size"] = c.shared_hidden;
  text["router_aux_loss_coef"] = 0.001;
  text["output_router_logits"] = false;
  if (o.multimodal) {
    j["model_type"] = "qwen3_5_moe";
    j["architectures"] = {"Qwen3_5MoeForConditionalGeneration"};
  } else {
    j["architectures"] = {"Qwen3_5MoeForCausalLM"};
  }
  return j;
}

// write_checkpoint for a mixture-of-experts `c`, with qwen35moe_config_json's config.json.
inline void write_moe_checkpoint(const std::string& dir, const model_config& c, const tensor_map& weights,
                                 const checkpoint_options& o = {}) {
  write_checkpoint(dir, c, weights, o);
  std::ofstream(dir + "/config.json") << qwen35moe_config_json(c, o).dump(2);
}

// Same names, same shapes, same bits.
inline void check_bit_equal(const tensor_map& got, const tensor_map& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, t] : want) {
    INFO(name);
    const auto it = got.find(name);
    REQUIRE(it != got.end());
    CHECK(it->second.shape == t.shape);
    REQUIRE(it->second.data.size() == t.data.size());
    CHECK(std::memcmp(it->second.data.data(), t.data.data(), t.data.size() * sizeof(float)) == 0);
  }
}

}  // namespace anchorage::testing
