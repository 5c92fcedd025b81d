// decode_batch (runtime/engine/engine_batch.hpp): slots sharing one engine_weights stepped at
// once, against each slot decoded alone. decode() is forward_batch with one row, and gemm_rows
// sums one row the same way whatever the other rows are, so every batch is each slot's decode()
// bit for bit (the tolerances below are the older, looser bound, kept as a report); prefill rows
// are never touched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "runtime/engine/engine_batch.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

std::shared_ptr<const engine_weights> shared_weights(const model_config& c) {
  return std::make_shared<const engine_weights>(c, test_weights(c));
}

token_id argmax(const std::vector<float>& v) {
  return static_cast<token_id>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Different prompt lengths per slot, some on a line, some off it.
std::size_t prompt_length(const model_config& c, std::size_t slot) {
  const std::size_t g = static_cast<std::size_t>(c.grid);
  const std::size_t lengths[] = {g + 5, 2 * g, 3 * g + 17, 7, 4 * g + 1, g - 3, 2 * g + 9, 5 * g};
  return lengths[slot % 8];
}

struct slots {
  std::vector<std::unique_ptr<engine>> owned;
  std::vector<engine*> ptrs;
};

slots make_slots(const std::shared_ptr<const engine_weights>& w, std::size_t n) {
  slots s;
  for (std::size_t i = 0; i < n; ++i) {
    s.owned.push_back(std::make_unique<engine>(w));
    s.owned.back()->prefill(test_tokens(prompt_length(w->config(), i), 11 + i));
    s.ptrs.push_back(s.owned.back().get());
  }
  return s;
}

// The largest |a - b| over floats stored as bytes (a snapshot's rows and sections).
float max_diff_bytes(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0.0f;
  for (std::size_t i = 0; i + sizeof(float) <= a.size(); i += sizeof(float)) {
    float x, y;
    std::memcpy(&x, a.data() + i, sizeof x);
    std::memcpy(&y, b.data() + i, sizeof y);
    m = std::max(m, std::fabs(x - y));
  }
  return m;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

float max_abs(const std::vector<float>& a) {
  float m = 0.0f;
  for (float v : a) m = std::max(m, std::fabs(v));
  return m;
}

}  // namespace

TEST_CASE("engines on one engine_weights share it and compute what an engine of its own does",
          "[batch][engine]") {
  const std::string preset = GENERATE(as<std::string>{}, "tiny-mtp", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const auto w = shared_weights(c);
  engine a(w), b(w);
  auto own = make_engine(c);
  CHECK(a.weights().get() == b.weights().get());
  CHECK(own->weights().get() != a.weights().get());
  CHECK(a.layout().fingerprint == own->layout().fingerprint);

  const auto prompt = test_tokens(2 * c.grid + 5);
  a.prefill(prompt);
  own->prefill(prompt);
  a.decode(17);
  own->decode(17);
  CHECK(same_bytes(a.last_logits(), own->last_logits()));
  CHECK(same_bytes(a.last_draft_logits(), own->last_draft_logits()));
  require_same_state(take_snapshot(a.cache_state()), take_snapshot(own->cache_state()), own->layout());
  CHECK(b.length() == 0);  // the other engine's state is its own
}

TEST_CASE("a batch of one is decode() bit for bit", "[batch][engine][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const auto w = shared_weights(c);
  auto batched = make_slots(w, 1);
  auto solo = make_slots(w, 1);
  for (int step = 0; step < 5; ++step) {
    const token_id t = argmax(solo.ptrs[0]->last_logits());
    decode_batch(batched.ptrs, {t});
    solo.ptrs[0]->decode(t);
    CHECK(same_bytes(batched.ptrs[0]->last_logits(), solo.ptrs[0]->last_logits()));
    CHECK(same_bytes(batched.ptrs[0]->last_draft_logits(), solo.ptrs[0]->last_draft_logits()));
  }
  require_same_state(take_snapshot(batched.ptrs[0]->cache_state()),
                     take_snapshot(solo.ptrs[0]->cache_state()), solo.ptrs[0]->layout());
}

TEST_CASE("a batched step over four slots is each slot's solo decode bit for bit", "[batch][engine][exact]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const auto w = shared_weights(c);
  const std::size_t n = 4;
  auto batched = make_slots(w, n);
  auto solo = make_slots(w, n);
  std::vector<token_id> next;
  for (engine* e : solo.ptrs) next.push_back(argmax(e->last_logits()));
  const std::vector<snapshot> before = [&] {
    std::vector<snapshot> s;
    for (engine* e : batched.ptrs) s.push_back(take_snapshot(e->cache_state()));
    return s;
  }();

  decode_batch(batched.ptrs, next);
  float logit_diff = 0.0f, state_diff = 0.0f;
  bool identical = true;
  for (std::size_t i = 0; i < n; ++i) {
    INFO("slot " << i);
    solo.ptrs[i]->decode(next[i]);
    engine& b = *batched.ptrs[i];
    engine& s = *solo.ptrs[i];
    REQUIRE(b.length() == before[i].length + 1);
    REQUIRE(b.length() == s.length());
    // The logits agree to a few ulps of their scale (gemm_rows against BLAS GEMV).
    const float scale = std::max(1.0f, max_abs(s.last_logits()));
    logit_diff = std::max(logit_diff, max_diff(b.last_logits(), s.last_logits()) / scale);
    CHECK(max_diff(b.last_logits(), s.last_logits()) <= 1e-4f * scale);
    if (c.mtp) CHECK(max_diff(b.last_draft_logits(), s.last_draft_logits()) <= 1e-4f * scale);
    identical = identical && same_bytes(b.last_logits(), s.last_logits());

    const snapshot got = take_snapshot(b.cache_state()), want = take_snapshot(s.cache_state());
    const auto& l = s.layout();
    for (std::size_t v = 0; v < l.views.size(); ++v) {
      INFO("view " << l.views[v].name);
      // Rows below the step (the prefill's) are untouched, bit for bit.
      const std::size_t below = before[i].length * l.views[v].bytes_per_token;
      CHECK(std::memcmp(got.views[v].data(), before[i].views[v].data(), below) == 0);
      const float dv = max_diff_bytes(got.views[v], want.views[v]);
      state_diff = std::max(state_diff, dv);
      CHECK(dv <= 1e-4f);
      identical = identical && got.views[v] == want.views[v];
    }
    for (std::size_t k = 0; k < l.sections.size(); ++k) {
      INFO("section " << l.sections[k].name);
      const float ds = max_diff_bytes(got.sections[k], want.sections[k]);
      state_diff = std::max(state_diff, ds);
      CHECK(ds <= 1e-4f);
      identical = identical && got.sections[k] == want.sections[k];
    }
  }
  // Decode is forward_batch's arithmetic with one row (docs/SPECULATIVE.md): a batch is each
  // slot's solo decode bit for bit, not only within the tolerances above.
  CHECK(identical);
  WARN("preset " << preset << ": batched step " << (identical ? "bit-identical" : "not bit-identical")
                 << " to solo decode; max logit diff / scale " << logit_diff << ", max state diff "
                 << state_diff);
}

TEST_CASE("64 batched greedy steps over four slots give each slot's solo greedy tokens", "[batch][engine]") {
  const std::string preset =
      GENERATE(as<std::string>{}, "tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp", "qwen35moe-tiny-mtp");
  INFO("preset " << preset);
  const model_config c = test_config(preset);
  const auto w = shared_weights(c);
  const std::size_t n = 4;
  const int steps = 64;
  auto batched = make_slots(w, n);
  std::vector<std::vector<token_id>> got(n);
  for (int step = 0; step < steps; ++step) {
    std::vector<token_id> next;
    for (std::size_t i = 0; i < n; ++i) {
      next.push_back(argmax(batched.ptrs[i]->last_logits()));
      got[i].push_back(next.back());
    }
    decode_batch(batched.ptrs, next);
  }
  for (std::size_t i = 0; i < n; ++i) {
    INFO("slot " << i);
    engine solo(w);
    solo.prefill(test_tokens(prompt_length(c, i), 11 + i));
    std::vector<token_id> want;
    for (int step = 0; step < steps; ++step) {
      want.push_back(argmax(solo.last_logits()));
      solo.decode(want.back());
    }
    CHECK(got[i] == want);
    CHECK(batched.ptrs[i]->length() == solo.length());
    // The draft layer's guess after the last step agrees too.
    if (c.mtp) CHECK(argmax(batched.ptrs[i]->last_draft_logits()) == argmax(solo.last_draft_logits()));
  }
}

TEST_CASE("decode_batch refuses a batch it cannot run and runs nothing", "[batch][engine]") {
  model_config c = test_config("qwen35-tiny", 256);
  const auto w = shared_weights(c);
  auto s = make_slots(w, 3);
  const std::vector<token_id> ok = {1, 2, 3};
  std::vector<std::size_t> lengths;
  for (engine* e : s.ptrs) lengths.push_back(e->length());
  const auto logits0 = s.ptrs[0]->last_logits();

  SECTION("engines on different weight sets, even of the same tensors") {
    engine other(c, test_weights(c));
    other.prefill(test_tokens(5));
    CHECK_THROWS_AS(decode_batch({s.ptrs[0], &other}, {1, 2}), std::invalid_argument);
    CHECK(other.length() == 5);
  }
  SECTION("a slot with a queued prefill") {
    s.ptrs[1]->begin_prefill(test_tokens(4));
    CHECK_THROWS_AS(decode_batch(s.ptrs, ok), std::invalid_argument);
    s.ptrs[1]->abandon_prefill();
  }
  SECTION("an id outside the vocabulary") {
    CHECK_THROWS_AS(decode_batch(s.ptrs, {1, c.vocab, 3}), std::invalid_argument);
    CHECK_THROWS_AS(decode_batch(s.ptrs, {1, 2, -1}), std::invalid_argument);
  }
  SECTION("a full slot") {
    engine full(w);
    full.prefill(test_tokens(static_cast<std::size_t>(c.ctx_size)));
    CHECK_THROWS_AS(decode_batch({s.ptrs[0], &full}, {1, 2}), std::invalid_argument);
    CHECK(full.length() == static_cast<std::size_t>(c.ctx_size));
  }
  SECTION("a malformed batch") {
    CHECK_THROWS_AS(decode_batch({}, {}), std::invalid_argument);
    CHECK_THROWS_AS(decode_batch(s.ptrs, {1, 2}), std::invalid_argument);
    CHECK_THROWS_AS(decode_batch({s.ptrs[0], s.ptrs[0]}, {1, 2}), std::invalid_argument);
    CHECK_THROWS_AS(decode_batch({s.ptrs[0], nullptr}, {1, 2}), std::invalid_argument);
  }
  for (std::size_t i = 0; i < s.ptrs.size(); ++i) CHECK(s.ptrs[i]->length() == lengths[i]);
  CHECK(same_bytes(s.ptrs[0]->last_logits(), logits0));
  // And the slots still step afterwards.
  decode_batch(s.ptrs, ok);
  for (std::size_t i = 0; i < s.ptrs.size(); ++i) CHECK(s.ptrs[i]->length() == lengths[i] + 1);
}
