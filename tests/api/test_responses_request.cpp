// parse_responses_request maps a Responses body onto the chat route's request: the same messages,
// tools and fields, so that the templates render (and the end anchor aligns) what the chat route
// would for the same conversation; an answer's output items sent back are the answer.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <variant>
#include <vector>

#include "runtime/api/openai_request.hpp"
#include "runtime/api/responses_request.hpp"
#include "runtime/api/responses_response.hpp"
#include "runtime/text/template/chat_renderer.hpp"
#include "runtime/text/template/prompt_render.hpp"
#include "tests/support/test_images.hpp"

using namespace anchorage;
using json = nlohmann::ordered_json;

namespace {

responses_request accept(const std::string& body, const std::vector<chat_message>& prior = {}) {
  auto r = parse_responses_request(body);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message << " (" << e->param << ")");
  responses_request out = std::get<responses_request>(r);
  if (auto e = assemble_conversation(out, prior)) FAIL("not assembled: " << e->message);
  return out;
}

api_error reject(const std::string& body) {
  auto r = parse_responses_request(body);
  const auto* e = std::get_if<api_error>(&r);
  INFO(body);
  REQUIRE(e != nullptr);
  CHECK(e->status == 400);
  CHECK(e->type == "invalid_request_error");
  CHECK_FALSE(e->message.empty());
  return *e;
}

std::string render(const completion_request& r) {
  const bool tools = r.tool_choice != "none" && !r.tools.empty();
  return render_prompt_text(chat_renderer::qwen35, r.messages, tools ? r.tools : json(), r.enable_thinking);
}

completion_request chat(const std::string& body) {
  auto r = parse_request(body, request_kind::chat);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("chat rejected: " << e->message);
  return std::get<completion_request>(r);
}

bool same_message(const chat_message& a, const chat_message& b) {
  bool calls = a.tool_calls.size() == b.tool_calls.size();
  for (std::size_t i = 0; calls && i < a.tool_calls.size(); ++i)
    calls = a.tool_calls[i].id == b.tool_calls[i].id && a.tool_calls[i].name == b.tool_calls[i].name &&
            a.tool_calls[i].arguments == b.tool_calls[i].arguments;
  return calls && a.role == b.role && a.content == b.content && a.reasoning_content == b.reasoning_content &&
         a.tool_call_id == b.tool_call_id;
}

}  // namespace

TEST_CASE("responses: a string input with instructions maps onto a chat request", "[api][responses]") {
  const responses_request r = accept(R"({"model": "m", "input": "Hello", "instructions": "Be terse.",
    "max_output_tokens": 64, "temperature": 0.5, "top_p": 0.9, "stream": true, "store": false,
    "user": "u1", "prompt_cache_key": "thread-7", "metadata": {"k": "v"}, "parallel_tool_calls": true,
    "include": ["reasoning.encrypted_content"], "truncation": "auto", "service_tier": "auto"})");
  const completion_request& c = r.chat;
  CHECK(c.kind == request_kind::chat);
  CHECK(c.model == "m");
  REQUIRE(c.max_tokens);
  CHECK(*c.max_tokens == 64);
  CHECK(c.temperature == 0.5);
  CHECK(c.temperature_given);
  CHECK(c.top_p == 0.9);
  CHECK(c.stream);
  CHECK(c.user == "u1");
  REQUIRE(c.prompt_cache_key);
  CHECK(*c.prompt_cache_key == "thread-7");
  CHECK(c.enable_thinking);  // the chat route's default
  REQUIRE(c.messages.size() == 2);
  CHECK(c.messages[0].role == "system");
  CHECK(c.messages[0].content == "Be terse.");
  CHECK(c.messages[1].role == "user");
  CHECK(c.messages[1].content == "Hello");
  CHECK_FALSE(r.echo.store);
  CHECK(r.echo.metadata == json{{"k", "v"}});
  REQUIRE(r.echo.instructions);
  CHECK(*r.echo.instructions == "Be terse.");
  REQUIRE(r.echo.max_output_tokens);
  CHECK(*r.echo.max_output_tokens == 64);
  CHECK_FALSE(r.echo.previous_response_id);
}

TEST_CASE("responses: items render as the chat request of the same conversation", "[api][responses]") {
  const responses_request r = accept(R"({"instructions": "You are an agent.", "input": [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be careful."}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Read a.txt"}, {"type": "input_text", "text": "now"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Need to read."}]},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Reading.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_0", "name": "read", "arguments": "{\"path\":\"a.txt\"}"},
    {"type": "function_call", "call_id": "call_1", "name": "stat", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_0", "output": "hello"},
    {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "output_text", "text": "12 bytes"}]},
    {"role": "user", "content": "Thanks"}],
    "tools": [{"type": "function", "name": "read", "description": "Read a file",
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}, "strict": true},
              {"type": "web_search"},
              {"type": "function", "name": "stat", "parameters": {"type": "object", "properties": {}}}]})");
  const completion_request c = chat(R"({"messages": [
    {"role": "system", "content": "You are an agent.\nBe careful."},
    {"role": "user", "content": [{"type": "text", "text": "Read a.txt"}, {"type": "text", "text": "now"}]},
    {"role": "assistant", "content": "Reading.", "reasoning_content": "Need to read.", "tool_calls": [
      {"id": "call_0", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}},
      {"id": "call_1", "type": "function", "function": {"name": "stat", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_0", "content": "hello"},
    {"role": "tool", "tool_call_id": "call_1", "content": "12 bytes"},
    {"role": "user", "content": "Thanks"}],
    "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
              {"type": "function", "function": {"name": "stat",
               "parameters": {"type": "object", "properties": {}}}}]})");
  REQUIRE(r.chat.messages.size() == c.messages.size());
  for (std::size_t i = 0; i < c.messages.size(); ++i) {
    INFO("message " << i);
    CHECK(same_message(r.chat.messages[i], c.messages[i]));
  }
  CHECK(r.chat.tools == c.tools);
  CHECK(render(r.chat) == render(c));
  // the echo keeps the function tools as sent (flat), not the hosted one
  REQUIRE(r.echo.tools.size() == 2);
  CHECK(r.echo.tools[0]["strict"] == true);
}

TEST_CASE("responses: an answer's output items sent back are the answer", "[api][responses]") {
  for (int shape = 0; shape < 5; ++shape) {
    INFO("shape " << shape);
    assistant_output out;
    if (shape != 1 && shape != 4) out.reasoning = "Think \"twice\".\n";
    if (shape != 2 && shape != 4) out.content = "  Text with\nlines  ";
    if (shape >= 2 && shape != 4)
      out.tool_calls = {{"call_0", "read", R"({"path": "/z", "limit": 5})"}, {"call_1", "ls", "{}"}};
    const json items = output_items("resp_1_2", out, run_finish::stop);
    json body = {{"input", json::array({{{"role", "user"}, {"content", "Go."}}})}};
    for (const json& item : items) body["input"].push_back(item);
    // re-serialised by the client: other key order and spacing
    const std::string text = nlohmann::json::parse(body.dump()).dump(2);
    const responses_request r = accept(text);
    REQUIRE(r.chat.messages.size() == 2);
    CHECK(same_message(r.chat.messages[1], answer_message(out)));
  }
}

TEST_CASE("responses: input variants real clients send", "[api][responses]") {
  // an assistant message without type, a reasoning item with only a summary, one with only
  // encrypted content (skipped), a function_call_output of output_text parts
  const responses_request r = accept(R"({"input": [
    {"role": "user", "content": "Hi"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "S1"}, {"type": "summary_text", "text": "S2"}]},
    {"role": "assistant", "content": "Hello."},
    {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA..."},
    {"type": "function_call", "call_id": "c", "name": "f", "arguments": {"b": 1, "a": 2}},
    {"type": "function_call_output", "call_id": "c", "output": [{"type": "output_text", "text": "o1"},
                                                              {"type": "input_text", "text": "o2"}]}]})");
  const auto& m = r.chat.messages;
  REQUIRE(m.size() == 3);
  CHECK(m[1].role == "assistant");
  REQUIRE(m[1].reasoning_content);
  CHECK(*m[1].reasoning_content == "S1\nS2");
  CHECK(m[1].content == "Hello.");
  REQUIRE(m[1].tool_calls.size() == 1);
  CHECK(m[1].tool_calls[0].arguments == R"({"b":1,"a":2})");
  CHECK(m[2].role == "tool");
  CHECK(m[2].content == "o1\no2");
  // a reasoning item after text opens the next assistant message
  const responses_request two = accept(R"({"input": [{"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "One."},
    {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "R"}]},
    {"role": "assistant", "content": "Two."}]})");
  REQUIRE(two.chat.messages.size() == 3);
  CHECK(two.chat.messages[1].content == "One.");
  CHECK(two.chat.messages[2].content == "Two.");
}

TEST_CASE("responses: tool_choice and reasoning.effort", "[api][responses]") {
  const std::string tools =
      R"("tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}}])";
  CHECK(accept(R"({"input": "x", )" + tools + R"(})").chat.tool_choice == "auto");
  CHECK(accept(R"({"input": "x", "tool_choice": "none", )" + tools + R"(})").chat.tool_choice == "none");
  CHECK(accept(R"({"input": "x", "tool_choice": "required", )" + tools + R"(})").chat.tool_choice ==
        "required");
  CHECK(accept(R"({"input": "x", "tool_choice": {"type": "function", "name": "read"}, )" + tools + R"(})")
            .chat.tool_choice == "function:read");
  CHECK(
      accept(R"({"input": "x", "tool_choice": {"type": "allowed_tools", "mode": "required", "tools": []}, )" +
             tools + R"(})")
          .chat.tool_choice == "required");
  CHECK(reject(R"({"input": "x", "tool_choice": "required"})").param == "tool_choice");
  CHECK(reject(R"({"input": "x", "tool_choice": {"type": "function", "name": "write"}, )" + tools + R"(})")
            .param == "tool_choice.name");
  CHECK(reject(R"({"input": "x", "tool_choice": "sometimes"})").param == "tool_choice");
  CHECK(reject(R"({"input": "x", "tool_choice": {"type": "web_search"}})").param == "tool_choice.type");

  CHECK_FALSE(accept(R"({"input": "x", "reasoning": {"effort": "none"}})").chat.enable_thinking);
  CHECK_FALSE(accept(R"({"input": "x", "reasoning": {"effort": "minimal"}})").chat.enable_thinking);
  const responses_request high =
      accept(R"({"input": "x", "reasoning": {"effort": "high", "summary": "auto"}})");
  CHECK(high.chat.enable_thinking);
  REQUIRE(high.echo.effort);
  CHECK(*high.echo.effort == "high");
  CHECK(reject(R"({"input": "x", "reasoning": {"effort": "extreme"}})").param == "reasoning.effort");
  CHECK(reject(R"({"input": "x", "reasoning": "high"})").param == "reasoning");
}

TEST_CASE("responses: a stored conversation goes before the new input", "[api][responses]") {
  const responses_request first = accept(R"({"instructions": "Old rules.", "input": [
    {"role": "developer", "content": "Dev note."}, {"role": "user", "content": "One"}]})");
  std::vector<chat_message> prior = first.input;
  assistant_output answer;
  answer.content = "Reply one.";
  prior.push_back(answer_message(answer));
  const responses_request next =
      accept(R"({"instructions": "New rules.", "previous_response_id": "resp_9", "input": "Two"})", prior);
  REQUIRE(next.echo.previous_response_id);
  CHECK(*next.echo.previous_response_id == "resp_9");
  const auto& m = next.chat.messages;
  REQUIRE(m.size() == 4);
  CHECK(m[0].role == "system");
  CHECK(m[0].content == "New rules.\nDev note.");  // instructions are not carried over; items are
  CHECK(m[1].content == "One");
  CHECK(m[2].content == "Reply one.");
  CHECK(m[3].content == "Two");
}

TEST_CASE("responses: bad input is a 400 naming the field", "[api][responses]") {
  CHECK(reject("{\"input\": ").param.empty());
  CHECK(reject("[]").param.empty());
  CHECK(reject("{}").param == "input");
  CHECK(reject(R"({"input": ""})").param == "input");
  CHECK(reject(R"({"input": 7})").param == "input");
  CHECK(reject(R"({"input": [3]})").param == "input[0]");
  CHECK(reject(R"({"input": [{"content": "x"}]})").param == "input[0].type");
  CHECK(reject(R"({"input": [{"role": "tool", "content": "x"}]})").param == "input[0].role");
  CHECK(reject(R"({"input": [{"role": "user"}]})").param == "input[0].content");
  CHECK(reject(R"({"input": [{"role": "user", "content": [{"type": "hologram"}]}]})").param ==
        "input[0].content[0].type");
  CHECK(reject(R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})").param ==
        "input[0].content[0].text");
  CHECK(reject(R"({"input": [{"type": "function_call", "name": "f"}]})").param == "input[0].call_id");
  CHECK(reject(R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": 3}]})")
            .param == "input[0].arguments");
  CHECK(reject(R"({"input": [{"type": "function_call_output", "call_id": "c"}]})").param ==
        "input[0].output");
  CHECK(reject(R"({"input": [{"type": "item_reference", "id": "x"}]})").param == "input[0].type");
  CHECK(reject(R"({"input": "x", "max_output_tokens": 0})").param == "max_output_tokens");
  CHECK(reject(R"({"input": "x", "max_output_tokens": "8"})").param == "max_output_tokens");
  CHECK(reject(R"({"input": "x", "temperature": 3})").param == "temperature");
  CHECK(reject(R"({"input": "x", "top_p": 0})").param == "top_p");
  CHECK(reject(R"({"input": "x", "stream": "yes"})").param == "stream");
  CHECK(reject(R"({"input": "x", "store": 1})").param == "store");
  CHECK(reject(R"({"input": "x", "previous_response_id": ""})").param == "previous_response_id");
  CHECK(reject(R"({"input": "x", "instructions": 5})").param == "instructions");
  CHECK(reject(R"({"input": "x", "metadata": []})").param == "metadata");
  CHECK(reject(R"({"input": "x", "tools": [{"type": "function"}]})").param == "tools[0].name");
  CHECK(reject(R"({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": 1}]})").param ==
        "tools[0].parameters");
  CHECK(reject(R"({"input": "x", "tools": {}})").param == "tools");
  // only system items: nothing to answer
  auto r = parse_responses_request(R"({"input": [{"role": "system", "content": "x"}]})");
  REQUIRE(std::holds_alternative<responses_request>(r));
  const auto e = assemble_conversation(std::get<responses_request>(r), {});
  REQUIRE(e);
  CHECK(e->status == 400);
  CHECK(e->param == "input");
  // deep nesting is refused, not a crash
  CHECK(reject("{\"input\": " + std::string(600, '[') + std::string(600, ']') + "}").param.empty());
}

TEST_CASE("responses: input_image carries its pixels, a remote or missing image is a 400 naming it",
          "[api][responses][images]") {
  const std::string png = std::string("data:image/png;base64,") + test::png_2x2_base64;
  const responses_request r = accept(R"({"input": [{"role": "user", "content": [
    {"type": "input_text", "text": "what is this?"}, {"type": "input_image", "image_url": ")" +
                                     png + R"(", "detail": "auto"}]}]})");
  const chat_message& m = r.chat.messages.back();
  REQUIRE(m.parts.size() == 2);
  CHECK(m.parts[1].what == content_part::kind::image);
  REQUIRE(m.parts[1].image);
  CHECK(m.parts[1].image->width == 2);

  api_error e = reject(R"({"input": [{"role": "user", "content": [
    {"type": "input_image", "image_url": "https://example.com/a.png"}]}]})");
  CHECK(e.param == "input[0].content[0].image_url");
  CHECK_THAT(e.message, Catch::Contains("fetches no image URLs"));
  e = reject(R"({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-1"}]}]})");
  CHECK(e.param == "input[0].content[0].image_url");
  CHECK_THAT(e.message, Catch::Contains("file_id"));
  e = reject(R"({"input": [{"role": "user", "content": [
    {"type": "input_image", "image_url": "data:image/png;base64,AAAAAAAA"}]}]})");
  CHECK(e.param == "input[0].content[0].image_url");
}
