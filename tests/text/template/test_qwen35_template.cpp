// The native Qwen3.5 renderer's rules, each pinned by a small hand-written expectation taken from
// the template text (and, where they overlap, from ollama's qwen35 renderer tests), plus
// template recognition and the Python formatting helpers. The byte-for-byte check against jinja2
// over the corpus is test_qwen35_template_jinja.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/template/jinja_json.hpp"
#include "runtime/text/template/qwen35_template.hpp"
#include "runtime/text/template/qwen3_template.hpp"
#include "runtime/text/template/template_kind.hpp"

using namespace anchorage;
using json = nlohmann::ordered_json;

namespace {

std::string read_template(const std::string& name) {
  std::ifstream in(std::filesystem::path(ANCHORAGE_SOURCE_DIR) / "tests/support/templates" / name /
                   "chat_template.jinja");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

chat_render_options no_prompt() {
  chat_render_options o;
  o.add_generation_prompt = false;
  return o;
}

}  // namespace

TEST_CASE("Qwen3.5: generation prompt opens a think block, or an empty one with thinking off", "[template]") {
  const json messages = json::parse(R"([{"role":"user","content":"hello"}])");
  chat_render_options o;
  CHECK(render_qwen35(messages, o) == "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n<think>\n");
  o.enable_thinking = false;
  CHECK(render_qwen35(messages, o) ==
        "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_CASE("Qwen3.5: reasoning after the last query is kept, before it dropped", "[template]") {
  const json messages = json::parse(R"([
    {"role":"user","content":"Write two words."},
    {"role":"assistant","content":"Hello world","reasoning_content":"Keep it short."}])");
  CHECK(render_qwen35(messages, no_prompt()) ==
        "<|im_start|>user\nWrite two words.<|im_end|>\n<|im_start|>assistant\n<think>\nKeep it "
        "short.\n</think>\n\n"
        "Hello world<|im_end|>\n");
  json later = messages;
  later.push_back({{"role", "user"}, {"content", "Again"}});
  const std::string out = render_qwen35(later, no_prompt());
  CHECK(out.find("Keep it short.") == std::string::npos);
  CHECK(out.find("<|im_start|>assistant\nHello world<|im_end|>\n") != std::string::npos);
}

TEST_CASE("Qwen3.5: tool calls in XML, responses merged into one user turn", "[template]") {
  const json messages = json::parse(R"([
    {"role":"user","content":"Run add."},
    {"role":"assistant","content":"I'll run it.","tool_calls":[
      {"type":"function","function":{"name":"add","arguments":{"a":2,"b":"x"}}},
      {"type":"function","function":{"name":"add","arguments":"{\"a\": [1, true]}"}}]},
    {"role":"tool","content":"5"},{"role":"tool","content":"20"}])");
  const std::string out = render_qwen35(messages, no_prompt());
  CHECK(out.find(
            "I'll run it.\n\n<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\nx\n"
            "</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=add>\n<parameter=a>\n[1, true]\n"
            "</parameter>\n</function>\n</tool_call><|im_end|>\n") != std::string::npos);
  CHECK(
      out.find("<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n20\n</tool_response>"
               "<|im_end|>\n") != std::string::npos);
}

TEST_CASE("Qwen3.5: the template's own errors", "[template]") {
  CHECK_THROWS_WITH(render_qwen35(json::array(), {}), "No messages provided.");
  CHECK_THROWS_WITH(
      render_qwen35(json::parse(R"([{"role":"user","content":"a"},{"role":"system","content":"b"}])"), {}),
      "System message must be at the beginning.");
  CHECK_THROWS_WITH(render_qwen35(json::parse(R"([{"role":"assistant","content":"a"}])"), {}),
                    "No user query found in messages.");
  CHECK_THROWS_AS(render_qwen35(json::parse(R"([{"role":"user","content":"a"},
      {"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"not json"}}]}])"),
                                {}),
                  template_error);
}

TEST_CASE("template recognition: the real templates, whitespace at the ends, anything else unknown",
          "[template]") {
  const std::string q35 = read_template("qwen3.5");
  const std::string q3 = read_template("qwen3");
  REQUIRE(!q35.empty());
  REQUIRE(!q3.empty());
  CHECK(recognize_template(q35) == template_kind::qwen35);
  CHECK(recognize_template(q3) == template_kind::qwen3);
  CHECK(recognize_template("\n  " + q35 + "\n\n") == template_kind::qwen35);
  // Qwen3.6's preserve_thinking line is the one difference from Qwen3.5's: not ours.
  std::string q36 = q35;
  const std::string line = "{%- if loop.index0 > ns.last_query_index %}";
  REQUIRE(q36.find(line) != std::string::npos);
  q36.replace(q36.find(line), line.size(),
              "{%- if (preserve_thinking is defined and preserve_thinking is true) or (loop.index0 > "
              "ns.last_query_index) %}");
  CHECK(recognize_template(q36) == template_kind::unknown);
  std::string one_space = q35;
  one_space.insert(one_space.size() / 2, " ");
  CHECK(recognize_template(one_space) == template_kind::unknown);
  CHECK(recognize_template("") == template_kind::unknown);
  CHECK(template_kind_name(recognize_template(q3)) == "qwen3");
}

TEST_CASE("Python formatting: json.dumps floats and separators, str.strip's Unicode whitespace",
          "[template]") {
  CHECK(python_json_dumps(json::parse(R"({"b":1.0,"a":[1e-5,1e16,0.0001,123.456,-0.0,1e21]})")) ==
        R"({"b": 1.0, "a": [1e-05, 1e+16, 0.0001, 123.456, -0.0, 1e+21]})");
  CHECK(python_json_dumps(json("<&'>\"\\\n\x01é")) == "\"<&'>\\\"\\\\\\n\\u0001é\"");
  CHECK(python_str(json(nullptr)) == "None");
  CHECK(python_str(json(true)) == "True");
  CHECK(python_strip("\u3000\u00a0 x y\u2029\x1c") == "x y");
  CHECK(python_strip("\u200b x") == "\u200b x");  // ZERO WIDTH SPACE is not whitespace to Python
}

TEST_CASE("template_messages: protocol messages render, arguments text parsed in order", "[template]") {
  chat_message user;
  user.role = "user";
  user.content = "Weather?";
  chat_message assistant;
  assistant.role = "assistant";
  assistant.reasoning_content = "Need the tool.";
  assistant.tool_calls.push_back({"call_1", "get_weather", R"({"unit":"c","city":"Oslo","days":2})"});
  chat_message result;
  result.role = "tool";
  result.content = "cold";
  const std::string out = render_qwen35(template_messages({user, assistant, result}), no_prompt());
  CHECK(out ==
        "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\nNeed the tool.\n</think>\n\n"
        "<tool_call>\n<function=get_weather>\n<parameter=unit>\nc\n</parameter>\n<parameter=city>\nOslo\n"
        "</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</"
        "tool_call><|im_end|>\n<|im_start|>user\n"
        "<tool_response>\ncold\n</tool_response><|im_end|>\n");
}
