#pragma once
// Qwen3-style chat template, with the seed's "Qwen3.8" think blocks: turns a conversation into
// prompt text.
//
// Think blocks: with enable_thinking the generation prompt ends "<|im_start|>assistant\n<think>\n"
// (the model's output starts inside the reasoning block), without it
// "<|im_start|>assistant\n<think>\n\n</think>\n\n". Every assistant message in the history
// renders "<think>\nREASONING\n</think>\n\n" + content when its reasoning is kept (it follows
// the last user query) and non-empty, and otherwise the empty block "<think>\n\n</think>\n\n"
// + content; content loses its leading newlines either way.
//
// The returned text contains special strings (<|im_start|>, <think>, <tool_call>, ...) that are
// meant to be encoded with tokenizer::encode(text, /*parse_special=*/true).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/chat_message.hpp"

namespace anchorage {

struct template_options {
  bool add_generation_prompt = true;
  bool enable_thinking = true;
  nlohmann::json tools = nlohmann::json::array();  // OpenAI tool definitions; null == empty
};

// Renders `messages` as Qwen3's jinja template does (see chat_template.cpp for the exact rules).
// Throws std::invalid_argument for an empty list, an unknown role (named in the message), a
// system message that is not first, or `tools` that is neither an array nor null.
std::string render_chat(const std::vector<chat_message>& messages, const template_options& options);

// The index of the last user query: the last "user" message whose content is not wholly a
// <tool_response>...</tool_response> block. Assistant messages at a greater index keep their
// reasoning; earlier ones lose it. Without any user query returns messages.size() - 1 (so no
// reasoning is kept), and 0 for an empty list.
std::size_t reasoning_kept_from(const std::vector<chat_message>& messages);

}  // namespace anchorage
