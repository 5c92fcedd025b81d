// parse_anthropic_request maps a Messages body onto the chat route's request: the same messages,
// tools and fields, so that the templates render (and the end anchor aligns) what the chat route
// would for the same conversation.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "runtime/api/anthropic_request.hpp"
#include "runtime/api/openai_request.hpp"
#include "runtime/text/template/chat_renderer.hpp"
#include "runtime/text/template/prompt_render.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/test_images.hpp"

using namespace anchorage;
using json = nlohmann::ordered_json;

namespace {

completion_request accept(const std::string& body, anthropic_route route = anthropic_route::create) {
  auto r = parse_anthropic_request(body, route);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message << " (" << e->param << ")");
  return std::get<completion_request>(r);
}

api_error reject(const std::string& body, anthropic_route route = anthropic_route::create) {
  auto r = parse_anthropic_request(body, route);
  const auto* e = std::get_if<api_error>(&r);
  INFO(body);
  REQUIRE(e != nullptr);
  CHECK(e->status == 400);
  CHECK(e->type == "invalid_request_error");
  CHECK_FALSE(e->message.empty());
  return *e;
}

std::string render(const completion_request& r, chat_renderer renderer = chat_renderer::builtin) {
  const bool tools = r.tool_choice != "none" && !r.tools.empty();
  return render_prompt_text(renderer, r.messages, tools ? r.tools : json(), r.enable_thinking);
}

}  // namespace

TEST_CASE("anthropic: a plain request maps onto a chat request", "[api][anthropic]") {
  const completion_request r = accept(R"({"model": "m", "max_tokens": 64, "system": "Be terse.",
    "messages": [{"role": "user", "content": "Hello"}], "temperature": 0.5, "top_p": 0.9, "top_k": 7,
    "stop_sequences": ["END", "STOP"], "stream": true, "cache_control": {"type": "ephemeral"}})");
  CHECK(r.kind == request_kind::chat);
  CHECK(r.model == "m");
  REQUIRE(r.max_tokens);
  CHECK(*r.max_tokens == 64);
  REQUIRE(r.messages.size() == 2);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[0].content == "Be terse.");
  CHECK(r.messages[1].role == "user");
  CHECK(r.messages[1].content == "Hello");
  CHECK(r.temperature == 0.5);
  CHECK(r.temperature_given);
  CHECK(r.top_p == 0.9);
  REQUIRE(r.top_k);
  CHECK(*r.top_k == 7);
  CHECK(r.stop == std::vector<std::string>{"END", "STOP"});
  CHECK(r.stream);
  CHECK_FALSE(r.enable_thinking);  // Anthropic's default: no thinking unless asked
  CHECK_FALSE(r.reasoning_budget);
  CHECK(r.tools.empty());
  CHECK(r.tool_choice == "auto");
}

TEST_CASE("anthropic: max_tokens is required for create and not for count_tokens", "[api][anthropic]") {
  const std::string body = R"({"messages": [{"role": "user", "content": "Hi"}]})";
  CHECK(reject(body).param == "max_tokens");
  const completion_request r = accept(body, anthropic_route::count_tokens);
  CHECK_FALSE(r.max_tokens);
  CHECK(reject(R"({"max_tokens": 0, "messages": [{"role": "user", "content": "Hi"}]})").param ==
        "max_tokens");
  CHECK(reject(R"({"max_tokens": "8", "messages": [{"role": "user", "content": "Hi"}]})").param ==
        "max_tokens");
}

TEST_CASE("anthropic: bad input is a 400 naming the field", "[api][anthropic]") {
  const std::string ok_messages = R"("messages": [{"role": "user", "content": "Hi"}])";
  CHECK(reject("{not json").param.empty());
  CHECK(reject("[1, 2]").param.empty());
  CHECK(reject(R"({"max_tokens": 8})").param == "messages");
  CHECK(reject(R"({"max_tokens": 8, "messages": {}})").param == "messages");
  CHECK(reject(R"({"max_tokens": 8, "messages": []})").param == "messages");
  CHECK(reject(R"({"max_tokens": 8, "messages": [{"role": "tool", "content": "x"}]})").param ==
        "messages[0].role");
  CHECK(reject(R"({"max_tokens": 8, "messages": [{"content": "x"}]})").param == "messages[0].role");
  CHECK(reject(R"({"max_tokens": 8, "messages": [{"role": "user", "content": 3}]})").param ==
        "messages[0].content");
  CHECK(
      reject(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "video"}]}]})").param ==
      "messages[0].content[0].type");
  CHECK(reject(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "text"}]}]})").param ==
        "messages[0].content[0].text");
  // a tool_use only in an assistant message, a tool_result only in a user message
  CHECK(reject(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "tool_use",
    "id": "t", "name": "f", "input": {}}]}]})")
            .param == "messages[0].content[0].type");
  CHECK(reject(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "q"}, {"role": "assistant",
    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}]})")
            .param == "messages[1].content[0].input");
  CHECK(reject(R"({"max_tokens": 8, "temperature": "hot", )" + ok_messages + "}").param == "temperature");
  CHECK(reject(R"({"max_tokens": 8, "temperature": 3, )" + ok_messages + "}").param == "temperature");
  CHECK(reject(R"({"max_tokens": 8, "top_k": -1, )" + ok_messages + "}").param == "top_k");
  CHECK(reject(R"({"max_tokens": 8, "stop_sequences": "END", )" + ok_messages + "}").param ==
        "stop_sequences");
  CHECK(reject(R"({"max_tokens": 8, "stop_sequences": [""], )" + ok_messages + "}").param ==
        "stop_sequences[0]");
  CHECK(reject(R"({"max_tokens": 8, "system": 5, )" + ok_messages + "}").param == "system");
  CHECK(reject(R"({"max_tokens": 8, "system": [{"type": "image"}], )" + ok_messages + "}").param ==
        "system[0].type");
  CHECK(reject(R"({"max_tokens": 8, "metadata": {"user_id": 5}, )" + ok_messages + "}").param ==
        "metadata.user_id");
  CHECK(reject(R"({"max_tokens": 8, "stream": "yes", )" + ok_messages + "}").param == "stream");
  std::string deep(600, '[');
  CHECK(reject(deep + std::string(600, ']')).message.find("nested") != std::string::npos);
}

TEST_CASE("anthropic: the billing block is left out of the rendered prompt", "[api][anthropic]") {
  auto body = [](const std::string& cch) {
    return R"({"max_tokens": 8, "system": [
      {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.37.0d9; cc_entrypoint=cli; cch=)" +
           cch + R"(;"},
      {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
       "cache_control": {"type": "ephemeral"}},
      {"type": "text", "text": ""},
      {"type": "text", "text": "Work carefully."}],
      "messages": [{"role": "user", "content": "Hi"}]})";
  };
  const completion_request a = accept(body("fa690"));
  const completion_request b = accept(body("0b1c2"));
  REQUIRE(a.messages[0].role == "system");
  CHECK(a.messages[0].content ==
        "You are Claude Code, Anthropic's official CLI for Claude.\nWork carefully.");
  const std::string text = render(a);
  CHECK(text.find("x-anthropic-billing-header") == std::string::npos);
  CHECK(text.find("cch=") == std::string::npos);
  CHECK(text.find("Work carefully.") != std::string::npos);
  CHECK(text == render(b));  // the cch value changes on every request and costs nothing
  // a system text that only mentions the header is kept
  const completion_request c = accept(R"({"max_tokens": 8, "system": [{"type": "text",
    "text": "About x-anthropic-billing-header: nothing."}], "messages": [{"role": "user", "content": "Hi"}]})");
  CHECK(render(c).find("About x-anthropic-billing-header") != std::string::npos);
}

TEST_CASE("anthropic: content blocks map onto the chat route's messages", "[api][anthropic]") {
  const completion_request r = accept(R"({"max_tokens": 8, "messages": [
    {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "text", "text": ""},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ")" +
                                      std::string(test::png_2x2_base64) + R"("}},
      {"type": "text", "text": "at this", "cache_control": {"type": "ephemeral"}}]},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "I should read it.", "signature": "sig-anything"},
      {"type": "redacted_thinking", "data": "opaque"},
      {"type": "text", "text": "Reading."},
      {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "/a", "limit": 5}},
      {"type": "tool_use", "id": "toolu_2", "name": "list", "input": {}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "line one"},
      {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
       "content": [{"type": "text", "text": "no such"}, {"type": "text", "text": "directory"}]},
      {"type": "text", "text": "<system-reminder>be brief</system-reminder>"}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3"}]}]})");
  REQUIRE(r.messages.size() == 6);
  const chat_message& u = r.messages[0];
  CHECK(u.role == "user");
  CHECK(u.content == "look\nat this");
  REQUIRE(u.parts.size() == 3);  // the empty text block is dropped
  CHECK(u.parts[1].what == content_part::kind::image);
  REQUIRE(u.parts[1].image);
  CHECK(u.parts[1].image->rgb == std::vector<std::uint8_t>{255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255});

  const chat_message& a = r.messages[1];
  CHECK(a.role == "assistant");
  REQUIRE(a.reasoning_content);
  CHECK(*a.reasoning_content == "I should read it.");
  CHECK(a.content == "Reading.");
  REQUIRE(a.tool_calls.size() == 2);
  CHECK(a.tool_calls[0].id == "toolu_1");
  CHECK(a.tool_calls[0].name == "read");
  CHECK(a.tool_calls[0].arguments == R"({"path":"/a","limit":5})");  // the client's key order
  CHECK(a.tool_calls[1].arguments == "{}");

  CHECK(r.messages[2].role == "tool");
  CHECK(r.messages[2].tool_call_id == "toolu_1");
  CHECK(r.messages[2].content == "line one");
  CHECK(r.messages[3].role == "tool");
  CHECK(r.messages[3].tool_call_id == "toolu_2");
  CHECK(r.messages[3].content == "no such\ndirectory");
  CHECK(r.messages[4].role == "user");  // the text beside the results follows them
  CHECK(r.messages[4].content == "<system-reminder>be brief</system-reminder>");
  CHECK(r.messages[5].role == "tool");  // a message of results only is those results
  CHECK(r.messages[5].content.empty());
}

TEST_CASE("anthropic: an answer sent back as blocks renders as the chat route's reasoning_content",
          "[api][anthropic]") {
  // The same conversation on both routes: the assistant's thinking block is the chat route's
  // reasoning_content, its tool_use the chat route's tool call, its tool_result a tool message.
  const completion_request anthropic = accept(R"({"max_tokens": 8, "thinking": {"type": "enabled",
    "budget_tokens": 2048}, "system": "sys", "tools": [{"name": "read", "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
    "messages": [{"role": "user", "content": "q"},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
      {"type": "text", "text": "ok"},
      {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "/x"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "data"}]}]})");
  auto chat_parsed = parse_request(R"({"max_tokens": 8, "chat_template_kwargs": {"enable_thinking": true},
    "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
    {"role": "assistant", "content": "ok", "reasoning_content": "hmm", "tool_calls": [{"id": "c1",
      "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"/x\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "data"}]})",
                                   request_kind::chat);
  REQUIRE(std::holds_alternative<completion_request>(chat_parsed));
  const completion_request& chat = std::get<completion_request>(chat_parsed);
  CHECK(anthropic.enable_thinking);
  REQUIRE(anthropic.reasoning_budget);
  CHECK(*anthropic.reasoning_budget == 2048);
  CHECK(anthropic.tools.dump() == chat.tools.dump());
  for (chat_renderer t : {chat_renderer::builtin, chat_renderer::qwen35, chat_renderer::qwen3}) {
    INFO(chat_renderer_name(t));
    const std::string text = render(anthropic, t);
    CHECK(text == render(chat, t));
    CHECK(text.find("hmm") != std::string::npos);
  }
}

TEST_CASE("anthropic: a tool_use re-serialised by the client renders the same", "[api][anthropic]") {
  // The built-in template (the byte-tokenizer presets') writes arguments with sorted keys and its
  // own spacing; the Qwen templates keep the client's key order, which clients keep.
  auto body = [](const std::string& input) {
    return R"({"max_tokens": 8, "messages": [{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "edit", "input": )" +
           input + R"(}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
      "content": "done"}]}]})";
  };
  const completion_request a =
      accept(body(R"({"path": "/a", "old": "x\u0041", "new": {"n": 1, "m": [1, 2]}})"));
  const completion_request b = accept(body(R"({ "path":"/a","old":"xA" , "new":{"n":1,"m":[1,2]} })"));
  const completion_request c = accept(body(R"({"new": {"m": [1, 2], "n": 1}, "old": "xA", "path": "/a"})"));
  CHECK(render(a) == render(b));
  CHECK(render(a) == render(c));
  for (chat_renderer t : {chat_renderer::qwen35, chat_renderer::qwen3}) {
    INFO(chat_renderer_name(t));
    CHECK(render(a, t) == render(b, t));  // spacing and escapes never matter
  }
}

TEST_CASE("anthropic: thinking and tools and tool_choice map onto the chat route's fields",
          "[api][anthropic]") {
  const std::string m = R"("max_tokens": 8, "messages": [{"role": "user", "content": "q"}])";
  const std::string tools = R"("tools": [{"name": "a", "input_schema": {"type": "object"},
    "cache_control": {"type": "ephemeral"}}, {"type": "bash_20250124", "name": "bash"},
    {"type": "custom", "name": "b", "description": "B", "input_schema": {"type": "object",
     "properties": {"z": {"type": "string"}, "y": {"type": "integer"}}}}])";

  CHECK(accept("{" + m + R"(, "thinking": {"type": "disabled"}})").enable_thinking == false);
  const completion_request adaptive = accept("{" + m + R"(, "thinking": {"type": "adaptive"}})");
  CHECK(adaptive.enable_thinking);
  CHECK_FALSE(adaptive.reasoning_budget);
  CHECK(reject("{" + m + R"(, "thinking": {"type": "sometimes"}})").param == "thinking.type");
  CHECK(reject("{" + m + R"(, "thinking": {"type": "enabled", "budget_tokens": 0}})").param ==
        "thinking.budget_tokens");
  CHECK(reject("{" + m + R"(, "thinking": true})").param == "thinking");

  const completion_request t = accept("{" + m + ", " + tools + "}");
  REQUIRE(t.tools.size() == 2);  // the server tool is dropped
  CHECK(t.tools[0].dump() == R"({"type":"function","function":{"name":"a","parameters":{"type":"object"}}})");
  CHECK(t.tools[1]["function"]["description"] == "B");
  CHECK(t.tools[1]["function"]["parameters"]["properties"].dump() ==
        R"({"z":{"type":"string"},"y":{"type":"integer"}})");  // the client's key order
  CHECK(t.tool_choice == "auto");

  auto choice = [&](const std::string& c) {
    return "{" + m + ", " + tools + R"(, "tool_choice": )" + c + "}";
  };
  CHECK(accept(choice(R"({"type": "auto", "disable_parallel_tool_use": true})")).tool_choice == "auto");
  CHECK(accept(choice(R"({"type": "any"})")).tool_choice == "required");
  CHECK(accept(choice(R"({"type": "tool", "name": "b"})")).tool_choice == "function:b");
  CHECK(accept(choice(R"({"type": "none"})")).tool_choice == "none");
  CHECK(reject(choice(R"({"type": "tool", "name": "bash"})")).param == "tool_choice.name");
  CHECK(reject(choice(R"({"type": "whatever"})")).param == "tool_choice.type");
  CHECK(reject(choice(R"("auto")")).param == "tool_choice");
  CHECK(reject("{" + m + R"(, "tool_choice": {"type": "any"}})").param == "tool_choice");
  CHECK(reject("{" + m + R"(, "tools": [{"name": "a"}]})").param == "tools[0].input_schema");
  CHECK(reject("{" + m + R"(, "tools": [{"input_schema": {}}]})").param == "tools[0].name");
}

TEST_CASE("anthropic: metadata.user_id names the session where it holds one", "[api][anthropic]") {
  const std::string m = R"("max_tokens": 8, "messages": [{"role": "user", "content": "q"}])";
  const completion_request json_form = accept("{" + m + R"(, "metadata": {"user_id":
    "{\"device_id\":\"d1\",\"account_uuid\":\"\",\"session_id\":\"54c1eb09-aaaa\"}"}})");
  CHECK(json_form.session_header == "54c1eb09-aaaa");
  const completion_request old_form =
      accept("{" + m + R"(, "metadata": {"user_id": "user_abc123_account__session_9f00-bb"}})");
  CHECK(old_form.session_header == "9f00-bb");
  CHECK(old_form.user == "user_abc123_account__session_9f00-bb");
  const completion_request plain = accept("{" + m + R"(, "metadata": {"user_id": "alice"}})");
  CHECK(plain.session_header.empty());  // a user spans sessions: not a session key
  CHECK(plain.user == "alice");
  CHECK(accept("{" + m + R"(, "metadata": {}})").session_header.empty());
}

TEST_CASE("anthropic: system messages and system blocks join into the first message", "[api][anthropic]") {
  const completion_request r = accept(R"({"max_tokens": 8, "system": [{"type": "text", "text": "one"}],
    "messages": [{"role": "system", "content": "two"}, {"role": "user", "content": "q"}]})");
  REQUIRE(r.messages.size() == 2);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[0].content == "one\ntwo");
  CHECK(r.messages[1].role == "user");
}

TEST_CASE("anthropic: budget_tokens is the job's reasoning budget within --reasoning-budget",
          "[api][anthropic]") {
  auto budget = [](const std::string& thinking, long server_budget) {
    const completion_request r = accept(
        R"({"max_tokens": 8, "messages": [{"role": "user", "content": "q"}], "thinking": )" + thinking + "}");
    render_limits lim;
    lim.ctx_size = 4096;
    lim.reasoning_budget = server_budget;
    auto job = render_request(r, lim, tokenizer(), 1);
    REQUIRE(std::holds_alternative<board_job>(job));
    return std::get<board_job>(job).rules.reasoning_budget;
  };
  const std::string enabled = R"({"type": "enabled", "budget_tokens": 6})";
  CHECK(budget(enabled, -1) == 6);
  CHECK(budget(enabled, 4) == 4);
  CHECK(budget(enabled, 100) == 6);
  CHECK(budget(R"({"type": "adaptive"})", -1) == -1);
  CHECK(budget(R"({"type": "adaptive"})", 9) == 9);
  CHECK(budget(R"({"type": "disabled"})", 9) == -1);  // no thinking, no budget
}

TEST_CASE("anthropic: an image block that is no inline image gets a 400 naming its source",
          "[api][anthropic][images]") {
  const auto with = [](const std::string& source) {
    return R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
      {"type": "image", "source": )" +
           source + "}]}]}";
  };
  api_error e = reject(with(R"({"type": "url", "url": "https://example.com/cat.png"})"));
  CHECK(e.param == "messages[0].content[1].source.url");
  CHECK_THAT(e.message, Catch::Contains("fetches no image URLs"));
  e = reject(with(R"({"type": "base64", "media_type": "image/png", "data": "not base64!"})"));
  CHECK(e.param == "messages[0].content[1].source.data");
  e = reject(with(R"({"type": "base64", "media_type": "image/png", "data": "AAAAAAAA"})"));
  CHECK(e.param == "messages[0].content[1].source");
  CHECK_THAT(e.message, Catch::Contains("not a PNG, JPEG, GIF or WebP"));
  e = reject(with(R"({"type": "base64", "media_type": "image/png"})"));
  CHECK(e.param == "messages[0].content[1].source.data");
  e = reject(with(R"({"type": "file", "file_id": "f_1"})"));
  CHECK(e.param == "messages[0].content[1].source.type");
  // inside a tool result too
  e = reject(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "tool_result",
    "tool_use_id": "t", "content": [{"type": "image", "source": {"type": "url", "url": "http://x"}}]}]}]})");
  CHECK(e.param == "messages[0].content[0].content[0].source.url");
}
