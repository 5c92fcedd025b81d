// End-to-end tests of the HTTP server: a whole `server` (edge, conductor, board, engine) per
// test case on a loopback port, driven with httplib clients exactly as an OpenAI client would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "http_fixture.hpp"
#include "runtime/chat_template.hpp"
#include "runtime/engine.hpp"
#include "runtime/generator.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/output_parser.hpp"
#include "runtime/tokenizer.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using namespace std::chrono_literals;

namespace {

const tokenizer tok;

json user_chat(const std::string& text, long max_tokens, double temperature = 0.0) {
  return {{"messages", json::array({{{"role", "user"}, {"content", text}}})},
          {"max_tokens", max_tokens},
          {"temperature", temperature}};
}

json small_completion(const std::string& text = "Hello there", long max_tokens = 4) {
  return {{"prompt", text}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

// A request every test can use to show the server still works.
void expect_valid_completion(const http_server& s) {
  const http_reply r = s.post_json("/v1/completions", small_completion());
  INFO(r.body.substr(0, 300));
  REQUIRE(r.status == 200);
  const json j = r.body_json();
  CHECK(j["object"] == "text_completion");
  CHECK(j["choices"][0]["text"].is_string());
  check_usage_and_cache(j);
}

// The engine's own output for `prompt`, from an engine built as the server builds its own
// (same config, same random weights seed), with the server's stop tokens.
struct engine_run {
  std::vector<token_id> tokens;
  finish_reason reason = finish_reason::none;
};
engine_run run_engine(const server_config& cfg, const std::vector<token_id>& prompt, int max_tokens,
                      sampling_params sampling = {}) {
  const model_config c = cfg.engine.config();
  engine e(c, random_weights(c, cfg.engine.weights_seed));
  e.prefill(prompt);
  generation_request req;
  req.sampling = sampling;
  req.max_tokens = max_tokens;
  req.stop_tokens = {special_tokens::im_end, special_tokens::endoftext};
  generator g(e, req);
  engine_run out;
  out.tokens = g.run();
  out.reason = g.reason();
  return out;
}

// What the server makes of generated tokens (reasoning, content, tool calls).
assistant_output parse_tokens(const std::vector<token_id>& ids, bool reasoning, bool tools) {
  output_parser p(reasoning, tools);
  for (token_id t : ids) p.feed(t);
  p.finish();
  return p.result();
}

std::string finish_name(finish_reason r) { return r == finish_reason::stop ? "stop" : "length"; }

// A chat stream's deltas put back together, plus the checks every chat stream must pass:
// every data line JSON, the role chunk first, one id throughout, one finish chunk, the usage
// chunk (choices empty) last when asked for, then [DONE] and nothing after it.
struct chat_stream_summary {
  std::string id;
  std::string reasoning;
  std::string content;
  json tool_calls = json::array();
  std::string finish_reason;
  json usage_chunk;  // null unless include_usage
};
chat_stream_summary check_chat_stream(const sse_stream& s, bool include_usage) {
  INFO("stream: " << s.raw.substr(0, 800));
  REQUIRE(s.status == 200);
  CHECK(s.content_type.find("text/event-stream") == 0);
  CHECK(s.malformed.empty());
  REQUIRE(s.done());
  CHECK(s.events.back().what == sse_event::kind::done);
  CHECK(s.events_after_done == 0);
  CHECK(s.pending_.empty());
  const std::vector<json> chunks = s.chunks();
  REQUIRE(chunks.size() >= 2);
  chat_stream_summary out;
  out.id = chunks.front().value("id", "");
  CHECK(out.id.rfind("chatcmpl-", 0) == 0);
  // the role chunk
  REQUIRE(chunks.front()["choices"].size() == 1);
  CHECK(chunks.front()["choices"][0]["delta"] == json({{"role", "assistant"}, {"content", ""}}));
  CHECK(chunks.front()["choices"][0]["finish_reason"].is_null());
  std::size_t finishes = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const json& c = chunks[i];
    INFO("chunk " << i << ": " << c.dump());
    CHECK(c["object"] == "chat.completion.chunk");
    CHECK(c["id"] == out.id);
    CHECK(c["model"].is_string());
    CHECK(c["created"].is_number_integer());
    REQUIRE(c["choices"].is_array());
    const bool last = i + 1 == chunks.size();
    if (include_usage && last) {
      CHECK(c["choices"].empty());
      check_usage_and_cache(c);
      out.usage_chunk = c;
      continue;
    }
    CHECK_FALSE(c.contains("usage"));
    REQUIRE(c["choices"].size() == 1);
    const json& ch = c["choices"][0];
    CHECK(ch["index"] == 0);
    if (!ch["finish_reason"].is_null()) {
      ++finishes;
      out.finish_reason = ch["finish_reason"].get<std::string>();
      CHECK(ch["delta"] == json::object());
      CHECK(i + (include_usage ? 2 : 1) == chunks.size());
      continue;
    }
    const json& d = ch["delta"];
    if (i == 0) continue;
    if (d.contains("reasoning_content")) out.reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) out.content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const json& t : d["tool_calls"]) out.tool_calls.push_back(t);
  }
  CHECK(finishes == 1);
  if (!include_usage) CHECK_FALSE(chunks.back()["choices"].empty());
  return out;
}

// A POST written by hand on a raw socket, for what httplib's client will not send. Reads the
// reply until the server closes the connection (at most `timeout_s`).
struct raw_reply {
  int status = -1;
  std::string head, body;
};
raw_reply raw_http(int port, const std::string& request, bool half_close, int timeout_s = 10) {
  raw_reply out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string all;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    all.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto split = all.find("\r\n\r\n");
  out.head = all.substr(0, split);
  if (split != std::string::npos) out.body = all.substr(split + 4);
  if (all.rfind("HTTP/1.1 ", 0) == 0) out.status = std::atoi(all.c_str() + 9);
  return out;
}

}  // namespace

// ---- 1. routes ----------------------------------------------------------------------------------

TEST_CASE("http: /v1/completions with a text prompt, token ids, and streaming", "[http]") {
  http_server s;
  const std::string text = "The quick brown fox";
  const auto ids = tok.encode(text, true);

  const http_reply r = s.post_json("/v1/completions", {{"prompt", text}, {"max_tokens", 8}, {"temperature", 0}});
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

    const json l = s.post_json("/v1/completions", {{"prompt", json::array({text})}, {"max_tokens", 8}, {"temperature", 0}})
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
    CHECK(sum.usage_chunk["usage"] == j["usage"]);
    // SSE comments (": prefill done/total") report the prefill; every stream has at least the last one.
    CHECK(st.comments() >= 1);
    for (const auto& e : st.events)
      if (e.what == sse_event::kind::comment) CHECK(e.text.rfind(": prefill ", 0) == 0);
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
  CHECK(after.body.find("anchorage_prompt_tokens_total " + std::to_string(d["usage"]["prompt_tokens"].get<long>())) !=
        std::string::npos);
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
    check_error_body(s.post("/v1/cache/clear", "", {{"Authorization", "Bearer wrong"}}), 401, "authentication_error");
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
    expect_valid_completion(s);
  }
  {
    http_server s;  // no --admin-token: the admin routes are off
    check_error_body(s.post("/v1/cache/clear", ""), 403, "permission_error");
    check_error_body(s.post("/v1/cache/clear", "", {{"Authorization", "Bearer T"}}), 403, "permission_error");
  }
}

// ---- 3. bad input -------------------------------------------------------------------------------

TEST_CASE("http: bad input gets a 4xx JSON error and the server keeps serving", "[http]") {
  http_server s({"--ctx-size", "512", "--max-body-mb", "1"});
  const std::string completions = "/v1/completions", chat = "/v1/chat/completions";
  const json chat_ok = user_chat("hi", 2);

  struct bad {
    const char* what;
    std::string path;
    std::string body;
    int status;
    const char* type;
    std::optional<std::string> param;  // "" = null
  };
  auto with = [](json j, const char* key, json v) {
    j[key] = std::move(v);
    return j.dump();
  };
  const std::vector<bad> cases = {
      {"malformed JSON", completions, "{\"prompt\": \"a\", ", 400, "invalid_request_error", std::string()},
      {"malformed JSON (chat)", chat, "{messages: []}", 400, "invalid_request_error", std::string()},
      {"not an object", chat, "[1, 2, 3]", 400, "invalid_request_error", std::string()},
      {"empty body", completions, "", 400, "invalid_request_error", std::string()},
      {"max_tokens a string", completions, with(small_completion(), "max_tokens", "10"), 400, "invalid_request_error", "max_tokens"},
      {"max_tokens 0", completions, with(small_completion(), "max_tokens", 0), 400, "invalid_request_error", "max_tokens"},
      {"max_tokens -1", chat, with(chat_ok, "max_tokens", -1), 400, "invalid_request_error", "max_tokens"},
      {"max_tokens 1.5", completions, with(small_completion(), "max_tokens", 1.5), 400, "invalid_request_error", "max_tokens"},
      {"temperature a string", chat, with(chat_ok, "temperature", "hot"), 400, "invalid_request_error", "temperature"},
      {"temperature out of range", completions, with(small_completion(), "temperature", 3), 400, "invalid_request_error", "temperature"},
      {"messages not an array", chat, with(chat_ok, "messages", "hello"), 400, "invalid_request_error", "messages"},
      {"messages empty", chat, with(chat_ok, "messages", json::array()), 400, "invalid_request_error", "messages"},
      {"no messages", chat, json({{"max_tokens", 2}}).dump(), 400, "invalid_request_error", "messages"},
      {"no prompt", completions, json({{"max_tokens", 2}}).dump(), 400, "invalid_request_error", "prompt"},
      {"unknown model", chat, with(chat_ok, "model", "gpt-17"), 404, "not_found_error", "model"},
      {"unknown model (completions)", completions, with(small_completion(), "model", "nope"), 404, "not_found_error", "model"},
      {"prompt longer than the context", completions, with(small_completion(), "prompt", std::string(600, 'a')), 400,
       "invalid_request_error", "prompt"},
      {"prompt of exactly the context", completions, with(small_completion(), "prompt", json(std::vector<int>(512, 97))), 400,
       "invalid_request_error", "prompt"},
      {"chat longer than the context", chat, user_chat(std::string(600, 'b'), 4).dump(), 400, "invalid_request_error", "messages"},
      {"token id outside the vocabulary", completions, with(small_completion(), "prompt", json::array({1, 2, 272})), 400,
       "invalid_request_error", "prompt"},
  };
  SECTION("each refused, each followed by a valid request") {
    for (const bad& b : cases) {
      INFO(b.what);
      check_error_body(s.post(b.path, b.body), b.status, b.type, b.param);
      expect_valid_completion(s);
    }
  }

  SECTION("a prompt one token short of the context still gets its one token") {
    const http_reply r = s.post_json(completions, {{"prompt", std::vector<int>(511, 97)}, {"max_tokens", 100}, {"temperature", 0}});
    REQUIRE(r.status == 200);
    const json j = r.body_json();
    check_usage_and_cache(j);
    CHECK(j["usage"]["prompt_tokens"] == 511);
    CHECK(j["usage"]["completion_tokens"].get<long>() <= 1);
    expect_valid_completion(s);
  }

  SECTION("an oversized body: 413") {
    const std::string huge = json({{"prompt", std::string(2u << 20, 'z')}, {"max_tokens", 1}}).dump();
    check_error_body(s.post(completions, huge), 413, "invalid_request_error", std::string());
    expect_valid_completion(s);
  }

  SECTION("unknown routes: 404 JSON") {
    check_error_body(s.get("/v1/nothing"), 404, "not_found_error", std::string());
    check_error_body(s.post("/v1/embeddings", "{}"), 404, "not_found_error", std::string());
    check_error_body(s.get("/v1/completions"), 404, "not_found_error", std::string());
    expect_valid_completion(s);
  }
}

TEST_CASE("http: a POST without Content-Length", "[http]") {
  http_server s;
  const std::string completions = "/v1/completions";
  const std::string body = small_completion().dump();

  SECTION("httplib sends a body of unknown length chunked: the server reads it whole") {
    // Transfer-Encoding: chunked and no Content-Length
    auto c = s.client();
    auto res = c->Post(
        completions.c_str(),
        [&body](std::size_t offset, httplib::DataSink& sink) {
          if (offset < body.size()) sink.write(body.data() + offset, body.size() - offset);
          else sink.done();
          return true;
        },
        "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    check_usage_and_cache(json::parse(res->body));
    CHECK(res.get_request_header_value("Content-Length").empty());
    CHECK(res.get_request_header_value("Transfer-Encoding") == "chunked");
    expect_valid_completion(s);
  }

  SECTION("by hand, neither Content-Length nor chunked: a 400 JSON error once the server stops waiting") {
    // The server cannot tell where such a body ends: it reads until its read timeout (httplib's
    // 5 s) and answers 400. (A client that half-closes its side after the body instead gets no
    // reply at all: httplib takes a half-closed socket for a client gone, though it still runs
    // the request.)
    const raw_reply raw = raw_http(s.port(),
                                   "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                   "Connection: close\r\n\r\n" + body,
                                   /*half_close=*/false, /*timeout_s=*/20);
    INFO(raw.head << "\n\n" << raw.body.substr(0, 300));
    REQUIRE(raw.status == 400);
    CHECK(raw.head.find("Content-Type: application/json") != std::string::npos);
    const json j = json::parse(raw.body, nullptr, false);
    REQUIRE(j.is_object());
    REQUIRE(j["error"].is_object());
    CHECK(j["error"]["type"] == "invalid_request_error");
    CHECK(j["error"]["message"].get<std::string>().find("Content-Length") != std::string::npos);
    CHECK(j["error"].contains("param"));
    CHECK(j["error"].contains("code"));
    expect_valid_completion(s);
  }

  SECTION("no body at all: httplib sends Content-Length 0, and an empty body is not JSON") {
    check_error_body(s.post(completions, ""), 400, "invalid_request_error", std::string());
    expect_valid_completion(s);
  }
}

// runtime/prompt_render.hpp: a prompt that leaves no room is a 400 "with code
// context_length_exceeded" (OpenAI's code, which clients such as opencode look for to compact
// their history). When this test was written api_error had no code and every error said
// "code": null; api_error::code has since been added.
TEST_CASE("http: a prompt longer than the context says context_length_exceeded", "[http]") {
  http_server s({"--ctx-size", "512"});
  const http_reply r = s.post_json("/v1/chat/completions", user_chat(std::string(600, 'b'), 4));
  check_error_body(r, 400, "invalid_request_error", "messages");
  CHECK(r.body_json()["error"]["code"] == "context_length_exceeded");
  const http_reply c = s.post_json("/v1/completions", small_completion(std::string(512, 'c')));
  check_error_body(c, 400, "invalid_request_error", "prompt");
  CHECK(c.body_json()["error"]["code"] == "context_length_exceeded");
  expect_valid_completion(s);
}

// ---- 4. an opencode-shaped conversation ----------------------------------------------------------

namespace {

std::string filler(const std::string& seed_text, std::size_t n) {
  std::string out;
  while (out.size() < n) out += seed_text;
  out.resize(n);
  return out;
}

// A system prompt of `system_chars` characters and ten tool definitions whose JSON totals about
// `tools_chars` characters (long descriptions, real parameter schemas), as opencode sends them.
struct opencode_shape {
  std::string system;
  json tools = json::array();
};
opencode_shape make_opencode_shape(std::size_t system_chars, std::size_t tools_chars) {
  opencode_shape out;
  out.system = filler(
      "You are opencode, an interactive CLI tool that helps users with software engineering tasks. "
      "Use the instructions below and the tools available to you to assist the user. IMPORTANT: Refuse to write "
      "code or explain code that may be used maliciously. When the user asks about a file, read it first. "
      "Keep your responses short: fewer than four lines unless the user asks for detail. Follow the existing "
      "conventions of the codebase, mimic its style, use its libraries and utilities.\n\n",
      system_chars);
  auto prop = [](const char* type, const char* desc) { return json{{"type", type}, {"description", desc}}; };
  const std::vector<std::pair<const char*, json>> specs = {
      {"bash", {{"command", prop("string", "The command to execute")},
                {"timeout", prop("number", "Optional timeout in milliseconds (max 600000)")},
                {"description", prop("string", "Clear, concise description of what this command does in 5-10 words")}}},
      {"read", {{"filePath", prop("string", "The absolute path to the file to read")},
                {"offset", prop("number", "The line number to start reading from (0-based)")},
                {"limit", prop("number", "The number of lines to read (defaults to 2000)")}}},
      {"write", {{"filePath", prop("string", "The absolute path to the file to write (must be absolute, not relative)")},
                 {"content", prop("string", "The content to write to the file")}}},
      {"edit", {{"filePath", prop("string", "The absolute path to the file to modify")},
                {"oldString", prop("string", "The text to replace")},
                {"newString", prop("string", "The text to replace it with (must be different from oldString)")},
                {"replaceAll", prop("boolean", "Replace all occurrences of oldString (default false)")}}},
      {"glob", {{"pattern", prop("string", "The glob pattern to match files against")},
                {"path", prop("string", "The directory to search in. Defaults to the current working directory.")}}},
      {"grep", {{"pattern", prop("string", "The regex pattern to search for in file contents")},
                {"path", prop("string", "The directory to search in. Defaults to the current working directory.")},
                {"include", prop("string", "File pattern to include in the search (e.g. \"*.js\", \"*.{ts,tsx}\")")}}},
      {"list", {{"path", prop("string", "The absolute path to the directory to list (must be absolute, not relative)")},
                {"ignore", {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "List of glob patterns to ignore"}}}}},
      {"webfetch", {{"url", prop("string", "The URL to fetch content from")},
                    {"format", {{"type", "string"}, {"enum", {"text", "markdown", "html"}}, {"description", "The format to return"}}},
                    {"timeout", prop("number", "Optional timeout in seconds (max 120)")}}},
      {"todowrite", {{"todos", {{"type", "array"},
                                {"items", {{"type", "object"},
                                           {"properties", {{"content", prop("string", "Brief description of the task")},
                                                           {"status", prop("string", "pending, in_progress, completed, cancelled")},
                                                           {"priority", prop("string", "high, medium, low")},
                                                           {"id", prop("string", "Unique identifier for the todo item")}}},
                                           {"required", {"content", "status", "priority", "id"}}}},
                                {"description", "The updated todo list"}}}}},
      {"task", {{"description", prop("string", "A short (3-5 words) description of the task")},
                {"prompt", prop("string", "The task for the agent to perform")},
                {"subagent_type", prop("string", "The type of specialized agent to use for this task")}}},
  };
  std::vector<json> tools;
  std::size_t bare = 0;
  for (const auto& [name, props] : specs) {
    json required = json::array();
    for (const auto& [k, v] : props.items()) required.push_back(k);
    json t = {{"type", "function"},
              {"function", {{"name", name},
                            {"description", ""},
                            {"parameters", {{"type", "object"},
                                            {"properties", props},
                                            {"required", required},
                                            {"additionalProperties", false},
                                            {"$schema", "http://json-schema.org/draft-07/schema#"}}}}}};
    bare += t.dump().size();
    tools.push_back(std::move(t));
  }
  const std::size_t each = tools_chars > bare ? (tools_chars - bare) / tools.size() : 0;
  for (json& t : tools) {
    t["function"]["description"] = filler(
        "Use the " + t["function"]["name"].get<std::string>() +
            " tool when the task needs it. Usage notes: always prefer specialized tools over shell commands; "
            "batch independent calls together; never guess paths, list or glob first; report failures verbatim. ",
        each);
    out.tools.push_back(std::move(t));
  }
  return out;
}

// The conversation as the chat template sees it (independent of the server's request parser).
std::vector<chat_message> to_messages(const json& messages) {
  std::vector<chat_message> out;
  for (const json& m : messages) {
    chat_message c;
    c.role = m["role"].get<std::string>();
    if (m.contains("content") && m["content"].is_string()) c.content = m["content"].get<std::string>();
    if (m.contains("reasoning_content")) c.reasoning_content = m["reasoning_content"].get<std::string>();
    if (m.contains("tool_calls"))
      for (const json& t : m["tool_calls"])
        c.tool_calls.push_back({t["id"].get<std::string>(), t["function"]["name"].get<std::string>(),
                                t["function"]["arguments"].get<std::string>()});
    if (m.contains("tool_call_id")) c.tool_call_id = m["tool_call_id"].get<std::string>();
    out.push_back(std::move(c));
  }
  return out;
}

long rendered_tokens(const json& messages, const json& tools) {
  template_options t;
  t.tools = tools;
  return static_cast<long>(tok.encode(render_chat(to_messages(messages), t), true).size());
}

// opencode's first request, then its follow-ups on the same server: on a context of the longest
// prompt plus `room` tokens, or without `room` on the preset's own (32768).
void run_opencode_conversation(std::size_t system_chars, std::size_t tools_chars, std::optional<long> room) {
  const opencode_shape shape = make_opencode_shape(system_chars, tools_chars);
  std::size_t tools_json = 0;
  for (const json& t : shape.tools) tools_json += t.dump().size();
  INFO("system prompt " << shape.system.size() << " chars, tools " << tools_json << " chars of JSON");
  CHECK(shape.system.size() == system_chars);
  CHECK(shape.tools.size() == 10);
  CHECK(tools_json > tools_chars * 95 / 100);
  CHECK(tools_json < tools_chars * 105 / 100);

  const json first_messages = json::array(
      {{{"role", "system"}, {"content", shape.system}},
       {{"role", "user"}, {"content", "List the files in src and show me main.cpp, then tell me what it does."}}});
  // The assistant's reply as opencode sends it back: reasoning_content, null content, two calls.
  const json assistant = {
      {"role", "assistant"},
      {"content", nullptr},
      {"reasoning_content", "The user wants the files in src and the contents of main.cpp.\nI will list the directory "
                            "and read the file in one batch, then summarise."},
      {"tool_calls", json::array({{{"id", "call_0"}, {"type", "function"},
                                   {"function", {{"name", "list"}, {"arguments", "{\"path\": \"/work/src\"}"}}}},
                                  {{"id", "call_1"}, {"type", "function"},
                                   {"function", {{"name", "read"}, {"arguments", "{\"filePath\":\"/work/src/main.cpp\",\"limit\":200}"}}}}})}};
  const json list_result = {{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", "main.cpp\nutil.cpp\nutil.hpp\nCMakeLists.txt"}};
  const json read_result = {{"role", "tool"},
                            {"tool_call_id", "call_1"},
                            {"content", "#include \"util.hpp\"\n\nint main(int argc, char** argv) {\n  return run(argc, argv);\n}\n"}};
  json continuation = first_messages;  // the agent loop: the tool results go straight back
  continuation.push_back(assistant);
  continuation.push_back(list_result);
  continuation.push_back(read_result);
  json follow_up = continuation;  // and then the user says something new
  follow_up.push_back({{"role", "user"}, {"content", "Now add a --verbose flag to main and wire it through run()."}});

  const long first_tokens = rendered_tokens(first_messages, shape.tools);
  const long continuation_tokens = rendered_tokens(continuation, shape.tools);
  const long follow_up_tokens = rendered_tokens(follow_up, shape.tools);
  // The continuation keeps the reasoning (it follows the last user query) and the calls; the
  // follow-up's new user query drops the reasoning of the earlier turn, as Qwen3's template does.
  json without_reasoning = continuation;
  without_reasoning[2].erase("reasoning_content");
  REQUIRE(continuation_tokens > rendered_tokens(without_reasoning, shape.tools));
  json without_calls = continuation;
  without_calls[2].erase("tool_calls");
  REQUIRE(continuation_tokens > rendered_tokens(without_calls, shape.tools));

  // the continuation keeps the reasoning the follow-up drops: either may be the longer
  const long longest = std::max(continuation_tokens, follow_up_tokens);
  const long ctx = room ? longest + *room : preset_config("tiny").ctx_size;
  REQUIRE(longest < ctx);
  INFO("prompts " << first_tokens << ", " << continuation_tokens << ", " << follow_up_tokens << " tokens; ctx " << ctx);
  http_server s({"--ctx-size", std::to_string(ctx)});

  auto request = [&](const json& messages) {
    return json{{"model", "anchorage"},
                {"messages", messages},
                {"tools", shape.tools},
                {"tool_choice", "auto"},
                {"stream", true},
                {"stream_options", {{"include_usage", true}}},
                {"max_tokens", 32000}};
  };
  // max_tokens 32000 is more than the context has left: it is clamped, not refused.
  auto check_turn = [&](const json& messages, long expected_prompt) {
    const sse_stream st = s.stream("/v1/chat/completions", request(messages));
    const chat_stream_summary sum = check_chat_stream(st, /*include_usage=*/true);
    const json& usage = sum.usage_chunk["usage"];
    CHECK(usage["prompt_tokens"] == expected_prompt);
    const long completion = usage["completion_tokens"].get<long>();
    CHECK(completion <= ctx - expected_prompt);
    CHECK((sum.finish_reason == "stop" || sum.finish_reason == "length" || sum.finish_reason == "tool_calls"));
    if (sum.finish_reason == "length") CHECK(completion == ctx - expected_prompt);
    CHECK(sum.usage_chunk["x_cache"]["prefilled_tokens"] == expected_prompt);
  };
  {
    INFO("first request");
    check_turn(first_messages, first_tokens);
  }
  {
    INFO("continuation: assistant reasoning and tool calls, then the tool results");
    check_turn(continuation, continuation_tokens);
  }
  {
    INFO("follow-up: a new user message after the tool results");
    check_turn(follow_up, follow_up_tokens);
  }
  expect_valid_completion(s);
}

}  // namespace

// The real sizes (~10k characters of system prompt, ~21k of tool JSON: ~31.5k tokens with the
// byte-level tokenizer) take about 35 s per prefill on the CPU engine (its attention is
// quadratic; the three turns took 98 s here), too slow for every run: the [http] case runs the
// same conversation at a quarter of the size with a context just big enough for it; the hidden
// case, run with `anchorage_tests "[http-full]"`, runs the real sizes on the preset's 32768-token
// context. (It is not tagged [http], which would select it despite [.].)
TEST_CASE("http: an opencode-shaped conversation (quarter size)", "[http][opencode]") {
  // the context: the longest prompt plus 64 tokens, so that max_tokens 32000 is clamped to a few
  // hundred tokens on the first turn and to at most a hundred or so on the others
  run_opencode_conversation(2500, 5250, 64);
}

TEST_CASE("http: an opencode-shaped conversation (full size)", "[.][http-full]") {
  run_opencode_conversation(10000, 21000, std::nullopt);
}

// ---- 5. greedy output over HTTP equals the engine's ---------------------------------------------

TEST_CASE("http: greedy output over HTTP equals the engine's own", "[http]") {
  http_server s;
  const server_config& cfg = s.config();

  std::vector<token_id> prompt;
  for (const char* p = "In the beginning "; *p; ++p) prompt.push_back(static_cast<unsigned char>(*p));
  prompt.push_back(special_tokens::im_start);
  for (int i = 0; i < 24; ++i) prompt.push_back(static_cast<token_id>((i * 37 + 11) % 256));

  SECTION("/v1/completions with token ids") {
    const http_reply r = s.post_json("/v1/completions", {{"prompt", prompt}, {"max_tokens", 20}, {"temperature", 0}});
    REQUIRE(r.status == 200);
    const json j = r.body_json();
    check_usage_and_cache(j);

    const engine_run want = run_engine(cfg, prompt, 20);
    const assistant_output out = parse_tokens(want.tokens, false, false);
    INFO("engine: " << want.tokens.size() << " tokens, " << finish_name(want.reason));
    CHECK(j["choices"][0]["text"] == out.content);
    CHECK(j["usage"]["completion_tokens"] == want.tokens.size());
    CHECK(j["usage"]["prompt_tokens"] == prompt.size());
    CHECK(j["choices"][0]["finish_reason"] == finish_name(want.reason));
  }

  SECTION("a stop string cuts the text where it first appears, streamed or not") {
    const engine_run want = run_engine(cfg, prompt, 60);
    const std::string text = parse_tokens(want.tokens, false, false).content;
    // two printable ASCII characters from the middle of the engine's text
    std::string stop;
    for (std::size_t i = 4; i + 2 <= text.size() && stop.empty(); ++i)
      if (text[i] >= 0x21 && text[i] < 0x7f && text[i + 1] >= 0x21 && text[i + 1] < 0x7f) stop = text.substr(i, 2);
    INFO("engine text: " << json(text).dump() << ", stop " << json(stop).dump());
    REQUIRE_FALSE(stop.empty());
    const std::string expected = text.substr(0, text.find(stop));
    const json body = {{"prompt", prompt}, {"max_tokens", 60}, {"temperature", 0}, {"stop", json::array({stop, "\u00ff never"})}};
    const json j = s.post_json("/v1/completions", body).body_json();
    CHECK(j["choices"][0]["text"] == expected);
    CHECK(j["choices"][0]["finish_reason"] == "stop");
    check_usage_and_cache(j);

    json sbody = body;
    sbody["stream"] = true;
    const sse_stream st = s.stream("/v1/completions", sbody);
    REQUIRE(st.status == 200);
    REQUIRE(st.done());
    std::string joined;
    for (const json& c : st.chunks()) joined += c["choices"][0]["text"].get<std::string>();
    CHECK(joined == expected);  // the stop string never reaches the client
  }

  SECTION("/v1/chat/completions, against the engine fed the rendered chat") {
    const json messages = json::array({{{"role", "system"}, {"content", "You are terse."}},
                                       {{"role", "user"}, {"content", "Name three colours."}}});
    const http_reply r = s.post_json("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 20}, {"temperature", 0}});
    REQUIRE(r.status == 200);
    const json j = r.body_json();
    check_usage_and_cache(j);

    const auto prompt = tok.encode(render_chat(to_messages(messages), template_options{}), true);
    const engine_run want = run_engine(cfg, prompt, 20);
    const assistant_output out = parse_tokens(want.tokens, /*reasoning=*/true, /*tools=*/false);
    INFO("engine: " << want.tokens.size() << " tokens, " << finish_name(want.reason));
    const json& msg = j["choices"][0]["message"];
    CHECK(msg["content"] == out.content);
    CHECK(msg.value("reasoning_content", "") == out.reasoning);
    CHECK(j["usage"]["prompt_tokens"] == prompt.size());
    CHECK(j["usage"]["completion_tokens"] == want.tokens.size());
    CHECK(j["choices"][0]["finish_reason"] == finish_name(want.reason));
  }
}

// ---- 6. seeded sampling -------------------------------------------------------------------------

TEST_CASE("http: seeded sampling is reproducible", "[http]") {
  http_server s;
  const json req = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 1.0}, {"seed", 42}};
  const json a = s.post_json("/v1/completions", req).body_json();
  const json b = s.post_json("/v1/completions", req).body_json();
  check_usage_and_cache(a);
  CHECK(a["choices"][0]["text"] == b["choices"][0]["text"]);
  CHECK(a["usage"] == b["usage"]);
  CHECK(a["choices"][0]["finish_reason"] == b["choices"][0]["finish_reason"]);

  // and it is the engine's own sampling with that seed
  sampling_params sp;
  sp.temperature = 1.0f;
  sp.seed = 42;
  const engine_run want = run_engine(s.config(), tok.encode("Once upon a time", true), 24, sp);
  CHECK(a["choices"][0]["text"] == parse_tokens(want.tokens, false, false).content);
  CHECK(a["usage"]["completion_tokens"] == want.tokens.size());

  // the chat route too, streamed and not
  json chat = user_chat("Pick a number.", 24, 1.0);
  chat["seed"] = 42;
  const json c1 = s.post_json("/v1/chat/completions", chat).body_json();
  const json c2 = s.post_json("/v1/chat/completions", chat).body_json();
  CHECK(c1["choices"][0]["message"] == c2["choices"][0]["message"]);
  chat["stream"] = true;
  const chat_stream_summary st = check_chat_stream(s.stream("/v1/chat/completions", chat), false);
  CHECK(st.content == c1["choices"][0]["message"]["content"].get<std::string>());
  CHECK(st.reasoning == c1["choices"][0]["message"].value("reasoning_content", ""));
}

// ---- 7. a client that goes away ------------------------------------------------------------------

TEST_CASE("http: a client that disconnects mid-stream cancels its generation", "[http]") {
  // Weights seed 7 and this message: greedy decoding runs the whole 2000 tokens without a stop
  // token (checked against the engine when the test fails: 2000 engine decode steps are too slow
  // to run every time on a loaded machine, OpenBLAS threads each tiny gemv), so only a cancel can
  // end it early.
  http_server s({"--decode-block", "1", "--ctx-size", "4096", "--weights-seed", "7"});
  const json messages = json::array({{{"role", "user"}, {"content", "Tell me a long story, number 14."}}});
  const json req = {{"messages", messages}, {"max_tokens", 2000}, {"temperature", 0}, {"stream", true}};
  const sse_stream st = s.stream("/v1/chat/completions", req, [](const sse_stream& so_far) {
    return so_far.chunks().size() < 4;  // the role chunk and three deltas, then hang up
  });
  REQUIRE(st.status == 200);
  REQUIRE(st.aborted);
  CHECK_FALSE(st.done());
  const auto chunks = st.chunks();
  REQUIRE_FALSE(chunks.empty());
  const std::string id = chunks.front()["id"].get<std::string>();

  const std::optional<json> entry = s.ledger_entry_of(id, 10s);
  REQUIRE(entry.has_value());
  INFO(entry->dump());
  if ((*entry)["finish_reason"] != "cancelled") {
    // was the premise still true? what the engine does with no client going away
    const auto prompt = tok.encode(render_chat(to_messages(messages), template_options{}), true);
    const engine_run natural = run_engine(s.config(), prompt, 2000);
    INFO("uncancelled, the engine emits " << natural.tokens.size() << " tokens and finishes by " << finish_name(natural.reason));
    CHECK(natural.reason == finish_reason::length);
  }
  CHECK((*entry)["finish_reason"] == "cancelled");
  CHECK((*entry)["output_tokens"].get<long>() < 1000);
  CHECK((*entry)["output_tokens"].get<long>() >= 3);

  const std::string metrics = s.get("/metrics").body;
  CHECK(metrics.find("anchorage_requests_total{route=\"chat\",source=\"cold\",finish_reason=\"cancelled\"} 1") !=
        std::string::npos);
  CHECK(s.get("/v1/cache/stats").body_json()["queue"]["running"] == false);
  expect_valid_completion(s);
}

// ---- 8. queueing --------------------------------------------------------------------------------

namespace {

// A streaming request run from a second thread, which reads until the first event (then the
// request is the board's), waits for release(), and hangs up.
class held_stream {
 public:
  held_stream(const http_server& s, json body, bool hang_up) : hang_up_(hang_up) {
    thread_ = std::thread([this, &s, body = std::move(body)] {
      result_ = s.stream("/v1/completions", body, [this](const sse_stream&) {
        std::unique_lock<std::mutex> lock(mu_);
        started_ = true;
        cv_.notify_all();
        if (!hang_up_) return true;
        cv_.wait_for(lock, 60s, [this] { return released_; });
        return false;
      });
      std::lock_guard<std::mutex> lock(mu_);
      started_ = true;  // also when it failed before any event
      finished_ = true;
      cv_.notify_all();
    });
  }
  ~held_stream() {
    release();
    if (thread_.joinable()) thread_.join();
  }
  bool wait_started(std::chrono::seconds within = 30s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, within, [this] { return started_; }) && !finished_;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  bool finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }
  const sse_stream& join() {
    if (thread_.joinable()) thread_.join();
    return result_;
  }

 private:
  bool hang_up_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, released_ = false, finished_ = false;
  sse_stream result_;
  std::thread thread_;
};

// `prompt_tokens` (~6000 by default) prompt tokens: a prefill of a second or so on the CPU
// engine, during which the request is surely the one running (the stream's first event is the
// first prefill chunk's progress).
json long_stream_request(long max_tokens, std::size_t prompt_tokens = 6000) {
  return {{"prompt", filler("The quick brown fox jumps over the lazy dog. ", prompt_tokens)},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"stream", true},
          {"stream_options", {{"include_usage", true}}}};
}

}  // namespace

TEST_CASE("http: with --max-queue 0 a second request gets 429 while one runs", "[http]") {
  http_server s({"--max-queue", "0", "--decode-block", "1", "--ctx-size", "8192"});
  {
    held_stream running(s, long_stream_request(2000), /*hang_up=*/true);
    REQUIRE(running.wait_started());

    const http_reply busy = s.post_json("/v1/completions", small_completion());
    check_error_body(busy, 429, "rate_limit_error", std::string());
    const sse_stream busy_stream = s.stream("/v1/chat/completions", [] {
      json j = user_chat("me too", 4);
      j["stream"] = true;
      return j;
    }());
    CHECK(busy_stream.status == 429);
    CHECK(json::parse(busy_stream.raw, nullptr, false)["error"]["type"] == "rate_limit_error");
    CHECK_FALSE(running.finished());

    running.release();  // the first client hangs up: its generation is cancelled
    const sse_stream& first = running.join();
    CHECK(first.aborted);
  }
  // once the cancelled request is off the board a request succeeds
  bool idle = false;
  for (int i = 0; i < 200 && !idle; ++i) {
    const json st = s.get("/v1/cache/stats").body_json();
    idle = st["queue"]["running"] == false;
    if (!idle) std::this_thread::sleep_for(50ms);
  }
  REQUIRE(idle);
  const json ledger = s.ledger();
  REQUIRE(ledger.size() == 1);
  CHECK(ledger[0]["finish_reason"] == "cancelled");
  CHECK(ledger[0]["output_tokens"].get<long>() < 2000);
  expect_valid_completion(s);
  const std::string metrics = s.get("/metrics").body;
  CHECK(metrics.find("anchorage_rejected_total{status=\"429\"} 2") != std::string::npos);
}

// Regression: the session once counted the whole prompt as prefilled before any chunk ran, so a
// request cancelled during its prefill reported every prompt token as prefilled.
TEST_CASE("http: a request cancelled during its prefill reports only what was prefilled", "[http]") {
  http_server s({"--ctx-size", "16384"});
  {
    // ~12000 prompt tokens: about five seconds of prefill; the client hangs up at the first chunk
    held_stream running(s, long_stream_request(4, 12000), /*hang_up=*/true);
    REQUIRE(running.wait_started());
    running.release();
    CHECK(running.join().aborted);
  }
  std::optional<json> entry;
  for (int i = 0; i < 200 && !entry; ++i) {
    const json ledger = s.ledger();
    if (!ledger.empty()) entry = ledger[0];
    else std::this_thread::sleep_for(50ms);
  }
  REQUIRE(entry.has_value());
  INFO(entry->dump());
  REQUIRE((*entry)["finish_reason"] == "cancelled");
  CHECK((*entry)["output_tokens"] == 0);
  CHECK((*entry)["total_ms"].get<double>() < 2000);  // cancelled well before the prefill could end
  CHECK((*entry)["prefilled"].get<long>() < (*entry)["prompt_tokens"].get<long>());
}

// ---- 9. drain -----------------------------------------------------------------------------------

TEST_CASE("http: drain refuses new work with 503 and lets the running request finish", "[http]") {
  http_server s({"--decode-block", "1", "--ctx-size", "8192"});
  expect_valid_completion(s);

  held_stream running(s, long_stream_request(8), /*hang_up=*/false);
  REQUIRE(running.wait_started());
  // a grace period far shorter than the running prefill: not idle yet
  CHECK_FALSE(s.srv().drain(1ms));

  const http_reply health = s.get("/health");
  REQUIRE(health.status == 503);
  CHECK(health.body_json() == json({{"status", "draining"}}));
  check_error_body(s.post_json("/v1/completions", small_completion()), 503, "server_error", std::string());
  check_error_body(s.post_json("/v1/chat/completions", user_chat("hi", 2)), 503, "server_error", std::string());
  // the server still answers everything else
  CHECK(s.get("/v1/models").status == 200);
  CHECK(s.get("/metrics").status == 200);
  CHECK(s.get("/v1/cache/stats").status == 200);
  // bad input is still told apart from the drain
  check_error_body(s.post("/v1/completions", "{"), 400, "invalid_request_error", std::string());

  CHECK(s.srv().drain(60s));
  const sse_stream& st = running.join();
  INFO(st.raw.substr(0, 300));
  REQUIRE(st.status == 200);
  REQUIRE(st.done());
  const auto chunks = st.chunks();
  REQUIRE(chunks.size() >= 2);
  const json& fin = chunks[chunks.size() - 2];
  CHECK((fin["choices"][0]["finish_reason"] == "length" || fin["choices"][0]["finish_reason"] == "stop"));
  check_usage_and_cache(chunks.back());
  CHECK(s.get("/health").status == 503);
}

// Regression: httplib's stop() does nothing before the listener runs, and a stop() right after
// start() used to leave the listener running and thread_.join() waiting forever; start() now
// waits for the listener. Run in a child process so that a hang cannot take the binary with it.
TEST_CASE("http: stop() right after start() returns", "[http]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 0;
    try {
      const server_config cfg = parse_server_args({"--preset", "tiny", "--host", "127.0.0.1", "--port", "0"});
      for (int i = 0; i < 60 && code == 0; ++i) {
        auto s = std::make_unique<server>(cfg);
        s->start();
        auto stopped = std::make_shared<std::promise<void>>();
        auto done = stopped->get_future();
        std::thread([raw = s.get(), stopped] {
          raw->stop();
          stopped->set_value();
        }).detach();
        if (done.wait_for(3s) != std::future_status::ready) {
          code = 10;  // hung: leave the server and the thread to _Exit
          s.release();
        } else {
          s.reset();
        }
      }
    } catch (...) {
      code = 20;
    }
    std::_Exit(code);
  }
  int status = 0;
  bool exited = false;
  for (const auto until = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < until;) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  REQUIRE(exited);
  REQUIRE(WIFEXITED(status));
  INFO("child exit code " << WEXITSTATUS(status) << " (10: a stop() hung)");
  CHECK(WEXITSTATUS(status) == 0);
}
