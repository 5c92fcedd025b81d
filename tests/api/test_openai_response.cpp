#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/api/openai_response.hpp"

using namespace anchorage;
using nlohmann::json;

namespace {

const usage_info usage{12, 5, 8, 3};

x_cache_info warm_cache() {
  x_cache_info x;
  x.source = cache_source::resident;
  x.resumed_at = 8;
  x.prefilled_tokens = 4;
  x.restore_ms = 1.5;
  x.ttft_ms = 20.25;
  return x;
}

const json usage_expected = json::parse(R"({"prompt_tokens":12,"completion_tokens":5,
  "total_tokens":17,"prompt_tokens_details":{"cached_tokens":8},
  "completion_tokens_details":{"reasoning_tokens":3}})");
const json x_cache_expected = json::parse(R"({"source":"resident","resumed_at":8,
  "prefilled_tokens":4,"restore_ms":1.5,"ttft_ms":20.25})");

}  // namespace

TEST_CASE("error body", "[openai]") {
  CHECK(error_body({400, "invalid_request_error", "max_tokens must be an integer", "max_tokens"}) ==
        json::parse(R"({"error":{"message":"max_tokens must be an integer",
          "type":"invalid_request_error","param":"max_tokens","code":null}})"));
  CHECK(error_body({404, "not_found_error", "no such model", ""}) ==
        json::parse(R"({"error":{"message":"no such model","type":"not_found_error",
          "param":null,"code":null}})"));
}

TEST_CASE("usage and x_cache", "[openai]") {
  CHECK(usage_json(usage) == usage_expected);
  CHECK(x_cache_json(warm_cache()) == x_cache_expected);
  CHECK(x_cache_json(x_cache_info{}) ==
        json::parse(R"({"source":"cold","resumed_at":0,"prefilled_tokens":0,"restore_ms":0.0,
          "ttft_ms":0.0})"));
}

TEST_CASE("x_cache names a miss's reason and the tokens it cost, and nothing without one", "[openai][miss]") {
  x_cache_info x = warm_cache();
  x.miss = miss_reason::client_rewrote;
  x.miss_tokens = 37;
  json want = x_cache_expected;
  want["miss"] = {{"reason", "client_rewrote"}, {"tokens", 37}};
  CHECK(x_cache_json(x) == want);
  x.miss = miss_reason::no_shared_prefix;
  x.miss_tokens = 0;
  CHECK(x_cache_json(x)["miss"] == json{{"reason", "no_shared_prefix"}, {"tokens", 0}});
  CHECK_FALSE(x_cache_json(warm_cache()).contains("miss"));
}

TEST_CASE("completion body", "[openai]") {
  json expected = json::parse(R"({"id":"cmpl-1","object":"text_completion","created":1700000000,
    "model":"m","choices":[{"index":0,"text":"Hello","logprobs":null,"finish_reason":"length"}]})");
  expected["usage"] = usage_expected;
  expected["x_cache"] = x_cache_expected;
  CHECK(completion_body("cmpl-1", 1700000000, "m", "Hello", run_finish::length, usage, warm_cache()) ==
        expected);
}

TEST_CASE("chat body with content and reasoning", "[openai]") {
  assistant_output out;
  out.reasoning = "think";
  out.content = "Hi!";
  json expected = json::parse(R"({"id":"chatcmpl-1","object":"chat.completion","created":5,
    "model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!",
    "reasoning_content":"think"},"logprobs":null,"finish_reason":"stop"}]})");
  expected["usage"] = usage_expected;
  expected["x_cache"] = x_cache_expected;
  CHECK(chat_body("chatcmpl-1", 5, "m", out, run_finish::stop, usage, warm_cache()) == expected);

  out.reasoning.clear();
  out.content.clear();
  const json plain = chat_body("c", 5, "m", out, run_finish::length, usage, warm_cache());
  CHECK(plain["choices"][0]["message"] == json::parse(R"({"role":"assistant","content":""})"));
  CHECK(plain["choices"][0]["finish_reason"] == "length");
}

TEST_CASE("chat body with tool calls", "[openai]") {
  assistant_output out;
  out.tool_calls.push_back({"call_0", "read", "{\"path\":\"a\"}"});
  const json body = chat_body("c", 5, "m", out, run_finish::stop, usage, warm_cache());
  CHECK(body["choices"][0]["message"] == json::parse(R"({"role":"assistant","content":null,
    "tool_calls":[{"id":"call_0","type":"function","function":{"name":"read",
    "arguments":"{\"path\":\"a\"}"}}]})"));
  CHECK(body["choices"][0]["finish_reason"] == "tool_calls");
  // Cut off by the length limit: the reason stays.
  CHECK(chat_body("c", 5, "m", out, run_finish::length, usage, warm_cache())["choices"][0]["finish_reason"] ==
        "length");
  out.content = "Reading.";
  CHECK(chat_body("c", 5, "m", out, run_finish::stop, usage,
                  warm_cache())["choices"][0]["message"]["content"] == "Reading.");
  CHECK(chat_finish_reason(out, run_finish::stop) == run_finish::tool_calls);
  CHECK(chat_finish_reason(assistant_output{}, run_finish::stop) == run_finish::stop);
}

TEST_CASE("chat streaming chunks", "[openai]") {
  const std::string head = R"("id":"c","object":"chat.completion.chunk","created":5,"model":"m")";
  CHECK(chat_chunk_role("c", 5, "m") ==
        json::parse("{" + head + R"(,"choices":[{"index":0,"delta":{"role":"assistant",
          "content":""},"logprobs":null,"finish_reason":null}]})"));

  output_delta d;
  d.what = output_delta::kind::reasoning;
  d.text = "hmm";
  CHECK(chat_chunk_delta("c", 5, "m", d) ==
        json::parse("{" + head + R"(,"choices":[{"index":0,"delta":{"reasoning_content":"hmm"},
          "logprobs":null,"finish_reason":null}]})"));
  d.what = output_delta::kind::content;
  d.text = "Hi";
  CHECK(chat_chunk_delta("c", 5, "m", d)["choices"][0]["delta"] == json{{"content", "Hi"}});
  d.what = output_delta::kind::tool_call;
  d.call = {"call_1", "grep", "{}"};
  d.index = 1;
  CHECK(chat_chunk_delta("c", 5, "m", d)["choices"][0]["delta"] ==
        json::parse(R"({"tool_calls":[{"index":1,"id":"call_1","type":"function",
          "function":{"name":"grep","arguments":"{}"}}]})"));

  CHECK(chat_chunk_finish("c", 5, "m", run_finish::tool_calls) ==
        json::parse("{" + head + R"(,"choices":[{"index":0,"delta":{},"logprobs":null,
          "finish_reason":"tool_calls"}]})"));
  json expected = json::parse("{" + head + R"(,"choices":[]})");
  expected["usage"] = usage_expected;
  expected["x_cache"] = x_cache_expected;
  CHECK(chat_chunk_usage("c", 5, "m", usage, warm_cache()) == expected);
}

TEST_CASE("completion streaming chunks", "[openai]") {
  const std::string head = R"("id":"k","object":"text_completion","created":7,"model":"m")";
  CHECK(completion_chunk("k", 7, "m", "ab") ==
        json::parse("{" + head + R"(,"choices":[{"index":0,"text":"ab","logprobs":null,
          "finish_reason":null}]})"));
  CHECK(completion_chunk_finish("k", 7, "m", run_finish::stop) ==
        json::parse("{" + head + R"(,"choices":[{"index":0,"text":"","logprobs":null,
          "finish_reason":"stop"}]})"));
  json expected = json::parse("{" + head + R"(,"choices":[]})");
  expected["usage"] = usage_expected;
  expected["x_cache"] = x_cache_expected;
  CHECK(completion_chunk_usage("k", 7, "m", usage, warm_cache()) == expected);
}

TEST_CASE("SSE framing", "[openai]") {
  CHECK(sse_data(json{{"a", 1}, {"b", "x y"}}) == "data: {\"a\":1,\"b\":\"x y\"}\n\n");
  CHECK(sse_done() == "data: [DONE]\n\n");
  // Invalid UTF-8 never throws: it becomes U+FFFD.
  CHECK(sse_data(json{{"t", "bad\xff"}}) == "data: {\"t\":\"bad\xEF\xBF\xBD\"}\n\n");
  CHECK(json_text(json("\xC3")) == "\"\xEF\xBF\xBD\"");
  CHECK_NOTHROW(sse_data(completion_chunk("k", 7, "m", "\xF0\x9F")));
}
