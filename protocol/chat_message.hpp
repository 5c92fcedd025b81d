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

struct chat_message {
  std::string role;  // system | user | assistant | tool
  std::string content;
  std::optional<std::string> reasoning_content;  // assistant only
  std::vector<tool_call> tool_calls;             // assistant only
  std::string tool_call_id;                      // tool only; not rendered
  std::string name;                              // not rendered
};

}  // namespace anchorage
