// llama.cpp (node-llama-cpp 3.21.1's prebuilt CPU build, through tools/npm/llamacpp_run.mjs) on the
// GGUF files anchorage-export-gguf writes: it loads them as qwen35 (qwen35moe for a model with
// experts) and, on the same weights and ids, agrees with Anchorage's engine. Skips, saying why, when node or
// node-llama-cpp is missing.
#include <catch2/catch.hpp>

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "runtime/engine/compute_threads.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/engine/engine_weights.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/qwen35_gguf.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/llamacpp.hpp"
#include "tests/support/product_settings.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

constexpr int n_predict = 32;
constexpr std::size_t prompt_length = 150;  // four grid lines of 32 and a partial fifth
// Last-position logits (each side shifted so its maximum is 0): max |difference| allowed. Both run
// in float32 with different summation orders and llama.cpp's softmax is float32.
constexpr double logit_tolerance = 2e-3;

bool skip_without_llamacpp() {
  const std::string missing = llamacpp_missing();
  if (!missing.empty()) WARN("skipped: " + missing);
  return !missing.empty();
}

std::string joined(const std::vector<std::string>& lines, const std::string& needle) {
  std::string out;
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) out += l + "\n";
  return out;
}

// How Anchorage's engine `e` agrees with llama.cpp's run `r` on the same file and ids: the last
// prompt position's logits (each side shifted so its maximum is 0), then llama.cpp's greedy tokens
// forced on Anchorage for `steps` steps, each checked to be Anchorage's top token or within
// `tolerance` of it (random weights' logits are flat: two tokens within a few hundredths are
// common, and llama.cpp's rounding may pick either).
struct agreement {
  double worst = 0.0;  // max |logit difference|
  double span = 0.0;   // Anchorage's largest logit minus its smallest
  int same = 0;        // steps before the first greedy token that differs
};

agreement agree_with_llamacpp(engine& e, const std::vector<token_id>& ids, const llamacpp_result& r,
                              int steps, double tolerance) {
  agreement a;
  e.prefill(ids);
  const std::vector<float> logits = e.last_logits();
  REQUIRE(logits.size() == r.logits_minus_max.size());
  const float top = *std::max_element(logits.begin(), logits.end());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    a.worst = std::max(a.worst, std::fabs((static_cast<double>(logits[i]) - top) - r.logits_minus_max[i]));
    a.span = std::max(a.span, static_cast<double>(top - logits[i]));
  }
  bool diverged = false;
  REQUIRE(r.tokens.size() == static_cast<std::size_t>(steps));
  for (int k = 0; k < steps; ++k) {
    const auto& l = e.last_logits();
    const auto best = static_cast<token_id>(std::max_element(l.begin(), l.end()) - l.begin());
    const token_id theirs = r.tokens[static_cast<std::size_t>(k)];
    INFO("step " << k << ": Anchorage's top " << best << ", llama.cpp's " << theirs);
    CHECK(l[best] - l[static_cast<std::size_t>(theirs)] <= tolerance);
    diverged = diverged || best != theirs;
    a.same += diverged ? 0 : 1;
    if (k + 1 < steps) e.decode(theirs);
  }
  return a;
}

}  // namespace

TEST_CASE("llamacpp: llama.cpp loads an exported qwen35-tiny as qwen35 and runs it", "[llamacpp]") {
  if (skip_without_llamacpp()) return;
  temp_dir d("llamacpp");
  const model_config c = test_config("qwen35-tiny");
  REQUIRE(c.gdn_hv > c.gdn_hk);
  const tensor_map& w = test_weights(c);
  const std::vector<token_id> ids = test_tokens(prompt_length);
  save_qwen35_gguf(d.file("f32.gguf"), c, w, nullptr, "", gguf_dtype::f32);
  const llamacpp_result r = run_llamacpp(d.file("f32.gguf"), ids, n_predict, d.str());
  INFO(r.raw_output);
  INFO(r.error);
  REQUIRE(r.error.empty());
  INFO(joined(r.log, "qwen35"));
  CHECK_FALSE(joined(r.log, "arch").find("qwen35") ==
              std::string::npos);  // "general.architecture str = qwen35"
  REQUIRE(r.n_vocab == c.vocab);
  REQUIRE(r.logprobs.size() == static_cast<std::size_t>(c.vocab));
  double total = 0.0;
  for (double l : r.logprobs) {
    REQUIRE(std::isfinite(l));
    total += std::exp(l);
  }
  CHECK(total == Approx(1.0).epsilon(1e-4));
  REQUIRE(r.tokens.size() == static_cast<std::size_t>(n_predict));
  for (token_id t : r.tokens) CHECK((t >= 0 && t < c.vocab));
  // The distribution is the model's, not a flat one: random weights give distinct logits.
  const auto [lo, hi] = std::minmax_element(r.logits_minus_max.begin(), r.logits_minus_max.end());
  CHECK(*hi == 0.0);
  CHECK(*lo < -0.01);

  // The same model as F16 gives nearly the same distribution (the export keeps the values).
  save_qwen35_gguf(d.file("f16.gguf"), c, w, nullptr, "", gguf_dtype::f16);
  const llamacpp_result h = run_llamacpp(d.file("f16.gguf"), ids, n_predict, d.str());
  INFO(h.error);
  REQUIRE(h.error.empty());
  REQUIRE(h.logits_minus_max.size() == r.logits_minus_max.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < r.logits_minus_max.size(); ++i)
    worst = std::max(worst, std::fabs(h.logits_minus_max[i] - r.logits_minus_max[i]));
  CHECK(worst < 0.05);
  CHECK(worst > 0.0);  // F16 rounding shows: the file really holds F16

  // With the draft layer (block 8, nextn_predict_layers 1) the file loads too; llama.cpp leaves
  // the draft tensors out of its main graph, and random_weights draws each tensor by name, so the
  // main model and its outputs are the F16 file's above.
  const model_config cm = test_config("qwen35-tiny-mtp");
  save_qwen35_gguf(d.file("mtp.gguf"), cm, test_weights(cm), nullptr, "", gguf_dtype::f16);
  const llamacpp_result m = run_llamacpp(d.file("mtp.gguf"), ids, n_predict, d.str());
  INFO(m.error);
  REQUIRE(m.error.empty());
  CHECK_FALSE(joined(m.log, "nextn_predict_layers").empty());
  CHECK(m.logits_minus_max == h.logits_minus_max);
  CHECK(m.tokens == h.tokens);
}

TEST_CASE("llamacpp: llama.cpp on the exported file computes the model the HF weights define", "[llamacpp]") {
  // The reference is an independent double-precision forward with transformers' semantics on the
  // HF-named weights, so a wrong convention in the export (a missed +1, the V-head order, the
  // sign of ssm_a) shows as a difference far above float32 rounding.
  if (skip_without_llamacpp()) return;
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) {
    WARN("skipped: python3 not found");
    return;
  }
  // qwen35-tiny as it is, and with tied embeddings and a pattern off llama.cpp's interval rule (so
  // the file has no output.weight and carries attention.recurrent_layers).
  model_config variant = test_config("qwen35-tiny");
  variant.tied_embeddings = true;
  variant.pattern = "GAGGGGGA";
  for (const model_config& c : {test_config("qwen35-tiny"), variant}) {
    INFO("pattern " << c.pattern << (c.tied_embeddings ? ", tied" : ""));
    temp_dir d("llamacpp");
    const tensor_map w = random_weights(c, 5);
    const std::vector<token_id> ids = test_tokens(64, 11);
    save_weights(d.file("hf.safetensors"), w, c);
    save_qwen35_gguf(d.file("f32.gguf"), c, w, nullptr, "", gguf_dtype::f32);
    std::string error;
    const std::vector<double> ref = run_hf_reference(d.file("hf.safetensors"), c, ids, d.str(), &error);
    INFO(error);
    REQUIRE(ref.size() == static_cast<std::size_t>(c.vocab));
    const llamacpp_result r = run_llamacpp(d.file("f32.gguf"), ids, 1, d.str());
    INFO(r.error);
    REQUIRE(r.error.empty());
    double worst = 0.0, span = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      worst = std::max(worst, std::fabs(ref[i] - r.logits_minus_max[i]));
      span = std::max(span, -ref[i]);
    }
    INFO("max |logit difference| llama.cpp vs the reference: " << worst << " (logits span " << span << ")");
    // float32 rounding grows with the logits' size: tied embeddings give a span of about 40.
    CHECK(worst <= std::max(logit_tolerance, 1e-4 * span));
    CHECK(span > 0.5);  // a real spread of logits, not a flat distribution
    CHECK(std::max_element(ref.begin(), ref.end()) - ref.begin() ==
          std::max_element(r.logits_minus_max.begin(), r.logits_minus_max.end()) -
              r.logits_minus_max.begin());
  }
}

TEST_CASE("llamacpp: llama.cpp and Anchorage agree on qwen35-tiny", "[llamacpp]") {
  if (skip_without_llamacpp()) return;
  const model_config c = test_config("qwen35-tiny");
  const tensor_map& w = test_weights(c);
  auto e = std::make_unique<engine>(c, w);
  temp_dir d("llamacpp");
  const std::vector<token_id> ids = test_tokens(prompt_length);
  save_qwen35_gguf(d.file("f32.gguf"), c, w, nullptr, "", gguf_dtype::f32);
  const llamacpp_result r = run_llamacpp(d.file("f32.gguf"), ids, n_predict, d.str());
  INFO(r.error);
  REQUIRE(r.error.empty());

  e->prefill(ids);
  std::vector<float> logits = e->last_logits();
  REQUIRE(logits.size() == r.logits_minus_max.size());
  const float top = *std::max_element(logits.begin(), logits.end());
  double worst = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i)
    worst = std::max(worst, std::fabs((static_cast<double>(logits[i]) - top) - r.logits_minus_max[i]));
  INFO("max |logit difference| at the last prompt position: " << worst);
  std::fprintf(stderr,
               "llamacpp: Anchorage vs llama.cpp on qwen35-tiny, %zu prompt ids: max |logit diff| %.3g\n",
               ids.size(), worst);
  CHECK(worst <= logit_tolerance);

  std::vector<token_id> greedy;
  for (int k = 0; k < n_predict; ++k) {
    const auto& l = e->last_logits();
    const auto t = static_cast<token_id>(std::max_element(l.begin(), l.end()) - l.begin());
    greedy.push_back(t);
    if (k + 1 < n_predict) e->decode(t);
  }
  CHECK(greedy == r.tokens);
}

TEST_CASE("llamacpp: llama.cpp and Anchorage agree on a file of each stored type", "[llamacpp]") {
  // Both read the same file, of qwen35-tiny made wide enough (d_model 256) that every matrix
  // fills the K types' blocks. Anchorage multiplies the rows as stored with float32 activations
  // and sums; llama.cpp's CPU path rounds each activation row before every product by a stored
  // matrix (model-formats.md section 1.4): to Q8_0 for Q8_0/Q4_0 weights, to Q8_K for the K types,
  // to F16 or BF16 for those weights. So the logits differ by more than the F32 files' float32
  // rounding (logit_tolerance, 2e-3), by an amount that grows as the weights' own rounding does.
  // The tolerances are about 2.5x what was measured here (node-llama-cpp 3.21.1, 150 prompt ids;
  // the figures are in the closing note of issue 25 and docs/ENGINE.md).
  if (skip_without_llamacpp()) return;
  struct variant {
    gguf_dtype dtype;
    const char* log_name;  // how llama.cpp's load log names the type
    double tolerance;      // measured: f16 0.00093, bf16 0.0067, q8_0 0.028, q4_0 0.021, q4_K 0.048,
                           // q5_K 0.033, q6_K 0.039, q4_K_M 0.055
    bool same_greedy;      // all 16 greedy tokens the same (measured so; q4_K, q5_K, q4_K_M: 9, 13, 3)
  };
  const variant v = GENERATE(
      variant{gguf_dtype::f16, "f16", 0.0025, true}, variant{gguf_dtype::bf16, "bf16", 0.017, true},
      variant{gguf_dtype::q8_0, "q8_0", 0.07, true}, variant{gguf_dtype::q4_0, "q4_0", 0.05, true},
      variant{gguf_dtype::q4_k, "q4_K", 0.12, false}, variant{gguf_dtype::q5_k, "q5_K", 0.08, false},
      variant{gguf_dtype::q6_k, "q6_K", 0.1, true}, variant{gguf_dtype::q4_k_m, "q6_K", 0.14, false});
  INFO("type " << to_string(v.dtype));
  constexpr int steps = 16;
  const model_config c = qwen35_wide_config(false);
  temp_dir d("llamacpp");
  const std::string path = d.file(std::string(to_string(v.dtype)) + ".gguf");
  save_qwen35_gguf(path, c, test_weights(c), nullptr, "", v.dtype);
  loaded_model m = load_qwen35_gguf(path);
  m.config.ctx_size = c.ctx_size;
  REQUIRE(!m.stored.empty());  // the matrices multiplied as stored
  auto e = std::make_unique<engine>(std::make_shared<const engine_weights>(
      m.config, m.weights, m.stored, kernels::backend::cpu, m.stored_types));
  const std::vector<token_id> ids = test_tokens(prompt_length);
  const llamacpp_result r = run_llamacpp(path, ids, steps, d.str());
  INFO(r.error);
  REQUIRE(r.error.empty());
  CHECK_FALSE(joined(r.log, v.log_name).empty());  // llama.cpp's load log counts the type's tensors

  // Where the rounding is small enough, the greedy tokens are the same outright.
  const agreement a = agree_with_llamacpp(*e, ids, r, steps, v.tolerance);
  INFO("max |logit difference| at the last prompt position: " << a.worst);
  std::fprintf(stderr,
               "llamacpp: Anchorage vs llama.cpp on qwen35-wide %s, %zu prompt ids: max |logit diff| %.3g "
               "(logits span %.3g), the same greedy tokens for %d of %d steps\n",
               to_string(v.dtype), ids.size(), a.worst, a.span, a.same, steps);
  CHECK(a.worst <= v.tolerance);
  CHECK(a.worst > 0.0);  // llama.cpp's activation rounding shows
  if (v.same_greedy) CHECK(a.same == steps);
}

TEST_CASE("llamacpp: llama.cpp and Anchorage agree on a qwen35moe file of each stored type",
          "[llamacpp][moe]") {
  // The mixture-of-experts layers (router, top-k with renormalised weights, the experts' SwiGLU,
  // the shared expert under its sigmoid gate) on one file both read: qwen35moe-tiny made wide
  // (8 experts, 2 used, every matrix in 256-value blocks) with its draft layer, which llama.cpp
  // loads and leaves out of its main graph. As in the dense case above, llama.cpp rounds its
  // activations before each product by a stored matrix, so the tolerance grows with the type's
  // rounding. What a wrong convention does, measured on the F32 file edited for llama.cpp only:
  // experts 0 and 1 of ffn_down_exps swapped 0.78, ffn_gate_exps and ffn_up_exps swapped 0.55, the
  // shared expert's gate zeroed (a constant 0.5) 0.14. The tolerances are about 2.5x what was
  // measured here (node-llama-cpp 3.21.1, 150 prompt ids; F32 keeps the float32 logit_tolerance).
  if (skip_without_llamacpp()) return;
  struct variant {
    gguf_dtype dtype;
    const char* log_name;  // how llama.cpp's load log names the type
    double tolerance;      // measured: f32 0.00039, f16 0.0011, bf16 0.013, q8_0 0.026, q4_K_M 0.045
    bool same_greedy;      // all 16 greedy tokens the same (measured so; bf16 and q8_0: 9 and 2)
  };
  const variant v = GENERATE(
      variant{gguf_dtype::f32, "f32", logit_tolerance, true}, variant{gguf_dtype::f16, "f16", 0.003, true},
      variant{gguf_dtype::bf16, "bf16", 0.033, false}, variant{gguf_dtype::q8_0, "q8_0", 0.066, false},
      variant{gguf_dtype::q4_k_m, "q6_K", 0.11, true});
  INFO("type " << to_string(v.dtype));
  constexpr int steps = 16;
  const model_config c = qwen35moe_wide_config(true);
  temp_dir d("llamacpp");
  const std::string path = d.file(std::string(to_string(v.dtype)) + ".gguf");
  save_qwen35_gguf(path, c, test_weights(c), nullptr, "", v.dtype);
  loaded_model m = load_qwen35_gguf(path);
  m.config.ctx_size = c.ctx_size;
  REQUIRE(m.config.is_moe());
  REQUIRE(!m.stored.empty());  // the experts multiplied as stored (float32 ones read in the mapping)
  auto e = std::make_unique<engine>(std::make_shared<const engine_weights>(
      m.config, m.weights, m.stored, kernels::backend::cpu, m.stored_types));
  const std::vector<token_id> ids = test_tokens(prompt_length);
  const llamacpp_result r = run_llamacpp(path, ids, steps, d.str());
  INFO(r.raw_output);
  INFO(r.error);
  REQUIRE(r.error.empty());
  INFO(joined(r.log, "qwen35moe"));
  CHECK_FALSE(joined(r.log, "arch").find("qwen35moe") == std::string::npos);
  CHECK_FALSE(joined(r.log, "expert_used_count").empty());
  CHECK_FALSE(joined(r.log, v.log_name).empty());  // llama.cpp's load log counts the type's tensors

  const agreement a = agree_with_llamacpp(*e, ids, r, steps, v.tolerance);
  INFO("max |logit difference| at the last prompt position: " << a.worst);
  std::fprintf(stderr,
               "llamacpp: Anchorage vs llama.cpp on qwen35moe-wide-mtp %s, %zu prompt ids: max |logit diff| "
               "%.3g (logits span %.3g), the same greedy tokens for %d of %d steps\n",
               to_string(v.dtype), ids.size(), a.worst, a.span, a.same, steps);
  CHECK(a.worst <= v.tolerance);
  CHECK(a.span > 0.5);  // a real spread of logits
  if (v.same_greedy) CHECK(a.same == steps);
}

TEST_CASE(
    "llamacpp: with 8-bit activations Anchorage agrees with llama.cpp on Q8_0 and Q4_0 files "
    "within the float activations' tolerance",
    "[llamacpp][int8]") {
  // llama.cpp's CPU path rounds each activation row to Q8_0 before a product by a Q8_0 or Q4_0
  // matrix; --activations q8 rounds the same blocks the same way (kernels/int8_matmul.hpp). The
  // rounding is not shared, though: the two engines' inputs to a product already differ in their
  // last bits (other kernels before it), and a last-bit difference moves a value across a rounding
  // step now and then, so the 8-bit engine is not nearer llama.cpp than the float one (measured:
  // q8_0 0.046 against 0.028, q4_0 0.033 against 0.021). It stays within the float engine's
  // tolerance for the type (the case above) with the same greedy tokens.
  if (skip_without_llamacpp()) return;
  struct variant {
    gguf_dtype dtype;
    double tolerance;  // the case above's
  };
  const variant v = GENERATE(variant{gguf_dtype::q8_0, 0.07}, variant{gguf_dtype::q4_0, 0.05});
  INFO("type " << to_string(v.dtype));
  constexpr int steps = 16;
  const model_config c = qwen35_wide_config(false);
  temp_dir d("llamacpp-q8");
  const std::string path = d.file(std::string(to_string(v.dtype)) + ".gguf");
  save_qwen35_gguf(path, c, test_weights(c), nullptr, "", v.dtype);
  loaded_model m = load_qwen35_gguf(path);
  m.config.ctx_size = c.ctx_size;
  const auto w = std::make_shared<const engine_weights>(m.config, m.weights, m.stored, kernels::backend::cpu,
                                                        m.stored_types);
  const std::vector<token_id> ids = test_tokens(prompt_length);
  const llamacpp_result r = run_llamacpp(path, ids, steps, d.str());
  INFO(r.error);
  REQUIRE(r.error.empty());
  auto with_f32 = std::make_unique<engine>(w);
  std::unique_ptr<engine> with_q8;
  {
    const testing::activations_as q8(product_activations::q8);
    with_q8 = std::make_unique<engine>(w);
  }
  const agreement f = agree_with_llamacpp(*with_f32, ids, r, steps, v.tolerance);
  const agreement q = agree_with_llamacpp(*with_q8, ids, r, steps, v.tolerance);
  std::fprintf(stderr,
               "llamacpp: qwen35-wide %s against llama.cpp, max |logit diff|: float activations %.3g, "
               "8-bit %.3g; the same greedy tokens for %d and %d of %d steps\n",
               to_string(v.dtype), f.worst, q.worst, f.same, q.same, steps);
  CHECK(q.worst <= v.tolerance);
  CHECK(q.worst != f.worst);  // the 8-bit products ran
  CHECK(q.same == steps);
}
