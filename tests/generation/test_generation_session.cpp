// One request on the engine, step by step: prefill chunks, decode blocks, stop strings, cancel,
// forced tokens and the reasoning budget.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/generation/generation_session.hpp"
#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/engine_fixture.hpp"
#include "tests/support/exact_checks.hpp"
#include "tests/support/session_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("a session prefills a chunk per step, then decodes in blocks", "[session]") {
  const model_config c = test_config("tiny", 1024);
  auto e = make_engine(c);
  generation_session s(*e, greedy_job(test_tokens(2 * c.grid + 5), 10));
  CHECK(s.prefilling());
  auto r1 = s.step(4);
  CHECK(e->length() == static_cast<std::size_t>(c.grid));
  CHECK_FALSE(r1.prefill_finished);
  s.step(4);
  auto r3 = s.step(4);
  CHECK(r3.prefill_finished);
  CHECK(e->length() == static_cast<std::size_t>(2 * c.grid + 5));
  auto r4 = s.step(4);
  CHECK(r4.tokens == 4);
  int steps = 0;
  run_all(s, 4, &steps);
  CHECK(steps == 2);  // 4 + 2 more tokens
  CHECK(s.output_tokens() == 10);
  CHECK(s.finish_reason() == run_finish::length);
  CHECK(s.prefilled_tokens() == 2 * c.grid + 5);
}

TEST_CASE("a session's output is the generator's output, whatever the block size", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(50, 4);
  auto a = make_engine(c);
  a->prefill(prompt);
  generation_request r;
  r.max_tokens = 30;
  const auto want = generator(*a, r).run();
  for (int block : {1, 3, 64}) {
    auto e = make_engine(c);
    generation_session s(*e, greedy_job(prompt, 30));
    run_all(s, block);
    CHECK(s.output_ids() == want);
  }
}

TEST_CASE("stop strings cut the content and never reach the client", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(40, 6);
  // learn what the model says, then stop on a piece of it that spans several tokens
  auto probe = make_engine(c);
  generation_session free_run(*probe, greedy_job(prompt, 40));
  const std::string full = run_all(free_run, 8);
  REQUIRE(full.size() > 20);
  const std::string stop = full.substr(10, 3);
  const std::size_t first = full.find(stop);

  auto e = make_engine(c);
  auto job = greedy_job(prompt, 40);
  job.rules.stop_strings = {"this will not appear", stop};
  generation_session s(*e, job);
  const std::string text = run_all(s, 1);
  CHECK(text == full.substr(0, first));
  CHECK(s.output().content == text);
  CHECK(s.finish_reason() == run_finish::stop);
  CHECK(s.stop_string() == stop);  // which one cut it: the Anthropic route's stop_sequence
  CHECK(free_run.stop_string().empty());
  CHECK(s.output_tokens() < 40);
}

TEST_CASE("a cancelled session ends at its next step", "[session]") {
  const model_config c = test_config("tiny", 1024);
  auto e = make_engine(c);
  generation_session s(*e, greedy_job(test_tokens(5 * c.grid), 8));
  s.step(4);
  s.cancel();
  s.step(4);
  CHECK(s.done());
  CHECK(s.finish_reason() == run_finish::cancelled);
  CHECK(e->length() == static_cast<std::size_t>(c.grid));
  CHECK(s.output_tokens() == 0);
}

TEST_CASE("a stop token ends the session with reason stop", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(30, 9);
  auto probe = make_engine(c);
  generation_session free_run(*probe, greedy_job(prompt, 12));
  run_all(free_run, 4);
  const token_id third = free_run.output_ids().at(2);
  auto e = make_engine(c);
  auto job = greedy_job(prompt, 12);
  job.gen.stop_tokens = {third};
  generation_session s(*e, job);
  run_all(s, 4);
  CHECK(s.finish_reason() == run_finish::stop);
  // the stop token is not part of the output; the tokens before its first occurrence are
  const auto& full = free_run.output_ids();
  const auto at = std::find(full.begin(), full.end(), third) - full.begin();
  CHECK(s.output_tokens() == at);  // the stop token is neither emitted nor counted
  CHECK(s.output_ids() == std::vector<token_id>(full.begin(), full.begin() + at));
}

// ---- forced tokens and the reasoning budget ---------------------------------------------------

TEST_CASE("forced tokens are emitted instead of sampled and take no step number", "[generator]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(40, 12);
  generation_request r;
  r.max_tokens = 20;
  r.sampling.temperature = 0.8f;
  r.sampling.seed = 5;

  auto e = make_engine(c);
  e->prefill(prompt);
  generator g(*e, r);
  std::vector<token_id> out;
  for (int i = 0; i < 3; ++i) {
    out.push_back(*g.step());
    CHECK_FALSE(g.last_forced());
  }
  g.force({'a', 'b', 'c'});
  CHECK(g.queued() == std::vector<token_id>{'a', 'b', 'c'});
  for (token_id want : {'a', 'b', 'c'}) {
    const auto t = g.step();
    REQUIRE(t);
    CHECK(*t == want);
    CHECK(g.last_forced());
    CHECK(g.pending() == want);
    CHECK(g.next_step() == 3u);  // forcing consumes no step number
    out.push_back(*t);
  }
  out.push_back(*g.step());
  CHECK_FALSE(g.last_forced());
  CHECK(g.next_step() == 4u);
  while (auto t = g.step()) out.push_back(*t);
  CHECK(g.reason() == run_finish::length);
  CHECK(out.size() == 20u);  // forced tokens count toward max_tokens
  CHECK(g.emitted() == 20);
  CHECK(e->length() == prompt.size() + 19);  // every token but the pending last one forwarded

  SECTION("stopped inside the forced run and resumed from (state, seed, step, pending, queue)") {
    auto b = make_engine(c);
    b->prefill(prompt);
    generation_request first = r;
    first.max_tokens = 4;
    generator h(*b, first);
    for (int i = 0; i < 3; ++i) h.step();
    h.force({'a', 'b', 'c'});
    h.run();  // emits 'a' and stops there: b and c stay queued
    REQUIRE(h.done());
    CHECK(h.queued() == std::vector<token_id>{'b', 'c'});
    const snapshot cut = take_snapshot(b->cache_state());
    auto resumed = make_engine(c);
    restore_snapshot(resumed->cache_state(), cut);
    generation_request rest = r;
    rest.max_tokens = r.max_tokens - 4;
    rest.first_step = h.next_step();
    rest.pending = h.pending();
    rest.forced = h.queued();
    const auto tail = generator(*resumed, rest).run();
    CHECK(tail == slice(out, 4, out.size()));
  }
}

TEST_CASE("a reasoning budget closes the block with a hidden phrase", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(60, 21);
  const auto phrase = close_phrase_ids();
  const std::size_t hidden = close_phrase_hidden();
  REQUIRE(phrase.at(hidden) == special_tokens::think_close);
  REQUIRE(hidden > 10);

  auto probe = make_engine(c);
  generation_session free_run(*probe, thinking_job(prompt, 40, -1));
  run_all(free_run, 8);
  const auto& free_ids = free_run.output_ids();
  REQUIRE(free_ids.size() == 40u);

  const int max_tokens = static_cast<int>(5 + phrase.size()) + 30;  // 30 tokens of content
  auto e = make_engine(c);
  generation_session s(*e, thinking_job(prompt, max_tokens, 5));
  std::string reasoning_streamed, content_streamed;
  while (!s.done()) {
    for (const auto& d : s.step(3).deltas) {
      (d.what == output_delta::kind::reasoning ? reasoning_streamed : content_streamed) += d.text;
    }
  }
  const auto& ids = s.output_ids();
  REQUIRE(ids.size() == static_cast<std::size_t>(max_tokens));
  CHECK(s.finish_reason() == run_finish::length);
  CHECK(s.output_tokens() == max_tokens);                // the forced phrase counts
  CHECK(e->length() == prompt.size() + ids.size() - 1);  // every token but the pending last one
  // the first 5 tokens are the free run's; the phrase follows them, token for token
  CHECK(slice(ids, 0, 5) == slice(free_ids, 0, 5));
  CHECK(slice(ids, 5, 5 + phrase.size()) == phrase);
  CHECK(s.reasoning_tokens() == 5);
  using span = std::pair<std::size_t, std::size_t>;
  CHECK(s.hidden_spans() == std::vector<span>{{5, 5 + hidden}});
  REQUIRE(s.reasoning_end());
  CHECK(*s.reasoning_end() == 5 + hidden);
  CHECK(s.in_reasoning_from_start());

  // the client sees the first 5 tokens' text as reasoning, then the content after the phrase
  std::vector<token_id> visible = slice(ids, 0, 5);
  visible.insert(visible.end(), ids.begin() + static_cast<long>(5 + hidden), ids.end());
  const assistant_output want = parse(visible);
  CHECK(want.reasoning == parse(slice(free_ids, 0, 5)).reasoning);
  CHECK_FALSE(want.reasoning.empty());
  CHECK(s.output().reasoning == want.reasoning);
  CHECK(s.output().content == want.content);
  CHECK_FALSE(s.output().content.empty());
  CHECK(reasoning_streamed == s.output().reasoning);
  CHECK(content_streamed == s.output().content);
  CHECK(s.output().reasoning.find("Considering") == std::string::npos);
  CHECK(s.output().content.find("Considering") == std::string::npos);

  SECTION("the same request twice gives the same tokens, whatever the block size") {
    auto again = make_engine(c);
    generation_session t(*again, thinking_job(prompt, max_tokens, 5));
    run_all(t, 1);
    CHECK(t.output_ids() == ids);
    CHECK(t.hidden_spans() == s.hidden_spans());
    CHECK(t.reasoning_end() == s.reasoning_end());
    CHECK(t.output().reasoning == s.output().reasoning);
    CHECK(t.output().content == s.output().content);
  }
  SECTION("sampled, the same request twice gives the same tokens") {
    auto job = thinking_job(prompt, max_tokens, 5);
    job.gen.sampling.temperature = 0.9f;
    job.gen.sampling.seed = 77;
    auto a = make_engine(c);
    generation_session sa(*a, job);
    run_all(sa, 4);
    auto b = make_engine(c);
    generation_session sb(*b, job);
    run_all(sb, 7);
    CHECK(sa.output_ids() == sb.output_ids());
    CHECK(slice(sa.output_ids(), 5, 5 + phrase.size()) == phrase);
    CHECK(sa.output().content == sb.output().content);
  }
}

TEST_CASE("a generation whose max_tokens ends inside the close phrase stops cleanly", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(60, 21);
  const std::size_t hidden = close_phrase_hidden();
  auto full_engine = make_engine(c);
  generation_session full(*full_engine,
                          thinking_job(prompt, static_cast<int>(5 + close_phrase_ids().size()) + 10, 5));
  run_all(full, 4);

  SECTION("in the hidden text") {
    const int max_tokens = 5 + 3;
    auto e = make_engine(c);
    generation_session s(*e, thinking_job(prompt, max_tokens, 5));
    run_all(s, 4);
    CHECK(s.finish_reason() == run_finish::length);
    CHECK(s.output_tokens() == max_tokens);
    CHECK(s.output_ids() == slice(full.output_ids(), 0, max_tokens));
    using span = std::pair<std::size_t, std::size_t>;
    CHECK(s.hidden_spans() == std::vector<span>{{5, 8}});
    CHECK_FALSE(s.reasoning_end());
    CHECK(s.output().reasoning == full.output().reasoning);  // the unterminated reasoning
    CHECK(s.output().content.empty());
  }
  SECTION("on the forced </think>") {
    const int max_tokens = static_cast<int>(5 + hidden + 1);
    auto e = make_engine(c);
    generation_session s(*e, thinking_job(prompt, max_tokens, 5));
    run_all(s, 64);
    CHECK(s.finish_reason() == run_finish::length);
    CHECK(s.output_ids() == slice(full.output_ids(), 0, max_tokens));
    CHECK(s.output_ids().back() == special_tokens::think_close);
    CHECK(s.reasoning_end() == std::optional<std::size_t>(5 + hidden));
    CHECK(s.output().reasoning == full.output().reasoning);
    CHECK(s.output().content.empty());
  }
}

TEST_CASE("without a budget, or without thinking, nothing is forced", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(60, 21);
  auto probe = make_engine(c);
  generation_session plain(*probe, greedy_job(prompt, 40));
  run_all(plain, 8);

  SECTION("thinking, no budget") {
    auto e = make_engine(c);
    generation_session s(*e, thinking_job(prompt, 40, -1));
    run_all(s, 8);
    CHECK(s.hidden_spans().empty());
    CHECK_FALSE(s.reasoning_end());
    CHECK(s.reasoning_tokens() == 40);
    CHECK(s.output().content.empty());
    CHECK(s.output().reasoning == parse(s.output_ids()).reasoning);
  }
  SECTION("a budget on a request without thinking") {
    auto job = greedy_job(prompt, 40);
    job.rules.reasoning_budget = 5;
    auto e = make_engine(c);
    generation_session s(*e, job);
    run_all(s, 8);
    CHECK(s.output_ids() == plain.output_ids());
    CHECK(s.hidden_spans().empty());
    CHECK_FALSE(s.reasoning_end());
    CHECK(s.reasoning_tokens() == 0);
    CHECK(s.output().content == plain.output().content);
  }
  SECTION("a budget with reasoning parsed but a prompt that did not open the block") {
    // the tiny model's first output is not <think>: the block never opens
    REQUIRE(plain.output_ids().front() != special_tokens::think_open);
    auto job = greedy_job(prompt, 40);
    job.rules.parse_reasoning = true;
    job.rules.reasoning_budget = 5;
    auto e = make_engine(c);
    generation_session s(*e, job);
    run_all(s, 8);
    CHECK(s.output_ids() == plain.output_ids());
    CHECK(s.hidden_spans().empty());
    CHECK_FALSE(s.in_reasoning_from_start());
  }
}

TEST_CASE("a reasoning block the model opens itself is held to the budget", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto phrase = close_phrase_ids();
  const std::size_t hidden = close_phrase_hidden();
  // +100 on <think>: the model says nothing else; the first opens the block, the rest (dropped
  // by the parser) are reasoning tokens
  const int max_tokens = static_cast<int>(4 + phrase.size()) + 10;
  auto job = greedy_job(test_tokens(30, 4), max_tokens);
  job.rules.parse_reasoning = true;
  job.rules.reasoning_budget = 3;
  job.gen.sampling.logit_bias = {{special_tokens::think_open, 100.0f}};
  auto e = make_engine(c);
  generation_session s(*e, job);
  run_all(s, 5);
  const auto& ids = s.output_ids();
  REQUIRE(ids.size() == static_cast<std::size_t>(max_tokens));
  CHECK(slice(ids, 0, 4) == std::vector<token_id>(4, special_tokens::think_open));
  CHECK(slice(ids, 4, 4 + phrase.size()) == phrase);
  using span = std::pair<std::size_t, std::size_t>;
  CHECK(s.hidden_spans() == std::vector<span>{{4, 4 + hidden}});
  CHECK(s.reasoning_end() == std::optional<std::size_t>(4 + hidden));
  CHECK(s.reasoning_tokens() == 3);
  CHECK(s.output().reasoning.empty());
  CHECK(s.output().content.empty());  // the later <think>s are dropped
}

TEST_CASE("a budget of 0 closes the block before anything is sampled", "[session]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(60, 21);
  const auto phrase = close_phrase_ids();
  const std::size_t hidden = close_phrase_hidden();
  auto e = make_engine(c);
  generation_session s(*e, thinking_job(prompt, static_cast<int>(phrase.size()) + 30, 0));
  run_all(s, 16);
  CHECK(slice(s.output_ids(), 0, phrase.size()) == phrase);
  using span = std::pair<std::size_t, std::size_t>;
  CHECK(s.hidden_spans() == std::vector<span>{{0, hidden}});
  CHECK(s.reasoning_end() == std::optional<std::size_t>(hidden));
  CHECK(s.output().reasoning.empty());
  CHECK(s.output().content == parse(slice(s.output_ids(), hidden, s.output_ids().size())).content);
  CHECK_FALSE(s.output().content.empty());
}
