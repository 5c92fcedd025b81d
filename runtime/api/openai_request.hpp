#pragma once
// Parsing and validating the body of an OpenAI /v1/completions or /v1/chat/completions request.
#include <string_view>
#include <variant>

#include "protocol/openai_types.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

// Parses `body` as a request of `kind`. Never throws for anything a client can send: every
// mistake comes back as a 400 api_error of type "invalid_request_error" whose message says what
// is wrong and whose param names the field ("max_tokens", "messages[2].content[0].type").
//
// Accepted shapes (null is the same as absent everywhere; unknown fields are ignored):
//   model string; max_completion_tokens (preferred) or max_tokens an integer >= 1;
//   temperature a number in [0, 2]; top_p a number in (0, 1]; n the integer 1; seed an integer
//   >= 0; stop a non-empty string or an array of at most 4 of them; stream a boolean;
//   stream_options {include_usage: boolean}; prompt_cache_key and user strings;
//   logit_bias an object of at most 300 entries mapping token ids as decimal strings (each in
//   [0, vocab), each id once) to numbers in [-100, 100].
//   completion: prompt a non-empty string, a non-empty array of token ids in [0, vocab),
//     or an array holding exactly one such string or id array.
//   chat: messages a non-empty array of {role, content, name?} where role is system (only as the
//     first message; "developer" is read as system), user, assistant or tool; content a string,
//     null (read as "") or an array of parts, kept in chat_message::parts: {"type":"text",
//     "text":...} (chat_message::content joins their texts with "\n"), and image parts
//     (image_url, input_image, image) and video parts (video_url, video), which are accepted here
//     and refused at rendering by a template that cannot show them (prompt_render.hpp);
//     assistant messages may carry reasoning_content and tool_calls, tool messages tool_call_id.
//     tools an array of {"type":"function","function":{"name",...}}, kept with the client's key
//     order (as are tool-call arguments sent as objects); tool_choice auto | none |
//     required | {"type":"function","function":{"name"}} (required and named need tools, and
//     a named function must be among them); chat_template_kwargs.enable_thinking a boolean.
// JSON nested deeper than 512 levels is rejected.
// `vocab` is the engine's vocabulary (the byte tokenizer's 272 by default): the ids the sampler's
// logits and the engine's embedding hold.
std::variant<completion_request, api_error> parse_request(std::string_view body, request_kind kind,
                                                          int vocab = vocab_size());

}  // namespace anchorage
