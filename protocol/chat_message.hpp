#pragma once
// A conversation as the chat template and the OpenAI edge see it: plain data, no behaviour.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/image_input.hpp"

namespace anchorage {

struct tool_call {
  std::string id;         // not rendered
  std::string name;       // function name
  std::string arguments;  // JSON text, as the model or client gave it
};

// One part of a content array ([{"type":"text","text":...}, {"type":"image_url",...}, ...]).
// The templates render a placeholder for each image and video. An image carries its pixels,
// decoded from the request's data URI or base64 source (runtime/api/image_part.hpp); a video is
// kept as its kind only.
struct content_part {
  enum class kind { text, image, video } what = kind::text;
  std::string text;                        // kind::text
  std::shared_ptr<const rgb_image> image;  // kind::image: never null once a request is parsed
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
