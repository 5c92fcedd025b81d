#pragma once
// The input of the native chat-template renderers (render_qwen35, render_qwen3): a conversation
// in OpenAI's chat shape as JSON, the way a Hugging Face template sees it.
//
// messages: [{"role": "system"|"user"|"assistant"|"tool",
//             "content": string | null | [parts],        parts: {"type":"text","text":...},
//                                                         {"type":"image_url",...}, {"image":...},
//                                                         {"type":"video",...}, ...
//             "reasoning_content": string,               assistant, optional
//             "tool_calls": [{"type": "function", "id": ...,
//                             "function": {"name": string,
//                                          "arguments": object | JSON text}}]}]
// A tool call's "arguments" given as JSON text is parsed before rendering, as OpenAI-compatible
// servers (vLLM's chat_utils) do before calling the template.
//
// JSON values are nlohmann::ordered_json: objects keep the key order they were sent in, which
// the rendered `tojson` text of tools and arguments depends on (a std::map-backed
// nlohmann::json would sort them and change the prompt).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/chat_message.hpp"

namespace anchorage {

struct chat_render_options {
  bool add_generation_prompt = true;
  // chat_template_kwargs.enable_thinking; unset leaves it undefined in the template, which both
  // Qwen templates treat like true.
  std::optional<bool> enable_thinking;
  bool add_vision_id = false;    // Qwen3.5: "Picture N: " before each image placeholder
  nlohmann::ordered_json tools;  // null, or the request's array of OpenAI tool definitions
};

// How a message's content reaches the template: as the text (chat_message::content, the text
// parts joined with "\n", as OpenAI-compatible servers pass content to templates that read it
// as a string), or as the parts the client sent ({"type":"text","text":...}, {"type":"image"},
// {"type":"video"}) for a template that renders content arrays (Qwen3.5's).
enum class content_form { text, parts };

// The protocol's messages as template JSON: role, content, reasoning_content when set, and
// tool_calls with their arguments parsed (kept as a string when they are not JSON; objects keep
// the order their keys were written in).
nlohmann::ordered_json template_messages(const std::vector<chat_message>& messages,
                                         content_form form = content_form::text);

namespace template_detail {

// message[key] when `message` is an object holding `key`; nullptr when jinja would see the
// attribute as undefined.
const nlohmann::ordered_json* field(const nlohmann::ordered_json& message, const char* key);

// True when `message[key]` is a string equal to `value` (jinja's `message.role == "user"`).
bool field_equals(const nlohmann::ordered_json& message, const char* key, const char* value);

// A tool call's arguments as the template sees them: JSON text is parsed (throws template_error
// when it is not JSON); anything else is returned as it is.
nlohmann::ordered_json call_arguments(const nlohmann::ordered_json& arguments);

bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);

// Python's s.split(sep)[0] and s.split(sep)[-1].
std::string_view before_first(std::string_view s, std::string_view sep);
std::string_view after_last(std::string_view s, std::string_view sep);

}  // namespace template_detail

}  // namespace anchorage
