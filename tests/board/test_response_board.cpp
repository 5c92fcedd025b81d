// The response cache on the board (docs/CACHES.md, "The response cache"): an identical greedy
// request is answered with the first answer's tokens, replayed without the engine; any changed
// field is a miss; a sampled request and a cancelled generation are never kept.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/board/slot_board.hpp"
#include "tests/support/disk_driver.hpp"
#include "tests/support/engine_fixture.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

board_runner_options response_options() {
  board_runner_options o = small_runner_options();
  o.responses = std::make_shared<response_cache>(16u << 20);
  return o;
}

board_job greedy(const std::vector<token_id>& prompt, long max_tokens, const std::string& id) {
  board_job j = job_of(prompt, max_tokens, id);
  j.client()->greedy = true;  // what the conductor renders for an explicit temperature 0
  return j;
}

// Every delta of a run, in order, flattened across events (a replay hands them out in one step).
std::vector<std::string> deltas_of(const run_result& r) {
  std::vector<std::string> out;
  for (const auto& ev : r.events)
    for (const auto& d : ev.deltas) out.push_back(std::to_string(static_cast<int>(d.what)) + ":" + d.text);
  return out;
}

const stream_event& finished_of(const run_result& r) {
  REQUIRE_FALSE(r.events.empty());
  REQUIRE(r.events.back().what == stream_event::kind::finished);
  return r.events.back();
}

run_result run_job(board_runner& r, const board_job& j) { return run_to_end(r, r.start(j)); }

}  // namespace

TEST_CASE("response board: an identical greedy request decodes nothing and answers the same",
          "[tiers][response]") {
  const model_config c = test_config("tiny", 1024);
  board_runner r(std::shared_ptr<engine>(make_engine(c).release()), response_options());
  const auto prompt = test_tokens(50, 901);
  const run_result first = run_job(r, greedy(prompt, 12, "a"));
  const stream_event& f1 = finished_of(first);
  CHECK(f1.cache.source != cache_source::response);
  CHECK(f1.usage.completion_tokens == 12);
  REQUIRE(r.responses()->size() == 1);
  const std::size_t rows = r.slot0().length();
  const long steps = r.steps();

  const run_result second = run_job(r, greedy(prompt, 12, "b"));
  const stream_event& f2 = finished_of(second);
  CHECK(f2.cache.source == cache_source::response);
  CHECK(f2.cache.prefilled_tokens == 0);
  CHECK(f2.cache.resumed_at == static_cast<long>(prompt.size()));
  CHECK(f2.usage.prompt_tokens == static_cast<long>(prompt.size()));
  CHECK(f2.usage.cached_tokens == static_cast<long>(prompt.size()));
  CHECK(f2.usage.completion_tokens == f1.usage.completion_tokens);
  CHECK(f2.finish_reason == f1.finish_reason);
  CHECK(f2.output.content == f1.output.content);
  CHECK(second.text == first.text);
  CHECK(deltas_of(second) == deltas_of(first));
  REQUIRE(f2.ledger.source == cache_source::response);
  CHECK(f2.ledger.prefilled == 0);
  CHECK(f2.ledger.output_tokens == f1.ledger.output_tokens);
  // Nothing forwarded: the engine's rows are the first request's, and one step handed it out.
  CHECK(r.slot0().length() == rows);
  CHECK(r.steps() - steps <= 1);
  const response_stats s = r.responses()->stats();
  CHECK(s.hits == 1);
  CHECK(s.stores == 1);
  CHECK(s.misses == 1);
  // The next ordinary turn still resumes from the tiers (the hit left them as they were).
  const run_result third = run_job(r, job_of(prompt, 4, "c"));
  CHECK(finished_of(third).cache.source != cache_source::response);
}

TEST_CASE("response board: a generation that stopped replays as stopped", "[tiers][response]") {
  const model_config c = test_config("tiny", 1024);
  board_runner_options o = response_options();
  const std::shared_ptr<response_cache> cache = o.responses;
  board_runner r(std::shared_ptr<engine>(make_engine(c).release()), o);
  const auto prompt = test_tokens(40, 902);
  // The greedy ids of the prompt (as the cache kept them), then the same request with its third
  // id as a stop token.
  const board_job probe_job = greedy(prompt, 8, "probe");
  const run_result probe = run_job(r, probe_job);
  const auto kept = cache->find(*response_key_of(probe_job, r.slot0().layout().fingerprint));
  REQUIRE(kept);
  REQUIRE(kept->output.size() == 8);
  board_job stop = greedy(prompt, 8, "s1");
  stop.sampling.stop_tokens = {kept->output[2]};
  const std::string text = finished_of(probe).output.content;
  const run_result live = run_job(r, stop);
  REQUIRE(finished_of(live).finish_reason == run_finish::stop);
  CHECK(finished_of(live).cache.source != cache_source::response);
  stop.id = "s2";
  const run_result again = run_job(r, stop);
  CHECK(finished_of(again).cache.source == cache_source::response);
  CHECK(finished_of(again).finish_reason == run_finish::stop);
  CHECK(finished_of(again).output.content == finished_of(live).output.content);
  CHECK(deltas_of(again) == deltas_of(live));
  // And a stop string the same way: a character of the probe's content past its first.
  REQUIRE(text.size() >= 2);
  board_job str = greedy(prompt, 8, "t1");
  str.rules.stop_strings = {text.substr(text.size() / 2, 1)};
  const run_result live_s = run_job(r, str);
  str.id = "t2";
  const run_result again_s = run_job(r, str);
  CHECK(finished_of(again_s).cache.source == cache_source::response);
  CHECK(finished_of(again_s).finish_reason == finished_of(live_s).finish_reason);
  CHECK(finished_of(again_s).output.content == finished_of(live_s).output.content);
  CHECK(deltas_of(again_s) == deltas_of(live_s));
}

TEST_CASE("response board: a request that differs in any field that changes the output misses",
          "[tiers][response]") {
  const model_config c = test_config("tiny", 1024);
  board_runner r(std::shared_ptr<engine>(make_engine(c).release()), response_options());
  const auto prompt = test_tokens(40, 903);
  const board_job base = greedy(prompt, 6, "base");
  run_job(r, base);
  REQUIRE(r.responses()->size() == 1);
  auto other_prompt = prompt;
  other_prompt.back() = static_cast<token_id>((other_prompt.back() + 1) % 200);
  const std::vector<std::pair<const char*, std::function<void(board_job&)>>> changes = {
      {"prompt", [&](board_job& j) { j.prompt.assign(other_prompt.begin(), other_prompt.end()); }},
      {"route", [](board_job& j) { j.route = request_kind::chat; }},
      {"max_tokens", [](board_job& j) { j.sampling.max_tokens = 5; }},
      {"stop tokens", [](board_job& j) { j.sampling.stop_tokens = {1}; }},
      {"stop strings", [](board_job& j) { j.rules.stop_strings = {"zz"}; }},
      {"tools",
       [](board_job& j) {
         j.rules.tools = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::array());
       }},
      {"tool_choice", [](board_job& j) { j.client()->tool_choice = "required"; }},
      {"response_format", [](board_job& j) { j.client()->response_format = R"({"type":"json_object"})"; }},
      {"logit_bias",
       [](board_job& j) {
         j.sampling.logit_bias = {{5, -3.0f}};
       }},
      {"seed",
       [](board_job& j) {
         j.sampling.seed = 4;
         j.sampling.seed_explicit = true;
       }},
      {"top_p", [](board_job& j) { j.sampling.top_p = 0.9; }},
      {"parse reasoning", [](board_job& j) { j.rules.parse_reasoning = true; }},
      {"parse tool calls", [](board_job& j) { j.rules.parse_tool_calls = true; }},
      {"starts in reasoning", [](board_job& j) { j.rules.starts_in_reasoning = true; }},
      {"reasoning budget", [](board_job& j) { j.rules.reasoning_budget = 3; }},
  };
  long misses = r.responses()->stats().misses;
  for (const auto& [name, change] : changes) {
    INFO("changed: " << name);
    board_job j = base;
    j.id = std::string("x-") + name;
    change(j);
    const run_result res = run_job(r, j);
    CHECK(finished_of(res).cache.source != cache_source::response);
    CHECK(r.responses()->stats().misses == ++misses);
  }
  // The unchanged request still hits (none of the above replaced its entry).
  board_job same = base;
  same.id = "same";
  CHECK(finished_of(run_job(r, same)).cache.source == cache_source::response);
}

TEST_CASE("response board: a sampled request is never kept nor answered", "[tiers][response]") {
  const model_config c = test_config("tiny", 1024);
  board_runner r(std::shared_ptr<engine>(make_engine(c).release()), response_options());
  const auto prompt = test_tokens(40, 904);
  // An omitted temperature: 1.0, sampled with the request's seed.
  board_job sampled = job_of(prompt, 6, "s1");
  sampled.sampling.temperature = 1.0;
  sampled.sampling.seed = 5;
  sampled.sampling.seed_explicit = true;
  run_job(r, sampled);
  sampled.id = "s2";
  CHECK(finished_of(run_job(r, sampled)).cache.source != cache_source::response);
  // temperature 0 the client did not send as such (job_of: greedy unset) is not trusted either.
  run_job(r, job_of(prompt, 6, "z1"));
  CHECK(finished_of(run_job(r, job_of(prompt, 6, "z2"))).cache.source != cache_source::response);
  CHECK(r.responses()->size() == 0);
  CHECK(r.responses()->stats().stores == 0);
  CHECK(r.responses()->stats().misses == 0);  // never looked up
}

TEST_CASE("response board: a cancelled generation is not kept", "[tiers][response]") {
  const model_config c = test_config("tiny", 1024);
  board_runner r(std::shared_ptr<engine>(make_engine(c).release()), response_options());
  const auto prompt = test_tokens(40, 905);
  board_events out = r.start(greedy(prompt, 24, "c1"));
  REQUIRE(out.step_again);
  r.step();  // the prefill
  r.step();  // a first block of tokens
  r.cancel("c1");
  const run_result cut = run_to_end(r, r.step());
  REQUIRE(finished_of(cut).finish_reason == run_finish::cancelled);
  CHECK(r.responses()->size() == 0);
  const run_result next = run_job(r, greedy(prompt, 24, "c2"));
  CHECK(finished_of(next).cache.source != cache_source::response);
  CHECK(finished_of(next).finish_reason == run_finish::length);
  CHECK(r.responses()->size() == 1);
  // A hit cancelled before its step still answers in full: nothing of it was cut.
  r.cancel("c3");
  const run_result hit = run_job(r, greedy(prompt, 24, "c3"));
  CHECK(finished_of(hit).cache.source == cache_source::response);
  CHECK(finished_of(hit).output.content == finished_of(next).output.content);
}

TEST_CASE("response board: the slots share one cache, shown in the stats and cleared by name",
          "[tiers][response]") {
  const model_config c = test_config("tiny", 1024);
  std::vector<std::shared_ptr<engine>> engines;
  for (int i = 0; i < 2; ++i) engines.push_back(std::shared_ptr<engine>(make_engine(c).release()));
  board_runner_options o = small_runner_options();
  o.cache.response_cache_bytes = 4u << 20;
  slot_board b(std::move(engines), o);
  REQUIRE(b.responses());
  const auto prompt = test_tokens(40, 906);
  auto run_board = [&](const board_job& j) {
    std::vector<stream_event> events;
    auto take = [&](slot_events s) {
      for (auto& ev : s.events.events) events.push_back(std::move(ev));
    };
    take(b.start(j));
    while (b.wants_step())
      for (auto& s : b.step()) take(std::move(s));
    REQUIRE_FALSE(events.empty());
    return events.back();
  };
  const stream_event a = run_board(greedy(prompt, 6, "a"));
  const stream_event hit = run_board(greedy(prompt, 6, "b"));
  CHECK(hit.cache.source == cache_source::response);
  CHECK(hit.output.content == a.output.content);
  const cache_stats st = b.stats();
  REQUIRE(st.response);
  CHECK(st.response->entries == 1);
  CHECK(st.response->hits == 1);
  CHECK(st.response->stores == 1);
  CHECK(st.response->limit_bytes == 4u << 20);
  CHECK(nlohmann::json(st)["response"]["hits"] == 1);
  const auto cleared = b.clear(cache_tier::response);
  REQUIRE(cleared);
  CHECK(*cleared == std::vector<cache_tier>{cache_tier::response});
  CHECK(b.stats().response->entries == 0);
  CHECK(run_board(greedy(prompt, 6, "c")).cache.source != cache_source::response);
  const auto all = b.clear(cache_tier::all);
  REQUIRE(all);
  CHECK(all->back() == cache_tier::response);
  CHECK(b.stats().response->entries == 0);
  // Off (the default): no cache, no tier to clear, the stats say so.
  std::vector<std::shared_ptr<engine>> one = {std::shared_ptr<engine>(make_engine(c).release())};
  slot_board off(std::move(one), small_runner_options());
  CHECK_FALSE(off.responses());
  CHECK_FALSE(off.clear(cache_tier::response));
  CHECK_FALSE(off.stats().response);
  CHECK(nlohmann::json(off.stats())["response"]["enabled"] == false);
}
