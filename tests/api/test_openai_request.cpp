#include <catch2/catch.hpp>

#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "runtime/text/template/chat_template.hpp"
#include "runtime/api/openai_request.hpp"
#include "runtime/text/template/prompt_render.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/support/tokenizer_files.hpp"

using namespace anchorage;
using nlohmann::json;

namespace {

completion_request accept(const std::string& body, request_kind kind) {
  auto r = parse_request(body, kind);
  if (const auto* e = std::get_if<api_error>(&r)) FAIL("rejected: " << e->message);
  return std::get<completion_request>(r);
}

completion_request accept(const json& body, request_kind kind) { return accept(body.dump(), kind); }

api_error reject(const std::string& body, request_kind kind) {
  auto r = parse_request(body, kind);
  if (!std::holds_alternative<api_error>(r)) FAIL("accepted: " << body);
  return std::get<api_error>(r);
}

api_error reject(const json& body, request_kind kind) { return reject(body.dump(), kind); }

// A minimal valid body of each kind, to which one bad field is added.
json chat_base() { return {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}; }
json completion_base() { return {{"model", "m"}, {"prompt", "hello"}}; }

json with(json base, const std::string& key, json value) {
  base[key] = std::move(value);
  return base;
}

void check_rejects(const json& body, request_kind kind, const std::string& param,
                   const std::string& fragment) {
  INFO(body.dump());
  const api_error e = reject(body, kind);
  CHECK(e.status == 400);
  CHECK(e.type == "invalid_request_error");
  CHECK(e.param == param);
  CHECK_THAT(e.message, Catch::Contains(fragment));
}

json message(const std::string& role, json content) {
  return {{"role", role}, {"content", std::move(content)}};
}

}  // namespace

TEST_CASE("body must be a JSON object", "[openai]") {
  for (const char* body : {"", "{", "not json", "{\"a\":1,}", "\"\xff\""}) {
    const api_error e = reject(std::string(body), request_kind::chat);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK_THAT(e.message, Catch::Contains("not valid JSON"));
  }
  CHECK_THAT(reject(std::string("[1,2]"), request_kind::completion).message,
             Catch::Contains("must be a JSON object"));
  CHECK_THAT(reject(std::string(2000, '[') + std::string(2000, ']'), request_kind::chat).message,
             Catch::Contains("nested deeper"));
}

TEST_CASE("sampling and framing fields are validated", "[openai]") {
  const auto k = request_kind::chat;
  check_rejects(with(chat_base(), "model", 3), k, "model", "model must be a string");
  check_rejects(with(chat_base(), "max_tokens", 0), k, "max_tokens", "positive integer");
  check_rejects(with(chat_base(), "max_tokens", -5), k, "max_tokens", "positive integer");
  check_rejects(with(chat_base(), "max_tokens", 1.5), k, "max_tokens", "max_tokens must be an integer");
  check_rejects(with(chat_base(), "max_tokens", "10"), k, "max_tokens", "max_tokens must be an integer");
  check_rejects(with(chat_base(), "max_completion_tokens", 0), k, "max_completion_tokens",
                "positive integer");
  check_rejects(with(chat_base(), "max_completion_tokens", true), k, "max_completion_tokens",
                "must be an integer");
  check_rejects(with(chat_base(), "temperature", "hot"), k, "temperature", "must be a number");
  check_rejects(with(chat_base(), "temperature", 2.5), k, "temperature", "must be in [0");
  check_rejects(with(chat_base(), "temperature", -0.1), k, "temperature", "must be in [0");
  check_rejects(with(chat_base(), "top_p", 0), k, "top_p", "must be in (0");
  check_rejects(with(chat_base(), "top_p", 1.01), k, "top_p", "must be in (0");
  check_rejects(with(chat_base(), "n", 2), k, "n", "n must be 1");
  check_rejects(with(chat_base(), "n", 0), k, "n", "n must be 1");
  check_rejects(with(chat_base(), "stop", 5), k, "stop", "a string or an array");
  check_rejects(with(chat_base(), "stop", {"a", "b", "c", "d", "e"}), k, "stop", "at most 4");
  check_rejects(with(chat_base(), "stop", {"a", 1}), k, "stop[1]", "must be a string");
  check_rejects(with(chat_base(), "stop", ""), k, "stop", "must not be empty");
  check_rejects(with(chat_base(), "seed", -1), k, "seed", "non-negative integer");
  check_rejects(with(chat_base(), "seed", 1.5), k, "seed", "non-negative integer");
  check_rejects(with(chat_base(), "stream", "true"), k, "stream", "stream must be a boolean");
  check_rejects(with(chat_base(), "stream_options", 1), k, "stream_options", "an object");
  check_rejects(with(chat_base(), "stream_options", {{"include_usage", 1}}), k,
                "stream_options.include_usage", "a boolean");
  check_rejects(with(chat_base(), "return_progress", "yes"), k, "return_progress", "a boolean");
  check_rejects(with(chat_base(), "prompt_cache_key", 7), k, "prompt_cache_key", "a string");
  check_rejects(with(chat_base(), "user", json::object()), k, "user", "a string");
  check_rejects(with(chat_base(), "chat_template_kwargs", {{"enable_thinking", "no"}}), k,
                "chat_template_kwargs.enable_thinking", "a boolean");
  check_rejects(with(completion_base(), "max_tokens", 0), request_kind::completion, "max_tokens",
                "positive integer");
}

TEST_CASE("accepted edge values of the shared fields", "[openai]") {
  const auto k = request_kind::chat;
  json body = chat_base();
  body["max_tokens"] = 32000;
  body["temperature"] = 0;
  body["top_p"] = 1;
  body["n"] = 1;
  body["seed"] = 0;
  body["stop"] = "END";
  body["frequency_penalty"] = 0.5;  // unknown to us: ignored
  body["parallel_tool_calls"] = true;
  body["user"] = nullptr;  // null is the same as absent
  completion_request r = accept(body, k);
  CHECK(r.max_tokens == 32000L);
  CHECK(r.temperature == 0.0);
  CHECK(r.top_p == 1.0);
  CHECK(r.seed == std::uint64_t{0});
  CHECK(r.stop == std::vector<std::string>{"END"});
  CHECK(r.user.empty());

  body = chat_base();
  body["max_tokens"] = 10;
  body["max_completion_tokens"] = 20;  // the newer name wins
  r = accept(body, k);
  CHECK(r.max_tokens == 20L);
  CHECK(!accept(chat_base(), k).max_tokens.has_value());
  CHECK(accept(with(chat_base(), "seed", 18446744073709551615ULL), k).seed ==
        std::uint64_t{18446744073709551615ULL});
}

TEST_CASE("completion prompts", "[openai]") {
  const auto k = request_kind::completion;
  check_rejects(json{{"model", "m"}}, k, "prompt", "prompt is required");
  check_rejects(with(completion_base(), "prompt", ""), k, "prompt", "must not be empty");
  check_rejects(with(completion_base(), "prompt", json::array()), k, "prompt", "must not be empty");
  check_rejects(with(completion_base(), "prompt", {""}), k, "prompt", "must not be empty");
  check_rejects(with(completion_base(), "prompt", {"a", "b"}), k, "prompt", "one prompt per request");
  check_rejects(with(completion_base(), "prompt", {{1, 2}, {3}}), k, "prompt", "one prompt per request");
  check_rejects(with(completion_base(), "prompt", {1, 272}), k, "prompt", "prompt[1] = 272");
  check_rejects(with(completion_base(), "prompt", {-1}), k, "prompt", "not a token id");
  check_rejects(with(completion_base(), "prompt", {1, "a"}), k, "prompt", "a string, an array");
  check_rejects(with(completion_base(), "prompt", 12), k, "prompt", "a string, an array");
  check_rejects(with(completion_base(), "prompt", {1.5}), k, "prompt", "a string, an array");

  completion_request r = accept(json{{"model", "m"}, {"prompt", {"only"}}}, k);
  REQUIRE(r.prompt_text);
  CHECK(*r.prompt_text == "only");
  r = accept(json{{"prompt", {{5, 6}}}}, k);
  REQUIRE(r.prompt_tokens);
  CHECK(*r.prompt_tokens == std::vector<std::int32_t>{5, 6});
}

TEST_CASE("full completion request with text", "[openai]") {
  const completion_request r =
      accept(std::string(R"({"model":"anchorage-small","prompt":"Once upon a time","max_tokens":64,
        "temperature":0.7,"top_p":0.9,"seed":42,"stop":["\n\n","THE END"],"stream":true,
        "stream_options":{"include_usage":true},"prompt_cache_key":"story","user":"u1",
        "echo":false,"logprobs":null,"return_progress":true})"),
             request_kind::completion);
  CHECK(r.kind == request_kind::completion);
  CHECK(r.model == "anchorage-small");
  REQUIRE(r.prompt_text);
  CHECK(*r.prompt_text == "Once upon a time");
  CHECK(!r.prompt_tokens);
  CHECK(r.max_tokens == 64L);
  CHECK(r.temperature == Approx(0.7));
  CHECK(r.top_p == Approx(0.9));
  CHECK(r.seed == std::uint64_t{42});
  CHECK(r.stop == std::vector<std::string>{"\n\n", "THE END"});
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.return_progress);
  CHECK(r.prompt_cache_key == std::string("story"));
  CHECK(r.user == "u1");
  CHECK(r.messages.empty());
}

TEST_CASE("full completion request with token ids", "[openai]") {
  const completion_request r =
      accept(std::string(R"({"prompt":[256,117,115,101,114,10,0,271]})"), request_kind::completion);
  CHECK(r.model.empty());
  CHECK(!r.prompt_text);
  REQUIRE(r.prompt_tokens);
  CHECK(*r.prompt_tokens == std::vector<std::int32_t>{256, 117, 115, 101, 114, 10, 0, 271});
  CHECK(!r.max_tokens);
  CHECK(r.temperature == 1.0);
  CHECK(r.top_p == 1.0);
  CHECK(!r.seed);
  CHECK(!r.stream);
  CHECK(!r.include_usage);
  CHECK(!r.return_progress);
  CHECK(!r.prompt_cache_key);
}

TEST_CASE("chat messages are validated", "[openai]") {
  const auto k = request_kind::chat;
  check_rejects(json{{"model", "m"}}, k, "messages", "messages is required");
  check_rejects(json{{"messages", json::array()}}, k, "messages", "at least one message");
  check_rejects(json{{"messages", "hi"}}, k, "messages", "must be an array");
  check_rejects(json{{"messages", {"hi"}}}, k, "messages[0]", "must be an object");
  check_rejects(json{{"messages", {{{"content", "hi"}}}}}, k, "messages[0].role", "is required");
  check_rejects(json{{"messages", {{{"role", 1}, {"content", "hi"}}}}}, k, "messages[0].role",
                "must be a string");
  check_rejects(json{{"messages", {message("user", "a"), message("wizard", "b")}}}, k, "messages[1].role",
                "'wizard' is unknown");
  check_rejects(json{{"messages", {message("user", "a"), message("system", "b")}}}, k, "messages[1].role",
                "only allowed as the first message");
  check_rejects(json{{"messages", {message("user", 5)}}}, k, "messages[0].content",
                "a string, null or an array");
  check_rejects(json{{"messages", {message("user", {{{"type", "input_audio"}}})}}}, k,
                "messages[0].content[0].type", "'input_audio' is not supported");
  check_rejects(json{{"messages", {message("user", {{{"type", "text"}, {"text", 3}}})}}}, k,
                "messages[0].content[0].text", "must be a string");
  check_rejects(json{{"messages", {message("user", {"plain"})}}}, k, "messages[0].content[0]",
                "must be an object");
  check_rejects(json{{"messages", {message("user", {{{"text", "x"}}})}}}, k, "messages[0].content[0].type",
                "must be a string");
  json m = message("assistant", nullptr);
  m["reasoning_content"] = 5;
  check_rejects(json{{"messages", {message("user", "q"), m}}}, k, "messages[1].reasoning_content",
                "a string");
  m = message("assistant", nullptr);
  m["tool_calls"] = {{{"id", "c1"}, {"type", "function"}, {"function", {{"arguments", "{}"}}}}};
  check_rejects(json{{"messages", {message("user", "q"), m}}}, k, "messages[1].tool_calls[0].function.name",
                "non-empty string");
  m["tool_calls"] = {
      {{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", {1, 2}}}}}};
  check_rejects(json{{"messages", {message("user", "q"), m}}}, k,
                "messages[1].tool_calls[0].function.arguments", "a JSON string or an object");
  m["tool_calls"] = {{{"id", "c1"}, {"type", "retrieval"}, {"function", {{"name", "f"}}}}};
  check_rejects(json{{"messages", {message("user", "q"), m}}}, k, "messages[1].tool_calls[0].type",
                "\"function\"");
  m = message("tool", "out");
  m["tool_call_id"] = 4;
  check_rejects(json{{"messages", {message("user", "q"), m}}}, k, "messages[1].tool_call_id", "a string");
}

TEST_CASE("chat content forms", "[openai]") {
  json body = {{"messages",
                {message("developer", "be brief"),
                 message("user", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}),
                 message("assistant", nullptr)}}};
  const completion_request r = accept(body, request_kind::chat);
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[1].content == "a\nb");
  CHECK(r.messages[2].content.empty());
  CHECK(!r.messages[2].reasoning_content);
  CHECK(r.enable_thinking);
}

TEST_CASE("tools and tool_choice are validated", "[openai]") {
  const auto k = request_kind::chat;
  const json tool = {{"type", "function"},
                     {"function", {{"name", "read"}, {"parameters", {{"type", "object"}}}}}};
  check_rejects(with(chat_base(), "tools", tool), k, "tools", "must be an array");
  check_rejects(with(chat_base(), "tools", {{{"type", "code_interpreter"}}}), k, "tools[0].type",
                "\"function\"");
  check_rejects(with(chat_base(), "tools", {{{"type", "function"}}}), k, "tools[0].function",
                "must be an object");
  check_rejects(with(chat_base(), "tools", {{{"type", "function"}, {"function", {{"name", ""}}}}}), k,
                "tools[0].function.name", "non-empty string");
  check_rejects(
      with(chat_base(), "tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", 1}}}}}),
      k, "tools[0].function.parameters", "an object");
  json body = with(chat_base(), "tools", {tool});
  check_rejects(with(body, "tool_choice", "always"), k, "tool_choice", "tool_choice must be");
  check_rejects(with(body, "tool_choice", 1), k, "tool_choice", "tool_choice must be");
  check_rejects(with(body, "tool_choice", {{"type", "function"}}), k, "tool_choice",
                "{\"type\":\"function\"");
  check_rejects(with(body, "tool_choice", {{"type", "function"}, {"function", {{"name", "write"}}}}), k,
                "tool_choice", "'write', which is not in tools");
  check_rejects(with(chat_base(), "tool_choice", "required"), k, "tool_choice", "needs at least one");

  CHECK(accept(body, k).tool_choice == "auto");
  CHECK(accept(with(body, "tool_choice", "none"), k).tool_choice == "none");
  CHECK(accept(with(body, "tool_choice", "required"), k).tool_choice == "required");
  CHECK(accept(with(body, "tool_choice", {{"type", "function"}, {"function", {{"name", "read"}}}}), k)
            .tool_choice == "function:read");
  CHECK(accept(with(chat_base(), "tool_choice", "none"), k).tools == nlohmann::ordered_json::array());
}

TEST_CASE("opencode-shaped chat request and its follow-up", "[openai]") {
  json tools = json::array();
  for (const char* name :
       {"bash", "read", "write", "edit", "glob", "grep", "list", "task", "webfetch", "todowrite"}) {
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", name},
                       {"description", std::string("Tool ") + name + std::string(400, '.')},
                       {"parameters",
                        {{"type", "object"},
                         {"properties", {{"path", {{"type", "string"}}}}},
                         {"required", {"path"}},
                         {"additionalProperties", false},
                         {"$schema", "http://json-schema.org/draft-07/schema#"}}}}}});
  }
  const std::string system_prompt = "You are opencode, an interactive CLI agent.\n" + std::string(12000, 'x');
  json body = {{"model", "anchorage/qwen3"},
               {"messages",
                {{{"role", "system"}, {"content", system_prompt}},
                 {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "list the files"}}}}}}},
               {"tools", tools},
               {"tool_choice", "auto"},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"max_tokens", 32000},
               {"temperature", 0.6},
               {"top_p", 0.95},
               {"providerOptions", {{"x", 1}}}};
  completion_request r = accept(body, request_kind::chat);
  CHECK(r.kind == request_kind::chat);
  CHECK(r.model == "anchorage/qwen3");
  REQUIRE(r.messages.size() == 2);
  CHECK(r.messages[0].content == system_prompt);
  CHECK(r.messages[1].content == "list the files");
  CHECK(json::parse(r.tools.dump()) == tools);
  CHECK(r.tool_choice == "auto");
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.max_tokens == 32000L);
  CHECK(r.temperature == Approx(0.6));
  CHECK(r.top_p == Approx(0.95));

  body["messages"].push_back(
      {{"role", "assistant"},
       {"content", ""},
       {"reasoning_content", "I should list the directory."},
       {"tool_calls",
        {{{"id", "call_0"},
          {"type", "function"},
          {"function", {{"name", "list"}, {"arguments", "{\"path\":\".\"}"}}}},
         {{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "read"}, {"arguments", {{"path", "README.md"}}}}}}}}});
  body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_0"}, {"content", "README.md\nsrc/"}});
  body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "# Hi"}});
  r = accept(body, request_kind::chat);
  REQUIRE(r.messages.size() == 5);
  const chat_message& a = r.messages[2];
  CHECK(a.role == "assistant");
  CHECK(a.content.empty());
  CHECK(a.reasoning_content == std::string("I should list the directory."));
  REQUIRE(a.tool_calls.size() == 2);
  CHECK(a.tool_calls[0].id == "call_0");
  CHECK(a.tool_calls[0].name == "list");
  CHECK(a.tool_calls[0].arguments == "{\"path\":\".\"}");
  CHECK(a.tool_calls[1].arguments == "{\"path\":\"README.md\"}");
  CHECK(r.messages[3].role == "tool");
  CHECK(r.messages[3].tool_call_id == "call_0");
  CHECK(r.messages[3].content == "README.md\nsrc/");
  CHECK(r.messages[4].tool_call_id == "call_1");

  // What the parser accepts, the chat template renders.
  template_options options;
  options.tools = json::parse(r.tools.dump());
  options.enable_thinking = r.enable_thinking;
  const std::string prompt = render_chat(r.messages, options);
  CHECK_THAT(prompt, Catch::Contains("<think>\nI should list the directory.\n</think>"));
  CHECK_THAT(prompt, Catch::Contains("{\"name\": \"read\", \"arguments\": {\"path\":\"README.md\"}}"));
}

TEST_CASE("enable_thinking comes from chat_template_kwargs", "[openai]") {
  CHECK(!accept(with(chat_base(), "chat_template_kwargs", {{"enable_thinking", false}}), request_kind::chat)
             .enable_thinking);
  CHECK(
      accept(with(chat_base(), "chat_template_kwargs", {{"other", 1}}), request_kind::chat).enable_thinking);
}

TEST_CASE("logit_bias is validated on both routes", "[openai]") {
  for (const auto k : {request_kind::chat, request_kind::completion}) {
    const json base = k == request_kind::chat ? chat_base() : completion_base();
    check_rejects(with(base, "logit_bias", {1, 2}), k, "logit_bias", "must be an object");
    check_rejects(with(base, "logit_bias", "50256:-100"), k, "logit_bias", "must be an object");
    check_rejects(with(base, "logit_bias", {{"272", 1}}), k, "logit_bias",
                  "\"272\" is not a token id in [0, 272)");
    check_rejects(with(base, "logit_bias", {{"-1", 1}}), k, "logit_bias", "\"-1\" is not a token id");
    check_rejects(with(base, "logit_bias", {{"a", 1}}), k, "logit_bias", "\"a\" is not a token id");
    check_rejects(with(base, "logit_bias", {{"", 1}}), k, "logit_bias", "is not a token id");
    check_rejects(with(base, "logit_bias", {{"1.5", 1}}), k, "logit_bias", "is not a token id");
    check_rejects(with(base, "logit_bias", {{" 7", 1}}), k, "logit_bias", "is not a token id");
    check_rejects(with(base, "logit_bias", {{"99999999999999999999", 1}}), k, "logit_bias",
                  "is not a token id");
    check_rejects(with(base, "logit_bias", {{"7", 100.5}}), k, "logit_bias",
                  "logit_bias[\"7\"] must be in [-100, 100]");
    check_rejects(with(base, "logit_bias", {{"7", -101}}), k, "logit_bias",
                  "must be in [-100, 100], got -101");
    check_rejects(with(base, "logit_bias", {{"7", "5"}}), k, "logit_bias",
                  "logit_bias[\"7\"] must be a number");
    check_rejects(with(base, "logit_bias", {{"7", true}}), k, "logit_bias", "must be a number");
    check_rejects(with(base, "logit_bias", {{"7", 1}, {"07", 2}}), k, "logit_bias", "names token 7 twice");
    json many = json::object();
    for (int i = 0; i < 272; ++i) many[std::to_string(i)] = 1;
    for (int i = 0; i < 29; ++i) many["0" + std::to_string(i + 100)] = 1;  // 301 keys
    check_rejects(with(base, "logit_bias", many), k, "logit_bias", "at most 300 entries, got 301");

    const completion_request r =
        accept(with(base, "logit_bias", {{"10", 5}, {"9", -100}, {"0", 100}, {"271", 0.25}}), k);
    using entry = std::pair<std::int32_t, float>;
    CHECK(r.logit_bias == std::vector<entry>{{0, 100.0f}, {9, -100.0f}, {10, 5.0f}, {271, 0.25f}});
    CHECK(accept(with(base, "logit_bias", nullptr), k).logit_bias.empty());
    CHECK(accept(with(base, "logit_bias", json::object()), k).logit_bias.empty());
  }
}

TEST_CASE("render_request passes logit_bias and opens thinking with its budget", "[openai]") {
  const tokenizer tok;
  render_limits lim;
  lim.ctx_size = 4096;
  lim.reasoning_budget = 64;
  using entry = std::pair<std::int32_t, float>;

  const completion_request chat =
      accept(with(chat_base(), "logit_bias", {{"259", -100}, {"65", 3}}), request_kind::chat);
  auto rendered = render_request(chat, lim, tok, 1);
  REQUIRE(std::holds_alternative<board_job>(rendered));
  board_job j = std::get<board_job>(rendered);
  CHECK(j.sampling.logit_bias == std::vector<entry>{{65, 3.0f}, {259, -100.0f}});
  CHECK(j.rules.parse_reasoning);
  CHECK(j.rules.starts_in_reasoning);
  CHECK(j.rules.reasoning_budget == 64);
  const std::string prompt = tok.decode(std::vector<token_id>(j.prompt.begin(), j.prompt.end()));
  CHECK(prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  CHECK(j.prompt.back() == '\n');
  CHECK(j.prompt[j.prompt.size() - 2] == special_tokens::think_open);

  const completion_request no_think =
      accept(with(chat_base(), "chat_template_kwargs", {{"enable_thinking", false}}), request_kind::chat);
  j = std::get<board_job>(render_request(no_think, lim, tok, 1));
  CHECK_FALSE(j.rules.parse_reasoning);
  CHECK_FALSE(j.rules.starts_in_reasoning);
  CHECK(j.rules.reasoning_budget == -1);
  CHECK(j.sampling.logit_bias.empty());

  const completion_request completion =
      accept(with(completion_base(), "logit_bias", {{"1", 2}}), request_kind::completion);
  j = std::get<board_job>(render_request(completion, lim, tok, 1));
  CHECK(j.sampling.logit_bias == std::vector<entry>{{1, 2.0f}});
  CHECK_FALSE(j.rules.starts_in_reasoning);
  CHECK(j.rules.reasoning_budget == -1);

  lim.reasoning_budget = -1;
  j = std::get<board_job>(render_request(chat, lim, tok, 1));
  CHECK(j.rules.starts_in_reasoning);
  CHECK(j.rules.reasoning_budget == -1);
}

TEST_CASE("render_request with a BPE tokenizer: its ids, its stop tokens, the job carries it",
          "[openai][bpe]") {
  const tokenizer tok = tokenizer::from_json_file(anchorage::testing::bpe_fixture("tiny_qwen3.json"));
  render_limits lim;
  lim.ctx_size = 4096;
  const auto rendered = render_request(accept(chat_base(), request_kind::chat), lim, tok, 1);
  REQUIRE(std::holds_alternative<board_job>(rendered));
  const board_job& j = std::get<board_job>(rendered);
  const std::string text = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n";
  const std::vector<token_id> want = tok.encode(text, true);
  CHECK(std::vector<token_id>(j.prompt.begin(), j.prompt.end()) == want);
  CHECK(j.prompt.front() == 301);  // the fixture's <|im_start|>, not the byte tokenizer's 256
  CHECK(j.sampling.stop_tokens ==
        std::vector<std::int32_t>{302, 300});  // the fixture's <|im_end|>, <|endoftext|>
  CHECK(j.client()->user_start == 0);
  REQUIRE(j.tok != nullptr);
  CHECK(j.tok->name() == tok.name());
  // The byte tokenizer's jobs carry none (the board reads null as the byte tokenizer).
  const auto plain = render_request(accept(chat_base(), request_kind::chat), lim, tokenizer(), 1);
  CHECK(std::get<board_job>(plain).tok == nullptr);
}

TEST_CASE("token ids in a request are checked against the vocabulary given", "[openai]") {
  const std::string body = R"({"model":"m","prompt":[151000, 5],"logit_bias":{"151643":-100}})";
  CHECK(std::holds_alternative<api_error>(parse_request(body, request_kind::completion)));
  const auto r = parse_request(body, request_kind::completion, 151936);
  REQUIRE(std::holds_alternative<completion_request>(r));
  CHECK(std::get<completion_request>(r).logit_bias.size() == 1);
  CHECK(std::holds_alternative<api_error>(parse_request(body, request_kind::completion, 151643)));
}
