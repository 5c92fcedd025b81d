#pragma once
// The images of a rendered chat prompt (docs/IMAGES.md, "The prompt"): the template writes one
// <|image_pad|> per image part, in conversation order; each becomes its image's rows, whose ids
// are the key ids of the image's digest (runtime/image/image_rows.hpp), and a prompt_image the
// board encodes and hands to the engine.
#include <optional>
#include <vector>

#include "protocol/chat_message.hpp"
#include "protocol/openai_types.hpp"
#include "protocol/prompt_image.hpp"
#include "runtime/core/token.hpp"
#include "runtime/image/image_processor_config.hpp"

namespace anchorage {

// Expands `prompt` (the rendered chat's tokens) in place and fills `images`, in prompt order.
// Every image part of `messages` (decoded by the API layer) is run through the processor
// (`cfg`); the k-th <|image_pad|> id (`image_pad`) of the prompt is the k-th image part. A 400
// naming "messages" when the counts differ (text that spells the placeholder token itself) or
// when the processor refuses an image (the message names the part: messages[i].content[j]).
std::optional<api_error> expand_images(const std::vector<chat_message>& messages,
                                       const image_processor_config& cfg, token_id image_pad,
                                       std::vector<std::int32_t>& prompt, std::vector<prompt_image>& images);

}  // namespace anchorage
