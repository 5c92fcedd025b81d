#include "runtime/api/openai_response.hpp"

namespace anchorage {

namespace {

using json = nlohmann::json;

json envelope(const char* object, const std::string& id, std::int64_t created, const std::string& model) {
  return json{{"id", id}, {"object", object}, {"created", created}, {"model", model}};
}

json chat_choice_delta(json delta, const run_finish* finish_reason) {
  return json{{"index", 0},
              {"delta", std::move(delta)},
              {"logprobs", nullptr},
              {"finish_reason", finish_reason ? json(*finish_reason) : json(nullptr)}};
}

json text_choice(const std::string& text, const run_finish* finish_reason) {
  return json{{"index", 0},
              {"text", text},
              {"logprobs", nullptr},
              {"finish_reason", finish_reason ? json(*finish_reason) : json(nullptr)}};
}

json tool_call_json(const tool_call& call) {
  return json{{"id", call.id},
              {"type", "function"},
              {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

json chat_chunk(const std::string& id, std::int64_t created, const std::string& model, json choice) {
  json chunk = envelope("chat.completion.chunk", id, created, model);
  chunk["choices"] = json::array({std::move(choice)});
  return chunk;
}

json usage_chunk(const char* object, const std::string& id, std::int64_t created, const std::string& model,
                 const usage_info& usage, const x_cache_info& x_cache) {
  json chunk = envelope(object, id, created, model);
  chunk["choices"] = json::array();
  chunk["usage"] = usage_json(usage);
  chunk["x_cache"] = x_cache_json(x_cache);
  return chunk;
}

}  // namespace

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_body(const api_error& e) {
  return json{{"error",
               {{"message", e.message},
                {"type", e.type},
                {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

json usage_json(const usage_info& u) {
  return json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
              {"completion_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}}};
}

json x_cache_json(const x_cache_info& x) {
  json j{{"source", x.source},
         {"resumed_at", x.resumed_at},
         {"prefilled_tokens", x.prefilled_tokens},
         {"restore_ms", x.restore_ms},
         {"ttft_ms", x.ttft_ms}};
  if (x.via != cache_via::none) j["via"] = x.via;
  if (x.slot >= 0) j["slot"] = x.slot;
  if (x.miss) j["miss"] = {{"reason", to_string(*x.miss)}, {"tokens", x.miss_tokens}};
  return j;
}

run_finish chat_finish_reason(const assistant_output& output, run_finish finish_reason) {
  if (!output.tool_calls.empty() && finish_reason == run_finish::stop) return run_finish::tool_calls;
  return finish_reason;
}

json completion_body(const std::string& id, std::int64_t created, const std::string& model,
                     const std::string& text, run_finish finish_reason, const usage_info& usage,
                     const x_cache_info& x_cache) {
  json body = envelope("text_completion", id, created, model);
  body["choices"] = json::array({text_choice(text, &finish_reason)});
  body["usage"] = usage_json(usage);
  body["x_cache"] = x_cache_json(x_cache);
  return body;
}

json chat_body(const std::string& id, std::int64_t created, const std::string& model,
               const assistant_output& output, run_finish finish_reason, const usage_info& usage,
               const x_cache_info& x_cache) {
  json message = {{"role", "assistant"}};
  const bool null_content = output.content.empty() && !output.tool_calls.empty();
  message["content"] = null_content ? json(nullptr) : json(output.content);
  if (!output.reasoning.empty()) message["reasoning_content"] = output.reasoning;
  if (!output.tool_calls.empty()) {
    json calls = json::array();
    for (const tool_call& call : output.tool_calls) calls.push_back(tool_call_json(call));
    message["tool_calls"] = std::move(calls);
  }
  json body = envelope("chat.completion", id, created, model);
  body["choices"] = json::array({json{{"index", 0},
                                      {"message", std::move(message)},
                                      {"logprobs", nullptr},
                                      {"finish_reason", chat_finish_reason(output, finish_reason)}}});
  body["usage"] = usage_json(usage);
  body["x_cache"] = x_cache_json(x_cache);
  return body;
}

json chat_chunk_role(const std::string& id, std::int64_t created, const std::string& model) {
  return chat_chunk(id, created, model, chat_choice_delta({{"role", "assistant"}, {"content", ""}}, nullptr));
}

json chat_chunk_delta(const std::string& id, std::int64_t created, const std::string& model,
                      const output_delta& delta) {
  json d;
  switch (delta.what) {
    case output_delta::kind::reasoning:
      d = {{"reasoning_content", delta.text}};
      break;
    case output_delta::kind::content:
      d = {{"content", delta.text}};
      break;
    case output_delta::kind::tool_call: {
      json call = tool_call_json(delta.call);
      call["index"] = delta.index;
      d = {{"tool_calls", json::array({std::move(call)})}};
      break;
    }
  }
  return chat_chunk(id, created, model, chat_choice_delta(std::move(d), nullptr));
}

json chat_chunk_finish(const std::string& id, std::int64_t created, const std::string& model,
                       run_finish finish_reason) {
  return chat_chunk(id, created, model, chat_choice_delta(json::object(), &finish_reason));
}

json chat_chunk_usage(const std::string& id, std::int64_t created, const std::string& model,
                      const usage_info& usage, const x_cache_info& x_cache) {
  return usage_chunk("chat.completion.chunk", id, created, model, usage, x_cache);
}

json completion_chunk(const std::string& id, std::int64_t created, const std::string& model,
                      const std::string& text) {
  json chunk = envelope("text_completion", id, created, model);
  chunk["choices"] = json::array({text_choice(text, nullptr)});
  return chunk;
}

json completion_chunk_finish(const std::string& id, std::int64_t created, const std::string& model,
                             run_finish finish_reason) {
  json chunk = envelope("text_completion", id, created, model);
  chunk["choices"] = json::array({text_choice("", &finish_reason)});
  return chunk;
}

json completion_chunk_usage(const std::string& id, std::int64_t created, const std::string& model,
                            const usage_info& usage, const x_cache_info& x_cache) {
  return usage_chunk("text_completion", id, created, model, usage, x_cache);
}

json progress_chunk(const char* object, const std::string& id, std::int64_t created, const std::string& model,
                    const stream_event& progress) {
  json chunk = envelope(object, id, created, model);
  chunk["choices"] = json::array();
  chunk["prompt_progress"] = {{"total", progress.prompt_tokens},
                              {"cache", progress.cached_tokens},
                              {"processed", progress.done_tokens},
                              {"time_ms", static_cast<long>(progress.elapsed_ms)}};
  return chunk;
}

std::string sse_data(const nlohmann::json& value) { return "data: " + json_text(value) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace anchorage
