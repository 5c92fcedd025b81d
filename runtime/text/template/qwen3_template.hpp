#pragma once
// Qwen3's chat template (tests/support/templates/qwen3/chat_template.jinja, the `chat_template`
// of Qwen3's tokenizer_config.json), rendered natively, byte for byte as jinja2 renders it under
// Hugging Face's apply_chat_template.
//
// How it differs from Qwen3.5's (qwen35_template.hpp): content must be a string (no parts, no
// trimming); system messages after the first render as their own turns; tools are listed under
// the "You may call one or more functions" preamble and calls are JSON
// (<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>); an assistant turn after the last
// user query shows its think block only when it is the last message or its reasoning is
// non-empty; roles it does not know are skipped silently; a conversation without a user query
// keeps no reasoning instead of raising; the generation prompt does not open a think block
// ("<|im_start|>assistant\n", plus "<think>\n\n</think>\n\n" when enable_thinking is false).
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/template/template_conversation.hpp"

namespace anchorage {

// Throws template_error where jinja would fail: no messages, content that is not a string where
// the template concatenates it, a tool call without arguments.
std::string render_qwen3(const nlohmann::ordered_json& messages, const chat_render_options& options);

}  // namespace anchorage
