// Miss reasons over HTTP (docs/CACHES.md): a client that rewrites its conversation's system
// prompt resumes at the grid line below the change; GET /v1/cache/stats and /metrics name the
// reason and count the tokens between the grid line and the change. A server started with
// another grid on a cache directory another engine filled names that engine's lines.
#include "tests/support/chat_turns.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("http: a rewritten system prompt is counted as client_rewrote in the stats and the metrics",
          "[http][stats][miss]") {
  http_server s;
  const std::string sys = filler(system_prompt, 300);
  json messages = json::array(
      {{{"role", "system"}, {"content", sys}}, {{"role", "user"}, {"content", "List the files."}}});
  json body = greedy_turn(messages, 8);
  body["prompt_cache_key"] = "conversation-1";
  const turn_reply first = post_turn(s, body);
  CHECK(first.x_cache["source"] == "cold");
  CHECK(first.x_cache["miss"] == json{{"reason", "no_shared_prefix"}, {"tokens", 0}});

  // The client changes one character of its system prompt, 201 characters in, and sends the
  // next turn of the same conversation.
  const std::size_t at = 201;
  std::string rewritten = sys;
  rewritten[at] = rewritten[at] == 'x' ? 'y' : 'x';
  messages[0]["content"] = rewritten;
  messages.push_back({{"role", "assistant"}, {"content", first.message["content"]}});
  messages.push_back({{"role", "user"}, {"content", "And the tests?"}});
  body = greedy_turn(messages, 8);
  body["prompt_cache_key"] = "conversation-1";
  const turn_reply second = post_turn(s, body);
  CHECK(second.x_cache["source"] == "resident");  // a grid anchor below the change
  const long resumed = second.x_cache["resumed_at"].get<long>();
  // Where the prompt parts from what was held: the template's head, then `at` characters.
  const long parts_at = static_cast<long>(count_tokens("<|im_start|>system\n" + sys.substr(0, at)));
  REQUIRE(resumed < parts_at);

  // The request's own account names it too, in x_cache and in its ledger entry.
  CHECK(second.x_cache["miss"] == json{{"reason", "client_rewrote"}, {"tokens", parts_at - resumed}});
  const json stats = s.get("/v1/cache/stats").body_json();
  const json& ledger = stats["ledger"];
  REQUIRE(ledger.size() == 2);
  CHECK(ledger[0]["miss_reason"] == "no_shared_prefix");
  CHECK(ledger[1]["miss_reason"] == "client_rewrote");
  CHECK(ledger[1]["miss_tokens"] == parts_at - resumed);

  // The next turn, sent as the server answered it, resumes at the end anchor: no miss.
  messages.push_back({{"role", "assistant"}, {"content", second.message["content"]}});
  messages.push_back({{"role", "user"}, {"content", "Thanks."}});
  body = greedy_turn(messages, 8);
  body["prompt_cache_key"] = "conversation-1";
  const turn_reply third = post_turn(s, body);
  CHECK(third.x_cache["source"] == "end");
  CHECK_FALSE(third.x_cache.contains("miss"));

  const json st = stats["tiers"]["miss_reasons"];
  INFO(st.dump());
  CHECK(st["client_rewrote"]["requests"] == 1);
  CHECK(st["client_rewrote"]["tokens"] == parts_at - resumed);
  CHECK(st["no_shared_prefix"]["requests"] == 1);  // the first turn
  for (const char* other : {"evicted", "budget_refused", "verification_failed", "stale_offer", "cost_rule",
                            "other_fingerprint", "between_anchors"})
    CHECK(st[other]["requests"] == 0);

  const std::string metrics = s.get("/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_miss_requests_total{reason=\"client_rewrote\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("anchorage_cache_miss_tokens_total{reason=\"client_rewrote\"} " +
                                      std::to_string(parts_at - resumed) + "\n"));
}

TEST_CASE("http: a prompt only another engine's disk folder holds is counted as other_fingerprint",
          "[http][disk][miss]") {
  temp_dir dir("anchorage-http-miss-foreign");
  const json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 1700)}},
                                     {{"role", "user"}, {"content", "List the files in src."}}});
  {
    // Another engine: the same weights with another grid (--prefix-chunk), so another fingerprint.
    http_server a({"--cache-dir", dir.str(), "--disk-min-tokens", "256", "--prefix-chunk", "64"});
    post_turn(a, chat_body(messages, 11, 8));
    REQUIRE(a.quiesce());
    REQUIRE(a.get("/v1/cache/stats").body_json()["tiers"]["disk"]["entries"] > 0);
  }
  http_server b({"--cache-dir", dir.str(), "--disk-min-tokens", "256"});
  const turn_reply t = post_turn(b, chat_body(messages, 11, 8));
  CHECK(t.x_cache["source"] == "cold");
  const json st = b.get("/v1/cache/stats").body_json()["tiers"]["miss_reasons"];
  INFO(st.dump());
  CHECK(st["other_fingerprint"]["requests"] == 1);
  const long lost = st["other_fingerprint"]["tokens"].get<long>();
  CHECK(lost > 0);
  CHECK(lost % 64 == 0);  // a line of the other engine's grid
  CHECK(st["no_shared_prefix"]["requests"] == 0);
  CHECK_THAT(b.get("/metrics").body,
             Catch::Contains("anchorage_cache_miss_tokens_total{reason=\"other_fingerprint\"} " +
                             std::to_string(lost) + "\n"));
}
