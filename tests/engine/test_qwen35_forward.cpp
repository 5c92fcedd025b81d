// The engine on the qwen35 layout against an independent naive forward (tests/support/
// qwen35_reference.cpp) written from Hugging Face transformers' modeling_qwen3_5.py: the logits
// at several positions of a prompt several grid lines long, greedy decoding, and the draft
// layer's logits. And the comparison has teeth: a reference that gets one detail wrong (norm
// offset, value-head grouping, gate order, rotary pairing) is well outside the tolerance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"
#include "tests/support/qwen35_reference.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

// The engine computes in float32 with a chunked delta rule; the reference in double with the
// sequential one.
constexpr double kTolerance = 1e-3;

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

template <class T>
std::size_t argmax(const std::vector<T>& v) {
  return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// The logits must not be trivially small: a difference of 1e-3 has to mean something.
template <class T>
double spread(const std::vector<T>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return static_cast<double>(*hi) - static_cast<double>(*lo);
}

}  // namespace

TEST_CASE("the qwen35 engine computes the Hugging Face forward", "[qwen35][engine]") {
  const std::string preset = GENERATE(as<std::string>{}, "qwen35-tiny", "qwen35-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  REQUIRE(c.gdn_hv > c.gdn_hk);
  REQUIRE(c.rotary_dims() < c.head_dim);
  const tensor_map& w = test_weights(c);
  const auto prompt = test_tokens(150);  // 4 lines of the 32-token grid and a partial chunk

  qwen35_reference ref(c, w);
  auto e = make_engine(c);
  double worst = 0, worst_draft = 0;
  // prefill in pieces ending at several positions (each piece starts on or off the grid)
  std::size_t at = 0;
  for (std::size_t end :
       {std::size_t{1}, std::size_t{40}, std::size_t{64}, std::size_t{97}, std::size_t{150}}) {
    e->prefill(slice(prompt, at, end));
    for (std::size_t i = at; i < end; ++i) ref.forward(prompt[i]);
    at = end;
    INFO("after " << end << " tokens");
    const double diff = max_abs_diff(e->last_logits(), ref.logits());
    worst = std::max(worst, diff);
    CHECK(diff <= kTolerance);
    CHECK(spread(ref.logits()) > 0.5);
    CHECK(argmax(e->last_logits()) == argmax(ref.logits()));
    if (c.mtp) {
      const double dd = max_abs_diff(e->last_draft_logits(), ref.draft_logits());
      worst_draft = std::max(worst_draft, dd);
      CHECK(dd <= kTolerance);
      CHECK(argmax(e->last_draft_logits()) == argmax(ref.draft_logits()));
    }
  }

  // 32 greedy steps: the same tokens, the logits within the tolerance all along
  for (int step = 0; step < 32; ++step) {
    const auto te = static_cast<token_id>(argmax(e->last_logits()));
    const auto tr = static_cast<token_id>(argmax(ref.logits()));
    INFO("decode step " << step);
    REQUIRE(te == tr);
    e->decode(te);
    ref.forward(tr);
    const double diff = max_abs_diff(e->last_logits(), ref.logits());
    worst = std::max(worst, diff);
    CHECK(diff <= kTolerance);
    if (c.mtp) {
      const double dd = max_abs_diff(e->last_draft_logits(), ref.draft_logits());
      worst_draft = std::max(worst_draft, dd);
      CHECK(dd <= kTolerance);
    }
  }
  WARN(preset << ": max |engine - reference| = " << worst << " (logits), " << worst_draft << " (draft)");
}

TEST_CASE("the qwen35 reference comparison catches one wrong detail", "[qwen35][engine]") {
  const int which = GENERATE(0, 1, 2, 3);
  qwen35_reference_faults f;
  const char* what[] = {"norm weight w instead of 1 + w", "value head h reads key head h % Hk",
                        "q_proj read as [gate | query]", "interleaved rotary pairs"};
  INFO(what[which]);
  f.plain_norms = which == 0;
  f.tiled_value_heads = which == 1;
  f.gate_first = which == 2;
  f.interleaved_rotary = which == 3;
  const model_config c = test_config("qwen35-tiny-mtp");
  const tensor_map& w = test_weights(c);
  const auto prompt = test_tokens(40);
  qwen35_reference wrong(c, w, f);
  auto e = make_engine(c);
  e->prefill(prompt);
  for (token_id t : prompt) wrong.forward(t);
  const double diff = max_abs_diff(e->last_logits(), wrong.logits());
  WARN(what[which] << ": max |engine - wrong reference| = " << diff);
  CHECK(diff > 10 * kTolerance);
}

TEST_CASE("with tied embeddings the qwen35 head is the embedding", "[qwen35][engine]") {
  model_config c = test_config("qwen35-tiny-mtp");
  c.tied_embeddings = true;
  c.preset = "qwen35-tiny-mtp-tied";  // its own entry in the weights cache: no lm_head.weight
  const tensor_map& w = test_weights(c);
  REQUIRE(w.count("lm_head.weight") == 0);
  const auto prompt = test_tokens(70, 4);
  qwen35_reference ref(c, w);
  auto e = make_engine(c);
  e->prefill(prompt);
  for (token_id t : prompt) ref.forward(t);
  CHECK(max_abs_diff(e->last_logits(), ref.logits()) <= kTolerance);
  CHECK(max_abs_diff(e->last_draft_logits(), ref.draft_logits()) <= kTolerance);
  CHECK(argmax(e->last_logits()) == argmax(ref.logits()));
}
