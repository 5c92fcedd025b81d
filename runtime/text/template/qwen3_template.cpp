#include "runtime/text/template/qwen3_template.hpp"

#include <string_view>

#include "runtime/text/template/jinja_json.hpp"

namespace anchorage {

namespace {

using json = nlohmann::ordered_json;
using namespace template_detail;

constexpr std::string_view tools_intro =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
    "function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view tools_instructions =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

// message.content where the template concatenates it with a string: anything but a string is a
// TypeError in jinja.
const std::string& string_content(const json& message) {
  const json* content = field(message, "content");
  if (content == nullptr || !content->is_string()) throw template_error("message content is not a string");
  return content->get_ref<const std::string&>();
}

// `{{ value }}`: an undefined value prints nothing.
std::string printed(const json* value) { return value == nullptr ? "" : python_str(*value); }

bool truthy(const json* v) {
  if (v == nullptr || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_string()) return !v->get_ref<const std::string&>().empty();
  if (v->is_array() || v->is_object()) return !v->empty();
  return *v != 0;
}

void render_system(std::string& out, const json& messages, const json& tools) {
  const json& first = messages.front();
  const bool system_first = field_equals(first, "role", "system");
  if (tools.is_array() && !tools.empty()) {
    out += "<|im_start|>system\n";
    if (system_first) out += string_content(first) + "\n\n";
    out += tools_intro;
    for (const json& tool : tools) out += "\n" + python_json_dumps(tool);
    out += tools_instructions;
  } else if (system_first) {
    out += "<|im_start|>system\n" + string_content(first) + "<|im_end|>\n";
  }
}

std::size_t last_query_index(const json& messages) {
  for (std::size_t i = messages.size(); i-- > 0;) {
    if (!field_equals(messages[i], "role", "user")) continue;
    const std::string& text = string_content(messages[i]);
    if (!(starts_with(text, "<tool_response>") && ends_with(text, "</tool_response>"))) return i;
  }
  return messages.size() - 1;
}

void render_tool_calls(std::string& out, const json& calls, const std::string& content) {
  bool first = true;
  for (const json& call : calls) {
    if (!first || !content.empty()) out += "\n";
    first = false;
    const json* function = field(call, "function");
    const json& f = truthy(function) ? *function : call;
    out += "<tool_call>\n{\"name\": \"" + printed(field(f, "name")) + "\", \"arguments\": ";
    const json* given = field(f, "arguments");
    if (given == nullptr) throw template_error("a tool call without arguments");
    const json arguments = call_arguments(*given);
    out += arguments.is_string() ? arguments.get<std::string>() : python_json_dumps(arguments);
    out += "}\n</tool_call>";
  }
}

void render_assistant(std::string& out, const json& message, bool after_query, bool last) {
  std::string content = string_content(message);
  std::string reasoning;
  const json* given = field(message, "reasoning_content");
  if (given != nullptr && !given->is_null()) {
    if (!given->is_string()) throw template_error("reasoning_content is not a string");
    reasoning = given->get<std::string>();
  } else if (content.find("</think>") != std::string::npos) {
    const std::string whole = content;
    content = std::string(python_lstrip(after_last(whole, "</think>"), "\n"));
    const std::string_view before = python_rstrip(before_first(whole, "</think>"), "\n");
    reasoning = std::string(python_lstrip(after_last(before, "<think>"), "\n"));
  }
  out += "<|im_start|>assistant\n";
  if (after_query && (last || !reasoning.empty())) {
    out += "<think>\n" + std::string(python_rstrip(python_lstrip(reasoning, "\n"), "\n")) + "\n</think>\n\n";
    out += python_lstrip(content, "\n");
  } else {
    out += content;
  }
  const json* calls = field(message, "tool_calls");
  if (truthy(calls)) {
    if (!calls->is_array()) throw template_error("tool_calls is not a list");
    render_tool_calls(out, *calls, content);
  }
  out += "<|im_end|>\n";
}

}  // namespace

std::string render_qwen3(const json& messages, const chat_render_options& options) {
  if (!messages.is_array() || messages.empty()) throw template_error("messages is empty or not a list");
  std::string out;
  render_system(out, messages, options.tools);
  const std::size_t last_query = last_query_index(messages);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& message = messages[i];
    const bool last = i + 1 == messages.size();
    if (field_equals(message, "role", "user") || (field_equals(message, "role", "system") && i != 0)) {
      out += "<|im_start|>" + message["role"].get<std::string>() + "\n" + string_content(message) +
             "<|im_end|>\n";
    } else if (field_equals(message, "role", "assistant")) {
      render_assistant(out, message, i > last_query, last);
    } else if (field_equals(message, "role", "tool")) {
      if (i == 0 || !field_equals(messages[i - 1], "role", "tool")) out += "<|im_start|>user";
      out += "\n<tool_response>\n" + printed(field(message, "content")) + "\n</tool_response>";
      if (last || !field_equals(messages[i + 1], "role", "tool")) out += "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace anchorage
