#pragma once
// Parsing and validating the body of an Anthropic /v1/messages or /v1/messages/count_tokens
// request into the chat route's own request (completion_request, kind chat): the conductor,
// the template and the end anchor see a Messages request as the chat request it maps to.
#include <string_view>
#include <variant>

#include "protocol/openai_types.hpp"

namespace anchorage {

enum class anthropic_route { create, count_tokens };

// Parses `body` as a Messages request. Never throws for anything a client can send: every
// mistake comes back as a 400 api_error of type "invalid_request_error" whose message says what is
// wrong and whose param names the field ("messages[1].content[0].type").
//
// The mapping (null is the same as absent everywhere; unknown fields are ignored, `cache_control`
// and a thinking block's `signature` wherever they appear):
//   model a string; max_tokens an integer >= 1, required for create (not for count_tokens);
//   temperature a number in [0, 2] (Anthropic's range is [0, 1]: both accepted); top_p in (0, 1];
//   top_k an integer >= 0; stop_sequences an array of non-empty strings -> stop; stream a boolean.
//   system a string or an array of text blocks -> the first message, role system, the block
//     texts joined with "\n". A block whose text opens "x-anthropic-billing-header" (Claude Code's
//     per-request billing block, whose cch= value changes on every request) is left out; empty
//     blocks are left out. A "system" role inside messages is folded into the system text too.
//   messages a non-empty array of {role: user | assistant, content}; content a string or an
//     array of blocks:
//       text {text}: a text part (empty ones are dropped; Claude Code replays
//         what it was streamed); the message's content is its text parts joined with "\n", as
//         on the chat route.
//       image {source}: an image part (the template decides whether it can show it).
//       thinking {thinking, signature} (assistant): appended to reasoning_content, the field the
//         chat route reads, so the end anchor aligns the echoed answer the same way;
//         redacted_thinking is accepted and dropped.
//       tool_use {id, name, input} (assistant): a tool call whose arguments are `input` dumped
//         compactly in the client's key order (the template re-dumps them as it does a chat call).
//       tool_result {tool_use_id, content: string | blocks, is_error} (user): a message of role
//         tool, before the user message that holds the rest of the blocks (none when nothing
//         else is there); its text blocks are joined with "\n", images kept as parts. is_error
//         is checked to be a boolean and not rendered (the text says what went wrong).
//   tools an array of {name, description?, input_schema} -> {"type":"function","function":
//     {"name","description","parameters"}}; tools with a type other than "custom" (Anthropic's
//     server tools: bash_20250124, web_search_..., which this server cannot run) are dropped.
//   tool_choice {type: auto | any | tool (with name, one of the tools) | none} -> auto |
//     required | function:NAME | none; disable_parallel_tool_use is accepted and ignored.
//   thinking {type: enabled, budget_tokens >= 1} -> the template's thinking on and the request's
//     reasoning budget; {type: adaptive} -> thinking on, no budget of its own; {type: disabled}
//     or absent -> thinking off (Anthropic's default).
//   metadata {user_id?: string}: user; when user_id names a session (Claude Code's JSON form
//     {"session_id": ...} or its older "..._session_<uuid>"), session_header, which keys the
//     session unless the edge finds a session header.
// JSON nested deeper than 512 levels is rejected.
std::variant<completion_request, api_error> parse_anthropic_request(std::string_view body,
                                                                    anthropic_route route);

}  // namespace anchorage
