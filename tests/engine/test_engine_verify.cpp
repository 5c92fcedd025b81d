// A verify round's engine side (runtime/engine/engine_verify.cpp, docs/SPECULATIVE.md): rows of
// one sequence forwarded at once must be, bit for bit, what decode() gives the same tokens one at
// a time; keep_rows() must leave exactly the state of an engine that forwarded only the kept rows
// (the bug of vLLM #39273: accepted drafts followed by a step with no draft read a stale
// recurrent state); the draft layer's proposals must leave nothing the model reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>

#include "runtime/engine/engine_batch.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

const char* const presets[] = {"tiny", "tiny-mtp", "qwen35-tiny", "qwen35-tiny-mtp"};

std::shared_ptr<const engine_weights> weights_of(const std::string& preset) {
  const model_config c = test_config(preset);
  return std::make_shared<const engine_weights>(c, test_weights(c));
}

std::unique_ptr<engine> primed(const std::shared_ptr<const engine_weights>& w, std::size_t prompt,
                               std::uint64_t seed) {
  auto e = std::make_unique<engine>(w);
  e->prefill(test_tokens(prompt, seed));
  return e;
}

}  // namespace

TEST_CASE("a verify round's rows are decode's logits and state bit for bit", "[engine][verify]") {
  for (const std::string preset : presets) {
    DYNAMIC_SECTION(preset) {
      const auto w = weights_of(preset);
      const std::vector<token_id> rows = test_tokens(9, 41);
      auto solo = primed(w, 77, 5);
      auto round = primed(w, 77, 5);
      round->forward(rows);
      REQUIRE(round->round_rows() == rows.size());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        solo->decode(rows[i]);
        INFO("row " << i);
        CHECK(same_bytes(solo->last_logits(), round->row_logits(i)));
        if (w->config().mtp) CHECK(same_bytes(solo->last_draft_logits(), round->row_draft_logits(i)));
      }
      CHECK(same_bytes(solo->last_logits(), round->last_logits()));
      require_same_state(take_snapshot(solo->cache_state()), take_snapshot(round->cache_state()),
                         round->layout());
    }
  }
}

TEST_CASE("keep_rows leaves the state of an engine that forwarded only the kept rows", "[engine][verify]") {
  for (const std::string preset : presets) {
    DYNAMIC_SECTION(preset) {
      const auto w = weights_of(preset);
      const std::vector<token_id> rows = test_tokens(8, 43);
      const std::vector<token_id> after = test_tokens(5, 44);
      for (std::size_t kept : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{8}}) {
        INFO("kept " << kept);
        auto cut = primed(w, 130, 6);
        cut->forward(rows);
        cut->keep_rows(kept);
        CHECK(cut->round_rows() == kept);
        auto only = primed(w, 130, 6);
        only->forward(slice(rows, 0, kept));
        REQUIRE(cut->length() == only->length());
        CHECK(same_bytes(cut->last_logits(), only->last_logits()));
        if (w->config().mtp) CHECK(same_bytes(cut->last_draft_logits(), only->last_draft_logits()));
        require_same_state(take_snapshot(cut->cache_state()), take_snapshot(only->cache_state()),
                           cut->layout());
        // The steps after it, one token each (a round with no draft), read the kept state.
        for (token_id t : after) {
          cut->decode(t);
          only->decode(t);
          CHECK(same_bytes(cut->last_logits(), only->last_logits()));
        }
        require_same_state(take_snapshot(cut->cache_state()), take_snapshot(only->cache_state()),
                           cut->layout());
      }
    }
  }
}

TEST_CASE("keep_rows refuses a count outside the round and a round the engine has moved past",
          "[engine][verify]") {
  const auto w = weights_of("tiny");
  auto e = primed(w, 20, 7);
  e->forward(test_tokens(4, 8));
  CHECK_THROWS_AS(e->keep_rows(0), std::invalid_argument);
  CHECK_THROWS_AS(e->keep_rows(5), std::invalid_argument);
  e->decode(3);
  CHECK(e->round_rows() == 1);
  CHECK_THROWS_AS(e->keep_rows(2), std::invalid_argument);
  e->keep_rows(1);  // the whole round: nothing to cut
  CHECK(e->length() == 25);
}

TEST_CASE("one batched step of verify rounds and single decode rows is each slot's solo arithmetic",
          "[engine][verify][batch]") {
  for (const std::string preset : presets) {
    DYNAMIC_SECTION(preset) {
      const auto w = weights_of(preset);
      const std::vector<std::vector<token_id>> rows = {test_tokens(5, 50), {17}, test_tokens(3, 51)};
      std::vector<std::unique_ptr<engine>> batched, solo;
      std::vector<engine*> ptrs;
      for (std::size_t b = 0; b < rows.size(); ++b) {
        batched.push_back(primed(w, 40 + 13 * b, 9 + b));
        solo.push_back(primed(w, 40 + 13 * b, 9 + b));
        ptrs.push_back(batched.back().get());
      }
      forward_batch(ptrs, rows);
      batched[0]->keep_rows(2);
      for (std::size_t b = 0; b < rows.size(); ++b) {
        INFO("slot " << b);
        const std::vector<token_id> mine = b == 0 ? slice(rows[b], 0, 2) : rows[b];
        for (token_id t : mine) solo[b]->decode(t);
        CHECK(same_bytes(solo[b]->last_logits(), batched[b]->last_logits()));
        require_same_state(take_snapshot(solo[b]->cache_state()), take_snapshot(batched[b]->cache_state()),
                           solo[b]->layout());
      }
    }
  }
}

TEST_CASE("the draft layer's proposals leave nothing the model reads", "[engine][verify][mtp]") {
  for (const std::string preset : {"tiny-mtp", "qwen35-tiny-mtp"}) {
    const auto w = weights_of(preset);
    DYNAMIC_SECTION(preset) {
      auto drafted = primed(w, 90, 12);
      auto plain = primed(w, 90, 12);
      const auto before = take_snapshot(drafted->cache_state());
      const std::vector<token_id> d = drafted->draft(33, 4);
      CHECK(d.size() == 4);
      for (token_id t : d) CHECK((t >= 0 && t < w->config().vocab));
      require_same_state(before, take_snapshot(drafted->cache_state()), drafted->layout());
      CHECK(drafted->draft(33, 4) == d);  // a pure function of the state
      // The round that forwards them reads only what it writes: the same as an engine that
      // never drafted.
      std::vector<token_id> round = {33};
      round.insert(round.end(), d.begin(), d.end());
      drafted->forward(round);
      plain->forward(round);
      for (std::size_t i = 0; i < round.size(); ++i)
        CHECK(same_bytes(drafted->row_logits(i), plain->row_logits(i)));
      require_same_state(take_snapshot(drafted->cache_state()), take_snapshot(plain->cache_state()),
                         drafted->layout());
    }
  }
}

TEST_CASE("the first draft is the draft layer's argmax after the next token is forwarded",
          "[engine][verify][mtp]") {
  const auto w = weights_of("tiny-mtp");
  auto e = primed(w, 64, 13);
  const std::vector<token_id> d = e->draft(21, 1);
  REQUIRE(d.size() == 1);
  e->decode(21);
  // After forwarding 21 the draft layer has read [hidden before 21 | 21]: its logits are the ones
  // draft() ranked.
  const auto& dl = e->last_draft_logits();
  const token_id best = static_cast<token_id>(std::max_element(dl.begin(), dl.end()) - dl.begin());
  CHECK(d.front() == best);
}
