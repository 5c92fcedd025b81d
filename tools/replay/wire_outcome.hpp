#pragma once
// Reading a response back into the outcome a trace records (trace_outcome, trace_error in
// runtime/server/trace.hpp), for the two agent wires: Anthropic's Messages API (POST /v1/messages)
// and OpenAI's Responses API (POST /v1/responses). The trace records both as the chat request they
// map to: {"status","finish_reason","content","reasoning","tool_calls":[{"name","arguments"}],
// "usage":{"prompt_tokens","completion_tokens","cached_tokens"}}.
//
//  - messages: text blocks are the content, thinking blocks the reasoning, tool_use blocks the
//    calls (their input dumped as the route shows a call's arguments: anthropic_tool_input, key
//    order kept). stop_reason max_tokens is "length", any other "stop". Usage: prompt =
//    input_tokens + cache_read_input_tokens, completion = output_tokens, cached =
//    cache_read_input_tokens. A stream is accumulated from its content_block_* events and
//    message_delta.
//  - responses: the reasoning item's text is the reasoning, the message item's output_text the
//    content, function_call items the calls (arguments as sent). Status "incomplete" is "length",
//    "completed" "stop". Usage: input_tokens, output_tokens, input_tokens_details.cached_tokens.
//    A stream is read from its last response.completed / response.incomplete event.
// An error body ({"error":{"type","message"}} on both wires; Anthropic's adds "type":"error")
// gives {"status","type","message"}; an error inside a stream has no "status" (its HTTP status was
// 200).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace anchorage {

// The payloads of an SSE body's data lines, in order ("data:" and one space after it taken off, a
// trailing CR too; "[DONE]" kept). Comments (": prefill") and blank lines are left out.
std::vector<std::string> sse_payloads(const std::string& sse);

enum class replay_wire { completions, chat, messages, responses };

// The wire of a recorded route: /v1/messages, /v1/responses, a chat route, else completions.
replay_wire wire_of_path(const std::string& path);

nlohmann::json messages_outcome_from_body(int status, const std::string& body);
nlohmann::json messages_outcome_from_sse(const std::string& sse);
nlohmann::json responses_outcome_from_body(int status, const std::string& body);
nlohmann::json responses_outcome_from_sse(const std::string& sse);

// A recorded outcome with its calls' arguments as the messages wire shows them (the route
// re-dumps the arguments as a JSON object), so it compares with messages_outcome_*.
nlohmann::json messages_view(const nlohmann::json& recorded);

// {"status" (when > 0),"type","message"} from an error body of any of the wires.
nlohmann::json replay_error_outcome(int status, const nlohmann::json& body);

}  // namespace anchorage
