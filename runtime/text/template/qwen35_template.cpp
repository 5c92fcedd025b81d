#include "runtime/text/template/qwen35_template.hpp"

#include <string_view>

#include "runtime/text/template/jinja_json.hpp"

namespace anchorage {

namespace {

using json = nlohmann::ordered_json;
using namespace template_detail;

constexpr std::string_view tools_intro = "# Tools\n\nYou have access to the following functions:\n\n<tools>";
constexpr std::string_view tools_instructions =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple "
    "lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow "
    "the specified format: an inner <function=...></function> block must be nested within "
    "<tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional "
    "reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If "
    "there is no function call available, answer the question like normal with your current knowledge and "
    "do not tell the user about function calls\n</IMPORTANT>";
constexpr std::string_view image_placeholder = "<|vision_start|><|image_pad|><|vision_end|>";
constexpr std::string_view video_placeholder = "<|vision_start|><|video_pad|><|vision_end|>";

// The template's render_content macro, with its two global counters.
class content_renderer {
 public:
  explicit content_renderer(bool add_vision_id) : add_vision_id_(add_vision_id) {}

  // render_content(content, do_vision_count, is_system_content)|trim
  std::string trimmed(const json* content, bool do_vision_count, bool is_system_content = false) {
    return std::string(python_strip(render(content, do_vision_count, is_system_content)));
  }

 private:
  std::string render(const json* content, bool do_vision_count, bool is_system_content) {
    if (content == nullptr || content->is_null()) return "";
    if (content->is_string()) return content->get<std::string>();
    if (!content->is_array()) throw template_error("Unexpected content type.");
    std::string out;
    for (const json& item : *content) {
      if (!item.is_object()) throw template_error("a content part that is not an object");
      const bool image =
          item.contains("image") || item.contains("image_url") || field_equals(item, "type", "image");
      const bool video = !image && (item.contains("video") || field_equals(item, "type", "video"));
      if (image || video) {
        if (is_system_content) {
          throw template_error(image ? "System message cannot contain images."
                                     : "System message cannot contain videos.");
        }
        long& count = image ? images_ : videos_;
        if (do_vision_count) ++count;
        if (add_vision_id_) out += (image ? "Picture " : "Video ") + std::to_string(count) + ": ";
        out += image ? image_placeholder : video_placeholder;
      } else if (item.contains("text")) {
        out += python_str(item["text"]);
      } else {
        throw template_error("Unexpected item type in content.");
      }
    }
    return out;
  }

  bool add_vision_id_;
  long images_ = 0;
  long videos_ = 0;
};

bool has_tools(const json& tools) { return tools.is_array() && !tools.empty(); }

void render_system(std::string& out, const json& messages, const chat_render_options& options,
                   content_renderer& content) {
  const json& first = messages.front();
  const bool system_first = field_equals(first, "role", "system");
  if (has_tools(options.tools)) {
    out += "<|im_start|>system\n";
    out += tools_intro;
    for (const json& tool : options.tools) out += "\n" + python_json_dumps(tool);
    out += tools_instructions;
    if (system_first) {
      const std::string text = content.trimmed(field(first, "content"), false, true);
      if (!text.empty()) out += "\n\n" + text;
    }
    out += "<|im_end|>\n";
  } else if (system_first) {
    out += "<|im_start|>system\n" + content.trimmed(field(first, "content"), false, true) + "<|im_end|>\n";
  }
}

// The index of the last user message that is not wholly a <tool_response> block.
std::size_t last_query_index(const json& messages, content_renderer& content) {
  for (std::size_t i = messages.size(); i-- > 0;) {
    if (!field_equals(messages[i], "role", "user")) continue;
    const std::string text = content.trimmed(field(messages[i], "content"), false);
    if (!(starts_with(text, "<tool_response>") && ends_with(text, "</tool_response>"))) return i;
  }
  throw template_error("No user query found in messages.");
}

void render_tool_calls(std::string& out, const json& calls, std::string_view content) {
  bool first = true;
  for (const json& call : calls) {
    const json* function = field(call, "function");
    const json& f = function != nullptr ? *function : call;
    const json* name = field(f, "name");
    if (name == nullptr || !name->is_string()) throw template_error("a tool call without a string name");
    if (!first) {
      out += "\n";
    } else if (!python_strip(content).empty()) {
      out += "\n\n";
    }
    first = false;
    out += "<tool_call>\n<function=" + name->get<std::string>() + ">\n";
    if (const json* given = field(f, "arguments")) {
      const json arguments = call_arguments(*given);
      if (!arguments.is_object()) throw template_error("tool call arguments are not a mapping");
      for (const auto& [key, value] : arguments.items()) {
        out += "<parameter=" + key + ">\n";
        out += value.is_string() ? value.get<std::string>() : python_json_dumps(value);
        out += "\n</parameter>\n";
      }
    }
    out += "</function>\n</tool_call>";
  }
}

void render_assistant(std::string& out, const json& message, std::string content, bool keep_reasoning) {
  std::string reasoning;
  const json* given = field(message, "reasoning_content");
  if (given != nullptr && given->is_string()) {
    reasoning = given->get<std::string>();
  } else if (content.find("</think>") != std::string::npos) {
    const std::string_view before = python_rstrip(before_first(content, "</think>"), "\n");
    reasoning = std::string(python_lstrip(after_last(before, "<think>"), "\n"));
    content = std::string(python_lstrip(after_last(content, "</think>"), "\n"));
  }
  reasoning = std::string(python_strip(reasoning));
  out += "<|im_start|>assistant\n";
  if (keep_reasoning) out += "<think>\n" + reasoning + "\n</think>\n\n";
  out += content;
  const json* calls = field(message, "tool_calls");
  if (calls != nullptr && calls->is_array() && !calls->empty()) render_tool_calls(out, *calls, content);
  out += "<|im_end|>\n";
}

}  // namespace

std::string render_qwen35(const json& messages, const chat_render_options& options) {
  if (!messages.is_array()) throw template_error("messages is not a list");
  if (messages.empty()) throw template_error("No messages provided.");
  content_renderer content(options.add_vision_id);
  std::string out;
  render_system(out, messages, options, content);
  const std::size_t last_query = last_query_index(messages, content);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& message = messages[i];
    std::string text = content.trimmed(field(message, "content"), true);
    if (field_equals(message, "role", "system")) {
      if (i != 0) throw template_error("System message must be at the beginning.");
    } else if (field_equals(message, "role", "user")) {
      out += "<|im_start|>user\n" + text + "<|im_end|>\n";
    } else if (field_equals(message, "role", "assistant")) {
      render_assistant(out, message, std::move(text), i > last_query);
    } else if (field_equals(message, "role", "tool")) {
      if (i > 0 && !field_equals(messages[i - 1], "role", "tool")) out += "<|im_start|>user";
      out += "\n<tool_response>\n" + text + "\n</tool_response>";
      if (i + 1 == messages.size() || !field_equals(messages[i + 1], "role", "tool")) out += "<|im_end|>\n";
    } else {
      throw template_error("Unexpected message role.");
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    out += options.enable_thinking == false ? "<think>\n\n</think>\n\n" : "<think>\n";
  }
  return out;
}

}  // namespace anchorage
