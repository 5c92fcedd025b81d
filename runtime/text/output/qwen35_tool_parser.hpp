#pragma once
// Reads Qwen3.5's tool calls out of its generated text. The model calls tools in the XML form
// its template teaches it (qwen35_template.hpp):
//
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
//
// possibly several, possibly after some content, and after the reasoning's "</think>".
//
// A parameter's value is the text between "<parameter=KEY>" and "</parameter>" less one
// newline at each end. It becomes a JSON value when the tool's schema declares the parameter
// with a type other than string (integer, number, boolean, object, array, null) and the text
// parses as JSON; otherwise it stays a string (a string-typed parameter, one the schema does not
// declare or gives no type, or text that is not JSON). This is the rule of vLLM's and llama.cpp's
// qwen3-coder XML parsers, less their per-type coercions of invalid text: a value that is not
// JSON is passed on as the string the model wrote rather than guessed at.
//
// Never throws on model output: a <tool_call> without its </tool_call> (generation stopped at a
// length limit) or without a <function=...> inside is kept in the content as text and reported.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace anchorage {

struct parsed_tool_call {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // keys in the order written
};

struct qwen35_parsed_output {
  // The text before "</think>" (an opening "<think>" removed), trimmed; empty when the text has
  // no "</think>". Whether text without one is all reasoning (thinking on, cut off) depends on
  // the prompt, and is the caller's decision.
  std::string reasoning;
  // The text outside reasoning and tool calls. With calls, whitespace between and after them is
  // dropped and the content is trimmed; without, it is the text after "</think>" less its
  // leading newlines, as the template reads an assistant turn back.
  std::string content;
  std::vector<parsed_tool_call> tool_calls;
  bool malformed_call = false;  // some <tool_call> was truncated or had no function; kept as text
};

// `tools` is the request's OpenAI tool definitions (an array, or null when none were given);
// it supplies the parameter types.
qwen35_parsed_output parse_qwen35_output(std::string_view text, const nlohmann::ordered_json& tools);

}  // namespace anchorage
