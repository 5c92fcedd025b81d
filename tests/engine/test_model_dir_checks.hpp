#pragma once
// Assertions shared by the checkpoint-directory tests: a config read back equals the one written,
// field by field, and tensors are equal bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/core/tensor.hpp"
#include "runtime/engine/model_config.hpp"
#include "runtime/engine/model_weights.hpp"
#include "runtime/engine/qwen35_config.hpp"

namespace anchorage::testing {

// The model fields of `got` equal those of `want`; the serving fields are the loader's defaults
// (ctx_size capped at `max_position`).
inline void check_config_read_back(const model_config& got, const model_config& want, int max_position) {
  CHECK(got.layout == model_layout::qwen35);
  CHECK(got.vocab == want.vocab);
  CHECK(got.d_model == want.d_model);
  CHECK(got.n_layers == want.n_layers);
  CHECK(got.pattern == want.pattern);
  CHECK(got.mlp_hidden == want.mlp_hidden);
  CHECK(got.norm_eps == want.norm_eps);
  CHECK(got.gdn_hk == want.gdn_hk);
  CHECK(got.gdn_hv == want.gdn_hv);
  CHECK(got.gdn_dk == want.gdn_dk);
  CHECK(got.gdn_dv == want.gdn_dv);
  CHECK(got.conv_kernel == want.conv_kernel);
  CHECK(got.n_q == want.n_q);
  CHECK(got.n_kv == want.n_kv);
  CHECK(got.head_dim == want.head_dim);
  CHECK(got.rope_base == want.rope_base);
  CHECK(got.rope_dims == want.rotary_dims());
  CHECK(got.tied_embeddings == want.tied_embeddings);
  CHECK(got.mtp == want.mtp);
  CHECK(got.gdn_chunk == qwen35_default_gdn_chunk);
  const int ctx = std::min(qwen35_default_ctx, max_position);
  CHECK(got.ctx_size == ctx);
  CHECK(got.grid == std::min(qwen35_default_grid, ctx));
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
