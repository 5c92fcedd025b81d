// End-to-end: bad input gets a 4xx JSON error and the server keeps serving.
#include "tests/support/http_helpers.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using namespace std::chrono_literals;

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
      {"max_tokens a string", completions, with(small_completion(), "max_tokens", "10"), 400,
       "invalid_request_error", "max_tokens"},
      {"max_tokens 0", completions, with(small_completion(), "max_tokens", 0), 400, "invalid_request_error",
       "max_tokens"},
      {"max_tokens -1", chat, with(chat_ok, "max_tokens", -1), 400, "invalid_request_error", "max_tokens"},
      {"max_tokens 1.5", completions, with(small_completion(), "max_tokens", 1.5), 400,
       "invalid_request_error", "max_tokens"},
      {"temperature a string", chat, with(chat_ok, "temperature", "hot"), 400, "invalid_request_error",
       "temperature"},
      {"temperature out of range", completions, with(small_completion(), "temperature", 3), 400,
       "invalid_request_error", "temperature"},
      {"messages not an array", chat, with(chat_ok, "messages", "hello"), 400, "invalid_request_error",
       "messages"},
      {"messages empty", chat, with(chat_ok, "messages", json::array()), 400, "invalid_request_error",
       "messages"},
      {"no messages", chat, json({{"max_tokens", 2}}).dump(), 400, "invalid_request_error", "messages"},
      {"no prompt", completions, json({{"max_tokens", 2}}).dump(), 400, "invalid_request_error", "prompt"},
      {"unknown model", chat, with(chat_ok, "model", "gpt-17"), 404, "not_found_error", "model"},
      {"unknown model (completions)", completions, with(small_completion(), "model", "nope"), 404,
       "not_found_error", "model"},
      {"prompt longer than the context", completions,
       with(small_completion(), "prompt", std::string(600, 'a')), 400, "invalid_request_error", "prompt"},
      {"prompt of exactly the context", completions,
       with(small_completion(), "prompt", json(std::vector<int>(512, 97))), 400, "invalid_request_error",
       "prompt"},
      {"chat longer than the context", chat, user_chat(std::string(600, 'b'), 4).dump(), 400,
       "invalid_request_error", "messages"},
      {"token id outside the vocabulary", completions,
       with(small_completion(), "prompt", json::array({1, 2, 272})), 400, "invalid_request_error", "prompt"},
  };
  SECTION("each refused, each followed by a valid request") {
    for (const bad& b : cases) {
      INFO(b.what);
      check_error_body(s.post(b.path, b.body), b.status, b.type, b.param);
      expect_valid_completion(s);
    }
  }

  SECTION("a prompt one token short of the context still gets its one token") {
    const http_reply r = s.post_json(
        completions, {{"prompt", std::vector<int>(511, 97)}, {"max_tokens", 100}, {"temperature", 0}});
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
          if (offset < body.size())
            sink.write(body.data() + offset, body.size() - offset);
          else
            sink.done();
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
    const raw_reply raw =
        raw_http(s.port(),
                 "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Connection: close\r\n\r\n" +
                     body,
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

// runtime/text/template/prompt_render.hpp: a prompt that leaves no room is a 400 "with code
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
