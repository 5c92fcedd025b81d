#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/output/qwen35_tool_parser.hpp"

using namespace anchorage;
using json = nlohmann::ordered_json;

namespace {

const json tools =
    json::parse(R"([{"type":"function","function":{"name":"configure","parameters":{"type":"object",
  "properties":{"name":{"type":"string"},"count":{"type":"integer"},"ratio":{"type":"number"},
  "enabled":{"type":"boolean"},"meta":{"type":"object"},"items":{"type":"array"},
  "maybe":{"type":["integer","null"]},"text_or_num":{"type":["string","number"]}}}}}])");

}  // namespace

TEST_CASE("Qwen3.5 tool parser: one call after reasoning and content", "[template][tool_parser]") {
  const auto out = parse_qwen35_output(
      "Let me think.\n</think>\n\nI'll configure "
      "it.\n\n<tool_call>\n<function=configure>\n<parameter=name>\n42\n"
      "</parameter>\n<parameter=count>\n42\n</parameter>\n</function>\n</tool_call>",
      tools);
  CHECK(out.reasoning == "Let me think.");
  CHECK(out.content == "I'll configure it.");
  REQUIRE(out.tool_calls.size() == 1);
  CHECK(out.tool_calls[0].name == "configure");
  CHECK(out.tool_calls[0].arguments.dump() == R"({"name":"42","count":42})");
  CHECK_FALSE(out.malformed_call);
}

TEST_CASE("Qwen3.5 tool parser: values typed by the schema", "[template][tool_parser]") {
  const auto out = parse_qwen35_output(
      "<tool_call>\n<function=configure>\n"
      "<parameter=ratio>\n0.5\n</parameter>\n<parameter=enabled>\ntrue\n</parameter>\n"
      "<parameter=meta>\n{\"k\": [1, 2]}\n</parameter>\n<parameter=items>\n[\"a\", 1]\n</parameter>\n"
      "<parameter=maybe>\nnull\n</parameter>\n<parameter=text_or_num>\n7\n</parameter>\n"
      "<parameter=count>\nnot a number\n</parameter>\n<parameter=undeclared>\n{\"x\":1}\n</parameter>\n"
      "<parameter=name>\nline one\nline two\n\n</parameter>\n</function>\n</tool_call>",
      tools);
  REQUIRE(out.tool_calls.size() == 1);
  const json& a = out.tool_calls[0].arguments;
  CHECK(a["ratio"] == 0.5);
  CHECK(a["enabled"] == true);
  CHECK(a["meta"] == json::parse(R"({"k":[1,2]})"));
  CHECK(a["items"] == json::parse(R"(["a",1])"));
  CHECK(a["maybe"].is_null());
  CHECK(a["text_or_num"] == "7");              // the schema admits a string: kept as written
  CHECK(a["count"] == "not a number");         // not JSON: the string the model wrote
  CHECK(a["undeclared"] == "{\"x\":1}");       // not in the schema: a string
  CHECK(a["name"] == "line one\nline two\n");  // one newline removed at each end, no more
  CHECK(out.content.empty());
}

TEST_CASE("Qwen3.5 tool parser: several calls, unknown tool, no tools given", "[template][tool_parser]") {
  const auto out = parse_qwen35_output(
      "Two calls.\n\n<tool_call>\n<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=b>\n</function>\n</tool_call>",
      json());
  REQUIRE(out.tool_calls.size() == 2);
  CHECK(out.tool_calls[0].name == "a");
  CHECK(out.tool_calls[0].arguments["x"] == "1");
  CHECK(out.tool_calls[1].name == "b");
  CHECK(out.tool_calls[1].arguments.empty());
  CHECK(out.content == "Two calls.");
}

TEST_CASE("Qwen3.5 tool parser: a truncated or malformed call stays text", "[template][tool_parser]") {
  const std::string cut = "Sure.\n\n<tool_call>\n<function=configure>\n<parameter=name>\nabc";
  const auto out = parse_qwen35_output(cut, tools);
  CHECK(out.tool_calls.empty());
  CHECK(out.malformed_call);
  CHECK(out.content == cut);

  const auto mixed = parse_qwen35_output(
      "<tool_call>garbage</tool_call>\n<tool_call>\n<function=configure>\n</function>\n</tool_call>", tools);
  CHECK(mixed.malformed_call);
  REQUIRE(mixed.tool_calls.size() == 1);
  CHECK(mixed.content == "<tool_call>garbage</tool_call>");

  for (std::size_t n = 0; n <= cut.size(); ++n) CHECK_NOTHROW(parse_qwen35_output(cut.substr(0, n), tools));
}

TEST_CASE("Qwen3.5 tool parser: plain content is untouched", "[template][tool_parser]") {
  const auto out = parse_qwen35_output("Just an answer.\n", json());
  CHECK(out.content == "Just an answer.\n");
  CHECK(out.reasoning.empty());
  CHECK(out.tool_calls.empty());
  CHECK_FALSE(out.malformed_call);
}
