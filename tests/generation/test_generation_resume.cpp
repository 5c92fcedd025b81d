// A generation resumed from a checkpoint (its state and the ids it emitted) ends exactly as the
// uninterrupted one: the replay re-derives the forced phrase, hidden spans and stop strings.
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
  run_finish finish = run_finish::stop;
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

TEST_CASE("a sampled generation resumed from any checkpoint ends as the uninterrupted one",
          "[session][resume]") {
  const model_config c = test_config("tiny", 1024);
  const auto prompt = test_tokens(50, 31);
  const auto job = sampled(greedy_job(prompt, 40), 11);

  SECTION("to max_tokens") {
    const recorded r = check_every_resume(c, job, 3);
    CHECK(r.end.finish == run_finish::length);
    CHECK(r.end.ids.size() == 40u);
  }
  SECTION("to a stop string, held back across the checkpoints") {
    const recorded probe = record(c, job);
    REQUIRE(probe.end.out.content.size() > 30);
    auto stopped = job;
    stopped.rules.stop_strings = {"never said", probe.end.out.content.substr(20, 4)};
    const recorded r = check_every_resume(c, stopped, 2);
    CHECK(r.end.finish == run_finish::stop);
    CHECK(r.end.ids.size() < 40u);
  }
  SECTION("with tool call tags, the parser holding a call across the checkpoints") {
    auto tools = job;
    tools.rules.parse_tool_calls = true;
    tools.gen.sampling.logit_bias = {{special_tokens::tool_call_open, 4.0f},
                                     {special_tokens::tool_call_close, 4.0f}};
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
    CHECK(r.end.finish == run_finish::stop);
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
    CHECK(r.end.finish == run_finish::length);
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
    job.rules.stop_strings = {probe.end.out.content.substr(12, 3)};
    const recorded r = check_every_resume(c, job, 5);
    CHECK(r.end.finish == run_finish::stop);
    CHECK(r.end.hidden == std::vector<span>{{5, 5 + hidden}});
  }
  SECTION("max_tokens inside the hidden text and on the forced </think>") {
    for (const int max_tokens : {5 + 3, static_cast<int>(5 + hidden + 1)}) {
      INFO("max_tokens " << max_tokens);
      const recorded r = check_every_resume(c, sampled(thinking_job(prompt, max_tokens, 5), 79), 2);
      CHECK(r.end.finish == run_finish::length);
      CHECK(r.end.ids.size() == static_cast<std::size_t>(max_tokens));
      CHECK(r.end.out.content.empty());
    }
  }
  SECTION("budget 0: the phrase comes first") {
    const recorded r =
        check_every_resume(c, sampled(thinking_job(prompt, static_cast<int>(phrase.size()) + 20, 0), 80), 4);
    CHECK(slice(r.end.ids, 0, phrase.size()) == phrase);
    CHECK(r.end.hidden == std::vector<span>{{0, hidden}});
    CHECK(r.steps.at(phrase.size() - 1) == 0u);
  }
  SECTION("a block the model opens itself") {
    auto job = greedy_job(test_tokens(30, 4), static_cast<int>(4 + phrase.size()) + 10);
    job.rules.parse_reasoning = true;
    job.rules.reasoning_budget = 3;
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
    REQUIRE(r.end.finish == run_finish::length);
    auto e = make_engine(c);
    restore_snapshot(e->cache_state(), r.states.back());
    auto j = job;
    j.resume_output = r.end.ids;
    generation_session s(*e, j);
    CHECK_FALSE(s.prefilling());
    const auto res = s.step(4);
    CHECK(res.tokens == 0);
    CHECK(s.done());
    CHECK(s.finish_reason() == run_finish::length);
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
    job.rules.stop_strings = {probe.end.out.content.substr(15, 2)};
    const recorded r = record(c, job);
    REQUIRE(r.end.finish == run_finish::stop);
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
