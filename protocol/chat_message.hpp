#pragma once
// A conversation as the chat template and the OpenAI edge see it: plain data, no behaviour.
#include <optional>
#include <string>
#include <vector>

namespace anchorage {

struct tool_call {
  std::string id;         // not rendered
  std::string name;       // function name
  std::string arguments;  // JSON text, as the model or client gave it
};

// One part of a content array ([{"type":"text","text":...}, {"type":"image_url",...}, ...]).
// Images and videos are kept as their kind only: the templates render a placeholder for each
// (the pixels themselves come with a later issue).
struct content_part {
  enum class kind { text, image, video } what = kind::text;
  std::string text;  // kind::text
};

struct chat_message {
  std::string role;  // system | user | assistant | tool
  // The text: a string content as sent, or the text parts of a content array joined with "\n"
  // (how the built-in template and the session digest read it).
  std::string content;
  std::optional<std::string> reasoning_content;  // assistant only
  std::vector<tool_call> tool_calls;             // assistant only
  std::string tool_call_id;                      // tool only; not rendered
  std::string name;                              // not rendered
  // The content array as sent, part by part (Qwen3.5's template concatenates text parts and
  // renders images and videos as placeholders); empty when content was a string or null.
  std::vector<content_part> parts;
};

}  // namespace anchorage
