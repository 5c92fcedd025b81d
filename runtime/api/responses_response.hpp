#pragma once
// JSON bodies and SSE events in OpenAI's Responses shapes (POST /v1/responses).
//
// Every builder returns an ordered JSON value whose strings are the bytes given; invalid UTF-8 in
// them is replaced by U+FFFD when dumped (responses_json_text, responses_sse), which never throw.
//
// Items: an answer is output as, in this order, a reasoning item when there is reasoning
// ({"id":"rs_...","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text"}]}),
// a message item when there is content or no tool call (an answer of reasoning alone has an empty
// message item, so that a client that drops reasoning items still sends the turn back)
// ({"id":"msg_...","type":"message","status","role":"assistant","content":[{"type":"output_text",
// "text","annotations":[]}]}), and one function_call item per call ({"id":"fc_...",
// "type":"function_call","status":"completed","call_id","name","arguments"}, the arguments as
// the model wrote them). Sent back as input items, they parse into answer_message(output)
// (responses_request.hpp), so the end anchor aligns them.
//
// Usage: {"input_tokens": the prompt, "input_tokens_details":{"cached_tokens": the prompt
// position the state was restored at (x_cache.resumed_at)}, "output_tokens",
// "output_tokens_details":{"reasoning_tokens"}, "total_tokens"}. Bodies carry the extension
// member "x_cache" as the chat route's do.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/openai_types.hpp"
#include "runtime/api/responses_request.hpp"

namespace anchorage {

// What one response is, besides its output: the ids, the request's echo, the time.
struct responses_meta {
  std::string id;  // "resp_..."; item ids are made from its suffix
  std::int64_t created_at = 0;
  std::string model;
  responses_echo echo;
};

// The ids of a response's items: "rs_<suffix>", "msg_<suffix>", "fc_<suffix>_<index>", the
// suffix being what follows "resp_" in the response id.
std::string reasoning_item_id(const std::string& response_id);
std::string message_item_id(const std::string& response_id);
std::string function_call_item_id(const std::string& response_id, int index);

// {"error":{"message","type","param" (null when empty),"code" (null when empty)}}: OpenAI's shape.
nlohmann::ordered_json responses_error_body(const api_error& e);

// The usage object above; cached_tokens is resumed_at clamped to [0, prompt_tokens].
// reasoning_tokens is u.reasoning_tokens clamped to [0, output_tokens].
nlohmann::ordered_json responses_usage_json(const usage_info& u, const x_cache_info& x);

// The output items of `output` as described above. `finish_reason` "length" marks the message
// item "incomplete".
nlohmann::ordered_json reasoning_item(const std::string& response_id, const std::string& reasoning);
nlohmann::ordered_json message_item(const std::string& response_id, const std::string& text,
                                    const char* status);
nlohmann::ordered_json function_call_item(const std::string& response_id, int index, const tool_call& call,
                                          const char* status);
nlohmann::ordered_json output_items(const std::string& response_id, const assistant_output& output,
                                    run_finish finish_reason);

// The whole response object: {"id","object":"response","created_at","status","error":null,
// "incomplete_details","instructions","max_output_tokens","model","output","parallel_tool_calls",
// "previous_response_id","reasoning":{"effort","summary":null},"store","temperature",
// "text":{"format":{"type":"text"}},"tool_choice","tools","top_p","truncation":"disabled",
// "usage","metadata","x_cache"}. status "completed", or "incomplete" with incomplete_details
// {"reason":"max_output_tokens"} when finish_reason is "length".
nlohmann::ordered_json responses_body(const responses_meta& meta, const assistant_output& output,
                                      run_finish finish_reason, const usage_info& usage,
                                      const x_cache_info& x_cache);

// The response object of the stream's opening events: status "in_progress", output [], usage
// null, no x_cache.
nlohmann::ordered_json responses_in_progress(const responses_meta& meta);

// Compact JSON text of `value`; never throws (invalid UTF-8 becomes U+FFFD).
std::string responses_json_text(const nlohmann::ordered_json& value);
// "event: <data.type>\ndata: <compact json>\n\n".
std::string responses_sse(const nlohmann::ordered_json& data);

}  // namespace anchorage
