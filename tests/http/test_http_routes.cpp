// End-to-end: the routes, as an OpenAI client uses them (a whole server per test case on loopback).
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>

#include "tests/support/http_helpers.hpp"
#include "tests/support/temp_dir.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using namespace std::chrono_literals;

// ---- 1. routes ----------------------------------------------------------------------------------

TEST_CASE("http: /v1/completions with a text prompt, token ids, and streaming", "[http]") {
  http_server s;
  const std::string text = "The quick brown fox";
  const auto ids = tok.encode(text, true);

  const http_reply r =
      s.post_json("/v1/completions", {{"prompt", text}, {"max_tokens", 8}, {"temperature", 0}});
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type").find("application/json") == 0);
  const json j = r.body_json();
  CHECK(j["object"] == "text_completion");
  CHECK(j["id"].get<std::string>().rfind("cmpl-", 0) == 0);
  CHECK(j["model"] == "anchorage");
  CHECK(j["created"].is_number_integer());
  REQUIRE(j["choices"].size() == 1);
  CHECK(j["choices"][0]["index"] == 0);
  CHECK(j["choices"][0]["text"].is_string());
  CHECK(j["choices"][0]["logprobs"].is_null());
  const std::string finish = j["choices"][0]["finish_reason"].get<std::string>();
  CHECK((finish == "stop" || finish == "length"));
  check_usage_and_cache(j);
  CHECK(j["usage"]["prompt_tokens"] == ids.size());
  CHECK(j["usage"]["completion_tokens"].get<long>() <= 8);
  if (finish == "length") CHECK(j["usage"]["completion_tokens"] == 8);

  SECTION("the same prompt as token ids, and as an array of one string, gives the same reply") {
    json by_ids = {{"prompt", ids}, {"max_tokens", 8}, {"temperature", 0}};
    const json k = s.post_json("/v1/completions", by_ids).body_json();
    CHECK(k["choices"][0]["text"] == j["choices"][0]["text"]);
    CHECK(k["choices"][0]["finish_reason"] == j["choices"][0]["finish_reason"]);
    CHECK(k["usage"]["prompt_tokens"] == j["usage"]["prompt_tokens"]);
    CHECK(k["id"] != j["id"]);
    check_usage_and_cache(k);

    const json l = s.post_json("/v1/completions",
                               {{"prompt", json::array({text})}, {"max_tokens", 8}, {"temperature", 0}})
                       .body_json();
    CHECK(l["choices"][0]["text"] == j["choices"][0]["text"]);
    check_usage_and_cache(l);
  }

  SECTION("without max_tokens a completion stops at OpenAI's default of 16") {
    const http_reply d = s.post_json("/v1/completions", {{"prompt", text}, {"temperature", 0}});
    REQUIRE(d.status == 200);
    const json k = d.body_json();
    CHECK(k["usage"]["completion_tokens"].get<long>() <= 16);
    check_usage_and_cache(k);
  }

  SECTION("streaming: text chunks, a finish chunk, the usage chunk, [DONE]") {
    const sse_stream st = s.stream("/v1/completions", {{"prompt", text},
                                                       {"max_tokens", 8},
                                                       {"temperature", 0},
                                                       {"stream", true},
                                                       {"stream_options", {{"include_usage", true}}}});
    INFO(st.raw.substr(0, 600));
    REQUIRE(st.status == 200);
    CHECK(st.content_type.find("text/event-stream") == 0);
    CHECK(st.malformed.empty());
    REQUIRE(st.done());
    CHECK(st.events_after_done == 0);
    const auto chunks = st.chunks();
    REQUIRE(chunks.size() >= 2);
    std::string joined;
    for (std::size_t i = 0; i + 2 < chunks.size(); ++i) {
      CHECK(chunks[i]["object"] == "text_completion");
      CHECK(chunks[i]["choices"][0]["finish_reason"].is_null());
      joined += chunks[i]["choices"][0]["text"].get<std::string>();
    }
    const json& fin = chunks[chunks.size() - 2];
    CHECK(fin["choices"][0]["text"] == "");
    CHECK(fin["choices"][0]["finish_reason"] == j["choices"][0]["finish_reason"]);
    const json& usage = chunks.back();
    CHECK(usage["choices"].empty());
    check_usage_and_cache(usage);
    CHECK(usage["usage"]["prompt_tokens"] == j["usage"]["prompt_tokens"]);
    CHECK(usage["usage"]["completion_tokens"] == j["usage"]["completion_tokens"]);
    CHECK(joined == j["choices"][0]["text"].get<std::string>());
  }
}

TEST_CASE("http: /v1/chat/completions, non-streaming and streaming", "[http]") {
  http_server s;
  const json req = user_chat("Say hello to the tests.", 24);
  const http_reply r = s.post_json("/v1/chat/completions", req);
  REQUIRE(r.status == 200);
  const json j = r.body_json();
  CHECK(j["object"] == "chat.completion");
  CHECK(j["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
  CHECK(j["model"] == "anchorage");
  REQUIRE(j["choices"].size() == 1);
  const json& msg = j["choices"][0]["message"];
  CHECK(msg["role"] == "assistant");
  CHECK(msg["content"].is_string());
  const std::string finish = j["choices"][0]["finish_reason"].get<std::string>();
  CHECK((finish == "stop" || finish == "length"));
  check_usage_and_cache(j);
  CHECK(j["usage"]["completion_tokens"].get<long>() <= 24);

  SECTION("streaming with include_usage: the same output, then a usage chunk with no choices") {
    json sreq = req;
    sreq["stream"] = true;
    sreq["stream_options"] = {{"include_usage", true}};
    const sse_stream st = s.stream("/v1/chat/completions", sreq);
    const chat_stream_summary sum = check_chat_stream(st, /*include_usage=*/true);
    CHECK(sum.content == msg["content"].get<std::string>());
    CHECK(sum.reasoning == msg.value("reasoning_content", ""));
    CHECK(sum.finish_reason == finish);
    // The same tokens; the repeat resumes from the first request's anchors, so only its
    // cached_tokens differ.
    json streamed_usage = sum.usage_chunk["usage"], first_usage = j["usage"];
    CHECK(streamed_usage["prompt_tokens_details"]["cached_tokens"].get<long>() > 0);
    streamed_usage.erase("prompt_tokens_details");
    first_usage.erase("prompt_tokens_details");
    CHECK(streamed_usage == first_usage);
    // SSE comments (": prefill done/total") report the prefill; every stream has at least the last one.
    CHECK(st.comments() >= 1);
    for (const auto& e : st.events)
      if (e.what == sse_event::kind::comment) CHECK(e.text.rfind(": prefill ", 0) == 0);
  }

  SECTION("streaming with return_progress: prompt_progress data chunks instead of the comments") {
    json sreq =
        user_chat("A question long enough to need more than one prefill chunk: " + std::string(300, 'x'), 4);
    sreq["stream"] = true;
    sreq["return_progress"] = true;
    sreq["stream_options"] = {{"include_usage", true}};
    const sse_stream st = s.stream("/v1/chat/completions", sreq);
    REQUIRE(st.status == 200);
    CHECK(st.comments() == 0);
    std::vector<json> progress;
    json usage;
    for (const auto& e : st.events) {
      if (e.what != sse_event::kind::data) continue;
      if (e.data.contains("prompt_progress")) {
        CHECK(e.data["object"] == "chat.completion.chunk");
        CHECK(e.data["choices"].empty());
        progress.push_back(e.data["prompt_progress"]);
      }
      if (e.data.contains("usage") && e.data["usage"].is_object()) usage = e.data["usage"];
    }
    REQUIRE(progress.size() >= 2);  // the prompt spans more than one grid chunk
    REQUIRE(usage.is_object());
    const long total = usage["prompt_tokens"].get<long>();
    for (std::size_t i = 0; i < progress.size(); ++i) {
      CHECK(progress[i]["total"].get<long>() == total);
      CHECK(progress[i]["cache"].get<long>() == usage["prompt_tokens_details"]["cached_tokens"].get<long>());
      if (i > 0) CHECK(progress[i]["processed"].get<long>() > progress[i - 1]["processed"].get<long>());
      if (i > 0) CHECK(progress[i]["time_ms"].get<long>() >= progress[i - 1]["time_ms"].get<long>());
    }
    CHECK(progress.back()["processed"].get<long>() == total);
  }

  SECTION("streaming without include_usage ends with the finish chunk") {
    json sreq = req;
    sreq["stream"] = true;
    const sse_stream st = s.stream("/v1/chat/completions", sreq);
    const chat_stream_summary sum = check_chat_stream(st, /*include_usage=*/false);
    CHECK(sum.content == msg["content"].get<std::string>());
    CHECK(sum.usage_chunk.is_null());
    CHECK(st.raw.find("\"usage\"") == std::string::npos);
  }
}

TEST_CASE("http: /v1/models, /health, /metrics, /v1/cache/stats", "[http]") {
  http_server s;

  const http_reply models = s.get("/v1/models");
  REQUIRE(models.status == 200);
  const json m = models.body_json();
  CHECK(m["object"] == "list");
  REQUIRE(m["data"].size() == 1);
  CHECK(m["data"][0]["id"] == "anchorage");
  CHECK(m["data"][0]["object"] == "model");
  CHECK(m["data"][0]["max_model_len"] == s.config().engine.config().ctx_size);

  const http_reply health = s.get("/health");
  REQUIRE(health.status == 200);
  CHECK(health.body_json() == json({{"status", "ok"}}));

  const http_reply before = s.get("/metrics");
  REQUIRE(before.status == 200);
  CHECK(before.header("Content-Type").find("text/plain") == 0);
  CHECK(before.body.find("# TYPE anchorage_requests_total counter") != std::string::npos);
  CHECK(before.body.find("anchorage_requests_total{") == std::string::npos);

  const http_reply done = s.post_json("/v1/completions", small_completion("metrics please", 3));
  REQUIRE(done.status == 200);
  const json d = done.body_json();

  const http_reply after = s.get("/metrics");
  REQUIRE(after.status == 200);
  const std::string line = "anchorage_requests_total{route=\"completions\",source=\"cold\",finish_reason=\"" +
                           d["choices"][0]["finish_reason"].get<std::string>() + "\"} 1";
  CHECK(after.body.find(line) != std::string::npos);
  CHECK(after.body.find("anchorage_prompt_tokens_total " +
                        std::to_string(d["usage"]["prompt_tokens"].get<long>())) != std::string::npos);
  CHECK(after.body.find("anchorage_queue_depth 0") != std::string::npos);

  const http_reply stats = s.get("/v1/cache/stats");
  REQUIRE(stats.status == 200);
  CHECK(stats.header("Content-Type").find("application/json") == 0);
  const json st = stats.body_json();
  REQUIRE(st.contains("tiers"));
  CHECK(st["tiers"].is_object());
  CHECK(st["requests"]["requests"] == 1);
  CHECK(st["queue"]["waiting"] == 0);
  REQUIRE(st["ledger"].size() == 1);
  const json& e = st["ledger"][0];
  CHECK(e["id"] == d["id"]);
  CHECK(e["route"] == "completions");
  CHECK(e["source"] == "cold");
  CHECK(e["resumed_at"] == 0);
  CHECK(e["prompt_tokens"] == d["usage"]["prompt_tokens"]);
  CHECK(e["prefilled"] == d["usage"]["prompt_tokens"]);
  CHECK(e["output_tokens"] == d["usage"]["completion_tokens"]);
  CHECK(e["finish_reason"] == d["choices"][0]["finish_reason"]);
}

TEST_CASE("http: --served-model-name changes the model id", "[http]") {
  http_server s({"--served-model-name", "x"});
  const json m = s.get("/v1/models").body_json();
  REQUIRE(m["data"].size() == 1);
  CHECK(m["data"][0]["id"] == "x");

  json ok = small_completion();
  ok["model"] = "x";
  const http_reply r = s.post_json("/v1/completions", ok);
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["model"] == "x");

  json wrong = small_completion();
  wrong["model"] = "anchorage";
  check_error_body(s.post_json("/v1/completions", wrong), 404, "not_found_error", "model");
  expect_valid_completion(s);
}

TEST_CASE("http: POST /v1/cache/clear needs the admin token", "[http]") {
  {
    http_server s({"--admin-token", "T"});
    check_error_body(s.post("/v1/cache/clear", ""), 401, "authentication_error");
    check_error_body(s.post("/v1/cache/clear", "", {{"Authorization", "Bearer wrong"}}), 401,
                     "authentication_error");
    check_error_body(s.post("/v1/cache/clear", "", {{"Authorization", "T"}}), 401, "authentication_error");

    const http_reply ok = s.post("/v1/cache/clear", "", {{"Authorization", "Bearer T"}});
    REQUIRE(ok.status == 200);
    const json j = ok.body_json();
    CHECK(j["tier"] == "all");
    CHECK(j["cleared"].is_array());

    const http_reply by_header = s.post("/v1/cache/clear?tier=resident", "", {{"X-Admin-Token", "T"}});
    REQUIRE(by_header.status == 200);
    CHECK(by_header.body_json()["tier"] == "resident");

    check_error_body(s.post("/v1/cache/clear?tier=bogus", "", {{"Authorization", "Bearer T"}}), 400,
                     "invalid_request_error", "tier");
    // A token in the URL is refused whatever its value (logs keep URLs), on every operator route.
    for (const char* url :
         {"/v1/cache/clear?token=T", "/v1/cache/clear?tier=all&admin_token=T", "/v1/cache/clear?api_key=T"})
      check_error_body(s.post(url, "", {{"Authorization", "Bearer T"}}), 400, "invalid_request_error");
    check_error_body(s.get("/v1/cache/stats?access_token=T"), 400, "invalid_request_error", "access_token");
    check_error_body(s.get("/metrics?Auth=T"), 400, "invalid_request_error", "Auth");
    expect_valid_completion(s);
  }
  {
    http_server s;  // no --admin-token: the admin routes are off
    check_error_body(s.post("/v1/cache/clear", ""), 403, "permission_error");
    check_error_body(s.post("/v1/cache/clear", "", {{"Authorization", "Bearer T"}}), 403, "permission_error");
  }
}

// ---- 3. bad input -------------------------------------------------------------------------------

TEST_CASE("http: a --cache-dir anyone may write to is refused at start, naming it", "[http]") {
  temp_dir d("anchorage-http-private");
  const std::string open = d.str() + "/open";
  std::filesystem::create_directory(open);
  ::chmod(open.c_str(), 0777);
  server_config cfg = parse_server_args({"--preset", "tiny", "--cache-dir", open, "--suffix-store", "off"});
  try {
    server s(cfg);
    FAIL("the server started on a world-writable --cache-dir");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("--cache-dir") != std::string::npos);
    CHECK(what.find(open) != std::string::npos);
    CHECK(what.find("world-writable") != std::string::npos);
  }
  ::chmod(open.c_str(), 0755);
  server ok(cfg);                                 // the same folder once only its owner may write to it
  REQUIRE(ok.quiesce(std::chrono::seconds(30)));  // the disk actor's scan made its folder
  CHECK(std::filesystem::is_directory(open + "/disk"));
}
