#pragma once
// JSON bodies, streaming chunks and SSE framing in OpenAI's response shapes.
//
// Every builder returns a JSON value whose strings are the bytes given; invalid UTF-8 in them is
// replaced by U+FFFD when dumped with sse_data() or json_text(), which never throw.
// finish_reason is "stop", "length" or "tool_calls". Bodies and usage chunks carry the extension
// field "x_cache" (x_cache_json) next to "usage". Chunks do not carry "usage": null.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/board_job.hpp"
#include "protocol/openai_types.hpp"

namespace anchorage {

// Compact JSON text of `value`; never throws (invalid UTF-8 becomes U+FFFD).
std::string json_text(const nlohmann::json& value);

// {"error":{"message","type","param" (null when empty),"code":null}}
nlohmann::json error_body(const api_error& e);
// {"prompt_tokens","completion_tokens","total_tokens","prompt_tokens_details":{"cached_tokens"},
//  "completion_tokens_details":{"reasoning_tokens"}}
nlohmann::json usage_json(const usage_info& u);
// {"source","resumed_at","prefilled_tokens","restore_ms","ttft_ms"}
nlohmann::json x_cache_json(const x_cache_info& x);

// "tool_calls" when `output` made tool calls and finish_reason is "stop"; else finish_reason.
run_finish chat_finish_reason(const assistant_output& output, run_finish finish_reason);

// {"id","object":"text_completion","created","model",
//  "choices":[{"index":0,"text","logprobs":null,"finish_reason"}],"usage","x_cache"}
nlohmann::json completion_body(const std::string& id, std::int64_t created, const std::string& model,
                               const std::string& text, run_finish finish_reason, const usage_info& usage,
                               const x_cache_info& x_cache);

// {"id","object":"chat.completion","created","model","choices":[{"index":0,"message":
//  {"role":"assistant","content","reasoning_content"?,"tool_calls"?},"logprobs":null,
//  "finish_reason"}],"usage","x_cache"}. content is null when empty and there are tool calls;
// reasoning_content appears only when non-empty, tool_calls only when there are some;
// finish_reason goes through chat_finish_reason.
nlohmann::json chat_body(const std::string& id, std::int64_t created, const std::string& model,
                         const assistant_output& output, run_finish finish_reason, const usage_info& usage,
                         const x_cache_info& x_cache);

// Chat streaming: {"id","object":"chat.completion.chunk","created","model",
//  "choices":[{"index":0,"delta":{...},"logprobs":null,"finish_reason"}]}.
// First chunk: delta {"role":"assistant","content":""}, finish_reason null.
nlohmann::json chat_chunk_role(const std::string& id, std::int64_t created, const std::string& model);
// delta {"reasoning_content"}, {"content"} or {"tool_calls":[{"index","id","type":"function",
// "function":{"name","arguments"}}]}; finish_reason null.
nlohmann::json chat_chunk_delta(const std::string& id, std::int64_t created, const std::string& model,
                                const output_delta& delta);
// delta {} with the finish_reason (pass chat_finish_reason's answer).
nlohmann::json chat_chunk_finish(const std::string& id, std::int64_t created, const std::string& model,
                                 run_finish finish_reason);
// "choices":[] with "usage" and "x_cache": the last chunk when include_usage was asked for.
nlohmann::json chat_chunk_usage(const std::string& id, std::int64_t created, const std::string& model,
                                const usage_info& usage, const x_cache_info& x_cache);

// A streamed prefill's progress when the request asked for it (return_progress, llama.cpp's
// shape): "choices":[] with "prompt_progress":{"total","cache","processed","time_ms"}: the
// prompt's tokens, those restored from a cache, those in the state so far (the restored ones
// included), the milliseconds since the run began. `object` is "chat.completion.chunk" or
// "text_completion".
nlohmann::json progress_chunk(const char* object, const std::string& id, std::int64_t created,
                              const std::string& model, const stream_event& progress);

// Completion streaming: {"id","object":"text_completion","created","model",
//  "choices":[{"index":0,"text","logprobs":null,"finish_reason"}]}.
nlohmann::json completion_chunk(const std::string& id, std::int64_t created, const std::string& model,
                                const std::string& text);
// text "" with the finish_reason.
nlohmann::json completion_chunk_finish(const std::string& id, std::int64_t created, const std::string& model,
                                       run_finish finish_reason);
// "choices":[] with "usage" and "x_cache".
nlohmann::json completion_chunk_usage(const std::string& id, std::int64_t created, const std::string& model,
                                      const usage_info& usage, const x_cache_info& x_cache);

// "data: <compact json>\n\n"
std::string sse_data(const nlohmann::json& value);
// "data: [DONE]\n\n"
std::string sse_done();

}  // namespace anchorage
