#pragma once
// Qwen3.5's chat template (tests/support/templates/qwen3.5/chat_template.jinja), rendered
// natively: the same text jinja2 produces under Hugging Face's apply_chat_template, byte for
// byte (the [template] check renders a corpus both ways).
//
// What the template does, in short:
//   - A system message may only come first. With tools, the system turn is the tools block
//     (each tool as `tojson`, then the XML calling instructions) followed by "\n\n" + the system
//     text when there is any; without tools a first system message is its own turn.
//   - Content is a string, null, or a list of parts: text parts are concatenated, image and video
//     parts become <|vision_start|><|image_pad|><|vision_end|> (or <|video_pad|>), optionally
//     numbered ("Picture N: ") with add_vision_id; every content is then trimmed.
//   - An assistant turn after the last real user query (a user message that is not wholly a
//     <tool_response> block) renders "<think>\nREASONING\n</think>\n\n" + content, even when the
//     reasoning is empty; turns at or before it render the content alone. reasoning_content wins;
//     without it a "...</think>" in the content is split out.
//   - Tool calls render as <tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n...
//     (string values raw, others `tojson`); consecutive tool messages share one user turn of
//     <tool_response> blocks.
//   - The generation prompt is "<|im_start|>assistant\n<think>\n", or with enable_thinking false
//     "<|im_start|>assistant\n<think>\n\n</think>\n\n".
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/template/template_conversation.hpp"

namespace anchorage {

// Throws template_error with the template's own message where it raises one ("No messages
// provided.", "System message must be at the beginning.", "No user query found in messages.",
// "Unexpected message role.", "Unexpected content type.", "Unexpected item type in content.",
// "System message cannot contain images.", ...), and a description where jinja would fail with a
// type error (a tool call without a string name, arguments that are not a mapping).
std::string render_qwen35(const nlohmann::ordered_json& messages, const chat_render_options& options);

}  // namespace anchorage
