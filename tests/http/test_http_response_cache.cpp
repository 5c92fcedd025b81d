// End-to-end: the response cache (--response-cache-mb, docs/CACHES.md "The response cache"). An
// identical greedy request is answered with the first answer's tokens, streamed or not, with
// x_cache.source "response" and nothing prefilled; any changed field, an omitted temperature and
// a server without the flag answer live.
#include "tests/support/http_helpers.hpp"

using namespace anchorage;
using namespace anchorage::testing;

namespace {

json greedy_chat(const std::string& text, long max_tokens = 10) {
  return user_chat(text, max_tokens, 0.0);  // an explicit temperature 0
}

struct answer {
  json body;
  json x_cache;
  json usage;
  std::string content;
  std::string finish_reason;
};

answer post_chat(const http_server& s, const json& body) {
  const http_reply r = s.post_json("/v1/chat/completions", body);
  INFO("body: " << r.body.substr(0, 400));
  REQUIRE(r.status == 200);
  answer a;
  a.body = r.body_json();
  a.x_cache = a.body["x_cache"];
  a.usage = a.body["usage"];
  a.content = a.body["choices"][0]["message"].value("content", "");
  a.finish_reason = a.body["choices"][0]["finish_reason"];
  return a;
}

json tiers_of(const http_server& s) { return s.get("/v1/cache/stats").body_json()["tiers"]; }

}  // namespace

TEST_CASE("response cache: an identical greedy request is answered again, streamed and not",
          "[http][response]") {
  http_server s({"--response-cache-mb", "16"});
  const json body = greedy_chat("Tell me about anchors.", 12);
  const answer first = post_chat(s, body);
  CHECK(first.x_cache["source"] != "response");
  CHECK(first.x_cache["prefilled_tokens"].get<long>() > 0);

  const answer again = post_chat(s, body);
  CHECK(again.x_cache["source"] == "response");
  CHECK(again.x_cache["prefilled_tokens"] == 0);
  CHECK(again.content == first.content);
  CHECK(again.finish_reason == first.finish_reason);
  CHECK(again.usage["completion_tokens"] == first.usage["completion_tokens"]);
  CHECK(again.usage["prompt_tokens"] == first.usage["prompt_tokens"]);
  CHECK(again.usage["prompt_tokens_details"]["cached_tokens"] == again.usage["prompt_tokens"]);

  // Streamed: the same deltas' text, the usage chunk's x_cache says where it came from.
  json streamed = body;
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  const chat_stream_summary st = check_chat_stream(s.stream("/v1/chat/completions", streamed), true);
  CHECK(st.content == first.content);
  CHECK(st.finish_reason == first.finish_reason);
  CHECK(st.usage_chunk["x_cache"]["source"] == "response");
  CHECK(st.usage_chunk["x_cache"]["prefilled_tokens"] == 0);

  // top_k 1 with no temperature is greedy too: the same answer.
  json top_k = {{"messages", body["messages"]}, {"max_tokens", 12}, {"top_k", 1}};
  const answer k1 = post_chat(s, top_k);
  CHECK(k1.x_cache["source"] == "response");
  CHECK(k1.content == first.content);

  const json r = tiers_of(s)["response"];
  CHECK(r["enabled"] == true);
  CHECK(r["entries"] == 1);
  CHECK(r["stores"] == 1);
  CHECK(r["hits"] == 3);
  CHECK(r["misses"] == 1);
  CHECK(r["bytes"].get<long>() > 0);
  CHECK(r["limit_bytes"] == 16L << 20);
  const http_reply m = s.get("/metrics");
  REQUIRE(m.status == 200);
  CHECK(m.body.find("anchorage_cache_hits_total{tier=\"response\"} 3") != std::string::npos);
  CHECK(m.body.find("anchorage_cache_stores_total{tier=\"response\"} 1") != std::string::npos);
  CHECK(m.body.find("source=\"response\"") != std::string::npos);
}

TEST_CASE("response cache: a completion hits too, and a changed field misses", "[http][response]") {
  http_server s({"--response-cache-mb", "16"});
  const json c = small_completion("Once upon a time", 8);
  const http_reply c1 = s.post_json("/v1/completions", c);
  REQUIRE(c1.status == 200);
  const http_reply c2 = s.post_json("/v1/completions", c);
  REQUIRE(c2.status == 200);
  CHECK(c2.body_json()["x_cache"]["source"] == "response");
  CHECK(c2.body_json()["choices"][0]["text"] == c1.body_json()["choices"][0]["text"]);

  const json base = greedy_chat("Which tier answered?", 8);
  const answer first = post_chat(s, base);
  REQUIRE(post_chat(s, base).x_cache["source"] == "response");
  const json tool = {{"type", "function"},
                     {"function",
                      {{"name", "ls"},
                       {"description", "list a folder"},
                       {"parameters", {{"type", "object"}, {"properties", json::object()}}}}}};
  const std::vector<std::pair<std::string, std::function<void(json&)>>> changes = {
      {"messages", [](json& b) { b["messages"][0]["content"] = "Which tier answered!"; }},
      {"max_tokens", [](json& b) { b["max_tokens"] = 7; }},
      {"stop", [](json& b) { b["stop"] = json::array({"zq"}); }},
      {"seed", [](json& b) { b["seed"] = 11; }},
      {"logit_bias",
       [](json& b) {
         b["logit_bias"] = {{"65", 2}};
       }},
      {"top_p", [](json& b) { b["top_p"] = 0.5; }},
      {"tools", [&](json& b) { b["tools"] = json::array({tool}); }},
      {"tool_choice",
       [&](json& b) {
         b["tools"] = json::array({tool});
         b["tool_choice"] = "required";
       }},
      {"response_format",
       [](json& b) {
         b["response_format"] = {{"type", "json_object"}};
       }},
      {"enable_thinking",
       [](json& b) {
         b["chat_template_kwargs"] = {{"enable_thinking", false}};
       }},
  };
  for (const auto& [name, change] : changes) {
    INFO("changed: " << name);
    json b = base;
    change(b);
    CHECK(post_chat(s, b).x_cache["source"] != "response");
  }
  // The first answer is still there for the request as it was.
  const answer same = post_chat(s, base);
  CHECK(same.x_cache["source"] == "response");
  CHECK(same.content == first.content);
}

TEST_CASE("response cache: a request without an explicit temperature 0 is never cached", "[http][response]") {
  http_server s({"--response-cache-mb", "16"});
  json omitted = {{"messages", json::array({{{"role", "user"}, {"content", "Sample me."}}})},
                  {"max_tokens", 6},
                  {"seed", 3}};  // an omitted temperature is 1.0: sampled, even with a seed
  CHECK(post_chat(s, omitted).x_cache["source"] != "response");
  CHECK(post_chat(s, omitted).x_cache["source"] != "response");
  json warm = omitted;
  warm["temperature"] = 0.7;
  CHECK(post_chat(s, warm).x_cache["source"] != "response");
  CHECK(post_chat(s, warm).x_cache["source"] != "response");
  json wide = omitted;
  wide["top_k"] = 5;  // not greedy
  CHECK(post_chat(s, wide).x_cache["source"] != "response");
  CHECK(post_chat(s, wide).x_cache["source"] != "response");
  const json r = tiers_of(s)["response"];
  CHECK(r["stores"] == 0);
  CHECK(r["entries"] == 0);
  CHECK(r["hits"] == 0);
}

TEST_CASE("response cache: off by default, and cleared by name when on", "[http][response]") {
  {
    http_server off({"--admin-token", "secret"});
    const json body = greedy_chat("Off by default.", 6);
    CHECK(post_chat(off, body).x_cache["source"] != "response");
    CHECK(post_chat(off, body).x_cache["source"] != "response");
    CHECK(tiers_of(off)["response"] == json({{"enabled", false}}));
    CHECK(off.get("/metrics").body.find("tier=\"response\"") == std::string::npos);
    const http_reply clear =
        off.post("/v1/cache/clear?tier=response", "", {{"Authorization", "Bearer secret"}});
    CHECK(clear.status == 400);
  }
  http_server on({"--response-cache-mb", "16", "--admin-token", "secret"});
  const json body = greedy_chat("Cleared by name.", 6);
  post_chat(on, body);
  REQUIRE(post_chat(on, body).x_cache["source"] == "response");
  const http_reply clear = on.post("/v1/cache/clear?tier=response", "", {{"Authorization", "Bearer secret"}});
  REQUIRE(clear.status == 200);
  CHECK(clear.body_json()["cleared"] == json::array({"response"}));
  CHECK(tiers_of(on)["response"]["entries"] == 0);
  CHECK(post_chat(on, body).x_cache["source"] != "response");
  CHECK(post_chat(on, body).x_cache["source"] == "response");
  const http_reply all = on.post("/v1/cache/clear?tier=all", "", {{"Authorization", "Bearer secret"}});
  REQUIRE(all.status == 200);
  CHECK(all.body_json()["cleared"] == json::array({"resident", "store", "response"}));
  CHECK(post_chat(on, body).x_cache["source"] != "response");
}
