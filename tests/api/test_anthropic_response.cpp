// Anthropic's response shapes: the message body, usage, errors, and the event sequence the
// stream encoder writes for a turn's stream_events (read back as the SDK's accumulator reads it).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "runtime/api/anthropic_response.hpp"
#include "runtime/api/anthropic_sse_encoder.hpp"
#include "tests/support/encoded_stream.hpp"
#include "tests/support/anthropic_stream.hpp"

using namespace anchorage;
using namespace anchorage::testing;
using json = nlohmann::json;

namespace {

output_delta delta(output_delta::kind what, const std::string& text) {
  output_delta d;
  d.what = what;
  d.text = text;
  return d;
}

output_delta call_delta(const tool_call& call, int index) {
  output_delta d;
  d.what = output_delta::kind::tool_call;
  d.call = call;
  d.index = index;
  return d;
}

stream_event event(stream_event::kind what) {
  stream_event ev;
  ev.what = what;
  return ev;
}

// A finished turn with reasoning, content and two tool calls, on a prompt of 100 tokens of which
// 60 were restored.
struct turn {
  assistant_output output;
  usage_info usage{100, 9, 60};
  x_cache_info cache;
  turn() {
    output.reasoning = "Let me look.";
    output.content = "Reading both.";
    output.tool_calls = {{"call_0", "read", R"({"path": "/z", "limit": 5})"}, {"call_1", "list", ""}};
    cache.source = cache_source::end;
    cache.resumed_at = 60;
    cache.prefilled_tokens = 40;
  }
};

}  // namespace

TEST_CASE("anthropic: the message body holds thinking and text and tool_use blocks", "[api][anthropic]") {
  const turn t;
  const json body = json::parse(anthropic_json_text(
      anthropic_message_body("msg_1", "anchorage", t.output, run_finish::stop, t.usage, t.cache)));
  CHECK(body["id"] == "msg_1");
  CHECK(body["type"] == "message");
  CHECK(body["role"] == "assistant");
  CHECK(body["model"] == "anchorage");
  CHECK(body["stop_reason"] == "tool_use");
  CHECK(body["stop_sequence"].is_null());
  const json& c = body["content"];
  REQUIRE(c.size() == 4);
  CHECK(c[0]["type"] == "thinking");
  CHECK(c[0]["thinking"] == "Let me look.");
  CHECK_FALSE(c[0]["signature"].get<std::string>().empty());
  CHECK(c[1] == json({{"type", "text"}, {"text", "Reading both."}}));
  CHECK(c[2]["type"] == "tool_use");
  CHECK(c[2]["id"] == "call_0");
  CHECK(c[2]["name"] == "read");
  CHECK(c[2]["input"] == json({{"path", "/z"}, {"limit", 5}}));
  CHECK(c[3]["input"] == json::object());
  // usage: what was restored is read from the cache, the rest is input
  CHECK(body["usage"] == json({{"input_tokens", 40},
                               {"output_tokens", 9},
                               {"cache_creation_input_tokens", 0},
                               {"cache_read_input_tokens", 60}}));
  CHECK(body["x_cache"]["source"] == "end");
  CHECK(body["x_cache"]["resumed_at"] == 60);
}

TEST_CASE("anthropic: a tool_use input keeps the model's key order", "[api][anthropic]") {
  const tool_call call{"c", "f", R"({"zeta": 1, "alpha": {"y": 2, "b": 3}})"};
  CHECK(anthropic_json_text(anthropic_tool_input(call)) == R"({"zeta":1,"alpha":{"y":2,"b":3}})");
  CHECK(anthropic_json_text(anthropic_tool_input({"c", "f", "not json"})) == R"({"arguments":"not json"})");
  CHECK(anthropic_json_text(anthropic_tool_input({"c", "f", " \n"})) == "{}");
  assistant_output out;
  out.tool_calls = {call};
  const std::string text =
      anthropic_json_text(anthropic_message_body("m", "x", out, run_finish::stop, {}, {}));
  CHECK(text.find(R"("input":{"zeta":1,"alpha":{"y":2,"b":3}})") != std::string::npos);
}

TEST_CASE("anthropic: stop reasons and empty answers", "[api][anthropic]") {
  assistant_output text_only;
  text_only.content = "hi";
  CHECK(to_anthropic_stop_reason(text_only, run_finish::stop) == anthropic_stop_reason::end_turn);
  CHECK(to_anthropic_stop_reason(text_only, run_finish::length) == anthropic_stop_reason::max_tokens);
  assistant_output calls;
  calls.tool_calls = {{"c", "f", "{}"}};
  CHECK(to_anthropic_stop_reason(calls, run_finish::stop) == anthropic_stop_reason::tool_use);
  CHECK(to_anthropic_stop_reason(calls, run_finish::tool_calls) == anthropic_stop_reason::tool_use);
  CHECK(to_anthropic_stop_reason(calls, run_finish::length) == anthropic_stop_reason::max_tokens);
  CHECK(std::string(wire_name(anthropic_stop_reason::stop_sequence)) == "stop_sequence");
  // a stop string that cut the content: stop_sequence, named in the body and the message_delta
  CHECK(to_anthropic_stop_reason(text_only, run_finish::stop, "\n\nHuman:") ==
        anthropic_stop_reason::stop_sequence);
  CHECK(to_anthropic_stop_reason(text_only, run_finish::length, "x") == anthropic_stop_reason::max_tokens);
  CHECK(to_anthropic_stop_reason(calls, run_finish::stop, "x") == anthropic_stop_reason::tool_use);
  const json cut = anthropic_message_body("m", "x", text_only, run_finish::stop, {}, {}, "END");
  CHECK(cut["stop_reason"] == "stop_sequence");
  CHECK(cut["stop_sequence"] == "END");
  const json delta =
      anthropic_message_delta(anthropic_stop_reason::stop_sequence, "END", usage_info{}, x_cache_info{});
  CHECK(delta["delta"] == json({{"stop_reason", "stop_sequence"}, {"stop_sequence", "END"}}));
  const json ended =
      anthropic_message_delta(anthropic_stop_reason::end_turn, "", usage_info{}, x_cache_info{});
  CHECK(ended["delta"]["stop_sequence"].is_null());
  CHECK(anthropic_message_body("m", "x", text_only, run_finish::stop, {}, {})["stop_sequence"].is_null());

  const json empty =
      json::parse(anthropic_json_text(anthropic_message_body("m", "x", {}, run_finish::length, {}, {})));
  CHECK(empty["content"] == json::array());  // no empty text block
  CHECK(empty["stop_reason"] == "max_tokens");
  CHECK(json::parse(anthropic_json_text(anthropic_count_body(42))) == json({{"input_tokens", 42}}));
}

TEST_CASE("anthropic: errors in Anthropic's shape are typed by status", "[api][anthropic]") {
  const std::vector<std::pair<int, std::string>> cases = {
      {400, "invalid_request_error"}, {404, "not_found_error"},  {413, "request_too_large"},
      {422, "invalid_request_error"}, {429, "rate_limit_error"}, {500, "api_error"},
      {503, "overloaded_error"},      {504, "timeout_error"},    {401, "authentication_error"}};
  for (const auto& [status, type] : cases) {
    const json body =
        json::parse(anthropic_json_text(anthropic_error_body({status, "server_error", "why", "p"})));
    INFO(status);
    CHECK(body == json({{"type", "error"}, {"error", {{"type", type}, {"message", "why"}}}}));
  }
}

TEST_CASE("anthropic: a stream's events in Anthropic's order add up to the body", "[api][anthropic]") {
  const turn t;
  anthropic_sse_encoder enc("msg_7", "anchorage");
  stream_event progress = event(stream_event::kind::progress);
  progress.done_tokens = 10;
  progress.prompt_tokens = 100;
  stream_event d1 = event(stream_event::kind::delta);
  d1.deltas = {delta(output_delta::kind::reasoning, "Let me "),
               delta(output_delta::kind::reasoning, "look.")};
  stream_event d2 = event(stream_event::kind::delta);
  d2.deltas = {delta(output_delta::kind::content, ""), delta(output_delta::kind::content, "Reading "),
               delta(output_delta::kind::content, "both.")};
  stream_event d3 = event(stream_event::kind::delta);
  d3.deltas = {call_delta(t.output.tool_calls[0], 0), call_delta(t.output.tool_calls[1], 1)};
  stream_event done = event(stream_event::kind::finished);
  done.finish_reason = run_finish::stop;
  done.output = t.output;
  done.usage = t.usage;
  done.cache = t.cache;
  const std::string raw =
      encoded_stream(enc, {event(stream_event::kind::accepted), progress, d1, d2, d3, done});
  CHECK(enc.closed());
  CHECK(enc.feed(done).empty());

  const anthropic_accumulated acc = accumulate_anthropic(raw);
  INFO(raw);
  for (const std::string& p : acc.problems) FAIL_CHECK(p);
  const std::vector<std::string> expected = {"message_start",
                                             "ping",  // open
                                             "ping",  // progress
                                             "content_block_start",
                                             "content_block_delta",
                                             "content_block_delta",  // thinking
                                             "content_block_delta",
                                             "content_block_stop",  // signature
                                             "content_block_start",
                                             "content_block_delta",
                                             "content_block_delta",
                                             "content_block_stop",  // text
                                             "content_block_start",
                                             "content_block_delta",
                                             "content_block_stop",  // tool_use 0
                                             "content_block_start",
                                             "content_block_delta",
                                             "content_block_stop",  // tool_use 1
                                             "message_delta",
                                             "message_stop"};
  CHECK(acc.names == expected);

  const json body = json::parse(anthropic_json_text(
      anthropic_message_body("msg_7", "anchorage", t.output, run_finish::stop, t.usage, t.cache)));
  CHECK(acc.message["id"] == "msg_7");
  CHECK(acc.message["content"] == body["content"]);
  CHECK(acc.message["stop_reason"] == "tool_use");
  CHECK(acc.message["usage"] == body["usage"]);
  CHECK(acc.x_cache == body["x_cache"]);
  CHECK(enc.streamed().reasoning == t.output.reasoning);
  CHECK(enc.streamed().content == t.output.content);
  CHECK(enc.streamed().tool_calls.size() == 2);
}

TEST_CASE("anthropic: a kind change closes the open block and a failure ends with an error event",
          "[api][anthropic]") {
  anthropic_sse_encoder enc("msg_8", "anchorage");
  stream_event d = event(stream_event::kind::delta);
  d.deltas = {delta(output_delta::kind::content, "a"), delta(output_delta::kind::reasoning, "r"),
              delta(output_delta::kind::content, "b")};
  stream_event failed = event(stream_event::kind::failed);
  failed.error = {503, "server_error", "the queue is full", ""};
  const std::string raw = encoded_stream(enc, {d, failed});  // feed() opens the stream itself
  CHECK(enc.closed());
  const anthropic_accumulated acc = accumulate_anthropic(raw);
  INFO(raw);
  for (const std::string& p : acc.problems) FAIL_CHECK(p);
  REQUIRE(acc.message["content"].size() == 3);
  CHECK(acc.message["content"][0]["text"] == "a");
  CHECK(acc.message["content"][1]["thinking"] == "r");
  CHECK(acc.message["content"][2]["text"] == "b");
  CHECK(acc.names.back() == "error");
  CHECK(acc.error == json({{"type", "error"},
                           {"error", {{"type", "overloaded_error"}, {"message", "the queue is full"}}}}));
}

TEST_CASE("anthropic: a turn that says nothing streams no block", "[api][anthropic]") {
  anthropic_sse_encoder enc("msg_9", "anchorage");
  stream_event d = event(stream_event::kind::delta);
  d.deltas = {delta(output_delta::kind::content, ""), delta(output_delta::kind::reasoning, "")};
  stream_event done = event(stream_event::kind::finished);
  done.finish_reason = run_finish::length;
  const std::string raw = encoded_stream(enc, {d, done});
  const anthropic_accumulated acc = accumulate_anthropic(raw);
  for (const std::string& p : acc.problems) FAIL_CHECK(p);
  CHECK(acc.names == std::vector<std::string>{"message_start", "ping", "message_delta", "message_stop"});
  CHECK(acc.message["content"] == json::array());
  CHECK(acc.message["stop_reason"] == "max_tokens");
}
