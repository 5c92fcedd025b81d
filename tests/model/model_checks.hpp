#pragma once
// Assertions shared by the model-format tests (GGUF and Hugging Face folders): two configs
// describe the same model, and weights read back from a GGUF equal the ones written.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <string>

#include "runtime/core/tensor.hpp"
#include "runtime/model/half_float.hpp"
#include "runtime/model/model_config.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_names.hpp"

namespace anchorage::testing {

inline float ulp(float x) { return std::nextafter(std::fabs(x), INFINITY) - std::fabs(x); }

// The fields that say what the model is (its layers, widths, heads, experts), field by field; not
// the preset's name, the rotary dims or the serving fields, which each format states its own way.
inline void check_same_shape(const model_config& got, const model_config& want) {
  CHECK(got.layout == want.layout);
  CHECK(got.vocab == want.vocab);
  CHECK(got.d_model == want.d_model);
  CHECK(got.n_layers == want.n_layers);
  CHECK(got.pattern == want.pattern);
  CHECK(got.mlp_hidden == want.mlp_hidden);
  CHECK(got.n_experts == want.n_experts);
  CHECK(got.experts_used == want.experts_used);
  CHECK(got.expert_hidden == want.expert_hidden);
  CHECK(got.shared_hidden == want.shared_hidden);
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
  CHECK(got.tied_embeddings == want.tied_embeddings);
  CHECK(got.mtp == want.mtp);
}

// A GGUF loaded back: the same shape, preset, rotary dims and context.
inline void check_same_gguf_config(const model_config& got, const model_config& want) {
  check_same_shape(got, want);
  CHECK(got.preset == want.preset);
  CHECK(got.rope_dims == want.rope_dims);
  CHECK(got.ctx_size == want.ctx_size);
}

// Weights back from a GGUF: exact except where llama.cpp's convention is an arithmetic step,
// which comes back within one float ulp of the stored value (1 + w) or a few ulps relative (log
// of -exp); with `f16`, the matrices as an F16 export rounds them.
inline void check_gguf_weights(const tensor_map& got, const tensor_map& want, bool f16 = false) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    const tensor& g = got.at(name);
    REQUIRE(g.shape == w.shape);
    const bool centred = qwen35_norm_of(name) == qwen35_norm_kind::zero_centred;
    const bool a_log = name.find("A_log") != std::string::npos;
    const bool half = f16 && w.shape.size() == 2;  // F16 export: the matrices only
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < w.data.size(); ++i) {
      float expect = w.data[i];
      if (half) expect = f16_to_float(float_to_f16(expect));
      const float tol = centred ? ulp(1.0f + w.data[i]) : a_log ? 4 * ulp(w.data[i]) + 4 * ulp(1.0f) : 0.0f;
      if (!(std::fabs(g.data[i] - expect) <= tol)) ++mismatches;
    }
    CHECK(mismatches == 0);
  }
}

}  // namespace anchorage::testing
