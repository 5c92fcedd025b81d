// The response cache as an object (runtime/cache/response_cache.hpp): exact keys, the LRU order
// within the byte budget, and a digest collision that must stay a miss.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cache/response_cache.hpp"

using namespace anchorage;

namespace {

response_key key_of(std::vector<token_id> prompt, long max_tokens = 8) {
  response_key k;
  k.fingerprint = 0xf00d;
  k.prompt = std::move(prompt);
  k.max_tokens = max_tokens;
  k.stop_tokens = {2};
  return k;
}

cached_response answer_of(std::vector<token_id> ids, run_finish reason = run_finish::stop) {
  return cached_response{std::move(ids), reason};
}

// A greedy board job (what the conductor renders for temperature 0) of `prompt`.
board_job greedy_job(std::vector<std::int32_t> prompt) {
  board_job j;
  j.prompt = std::move(prompt);
  j.client()->greedy = true;
  j.sampling.temperature = 0;
  j.sampling.max_tokens = 8;
  return j;
}

}  // namespace

TEST_CASE("response cache: an equal key finds the answer, any other key misses", "[cache][response]") {
  response_cache c(1 << 20);
  CHECK_FALSE(c.find(key_of({1, 2, 3})));
  REQUIRE(c.put(key_of({1, 2, 3}), answer_of({7, 8, 9}, run_finish::length)));
  const auto hit = c.find(key_of({1, 2, 3}));
  REQUIRE(hit);
  CHECK(hit->output == std::vector<token_id>{7, 8, 9});
  CHECK(hit->finish_reason == run_finish::length);
  CHECK_FALSE(c.find(key_of({1, 2, 4})));     // one token differs
  CHECK_FALSE(c.find(key_of({1, 2})));        // a prefix
  CHECK_FALSE(c.find(key_of({1, 2, 3}, 9)));  // another max_tokens
  response_key other = key_of({1, 2, 3});
  other.fingerprint = 0xbeef;  // another engine's weights
  CHECK_FALSE(c.find(other));
  const response_stats s = c.stats();
  CHECK(s.entries == 1);
  CHECK(s.hits == 1);
  CHECK(s.misses == 5);
  CHECK(s.stores == 1);
  CHECK(s.bytes == c.bytes());
  CHECK(s.bytes == response_cache::entry_bytes(key_of({1, 2, 3}), answer_of({7, 8, 9}, run_finish::length)));
  CHECK(s.limit_bytes == 1 << 20);
}

TEST_CASE("response cache: every field of the key takes part in the comparison", "[cache][response]") {
  const response_key base = key_of({5, 6, 7});
  std::vector<std::function<void(response_key&)>> changes = {
      [](response_key& k) { k.route = request_kind::chat; },
      [](response_key& k) { k.stop_tokens.push_back(3); },
      [](response_key& k) { k.stop_strings = {"\n"}; },
      [](response_key& k) { k.tools = "[{}]"; },
      [](response_key& k) { k.tool_choice = "none"; },
      [](response_key& k) { k.response_format = R"({"type":"json_object"})"; },
      [](response_key& k) {
        k.logit_bias = {{4, 1.5f}};
      },
      [](response_key& k) { k.seed_explicit = true; },
      [](response_key& k) {
        k.seed_explicit = true;
        k.seed = 9;
      },
      [](response_key& k) { k.top_p = 0.5; },
      [](response_key& k) { k.parse_reasoning = true; },
      [](response_key& k) { k.parse_tool_calls = true; },
      [](response_key& k) { k.starts_in_reasoning = true; },
      [](response_key& k) { k.reasoning_budget = 16; },
  };
  response_cache c(1 << 20);
  REQUIRE(c.put(base, answer_of({1})));
  for (std::size_t i = 0; i < changes.size(); ++i) {
    INFO("change " << i);
    response_key k = base;
    changes[i](k);
    CHECK(k != base);
    CHECK(response_key_digest(k) != response_key_digest(base));
    CHECK_FALSE(c.find(k));
  }
  CHECK(c.find(base));
}

TEST_CASE("response cache: keys collide in one bucket and are still told apart", "[cache][response]") {
  // Every key in bucket 42: only the exact comparison separates them.
  response_cache c(1 << 20, [](const response_key&) { return std::uint64_t{42}; });
  REQUIRE(c.put(key_of({1, 2, 3}), answer_of({10})));
  REQUIRE(c.put(key_of({1, 2, 4}), answer_of({20})));
  CHECK(c.size() == 2);
  CHECK(c.find(key_of({1, 2, 3}))->output == std::vector<token_id>{10});
  CHECK(c.find(key_of({1, 2, 4}))->output == std::vector<token_id>{20});
  CHECK_FALSE(c.find(key_of({1, 2, 5})));
  // Storing an equal key again replaces its answer, not the other key's.
  REQUIRE(c.put(key_of({1, 2, 3}), answer_of({11, 12})));
  CHECK(c.size() == 2);
  CHECK(c.find(key_of({1, 2, 3}))->output == std::vector<token_id>{11, 12});
  CHECK(c.find(key_of({1, 2, 4}))->output == std::vector<token_id>{20});
}

TEST_CASE("response cache: the least recently used entry goes first within the budget", "[cache][response]") {
  const std::size_t one = response_cache::entry_bytes(key_of({1}), answer_of({1}));
  response_cache c(3 * one);  // room for three entries of this size
  REQUIRE(c.put(key_of({1}), answer_of({1})));
  REQUIRE(c.put(key_of({2}), answer_of({2})));
  REQUIRE(c.put(key_of({3}), answer_of({3})));
  CHECK(c.bytes() == 3 * one);
  REQUIRE(c.find(key_of({1})));  // 1 is the most recently used now; 2 the least
  REQUIRE(c.put(key_of({4}), answer_of({4})));
  CHECK(c.size() == 3);
  CHECK(c.bytes() <= c.limit_bytes());
  CHECK_FALSE(c.find(key_of({2})));
  CHECK(c.find(key_of({1})));
  CHECK(c.find(key_of({3})));
  CHECK(c.find(key_of({4})));
  CHECK(c.stats().evictions == 1);
  // A larger entry evicts as many as it needs.
  std::vector<token_id> long_prompt(one / sizeof(token_id), 9);
  REQUIRE(c.put(key_of(long_prompt), answer_of({5})));
  CHECK(c.bytes() <= c.limit_bytes());
  CHECK(c.stats().evictions >= 2);
  CHECK(c.find(key_of(long_prompt)));
}

TEST_CASE("response cache: an answer larger than the budget is refused, and a clear empties it",
          "[cache][response]") {
  response_cache c(512);
  std::vector<token_id> big(1000, 1);
  CHECK_FALSE(c.put(key_of({1}), answer_of(big)));
  CHECK(c.size() == 0);
  CHECK(c.stats().refusals == 1);
  response_cache none(0);
  CHECK_FALSE(none.put(key_of({1}), answer_of({1})));
  response_cache d(1 << 20);
  REQUIRE(d.put(key_of({1}), answer_of({1})));
  d.clear();
  CHECK(d.size() == 0);
  CHECK(d.bytes() == 0);
  CHECK_FALSE(d.find(key_of({1})));
}

TEST_CASE("response cache: only a greedy job that no tier rewrites has a key", "[cache][response]") {
  const board_job g = greedy_job({1, 2, 3});
  const auto k = response_key_of(g, 77);
  REQUIRE(k);
  CHECK(k->fingerprint == 77);
  CHECK(k->prompt == std::vector<token_id>{1, 2, 3});
  board_job sampled = g;
  sampled.client()->greedy = false;  // an omitted temperature: 1.0
  sampled.sampling.temperature = 1.0;
  CHECK_FALSE(response_key_of(sampled, 77));
  board_job zero_not_asked = g;
  zero_not_asked.client()->greedy = false;  // a temperature 0 the client did not ask for is not trusted
  CHECK_FALSE(response_key_of(zero_not_asked, 77));
  board_job compaction = g;
  compaction.client()->compaction = compaction_plan{};
  CHECK_FALSE(response_key_of(compaction, 77));
  board_job idle = g;
  idle.kind = idle_prewrite{};
  CHECK_FALSE(response_key_of(idle, 77));
  // A server-chosen seed does not take part; an explicit one does.
  board_job seeded = g;
  seeded.sampling.seed = 12345;
  CHECK(*response_key_of(seeded, 77) == *k);
  seeded.sampling.seed_explicit = true;
  CHECK(*response_key_of(seeded, 77) != *k);
  board_job tools = g;
  tools.rules.tools =
      std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::array({{{"a", 1}}}));
  CHECK(*response_key_of(tools, 77) != *k);
}
