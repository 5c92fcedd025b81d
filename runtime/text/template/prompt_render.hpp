#pragma once
#include <cstdint>
#include <memory>
#include <variant>

#include "protocol/board_job.hpp"
#include "protocol/openai_types.hpp"
#include "runtime/image/image_processor_config.hpp"
#include "runtime/text/template/chat_renderer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

struct render_limits {
  long ctx_size = 0;                        // context capacity in tokens
  long default_completion_max_tokens = 16;  // OpenAI's default for /v1/completions
  long reasoning_budget = -1;  // --reasoning-budget: reasoning tokens before a hidden close; -1 none
  chat_renderer renderer = chat_renderer::builtin;  // the chat template the server chose at start
  // The model's image processor when it has a vision tower: each image part becomes its rows
  // (prompt_images.hpp, board_job::images). Null: images stay the template's placeholders.
  std::shared_ptr<const image_processor_config> image_processor;
};

// Turns a parsed request into the board's job: the chat template lim.renderer names (tools
// rendered unless tool_choice is "none"; a conversation the template refuses is a 400 with its
// message; image or video parts are a 400 naming the part unless the template shows them),
// tokens, stop tokens (<|im_end|>, <|endoftext|>), what to parse out of
// the output, and max_tokens clamped to the context left after the prompt (a request for more
// is clamped, not refused). A prompt that leaves no room for one token is a 400 with code
// context_length_exceeded. The session key is prompt_cache_key, else the X-Session-Id header's
// id (completion_request::session_header), else a digest of a chat's messages up to its first
// user message (a completion's: of the prompt's first 512 tokens).
// Without a seed, `fallback_seed` is used (the conductor passes the request's sequence number, so a trace
// replayed in order samples the same tokens). logit_bias is passed through. A chat with thinking opens the
// reasoning block in its prompt (starts_in_reasoning) and gets lim.reasoning_budget (with a request's own
// reasoning_budget: the lesser of the two, or the request's alone); every other request gets
// -1 (no budget). Reasoning is parsed out of a chat's output whenever thinking is on; whether the
// output starts inside the block follows the template's generation prompt (chat_renderer.hpp:
// Qwen3's leaves <think> to the model). user_start is where the last "<|im_start|>user" of the
// rendered prompt begins, for every template.
std::variant<board_job, api_error> render_request(const completion_request& r, const render_limits& lim,
                                                  const tokenizer& tok, std::uint64_t fallback_seed);

}  // namespace anchorage
