// The streamed answer's bytes, event by event (runtime/api/sse_encoder.hpp): the exact chunks the
// edge writes, without a server.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/api/sse_encoder.hpp"

using namespace anchorage;
using chunks = std::vector<std::string>;

namespace {

// nlohmann::json writes an object's keys in sorted order: the strings below are the wire bytes.
const std::string chat_head = R"({"choices":[{"delta":)";
std::string chat_chunk(const std::string& delta, const std::string& finish = "null") {
  return "data: " + chat_head + delta + R"(,"finish_reason":)" + finish +
         R"(,"index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-1","model":"m","object":"chat.completion.chunk"})" +
         "\n\n";
}
std::string text_chunk(const std::string& text, const std::string& finish = "null") {
  return R"(data: {"choices":[{"finish_reason":)" + finish + R"(,"index":0,"logprobs":null,"text":")" + text +
         R"("}],"created":1700000000,"id":"cmpl-1","model":"m","object":"text_completion"})" + "\n\n";
}
const std::string usage_fields =
    R"("usage":{"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":4},"total_tokens":13},)"
    R"("x_cache":{"prefilled_tokens":6,"restore_ms":0.5,"resumed_at":4,"source":"resident","ttft_ms":2.0}})";
const std::string done = "data: [DONE]\n\n";

stream_event event(stream_event::kind what) {
  stream_event ev;
  ev.what = what;
  ev.id = "chatcmpl-1";
  return ev;
}

stream_event progress(long done_tokens, long prompt_tokens) {
  stream_event ev = event(stream_event::kind::progress);
  ev.done_tokens = done_tokens;
  ev.prompt_tokens = prompt_tokens;
  return ev;
}

output_delta text_delta(output_delta::kind what, const std::string& text) {
  output_delta d;
  d.what = what;
  d.text = text;
  return d;
}

output_delta call_delta(int index, const std::string& id, const std::string& name,
                        const std::string& arguments) {
  output_delta d;
  d.what = output_delta::kind::tool_call;
  d.index = index;
  d.call = {id, name, arguments};
  return d;
}

stream_event deltas(std::vector<output_delta> ds) {
  stream_event ev = event(stream_event::kind::delta);
  ev.deltas = std::move(ds);
  return ev;
}

// The end of a turn that reasoned, said "Hi" and called read().
stream_event finished(run_finish finish_reason = run_finish::stop) {
  stream_event ev = event(stream_event::kind::finished);
  ev.finish_reason = finish_reason;
  ev.output.reasoning = "hm";
  ev.output.content = "Hi";
  ev.output.tool_calls = {{"call_0", "read", R"({"path":"a"})"}};
  ev.usage = {10, 3, 4};
  ev.cache.source = cache_source::resident;
  ev.cache.resumed_at = 4;
  ev.cache.prefilled_tokens = 6;
  ev.cache.restore_ms = 0.5;
  ev.cache.ttft_ms = 2.0;
  return ev;
}

stream_event failed(int status, const std::string& message) {
  stream_event ev = event(stream_event::kind::failed);
  ev.error = {status, "server_error", message, ""};
  return ev;
}

}  // namespace

TEST_CASE("sse: a chat stream with reasoning, then content, then a tool call", "[api][sse]") {
  sse_encoder sse(request_kind::chat, "chatcmpl-1", 1700000000, "m", /*include_usage=*/true);
  CHECK_FALSE(sse.opened());
  CHECK(sse.open() == chunks{chat_chunk(R"({"content":"","role":"assistant"})")});
  CHECK(sse.opened());
  CHECK(sse.open().empty());  // the role chunk goes out once

  CHECK(sse.feed(event(stream_event::kind::accepted)).empty());
  CHECK(sse.feed(progress(3, 10)) == chunks{": prefill 3/10\n\n"});
  CHECK(sse.feed(deltas({text_delta(output_delta::kind::reasoning, "h"),
                         text_delta(output_delta::kind::reasoning, "m")})) ==
        chunks{chat_chunk(R"({"reasoning_content":"h"})"), chat_chunk(R"({"reasoning_content":"m"})")});
  CHECK(sse.feed(deltas({text_delta(output_delta::kind::content, "Hi")})) ==
        chunks{chat_chunk(R"({"content":"Hi"})")});
  CHECK(
      sse.feed(deltas({call_delta(0, "call_0", "read", R"({"path":"a"})")})) ==
      chunks{chat_chunk(
          R"({"tool_calls":[{"function":{"arguments":"{\"path\":\"a\"}","name":"read"},"id":"call_0","index":0,"type":"function"}]})")});
  CHECK(sse.streamed().reasoning == "hm");
  CHECK(sse.streamed().content == "Hi");
  REQUIRE(sse.streamed().tool_calls.size() == 1);
  CHECK(sse.streamed().tool_calls[0].name == "read");
  CHECK_FALSE(sse.closed());

  // a turn that called a tool and stopped finishes with "tool_calls", then usage, then [DONE]
  CHECK(
      sse.feed(finished()) ==
      chunks{
          chat_chunk("{}", R"("tool_calls")"),
          R"(data: {"choices":[],"created":1700000000,"id":"chatcmpl-1","model":"m","object":"chat.completion.chunk",)" +
              usage_fields + "\n\n",
          done});
  CHECK(sse.closed());
  CHECK(sse.feed(deltas({text_delta(output_delta::kind::content, "late")})).empty());
  CHECK(sse.feed(finished()).empty());
}

TEST_CASE("sse: include_usage off ends with the finish chunk and [DONE]", "[api][sse]") {
  SECTION("chat, cut by the length") {
    sse_encoder sse(request_kind::chat, "chatcmpl-1", 1700000000, "m", /*include_usage=*/false);
    sse.open();
    CHECK(sse.feed(finished(run_finish::length)) == chunks{chat_chunk("{}", R"("length")"), done});
  }
  SECTION("completions") {
    sse_encoder sse(request_kind::completion, "cmpl-1", 1700000000, "m", /*include_usage=*/false);
    CHECK(sse.feed(finished()) == chunks{text_chunk("", R"("stop")"), done});
  }
}

TEST_CASE("sse: a completions stream has no role chunk and sends every delta as text", "[api][sse]") {
  sse_encoder sse(request_kind::completion, "cmpl-1", 1700000000, "m", /*include_usage=*/true);
  CHECK(sse.open().empty());
  CHECK(sse.opened());
  CHECK(sse.feed(deltas({text_delta(output_delta::kind::content, "a"),
                         text_delta(output_delta::kind::reasoning, "b")})) ==
        chunks{text_chunk("a"), text_chunk("b")});
  // the finish reason is the event's as given: a completion makes no tool calls
  CHECK(
      sse.feed(finished()) ==
      chunks{
          text_chunk("", R"("stop")"),
          R"(data: {"choices":[],"created":1700000000,"id":"cmpl-1","model":"m","object":"text_completion",)" +
              usage_fields + "\n\n",
          done});
}

TEST_CASE("sse: a failure mid-stream sends the error body, then [DONE], then nothing", "[api][sse]") {
  sse_encoder sse(request_kind::chat, "chatcmpl-1", 1700000000, "m", /*include_usage=*/true);
  sse.open();
  CHECK(sse.feed(deltas({text_delta(output_delta::kind::content, "Hel")})).size() == 1);
  CHECK(
      sse.feed(failed(504, "no answer from the engine in time")) ==
      chunks{
          R"(data: {"error":{"code":null,"message":"no answer from the engine in time","param":null,"type":"server_error"}})"
          "\n\n",
          done});
  CHECK(sse.closed());
  CHECK(sse.streamed().content == "Hel");
  CHECK(sse.feed(finished()).empty());
}

TEST_CASE("sse: a chat stream fed before it was opened starts with the role chunk", "[api][sse]") {
  sse_encoder sse(request_kind::chat, "chatcmpl-1", 1700000000, "m", /*include_usage=*/false);
  CHECK(sse.feed(progress(0, 5)) ==
        chunks{chat_chunk(R"({"content":"","role":"assistant"})"), ": prefill 0/5\n\n"});
  CHECK(sse.open().empty());
}

TEST_CASE("sse: invalid UTF-8 in a delta goes out as U+FFFD, never throws", "[api][sse]") {
  sse_encoder sse(request_kind::completion, "cmpl-1", 1700000000, "m", /*include_usage=*/false);
  sse.open();
  CHECK(sse.feed(deltas({text_delta(output_delta::kind::content, "a\xff")})) ==
        chunks{text_chunk("a\xef\xbf\xbd")});
}

TEST_CASE("sse: return_progress sends each prefill step as a prompt_progress data chunk",
          "[api][sse][progress]") {
  stream_event p = progress(2048, 5000);
  p.cached_tokens = 1024;
  p.elapsed_ms = 731.9;
  const std::string body =
      R"("choices":[],"created":1700000000,"id":"chatcmpl-1","model":"m","object":"chat.completion.chunk","prompt_progress":{"cache":1024,"processed":2048,"time_ms":731,"total":5000}})";
  SECTION("chat: after the role chunk") {
    sse_encoder e(request_kind::chat, "chatcmpl-1", 1700000000, "m", false, true);
    const chunks c = e.feed(p);
    REQUIRE(c.size() == 2);
    CHECK(c[0] == chat_chunk(R"({"content":"","role":"assistant"})"));
    CHECK(c[1] == "data: {" + body + "\n\n");
  }
  SECTION("completions: the text_completion object") {
    sse_encoder e(request_kind::completion, "cmpl-1", 1700000000, "m", false, true);
    const chunks c = e.feed(p);
    REQUIRE(c.size() == 1);
    CHECK(
        c[0].find(
            R"("object":"text_completion","prompt_progress":{"cache":1024,"processed":2048,"time_ms":731,"total":5000}})") !=
        std::string::npos);
    CHECK(c[0].find(R"("choices":[])") != std::string::npos);
  }
  SECTION("not asked for: the SSE comment only") {
    sse_encoder e(request_kind::completion, "cmpl-1", 1700000000, "m", false);
    CHECK(e.feed(p) == chunks{": prefill 2048/5000\n\n"});
  }
}
