// The Responses shapes: the response object, usage, errors, the event sequence the stream encoder
// writes for a turn's stream_events (read back as the openai SDK's accumulator reads it), and
// the bounded store of conversations behind previous_response_id.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/api/response_store.hpp"
#include "runtime/api/responses_response.hpp"
#include "runtime/api/responses_sse_encoder.hpp"
#include "tests/support/encoded_stream.hpp"
#include "tests/support/responses_stream.hpp"

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
  usage_info usage{100, 9, 60, 4};  // 4 of the 9 output tokens inside the reasoning
  x_cache_info cache;
  turn() {
    output.reasoning = "Let me look.";
    output.content = "Reading both.";
    output.tool_calls = {{"call_0", "read", R"({"path": "/z", "limit": 5})"}, {"call_1", "list", "{}"}};
    cache.source = cache_source::end;
    cache.resumed_at = 60;
    cache.prefilled_tokens = 40;
  }
};

responses_meta meta() {
  responses_meta m;
  m.id = "resp_17_3";
  m.created_at = 1700000000;
  m.model = "anchorage";
  m.echo.instructions = "Be terse.";
  m.echo.max_output_tokens = 64;
  m.echo.metadata = {{"k", "v"}};
  return m;
}

// The turn's events: reasoning in two deltas, content in two, the calls, then the end.
std::vector<stream_event> turn_events(const turn& t, run_finish finish_reason) {
  stream_event d = event(stream_event::kind::delta);
  d.deltas = {delta(output_delta::kind::reasoning, "Let me "), delta(output_delta::kind::reasoning, "look.")};
  stream_event c = event(stream_event::kind::delta);
  c.deltas = {delta(output_delta::kind::content, "Reading "), delta(output_delta::kind::content, ""),
              delta(output_delta::kind::content, "both.")};
  stream_event calls = event(stream_event::kind::delta);
  calls.deltas = {call_delta(t.output.tool_calls[0], 0), call_delta(t.output.tool_calls[1], 1)};
  stream_event fin = event(stream_event::kind::finished);
  fin.finish_reason = finish_reason;
  fin.output = t.output;
  fin.usage = t.usage;
  fin.cache = t.cache;
  stream_event progress = event(stream_event::kind::progress);
  progress.done_tokens = 50;
  progress.prompt_tokens = 100;
  return {event(stream_event::kind::accepted), progress, d, c, calls, fin};
}

}  // namespace

TEST_CASE("responses: the response object and its usage", "[api][responses]") {
  const turn t;
  const json r =
      json::parse(responses_json_text(responses_body(meta(), t.output, run_finish::stop, t.usage, t.cache)));
  CHECK(r["id"] == "resp_17_3");
  CHECK(r["object"] == "response");
  CHECK(r["created_at"] == 1700000000);
  CHECK(r["status"] == "completed");
  CHECK(r["error"].is_null());
  CHECK(r["incomplete_details"].is_null());
  CHECK(r["instructions"] == "Be terse.");
  CHECK(r["max_output_tokens"] == 64);
  CHECK(r["previous_response_id"].is_null());
  CHECK(r["metadata"] == json{{"k", "v"}});
  CHECK(r["tool_choice"] == "auto");
  CHECK(r["x_cache"]["resumed_at"] == 60);
  const json& out = r["output"];
  REQUIRE(out.size() == 4);
  CHECK(out[0] == json::parse(R"({"id": "rs_17_3", "type": "reasoning", "summary": [],
    "content": [{"type": "reasoning_text", "text": "Let me look."}]})"));
  CHECK(out[1] ==
        json::parse(R"({"id": "msg_17_3", "type": "message", "status": "completed", "role": "assistant",
    "content": [{"type": "output_text", "text": "Reading both.", "annotations": []}]})"));
  CHECK(out[2] == json::parse(R"({"id": "fc_17_3_0", "type": "function_call", "status": "completed",
    "call_id": "call_0", "name": "read", "arguments": "{\"path\": \"/z\", \"limit\": 5}"})"));
  CHECK(out[3]["id"] == "fc_17_3_1");
  CHECK(r["usage"] == json::parse(R"({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60},
    "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 4}, "total_tokens": 109})"));

  const json cut = json::parse(
      responses_json_text(responses_body(meta(), t.output, run_finish::length, t.usage, t.cache)));
  CHECK(cut["status"] == "incomplete");
  CHECK(cut["incomplete_details"] == json{{"reason", "max_output_tokens"}});
  CHECK(cut["output"][1]["status"] == "incomplete");

  // an answer of nothing is one empty message; reasoning alone has an empty message after it
  const json empty = responses_body(meta(), {}, run_finish::stop, t.usage, t.cache)["output"];
  REQUIRE(empty.size() == 1);
  CHECK(empty[0]["type"] == "message");
  assistant_output only_reasoning;
  only_reasoning.reasoning = "hm";
  const json reasoned =
      responses_body(meta(), only_reasoning, run_finish::length, t.usage, t.cache)["output"];
  REQUIRE(reasoned.size() == 2);
  CHECK(reasoned[1]["content"][0]["text"] == "");
  CHECK(reasoned[1]["status"] == "incomplete");
}

TEST_CASE("responses: errors in OpenAI's shape, with a code when there is one", "[api][responses]") {
  const json e = json::parse(responses_json_text(responses_error_body(
      {404, "invalid_request_error", "gone", "previous_response_id", "previous_response_not_found"})));
  CHECK(e == json::parse(R"({"error": {"message": "gone", "type": "invalid_request_error",
    "param": "previous_response_id", "code": "previous_response_not_found"}})"));
  const json plain = responses_error_body({400, "invalid_request_error", "bad", ""});
  CHECK(plain["error"]["param"].is_null());
  CHECK(plain["error"]["code"].is_null());
}

TEST_CASE("responses: a streamed turn adds up to the response object", "[api][responses]") {
  for (run_finish finish : {run_finish::stop, run_finish::length}) {
    INFO(finish);
    const turn t;
    responses_sse_encoder enc(meta());
    const std::string raw = encoded_stream(enc, turn_events(t, finish));
    INFO(raw.substr(0, 3000));
    const responses_accumulated acc = accumulate_responses(raw);
    for (const std::string& p : acc.problems) FAIL_CHECK(p);
    CHECK(acc.comments == 1);  // the progress comment
    CHECK(acc.names.front() == "response.created");
    CHECK(acc.names[1] == "response.in_progress");
    const bool cut = finish == run_finish::length;
    CHECK(acc.names.back() == (cut ? "response.incomplete" : "response.completed"));
    CHECK(enc.closed());
    CHECK(enc.streamed().content == t.output.content);
    CHECK(enc.streamed().reasoning == t.output.reasoning);
    const json whole =
        json::parse(responses_json_text(responses_body(meta(), t.output, finish, t.usage, t.cache)));
    CHECK(acc.output == whole["output"]);  // the items as the events built them
    CHECK(acc.response == whole);          // the final response, usage included
    // the reasoning item is done before the message item is added; the calls come last
    const auto at = [&](const std::string& name) {
      return std::find(acc.names.begin(), acc.names.end(), name) - acc.names.begin();
    };
    CHECK(at("response.reasoning_text.done") < at("response.output_text.delta"));
    CHECK(at("response.output_text.done") < at("response.function_call_arguments.delta"));
    CHECK(enc.feed(event(stream_event::kind::delta)).empty());
  }
}

TEST_CASE("responses: a stream of nothing is one empty message, and a failure ends it", "[api][responses]") {
  {
    responses_sse_encoder enc(meta());
    stream_event fin = event(stream_event::kind::finished);
    fin.finish_reason = run_finish::stop;
    const responses_accumulated acc = accumulate_responses(encoded_stream(enc, {fin}));
    for (const std::string& p : acc.problems) FAIL_CHECK(p);
    REQUIRE(acc.output.size() == 1);
    CHECK(acc.output[0]["content"][0]["text"] == "");
    CHECK(acc.response["output"] == acc.output);
  }
  {
    responses_sse_encoder enc(meta());
    stream_event d = event(stream_event::kind::delta);
    d.deltas = {delta(output_delta::kind::content, "par")};
    stream_event failed = event(stream_event::kind::failed);
    failed.error = {400, "invalid_request_error", "the prompt is too long", "", "context_length_exceeded"};
    const responses_accumulated acc = accumulate_responses(encoded_stream(enc, {d, failed}));
    for (const std::string& p : acc.problems) FAIL_CHECK(p);
    CHECK(acc.names.back() == "response.failed");
    REQUIRE(acc.error.is_object());
    CHECK(acc.error["error"]["code"] == "context_length_exceeded");
    CHECK(acc.response["status"] == "failed");
    CHECK(acc.response["error"]["code"] == "context_length_exceeded");
    CHECK(acc.output[0]["content"][0]["text"] == "par");
  }
}

TEST_CASE("responses: the store keeps the last responses within its bounds", "[api][responses]") {
  const auto conversation = [](const std::string& text) {
    chat_message m;
    m.role = "user";
    m.content = text;
    return std::vector<chat_message>{m};
  };
  response_store by_count(2, 1 << 20);
  by_count.put("a", conversation("A"));
  by_count.put("b", conversation("B"));
  REQUIRE(by_count.find("a"));  // a is now the most recently used
  by_count.put("c", conversation("C"));
  CHECK(by_count.size() == 2);
  CHECK_FALSE(by_count.find("b"));
  REQUIRE(by_count.find("a"));
  CHECK((*by_count.find("a"))[0].content == "A");
  CHECK(by_count.find("c"));
  by_count.put("c", conversation("C2"));  // replaced, not added
  CHECK(by_count.size() == 2);
  CHECK((*by_count.find("c"))[0].content == "C2");

  const std::size_t one = response_store::weight(conversation(std::string(1000, 'x')));
  response_store by_bytes(100, 2 * one + 10);
  by_bytes.put("a", conversation(std::string(1000, 'x')));
  by_bytes.put("b", conversation(std::string(1000, 'y')));
  by_bytes.put("c", conversation(std::string(1000, 'z')));
  CHECK(by_bytes.size() == 2);
  CHECK(by_bytes.bytes() == 2 * one);
  CHECK_FALSE(by_bytes.find("a"));
  by_bytes.put("huge", conversation(std::string(5000, 'h')));  // over the whole budget: not kept
  CHECK_FALSE(by_bytes.find("huge"));
  CHECK(by_bytes.size() == 2);
}
