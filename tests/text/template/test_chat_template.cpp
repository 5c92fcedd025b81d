#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/text/template/chat_template.hpp"

using namespace anchorage;

namespace {

chat_message msg(std::string role, std::string content) {
  chat_message m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

chat_message assistant(std::string content, std::optional<std::string> reasoning = std::nullopt) {
  chat_message m = msg("assistant", std::move(content));
  m.reasoning_content = std::move(reasoning);
  return m;
}

chat_message tool_result(std::string content) { return msg("tool", std::move(content)); }

const std::string tools_header =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const std::string tools_footer =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

}  // namespace

TEST_CASE("system and user with generation prompt", "[template]") {
  const std::string out =
      render_chat({msg("system", "You are helpful."), msg("user", "Hello!")}, template_options{});
  // thinking (the default): the prompt opens the reasoning block and the model continues in it
  CHECK(out ==
        "<|im_start|>system\nYou are helpful.<|im_end|>\n"
        "<|im_start|>user\nHello!<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n");
}

TEST_CASE("no generation prompt and no system message", "[template]") {
  template_options options;
  options.add_generation_prompt = false;
  CHECK(render_chat({msg("user", "Hi")}, options) == "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_CASE("enable_thinking off closes an empty think block", "[template]") {
  template_options options;
  options.enable_thinking = false;
  CHECK(render_chat({msg("user", "Hi")}, options) ==
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_CASE("reasoning is kept only after the last user query", "[template]") {
  const std::vector<chat_message> messages = {
      msg("user", "What is 2+2?"),
      assistant("4", std::string("\nadd them\n")),
      msg("user", "And 3+3?"),
      assistant("6", std::string("add again")),
  };
  CHECK(reasoning_kept_from(messages) == 2);
  template_options options;
  options.add_generation_prompt = false;
  CHECK(render_chat(messages, options) ==
        "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>\n"
        "<|im_start|>user\nAnd 3+3?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nadd again\n</think>\n\n6<|im_end|>\n");
}

TEST_CASE("reasoning given inline in content", "[template]") {
  const std::vector<chat_message> messages = {
      msg("user", "Q1"),
      assistant("<think>\nold thoughts\n</think>\n\nA1"),
      msg("user", "Q2"),
      assistant("<think>\n\nnew thoughts\n\n</think>\n\nA2"),
  };
  template_options options;
  options.add_generation_prompt = false;
  CHECK(render_chat(messages, options) ==
        "<|im_start|>user\nQ1<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\nA1<|im_end|>\n"
        "<|im_start|>user\nQ2<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nnew thoughts\n</think>\n\nA2<|im_end|>\n");
}

TEST_CASE("empty reasoning after the last query renders an empty think block", "[template]") {
  template_options options;
  options.add_generation_prompt = false;
  for (const auto& reasoning :
       {std::optional<std::string>(""), std::optional<std::string>("\n\n"), std::optional<std::string>()}) {
    const std::vector<chat_message> messages = {msg("user", "Q"), assistant("A", reasoning)};
    CHECK(render_chat(messages, options) ==
          "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA<|im_end|>\n");
  }
}

TEST_CASE("reasoning before the last query is dropped to an empty block", "[template]") {
  // Open WebUI sends a finished answer back without its reasoning; opencode sends it back with.
  // Either way the earlier turn renders the same: an empty block, then the content without its
  // leading newlines.
  template_options options;
  options.add_generation_prompt = false;
  const std::string want =
      "<|im_start|>user\nQ1<|im_end|>\n"
      "<|im_start|>assistant\n<think>\n\n</think>\n\nA1<|im_end|>\n"
      "<|im_start|>user\nQ2<|im_end|>\n";
  CHECK(render_chat({msg("user", "Q1"), assistant("A1", std::string("thought")), msg("user", "Q2")},
                    options) == want);
  CHECK(render_chat({msg("user", "Q1"), assistant("\n\nA1"), msg("user", "Q2")}, options) == want);
  CHECK(render_chat({msg("user", "Q1"), assistant("<think>\nthought\n</think>\n\nA1"), msg("user", "Q2")},
                    options) == want);
}

TEST_CASE("the generation prompt after a history, thinking on and off", "[template]") {
  const std::vector<chat_message> messages = {msg("user", "Q1"), assistant("A1", std::string("r1")),
                                              msg("user", "Q2")};
  const std::string history =
      "<|im_start|>user\nQ1<|im_end|>\n"
      "<|im_start|>assistant\n<think>\n\n</think>\n\nA1<|im_end|>\n"
      "<|im_start|>user\nQ2<|im_end|>\n";
  template_options options;
  CHECK(render_chat(messages, options) == history + "<|im_start|>assistant\n<think>\n");
  options.enable_thinking = false;
  CHECK(render_chat(messages, options) == history + "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_CASE("content without a leading <think> is left alone", "[template]") {
  const std::vector<chat_message> messages = {msg("user", "Q"), assistant("x </think> y")};
  template_options options;
  options.add_generation_prompt = false;
  CHECK(render_chat(messages, options) ==
        "<|im_start|>user\nQ<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\nx </think> y<|im_end|>\n");
}

TEST_CASE("tool definitions go in the system turn", "[template]") {
  template_options options;
  options.tools = nlohmann::json::array({
      {{"type", "function"},
       {"function",
        {{"name", "get_weather"},
         {"description", "Weather"},
         {"parameters",
          {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}}}},
      {{"type", "function"}, {"function", {{"name", "now"}}}},
  });
  const std::string tool1 =
      "{\"function\":{\"description\":\"Weather\",\"name\":\"get_weather\",\"parameters\":"
      "{\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"],\"type\":"
      "\"object\"}},\"type\":\"function\"}";
  const std::string tool2 = "{\"function\":{\"name\":\"now\"},\"type\":\"function\"}";

  SECTION("with a system message") {
    CHECK(render_chat({msg("system", "Be brief."), msg("user", "Weather?")}, options) ==
          "<|im_start|>system\nBe brief.\n\n" + tools_header + "\n" + tool1 + "\n" + tool2 + tools_footer +
              "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n");
  }
  SECTION("without a system message") {
    CHECK(render_chat({msg("user", "Weather?")}, options) ==
          "<|im_start|>system\n" + tools_header + "\n" + tool1 + "\n" + tool2 + tools_footer +
              "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n");
  }
}

TEST_CASE("assistant tool calls and grouped tool responses", "[template]") {
  chat_message call = assistant("Let me check.");
  call.tool_calls = {{"call_1", "get_weather", "{\"city\": \"Paris\",  \"days\": 2}"}, {"call_2", "now", ""}};
  chat_message call_no_content = assistant("");
  call_no_content.tool_calls = {{"call_3", "echo", "not json"}};

  std::vector<chat_message> messages = {
      msg("user", "Weather in Paris?"),
      call,
      tool_result("{\"temp\": 21}"),
      tool_result("12:00"),
      call_no_content,
      tool_result("not json"),
      assistant("It is 21 degrees."),
  };
  template_options options;
  options.add_generation_prompt = false;
  CHECK(render_chat(messages, options) ==
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\nLet me check.\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"days\":2}}"
        "\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response>\n"
        "<tool_response>\n12:00\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        "<tool_call>\n{\"name\": \"echo\", \"arguments\": \"not json\"}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nnot json\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\nIt is 21 degrees.<|im_end|>\n");
}

TEST_CASE("reasoning survives across a tool-calling turn after the last query", "[template]") {
  chat_message call = assistant("", std::string("need weather"));
  call.tool_calls = {{"c", "get_weather", "{\"city\":\"Oslo\"}"}};
  const std::vector<chat_message> messages = {msg("user", "Oslo?"), call, tool_result("cold"),
                                              assistant("It is cold.", std::string("summarize"))};
  CHECK(reasoning_kept_from(messages) == 0);
  template_options options;
  options.add_generation_prompt = false;
  CHECK(render_chat(messages, options) ==
        "<|im_start|>user\nOslo?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nneed weather\n</think>\n\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n"
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\ncold\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\nsummarize\n</think>\n\nIt is cold.<|im_end|>\n");
}

TEST_CASE("reasoning_kept_from", "[template]") {
  CHECK(reasoning_kept_from({}) == 0);
  CHECK(reasoning_kept_from({msg("system", "s"), assistant("a")}) == 1);
  // A user message that is wholly a tool response is not a query.
  CHECK(reasoning_kept_from(
            {msg("user", "q"), assistant("a"), msg("user", "<tool_response>\nr\n</tool_response>")}) == 0);
}

TEST_CASE("template errors", "[template]") {
  const template_options options;
  CHECK_THROWS_AS(render_chat({}, options), std::invalid_argument);
  CHECK_THROWS_AS(render_chat({msg("user", "a"), msg("system", "late")}, options), std::invalid_argument);
  CHECK_THROWS_WITH(render_chat({msg("user", "a"), msg("narrator", "b")}, options),
                    Catch::Contains("narrator"));
  CHECK_THROWS_AS(render_chat({msg("developer", "b")}, options), std::invalid_argument);
  template_options bad_tools;
  bad_tools.tools = nlohmann::json::object();
  CHECK_THROWS_AS(render_chat({msg("user", "a")}, bad_tools), std::invalid_argument);
}
