// Tool calls in Qwen3.5's XML form, read by the streaming output parser (the form the Qwen3.5
// template teaches the model), with the parameters typed by the request's tools.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/text/output/output_parser.hpp"

using namespace anchorage;

namespace {

const tokenizer tok;

assistant_output parse(const std::string& text, const nlohmann::ordered_json& tools) {
  output_parser p(false, true, false, tok, tools);
  std::vector<output_delta> deltas;
  for (token_id t : tok.encode(text, true))
    for (auto& d : p.feed(t)) deltas.push_back(std::move(d));
  for (auto& d : p.finish()) deltas.push_back(std::move(d));
  // The deltas add up to the result.
  std::string content;
  std::size_t calls = 0;
  for (const auto& d : deltas) {
    if (d.what == output_delta::kind::content) content += d.text;
    if (d.what == output_delta::kind::tool_call) ++calls;
  }
  CHECK(content == p.result().content);
  CHECK(calls == p.result().tool_calls.size());
  return p.result();
}

const nlohmann::ordered_json read_tool = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {
  "name": "read", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "limit": {"type": "integer"}, "flags": {"type": "array"}}}}}])");

const std::string xml_call =
    "<tool_call>\n<function=read>\n<parameter=path>\nsrc/main.cpp\n</parameter>\n<parameter=limit>\n20\n"
    "</parameter>\n<parameter=flags>\n[\"a\", 1]\n</parameter>\n</function>\n</tool_call>";

}  // namespace

TEST_CASE("output parser: a Qwen3.5 XML tool call becomes a call, typed by the tools",
          "[text][parser][xml]") {
  const assistant_output out = parse("Let me look.\n\n" + xml_call, read_tool);
  CHECK(out.content == "Let me look.");
  REQUIRE(out.tool_calls.size() == 1);
  CHECK(out.tool_calls[0].name == "read");
  CHECK(out.tool_calls[0].arguments == R"({"path":"src/main.cpp","limit":20,"flags":["a",1]})");
  // Without the tools' types every value stays the string the model wrote.
  const assistant_output untyped = parse(xml_call, nullptr);
  REQUIRE(untyped.tool_calls.size() == 1);
  CHECK(untyped.tool_calls[0].arguments == R"({"path":"src/main.cpp","limit":"20","flags":"[\"a\", 1]"})");
}

TEST_CASE("output parser: two XML calls, and the JSON form still works", "[text][parser][xml]") {
  const std::string json_call =
      "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>";
  const assistant_output out = parse(xml_call + "\n" + json_call, read_tool);
  REQUIRE(out.tool_calls.size() == 2);
  CHECK(out.tool_calls[0].name == "read");
  CHECK(out.tool_calls[1].arguments == R"({"path":"a"})");
  CHECK(out.content.empty());
}

TEST_CASE("output parser: a malformed XML call stays content, tags included", "[text][parser][xml]") {
  for (const std::string broken :
       {"<tool_call>\nread the file\n</tool_call>", "<tool_call>\n<function=>\n</function>\n</tool_call>"}) {
    const assistant_output out = parse(broken, read_tool);
    CHECK(out.tool_calls.empty());
    CHECK(out.content == broken);
  }
}
