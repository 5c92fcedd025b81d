// One request on the engine, step by step: prefill chunks, decode blocks, stop strings, cancel,
// and a generation resumed from a checkpoint.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/generation_session.hpp"
#include "runtime/output_parser.hpp"
#include "runtime/tokenizer.hpp"
#include "tests/engine_fixture.hpp"
#include "tests/exact_checks.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

generation_job greedy_job(std::vector<token_id> prompt, int max_tokens) {
  generation_job j;
  j.prompt = std::move(prompt);
  j.gen.max_tokens = max_tokens;
  return j;
}

// A chat with thinking as render_request makes it: the prompt opened the reasoning block.
// </think> is banned so that only the budget can close the block.
generation_job thinking_job(std::vector<token_id> prompt, int max_tokens, long budget) {
  generation_job j = greedy_job(std::move(prompt), max_tokens);
  j.parse_reasoning = true;
  j.starts_in_reasoning = true;
  j.reasoning_budget = budget;
  j.gen.sampling.logit_bias = {{special_tokens::think_close, -100.0f}};
  return j;
}

std::vector<token_id> close_phrase_ids() { return tokenizer{}.encode(reasoning_close_phrase, true); }

// How many of the phrase's tokens come before </think>: the hidden part.
std::size_t close_phrase_hidden() {
  const auto ids = close_phrase_ids();
  return static_cast<std::size_t>(std::find(ids.begin(), ids.end(), special_tokens::think_close) - ids.begin());
}

// What a parser makes of `ids` (from the start of the output).
assistant_output parse(const std::vector<token_id>& ids, bool starts_in_reasoning = true) {
  output_parser p(true, false, starts_in_reasoning);
  for (token_id t : ids) p.feed(t);
  p.finish();
  return p.result();
}

std::string run_all(generation_session& s, int block, int* steps = nullptr) {
  std::string text;
  int n = 0;
  while (!s.done()) {
    for (const auto& d : s.step(block).deltas) text += d.text;
    ++n;
  }
  if (steps) *steps = n;
  return text;
}

}  // namespace

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
  CHECK(s.finish_reason() == "length");
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
  job.stop_strings = {"this will not appear", stop};
  generation_session s(*e, job);
  const std::string text = run_all(s, 1);
  CHECK(text == full.substr(0, first));
  CHECK(s.output().content == text);
  CHECK(s.finish_reason() == "stop");
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
  CHECK(s.finish_reason() == "cancelled");
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
  CHECK(s.finish_reason() == "stop");
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
  CHECK(g.reason() == finish_reason::length);
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
  CHECK(s.finish_reason() == "length");
  CHECK(s.output_tokens() == max_tokens);  // the forced phrase counts
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
  generation_session full(*full_engine, thinking_job(prompt, static_cast<int>(5 + close_phrase_ids().size()) + 10, 5));
  run_all(full, 4);

  SECTION("in the hidden text") {
    const int max_tokens = 5 + 3;
    auto e = make_engine(c);
    generation_session s(*e, thinking_job(prompt, max_tokens, 5));
    run_all(s, 4);
    CHECK(s.finish_reason() == "length");
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
    CHECK(s.finish_reason() == "length");
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
    job.reasoning_budget = 5;
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
    job.parse_reasoning = true;
    job.reasoning_budget = 5;
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
  job.parse_reasoning = true;
  job.reasoning_budget = 3;
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

// ---- resuming an interrupted generation -------------------------------------------------------

namespace {

// Everything a client and a later checkpoint see of one finished session.
struct outcome {
  std::vector<token_id> ids;
  assistant_output out;
  std::string reasoning_streamed, content_streamed;  // the deltas, concatenated
  std::vector<tool_call> calls_streamed;
  std::vector<std::pair<std::size_t, std::size_t>> hidden;
  std::optional<std::size_t> reasoning_end;
  std::string finish;
  long output_tokens = 0;
  long reasoning_tokens = 0;
  snapshot state;  // the engine's, at the end
};

void collect(outcome& o, const std::vector<output_delta>& deltas) {
  for (const auto& d : deltas) {
    if (d.what == output_delta::kind::reasoning) o.reasoning_streamed += d.text;
    if (d.what == output_delta::kind::content) o.content_streamed += d.text;
    if (d.what == output_delta::kind::tool_call) o.calls_streamed.push_back(d.call);
  }
}

void conclude(outcome& o, const generation_session& s, const engine& e) {
  o.ids = s.output_ids();
  o.out = s.output();
  o.hidden = s.hidden_spans();
  o.reasoning_end = s.reasoning_end();
  o.finish = s.finish_reason();
  o.output_tokens = s.output_tokens();
  o.reasoning_tokens = s.reasoning_tokens();
  o.state = take_snapshot(e.cache_state());
}

void require_same_calls(const std::vector<tool_call>& a, const std::vector<tool_call>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].id == b[i].id);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].arguments == b[i].arguments);
  }
}

void require_same_outcome(const outcome& got, const outcome& want, const state_layout& l) {
  REQUIRE(got.ids == want.ids);
  CHECK(got.out.reasoning == want.out.reasoning);
  CHECK(got.out.content == want.out.content);
  require_same_calls(got.out.tool_calls, want.out.tool_calls);
  CHECK(got.reasoning_streamed == want.reasoning_streamed);
  CHECK(got.content_streamed == want.content_streamed);
  require_same_calls(got.calls_streamed, want.calls_streamed);
  CHECK(got.hidden == want.hidden);
  CHECK(got.reasoning_end == want.reasoning_end);
  CHECK(got.finish == want.finish);
  CHECK(got.output_tokens == want.output_tokens);
  CHECK(got.reasoning_tokens == want.reasoning_tokens);
  require_same_state(got.state, want.state, l);
}

// An uninterrupted run, one token per step, checkpointed after every emitted token: states[k-1]
// and steps[k-1] are the engine's state and the session's next_step() once k ids were out.
struct recorded {
  outcome end;
  std::vector<snapshot> states;
  std::vector<std::uint64_t> steps;
};

recorded record(const model_config& c, const generation_job& job) {
  recorded r;
  auto e = make_engine(c);
  generation_session s(*e, job);
  CHECK_FALSE(s.checkpointable());  // nothing emitted yet
  while (!s.done()) {
    collect(r.end, s.step(1).deltas);
    if (s.output_ids().size() > r.states.size()) {
      REQUIRE(s.output_ids().size() == r.states.size() + 1);
      REQUIRE(e->length() == job.prompt.size() + r.states.size());
      r.states.push_back(take_snapshot(e->cache_state()));
      r.steps.push_back(s.next_step());
      CHECK(s.checkpointable() == !s.done());
    }
  }
  CHECK_FALSE(s.checkpointable());
  conclude(r.end, s, *e);
  // the streamed text is the output, as for any session
  CHECK(r.end.reasoning_streamed == r.end.out.reasoning);
  CHECK(r.end.content_streamed == r.end.out.content);
  return r;
}

// The checkpoint after k ids, restored into a fresh engine and resumed to the end.
outcome resume(const model_config& c, generation_job job, const recorded& r, std::size_t k, int block) {
  auto e = make_engine(c);
  restore_snapshot(e->cache_state(), r.states.at(k - 1));
  job.resume_output = slice(r.end.ids, 0, k);
  generation_session s(*e, job);
  CHECK_FALSE(s.prefilling());
  CHECK(s.prefilled_tokens() == 0);
  CHECK(s.output_tokens() == static_cast<long>(k));
  CHECK(s.output_ids() == job.resume_output);
  CHECK(s.next_step() == r.steps.at(k - 1));
  outcome o;
  long decoded = 0;
  while (!s.done()) {
    const auto res = s.step(block);
    decoded += res.tokens;
    collect(o, res.deltas);
  }
  CHECK(decoded == s.output_tokens() - static_cast<long>(k));  // the replayed ids are not decoded
  conclude(o, s, *e);
  return o;
}

// Resumes the job's uninterrupted run from every checkpoint; returns the run.
recorded check_every_resume(const model_config& c, const generation_job& job, int block) {
  recorded r = record(c, job);
  REQUIRE_FALSE(r.end.ids.empty());
  const state_layout layout = make_engine(c)->layout();
  for (std::size_t k = 1; k <= r.end.ids.size(); ++k) {
    INFO("resumed after " << k << " of " << r.end.ids.size() << " ids");
    require_same_outcome(resume(c, job, r, k, block), r.end, layout);
  }
  return r;
}

generation_job sampled(generation_job j, std::uint64_t seed) {
  j.gen.sampling.temperature = 0.9f;
  j.gen.sampling.seed = seed;
  return j;
}

}  // namespace

TEST_CASE("a sampled generation resumed from any checkpoint ends as the uninterrupted one", "[session][resume]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(50, 31);
  const auto job = sampled(greedy_job(prompt, 40), 11);

  SECTION("to max_tokens") {
    const recorded r = check_every_resume(c, job, 3);
    CHECK(r.end.finish == "length");
    CHECK(r.end.ids.size() == 40u);
  }
  SECTION("to a stop string, held back across the checkpoints") {
    const recorded probe = record(c, job);
    REQUIRE(probe.end.out.content.size() > 30);
    auto stopped = job;
    stopped.stop_strings = {"never said", probe.end.out.content.substr(20, 4)};
    const recorded r = check_every_resume(c, stopped, 2);
    CHECK(r.end.finish == "stop");
    CHECK(r.end.ids.size() < 40u);
  }
  SECTION("with tool call tags, the parser holding a call across the checkpoints") {
    auto tools = job;
    tools.parse_tool_calls = true;
    tools.gen.sampling.logit_bias = {{special_tokens::tool_call_open, 4.0f}, {special_tokens::tool_call_close, 4.0f}};
    const recorded r = check_every_resume(c, tools, 3);
    const auto& ids = r.end.ids;
    // an open tag before a close one: a call held, then emitted verbatim (not valid JSON)
    const auto open = std::find(ids.begin(), ids.end(), special_tokens::tool_call_open);
    REQUIRE(open != ids.end());
    REQUIRE(std::find(open, ids.end(), special_tokens::tool_call_close) != ids.end());
  }
  SECTION("to a sampled stop token") {
    const recorded probe = record(c, job);
    const token_id stop = probe.end.ids.at(25);
    const auto first = std::find(probe.end.ids.begin(), probe.end.ids.end(), stop) - probe.end.ids.begin();
    REQUIRE(first >= 5);
    auto stopped = job;
    stopped.gen.stop_tokens = {stop};
    const recorded r = check_every_resume(c, stopped, 4);
    CHECK(r.end.finish == "stop");
    CHECK(r.end.ids == slice(probe.end.ids, 0, static_cast<std::size_t>(first)));
  }
}

TEST_CASE("a resumed generation re-derives the forced close phrase", "[session][resume]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(60, 21);
  const auto phrase = close_phrase_ids();
  const std::size_t hidden = close_phrase_hidden();
  using span = std::pair<std::size_t, std::size_t>;

  SECTION("budget 5, sampled: checkpoints before, inside and after the phrase") {
    const auto job = sampled(thinking_job(prompt, static_cast<int>(5 + phrase.size()) + 25, 5), 77);
    const recorded r = check_every_resume(c, job, 3);
    CHECK(r.end.finish == "length");
    CHECK(slice(r.end.ids, 5, 5 + phrase.size()) == phrase);
    CHECK(r.end.hidden == std::vector<span>{{5, 5 + hidden}});
    CHECK(r.end.reasoning_end == std::optional<std::size_t>(5 + hidden));
    CHECK_FALSE(r.end.out.content.empty());
    // the phrase took no step numbers: the sampled tokens after it draw from step 5 on
    CHECK(r.steps.at(5 + phrase.size() - 1) == 5u);
    CHECK(r.steps.back() == r.end.ids.size() - phrase.size());
  }
  SECTION("budget 5, sampled, a stop string in the content after the phrase") {
    auto job = sampled(thinking_job(prompt, static_cast<int>(5 + phrase.size()) + 40, 5), 78);
    const recorded probe = record(c, job);
    REQUIRE(probe.end.out.content.size() > 20);
    job.stop_strings = {probe.end.out.content.substr(12, 3)};
    const recorded r = check_every_resume(c, job, 5);
    CHECK(r.end.finish == "stop");
    CHECK(r.end.hidden == std::vector<span>{{5, 5 + hidden}});
  }
  SECTION("max_tokens inside the hidden text and on the forced </think>") {
    for (const int max_tokens : {5 + 3, static_cast<int>(5 + hidden + 1)}) {
      INFO("max_tokens " << max_tokens);
      const recorded r = check_every_resume(c, sampled(thinking_job(prompt, max_tokens, 5), 79), 2);
      CHECK(r.end.finish == "length");
      CHECK(r.end.ids.size() == static_cast<std::size_t>(max_tokens));
      CHECK(r.end.out.content.empty());
    }
  }
  SECTION("budget 0: the phrase comes first") {
    const recorded r = check_every_resume(c, sampled(thinking_job(prompt, static_cast<int>(phrase.size()) + 20, 0), 80), 4);
    CHECK(slice(r.end.ids, 0, phrase.size()) == phrase);
    CHECK(r.end.hidden == std::vector<span>{{0, hidden}});
    CHECK(r.steps.at(phrase.size() - 1) == 0u);
  }
  SECTION("a block the model opens itself") {
    auto job = greedy_job(test_tokens(30, 4), static_cast<int>(4 + phrase.size()) + 10);
    job.parse_reasoning = true;
    job.reasoning_budget = 3;
    job.gen.sampling.logit_bias = {{special_tokens::think_open, 100.0f}};
    const recorded r = check_every_resume(c, sampled(job, 81), 3);
    CHECK(slice(r.end.ids, 4, 4 + phrase.size()) == phrase);
    CHECK(r.end.hidden == std::vector<span>{{4, 4 + hidden}});
  }
}

TEST_CASE("a checkpoint that is not the job's output is refused", "[session][resume]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(60, 21);
  const auto job = thinking_job(prompt, 20, 5);
  const recorded r = record(c, job);
  const auto& ids = r.end.ids;
  const auto phrase = close_phrase_ids();
  REQUIRE(slice(ids, 5, 8) == slice(phrase, 0, 3));

  auto resumed = [&](std::vector<token_id> out) {
    auto e = make_engine(c);
    restore_snapshot(e->cache_state(), r.states.at(out.size() - 1));
    auto j = job;
    j.resume_output = std::move(out);
    generation_session s(*e, j);
  };
  CHECK_NOTHROW(resumed(slice(ids, 0, 8)));
  for (const std::size_t at : {std::size_t{5}, std::size_t{7}}) {
    INFO("id " << at << " changed: it contradicts the forced phrase");
    auto out = slice(ids, 0, 8);
    out[at] = out[at] == 'x' ? 'y' : 'x';
    CHECK_THROWS_AS(resumed(out), std::invalid_argument);
  }
  SECTION("a sampled id may be anything the model could say") {
    auto out = slice(ids, 0, 4);
    out[2] = out[2] == 'x' ? 'y' : 'x';
    CHECK_NOTHROW(resumed(out));
  }
  SECTION("ids past max_tokens") {
    auto e = make_engine(c);
    e->prefill(concat(prompt, ids));
    auto j = job;
    j.resume_output = concat(ids, {'a'});
    CHECK_THROWS_AS(generation_session(*e, j), std::invalid_argument);
  }
  SECTION("a sampled stop token") {
    auto j = job;
    j.gen.stop_tokens = {ids[2]};
    auto e = make_engine(c);
    restore_snapshot(e->cache_state(), r.states.at(3));
    j.resume_output = slice(ids, 0, 4);
    CHECK_THROWS_AS(generation_session(*e, j), std::invalid_argument);
  }
  SECTION("an engine that does not hold the checkpoint's length") {
    auto e = make_engine(c);
    restore_snapshot(e->cache_state(), r.states.at(3));
    auto j = job;
    j.resume_output = slice(ids, 0, 5);
    CHECK_THROWS_AS(generation_session(*e, j), std::invalid_argument);
  }
}

TEST_CASE("a resume whose replay reaches the end leaves the engine alone", "[session][resume]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(40, 8);

  SECTION("max_tokens") {
    const auto job = sampled(greedy_job(prompt, 12), 5);
    const recorded r = record(c, job);
    REQUIRE(r.end.finish == "length");
    auto e = make_engine(c);
    restore_snapshot(e->cache_state(), r.states.back());
    auto j = job;
    j.resume_output = r.end.ids;
    generation_session s(*e, j);
    CHECK_FALSE(s.prefilling());
    const auto res = s.step(4);
    CHECK(res.tokens == 0);
    CHECK(s.done());
    CHECK(s.finish_reason() == "length");
    CHECK(s.output_tokens() == 12);
    CHECK(s.next_step() == 12u);
    outcome o;
    collect(o, res.deltas);
    conclude(o, s, *e);
    require_same_outcome(o, r.end, e->layout());  // the state included: nothing was decoded
    CHECK(s.step(4).deltas.empty());
  }
  SECTION("a stop string matched by the last replayed id") {
    const auto free_job = sampled(greedy_job(prompt, 30), 6);
    const recorded probe = record(c, free_job);
    REQUIRE(probe.end.out.content.size() > 20);
    auto job = free_job;
    job.stop_strings = {probe.end.out.content.substr(15, 2)};
    const recorded r = record(c, job);
    REQUIRE(r.end.finish == "stop");
    auto e = make_engine(c);
    restore_snapshot(e->cache_state(), r.states.back());
    auto j = job;
    j.resume_output = r.end.ids;
    generation_session s(*e, j);
    outcome o;
    collect(o, s.step(1).deltas);
    CHECK(s.done());
    conclude(o, s, *e);
    require_same_outcome(o, r.end, e->layout());
  }
}
