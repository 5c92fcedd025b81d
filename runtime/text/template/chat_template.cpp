#include "runtime/text/template/chat_template.hpp"

#include <stdexcept>
#include <string_view>

namespace anchorage {

namespace {

constexpr std::string_view think_open = "<think>";
constexpr std::string_view think_close = "</think>";
constexpr std::string_view tool_response_open = "<tool_response>";
constexpr std::string_view tool_response_close = "</tool_response>";
constexpr std::string_view empty_think_block = "<think>\n\n</think>\n\n";

// JSON text of `value`; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}

std::string_view strip_newlines(std::string_view s) {
  s = lstrip_newlines(s);
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

bool is_user_query(const chat_message& m) {
  return m.role == "user" &&
         !(starts_with(m.content, tool_response_open) && ends_with(m.content, tool_response_close));
}

// An assistant message split into its reasoning and its visible content.
struct assistant_parts {
  std::string reasoning;  // stripped of leading/trailing newlines
  std::string content;
};

// If content starts with <think> and contains </think>, the text between them is the inline
// reasoning and content becomes what follows </think>, leading newlines stripped. Otherwise
// content is left as it is. reasoning_content, when present and non-empty, wins over the inline
// reasoning (the inline block is still removed from content).
assistant_parts split_reasoning(const chat_message& m) {
  std::string_view content = m.content;
  std::string_view inline_reasoning;
  if (starts_with(content, think_open)) {
    const std::size_t close = content.find(think_close, think_open.size());
    if (close != std::string_view::npos) {
      inline_reasoning = content.substr(think_open.size(), close - think_open.size());
      content = lstrip_newlines(content.substr(close + think_close.size()));
    }
  }
  std::string_view reasoning = inline_reasoning;
  if (m.reasoning_content && !m.reasoning_content->empty()) reasoning = *m.reasoning_content;
  return {std::string(strip_newlines(reasoning)), std::string(content)};
}

// The arguments of a tool call as JSON text: valid JSON is re-dumped compactly; empty (or
// all-whitespace) text becomes {}; anything else becomes a JSON string holding the text.
std::string render_arguments(const std::string& arguments) {
  if (arguments.find_first_not_of(" \t\r\n") == std::string::npos) return "{}";
  const nlohmann::json parsed = nlohmann::json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) return dump_json(parsed);
  return dump_json(nlohmann::json(arguments));
}

void render_system(std::string& out, const std::vector<chat_message>& messages, const nlohmann::json& tools) {
  const bool has_system = messages.front().role == "system";
  if (tools.empty()) {
    if (has_system) out += "<|im_start|>system\n" + messages.front().content + "<|im_end|>\n";
    return;
  }
  out += "<|im_start|>system\n";
  if (has_system) out += messages.front().content + "\n\n";
  out +=
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const nlohmann::json& tool : tools) out += "\n" + dump_json(tool);
  out +=
      "\n</tools>\n\nFor each function call, return a json object with function name and "
      "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
      "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";
}

// Every assistant message carries a think block: its reasoning when kept and non-empty, an
// empty block otherwise (reasoning before the last user query is dropped this way, the
// "Qwen3.8" rule). The content follows the block without its leading newlines.
void render_assistant(std::string& out, const chat_message& m, bool keep_reasoning) {
  const assistant_parts parts = split_reasoning(m);
  out += "<|im_start|>assistant\n";
  const std::string_view content = lstrip_newlines(parts.content);
  if (keep_reasoning && !parts.reasoning.empty()) {
    out += "<think>\n" + parts.reasoning + "\n</think>\n\n";
  } else {
    out += empty_think_block;
  }
  out += content;
  for (std::size_t i = 0; i < m.tool_calls.size(); ++i) {
    const tool_call& call = m.tool_calls[i];
    if (!content.empty() || i > 0) out += "\n";
    out += "<tool_call>\n{\"name\": " + dump_json(nlohmann::json(call.name)) +
           ", \"arguments\": " + render_arguments(call.arguments) + "}\n</tool_call>";
  }
  out += "<|im_end|>\n";
}

}  // namespace

std::size_t reasoning_kept_from(const std::vector<chat_message>& messages) {
  for (std::size_t i = messages.size(); i-- > 0;) {
    if (is_user_query(messages[i])) return i;
  }
  return messages.empty() ? 0 : messages.size() - 1;
}

std::string render_chat(const std::vector<chat_message>& messages, const template_options& options) {
  if (messages.empty()) throw std::invalid_argument("render_chat: the message list is empty");
  if (!options.tools.is_null() && !options.tools.is_array()) {
    throw std::invalid_argument("render_chat: tools must be a JSON array of tool definitions");
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role == "system") {
      if (i != 0) {
        throw std::invalid_argument(
            "render_chat: a system message is only allowed first (found at "
            "index " +
            std::to_string(i) + ")");
      }
    } else if (role != "user" && role != "assistant" && role != "tool") {
      throw std::invalid_argument("render_chat: unknown role '" + role + "' at index " + std::to_string(i));
    }
  }

  std::string out;
  const nlohmann::json tools = options.tools.is_null() ? nlohmann::json::array() : options.tools;
  render_system(out, messages, tools);

  const std::size_t last_query = reasoning_kept_from(messages);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const chat_message& m = messages[i];
    if (m.role == "system") continue;  // first message, rendered above
    if (m.role == "user") {
      out += "<|im_start|>user\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      render_assistant(out, m, i > last_query);
    } else {  // tool
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }

  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    // Thinking: the prompt opens the block and the model continues inside it. Not thinking:
    // an empty block, closed.
    out += options.enable_thinking ? std::string_view("<think>\n") : empty_think_block;
  }
  return out;
}

}  // namespace anchorage
