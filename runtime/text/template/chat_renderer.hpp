#pragma once
// The chat templates the server renders prompts with, one chosen at start (template_choice.hpp),
// and what each one's generation prompt does.
//
//   builtin  the seed's "Qwen3.8" template (chat_template.hpp), for the presets with the byte
//            tokenizer: content is text (parts joined with "\n"); no images.
//   qwen3.5  Qwen3.5's template (qwen35_template.hpp): content arrays with text parts
//            concatenated and images and videos as placeholders.
//   qwen3    Qwen3's template (qwen3_template.hpp): content is text (parts joined with "\n", as
//            OpenAI-compatible servers pass it to a template that concatenates strings); no images.
//
// The generation prompts, as the templates in tests/support/templates/ write them:
//   builtin, qwen3.5  thinking on: "<|im_start|>assistant\n<think>\n" (the output starts inside
//                     the reasoning block); off: "<|im_start|>assistant\n<think>\n\n</think>\n\n".
//   qwen3             thinking on: "<|im_start|>assistant\n" (the model writes <think> itself);
//                     off: "<|im_start|>assistant\n<think>\n\n</think>\n\n".
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/chat_message.hpp"

namespace anchorage {

enum class chat_renderer { builtin, qwen35, qwen3 };

// "builtin", "qwen3.5" or "qwen3" (the --chat-template spelling).
std::string_view chat_renderer_name(chat_renderer r);

// True when the generation prompt opens the reasoning block, so that the output is reasoning
// from its first token.
bool prompt_opens_reasoning(chat_renderer r, bool enable_thinking);

// True when the template renders image and video parts (as placeholders).
bool shows_images(chat_renderer r);

// The prompt text for `messages` with the generation prompt; `tools` is null or an array of
// OpenAI tool definitions (empty or null: no tools block). Throws std::invalid_argument (for
// the native templates its subclass template_error) with the template's message for a
// conversation it refuses.
std::string render_prompt_text(chat_renderer r, const std::vector<chat_message>& messages,
                               const nlohmann::ordered_json& tools, bool enable_thinking);

}  // namespace anchorage
