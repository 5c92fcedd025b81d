// End-to-end: conversations that grow turn by turn, answered from the end anchor, with the
// client keeping its answers' reasoning (an agent) or dropping it (Open WebUI); the tiers'
// stats, metrics and clear route.
#include "tests/support/chat_turns.hpp"

using namespace anchorage;
using namespace anchorage::testing;

TEST_CASE("an agent's six turns resume from the end anchor and prefill only what is new",
          "[http][cache][end]") {
  http_server s({"--reasoning-budget", "6"});
  json messages = json::array({{{"role", "system"}, {"content", system_prompt}},
                               {{"role", "user"}, {"content", "List the files in src and read main.cpp."}}});
  std::size_t expected_prefill = 0;
  for (int turn = 0; turn < 7; ++turn) {
    INFO("turn " << turn);
    const turn_reply t = post_turn(s, chat_body(messages, 100 + turn));
    // Every answer ran to max_tokens: its last token is pending, the rows hold the rest.
    REQUIRE(t.finish_reason == "length");
    REQUIRE(t.message.value("reasoning_content", "").size() > 0);
    REQUIRE(t.message.value("content", "").size() > 0);
    const long prompt_tokens = t.usage["prompt_tokens"];
    const long prefilled = t.x_cache["prefilled_tokens"];
    CHECK(t.usage["prompt_tokens_details"]["cached_tokens"] == prompt_tokens - prefilled);
    if (turn == 0) {
      CHECK(t.x_cache["source"] == "cold");
      CHECK(prefilled == prompt_tokens);
    } else {
      CHECK(t.x_cache["source"] == "end");
      CHECK(static_cast<std::size_t>(prefilled) == expected_prefill);
      CHECK(t.x_cache["resumed_at"] == prompt_tokens - prefilled);
    }
    messages.push_back({{"role", "assistant"},
                        {"content", t.message["content"]},
                        {"reasoning_content", t.message["reasoning_content"]}});
    const std::string result =
        "file " + std::to_string(turn) + ": int main() { return " + std::to_string(turn) + "; }";
    messages.push_back(
        {{"role", "tool"}, {"tool_call_id", "call_" + std::to_string(turn)}, {"content", result}});
    // The pending token, then the glue and the tool result.
    expected_prefill = 1 + count_tokens(tool_glue(result));
  }
  const json stats = s.get("/v1/cache/stats").body_json();
  CHECK(stats["tiers"]["resident"]["end_hits"] == 6);
  CHECK(stats["tiers"]["resident"]["tokens_saved"].get<long>() > 0);
}

TEST_CASE("a client that drops its answers' reasoning still resumes from the end anchor",
          "[http][cache][end]") {
  http_server s({"--reasoning-budget", "6"});
  json messages = json::array({{{"role", "system"}, {"content", system_prompt}},
                               {{"role", "user"}, {"content", "What is a hybrid model?"}}});
  std::size_t expected_prefill = 0;
  for (int turn = 0; turn < 6; ++turn) {
    INFO("turn " << turn);
    const turn_reply t = post_turn(s, chat_body(messages, 200 + turn));
    REQUIRE(t.finish_reason == "length");
    const long prompt_tokens = t.usage["prompt_tokens"];
    const long prefilled = t.x_cache["prefilled_tokens"];
    if (turn > 0) {
      CHECK(t.x_cache["source"] == "end");
      CHECK(static_cast<std::size_t>(prefilled) == expected_prefill);
      CHECK(t.usage["prompt_tokens_details"]["cached_tokens"] == prompt_tokens - prefilled);
    }
    // Open WebUI sends the answer back without its reasoning, and a new question.
    messages.push_back({{"role", "assistant"}, {"content", t.message["content"]}});
    const std::string next = "And question number " + std::to_string(turn + 2) + "?";
    messages.push_back({{"role", "user"}, {"content", next}});
    expected_prefill = 1 + count_tokens(user_glue(next));
  }
}

TEST_CASE("a client that edits its history resumes at a grid anchor, not at the end", "[http][cache]") {
  http_server s({"--reasoning-budget", "4"});
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 200)}},
                               {{"role", "user"}, {"content", "First question."}}});
  const turn_reply first = post_turn(s, chat_body(messages, 7, 120));
  REQUIRE(first.message.value("content", "").size() > 0);  // the answer got past its reasoning
  messages.push_back({{"role", "assistant"}, {"content", "an answer the model did not write"}});
  messages.push_back({{"role", "user"}, {"content", "Second question."}});
  const turn_reply second = post_turn(s, chat_body(messages, 8, 8));
  CHECK(second.x_cache["source"] == "resident");
  const long at = second.x_cache["resumed_at"];
  CHECK(at > 0);
  CHECK(at % 32 == 0);  // the tiny preset's grid
  CHECK(at <= first.usage["prompt_tokens"].get<long>());
}

TEST_CASE("the cache stats, metrics and clear route report the tiers", "[http][cache]") {
  http_server s({"--admin-token", "secret"});
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 300)}},
                               {{"role", "user"}, {"content", "hello"}}});
  const turn_reply before = post_turn(s, chat_body(messages, 1, 8));
  const json stats = s.get("/v1/cache/stats").body_json();
  const json& resident = stats["tiers"]["resident"];
  CHECK(resident["anchors"].get<long>() > 0);
  CHECK(resident["bytes"].get<long>() > 0);
  CHECK(resident["bytes"].get<long>() <= resident["limit_bytes"].get<long>());
  CHECK(stats["tiers"]["store"]["entries"].get<long>() >= 1);
  for (const char* key : {"entries", "bytes", "hits", "misses", "evictions", "tokens_saved"}) {
    INFO(key);
    CHECK(resident.contains(key));
    CHECK(stats["tiers"]["store"].contains(key));
  }
  const http_reply m = s.get("/metrics");
  REQUIRE(m.status == 200);
  CHECK(m.body.find("anchorage_cache_entries{tier=\"resident\"}") != std::string::npos);
  CHECK(m.body.find("anchorage_cache_hits_total{tier=\"store\"}") != std::string::npos);

  const http_reply cleared = s.post("/v1/cache/clear?tier=all", "", {{"Authorization", "Bearer secret"}});
  REQUIRE(cleared.status == 200);
  CHECK(cleared.body_json()["cleared"] == json::array({"resident", "store"}));
  const json after = s.get("/v1/cache/stats").body_json();
  CHECK(after["tiers"]["resident"]["entries"] == 0);
  CHECK(after["tiers"]["store"]["entries"] == 0);
  // After a clear the same request starts cold and still answers the same.
  const turn_reply again = post_turn(s, chat_body(messages, 1, 8));
  CHECK(again.x_cache["source"] == "cold");
  CHECK(again.message == before.message);
}

TEST_CASE("with --no-cache every turn is cold", "[http][cache]") {
  http_server s({"--reasoning-budget", "6", "--no-cache"});
  json messages = json::array({{{"role", "system"}, {"content", system_prompt}},
                               {{"role", "user"}, {"content", "Read the README."}}});
  for (int turn = 0; turn < 3; ++turn) {
    INFO("turn " << turn);
    const turn_reply t = post_turn(s, chat_body(messages, 300 + turn));
    CHECK(t.x_cache["source"] == "cold");
    CHECK(t.x_cache["prefilled_tokens"] == t.usage["prompt_tokens"]);
    CHECK(t.usage["prompt_tokens_details"]["cached_tokens"] == 0);
    messages.push_back({{"role", "assistant"},
                        {"content", t.message["content"]},
                        {"reasoning_content", t.message["reasoning_content"]}});
    messages.push_back({{"role", "tool"}, {"tool_call_id", "c"}, {"content", "ok " + std::to_string(turn)}});
  }
  const json stats = s.get("/v1/cache/stats").body_json();
  CHECK(stats["tiers"]["resident"]["entries"] == 0);
  CHECK(stats["tiers"]["store"]["entries"] == 0);
}

TEST_CASE("with --end-anchor=off the next turn resumes at a grid anchor", "[http][cache]") {
  http_server s({"--reasoning-budget", "6", "--end-anchor=off"});
  json messages = json::array({{{"role", "system"}, {"content", filler(system_prompt, 150)}},
                               {{"role", "user"}, {"content", "Run the tests."}}});
  const turn_reply first = post_turn(s, chat_body(messages, 5));
  messages.push_back({{"role", "assistant"},
                      {"content", first.message["content"]},
                      {"reasoning_content", first.message["reasoning_content"]}});
  messages.push_back({{"role", "tool"}, {"tool_call_id", "c"}, {"content", "all passed"}});
  const turn_reply second = post_turn(s, chat_body(messages, 6));
  CHECK(second.x_cache["source"] == "resident");
  // The previous prompt's last line: everything after it (the answer included) is re-read.
  CHECK(second.x_cache["resumed_at"] == first.usage["prompt_tokens"].get<long>() / 32 * 32);
}

TEST_CASE("answers that never left their reasoning still resume from the end anchor", "[http][cache][end]") {
  // No reasoning budget and a short max_tokens: every answer is unclosed reasoning and empty
  // content; the client sends the empty answers back with a new question each turn.
  http_server s;
  json messages = json::array(
      {{{"role", "system"}, {"content", system_prompt}}, {{"role", "user"}, {"content", "Think about it."}}});
  std::size_t expected_prefill = 0;
  for (int turn = 0; turn < 4; ++turn) {
    INFO("turn " << turn);
    const turn_reply t = post_turn(s, chat_body(messages, 400 + turn, 30));
    REQUIRE(t.finish_reason == "length");
    CHECK(t.message.value("content", "").empty());
    if (turn > 0) {
      CHECK(t.x_cache["source"] == "end");
      CHECK(t.x_cache["prefilled_tokens"].get<std::size_t>() == expected_prefill);
    }
    messages.push_back({{"role", "assistant"}, {"content", ""}});
    const std::string next = "Question " + std::to_string(turn + 2) + ".";
    messages.push_back({{"role", "user"}, {"content", next}});
    // The client's "</think>\n\n" closing the block and the new message (the pending token was
    // reasoning, which the client dropped).
    expected_prefill = count_tokens("</think>\n\n") + count_tokens(user_glue(next));
  }
}
