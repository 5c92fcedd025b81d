#pragma once
// JSON bodies and SSE events in Anthropic's Messages shapes (POST /v1/messages).
//
// Every builder returns an ordered JSON value (members in the order Anthropic documents them, a
// tool_use input in the model's own key order, which a client echoes back and the template
// renders) whose strings are the bytes given; invalid UTF-8 in them is replaced by U+FFFD when
// dumped (anthropic_json_text, anthropic_sse), which never throw.
//
// Usage: Anthropic counts a prompt as input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens. Here cache_read_input_tokens is the prompt position the state was
// restored at (x_cache.resumed_at), input_tokens the rest of the prompt (the tokens prefilled),
// and cache_creation_input_tokens is always 0: this cache is automatic, every prefilled token is
// kept without being asked for, and counting them twice (as input and as creation) would break
// that sum. Bodies and the final message_delta carry the extension member "x_cache" as the chat
// route's bodies do.
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/openai_types.hpp"

namespace anchorage {

enum class anthropic_stop_reason { end_turn, max_tokens, stop_sequence, tool_use };

// max_tokens for "length"; tool_use when the turn made tool calls and stopped by itself;
// stop_sequence when `stop_sequence` (the stop string that cut the content, stream_event's) is
// not empty; end_turn otherwise.
anthropic_stop_reason to_anthropic_stop_reason(const assistant_output& output, run_finish finish_reason,
                                               const std::string& stop_sequence = {});
const char* wire_name(anthropic_stop_reason r);

// {"type":"error","error":{"type","message"}}; the type from the status: 400 and other 4xx
// invalid_request_error, 401 authentication_error, 403 permission_error, 404 not_found_error,
// 413 request_too_large, 429 rate_limit_error, 503 and 529 overloaded_error, 504 timeout_error,
// other 5xx api_error.
nlohmann::ordered_json anthropic_error_body(const api_error& e);

// {"input_tokens","output_tokens","cache_creation_input_tokens":0,"cache_read_input_tokens"}.
nlohmann::ordered_json anthropic_usage_json(const usage_info& u, const x_cache_info& x);

// A tool call's arguments as tool_use.input: the JSON object they hold, keys in the model's order;
// {} when empty; {"arguments": text} when they are not a JSON object.
nlohmann::ordered_json anthropic_tool_input(const tool_call& call);

// An opaque, non-empty signature for a thinking block (clients store and replay it; the server
// ignores it on input).
std::string thinking_signature(const std::string& thinking);

// {"id","type":"message","role":"assistant","model","content":[thinking?, text?, tool_use*],
//  "stop_reason","stop_sequence","usage","x_cache"}. The thinking block appears when there
// is reasoning, the text block when there is content, one tool_use block per call.
// "stop_sequence" is the stop string when stop_reason is "stop_sequence", null otherwise.
nlohmann::ordered_json anthropic_message_body(const std::string& id, const std::string& model,
                                              const assistant_output& output, run_finish finish_reason,
                                              const usage_info& usage, const x_cache_info& x_cache,
                                              const std::string& stop_sequence = {});

// POST /v1/messages/count_tokens: {"input_tokens": n}.
nlohmann::ordered_json anthropic_count_body(long input_tokens);

// Stream events (each the data of an SSE event of the same name).
// message_start: the message with content [], stop_reason null and usage zeros (the prompt's
// counts come with message_delta, which the SDKs let overwrite them).
nlohmann::ordered_json anthropic_message_start(const std::string& id, const std::string& model);
nlohmann::ordered_json anthropic_block_start(int index, nlohmann::ordered_json block);
nlohmann::ordered_json anthropic_block_delta(int index, nlohmann::ordered_json delta);
nlohmann::ordered_json anthropic_block_stop(int index);
// {"type":"message_delta","delta":{"stop_reason","stop_sequence"},"usage":{...},"x_cache"}:
// usage in full (cumulative totals); stop_sequence as in anthropic_message_body.
nlohmann::ordered_json anthropic_message_delta(anthropic_stop_reason reason, const std::string& stop_sequence,
                                               const usage_info& usage, const x_cache_info& x_cache);

// Compact JSON text of `value`; never throws (invalid UTF-8 becomes U+FFFD).
std::string anthropic_json_text(const nlohmann::ordered_json& value);
// "event: <name>\ndata: <compact json>\n\n", the name being data["type"].
std::string anthropic_sse(const nlohmann::ordered_json& data);

}  // namespace anchorage
