#include "runtime/api/responses_response.hpp"

#include <algorithm>
#include <utility>

#include "runtime/api/openai_response.hpp"

namespace anchorage {

namespace {

using json = nlohmann::ordered_json;

std::string suffix(const std::string& response_id) {
  return response_id.rfind("resp_", 0) == 0 ? response_id.substr(5) : response_id;
}

json string_or_null(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

bool incomplete(run_finish finish_reason) { return finish_reason == run_finish::length; }

// The members of a response object before "output" ...
void add_head(json& r, const responses_meta& meta, const char* status, json incomplete_details) {
  const responses_echo& e = meta.echo;
  r["id"] = meta.id;
  r["object"] = "response";
  r["created_at"] = meta.created_at;
  r["status"] = status;
  r["error"] = nullptr;
  r["incomplete_details"] = std::move(incomplete_details);
  r["instructions"] = string_or_null(e.instructions);
  r["max_output_tokens"] = e.max_output_tokens ? json(*e.max_output_tokens) : json(nullptr);
  r["model"] = meta.model;
}

// ... and after it.
void add_tail(json& r, const responses_meta& meta, json usage) {
  const responses_echo& e = meta.echo;
  r["parallel_tool_calls"] = true;
  r["previous_response_id"] = string_or_null(e.previous_response_id);
  r["reasoning"] = {{"effort", string_or_null(e.effort)}, {"summary", nullptr}};
  r["store"] = e.store;
  r["temperature"] = e.temperature;
  r["text"] = {{"format", {{"type", "text"}}}};
  r["tool_choice"] = e.tool_choice;
  r["tools"] = e.tools;
  r["top_p"] = e.top_p;
  r["truncation"] = "disabled";
  r["usage"] = std::move(usage);
  r["metadata"] = e.metadata;
}

}  // namespace

std::string reasoning_item_id(const std::string& response_id) { return "rs_" + suffix(response_id); }
std::string message_item_id(const std::string& response_id) { return "msg_" + suffix(response_id); }
std::string function_call_item_id(const std::string& response_id, int index) {
  return "fc_" + suffix(response_id) + "_" + std::to_string(index);
}

json responses_error_body(const api_error& e) {
  return json{{"error",
               {{"message", e.message},
                {"type", e.type},
                {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

json responses_usage_json(const usage_info& u, const x_cache_info& x) {
  const long cached = std::clamp(x.resumed_at, 0L, u.prompt_tokens);
  return json{{"input_tokens", u.prompt_tokens},
              {"input_tokens_details", {{"cached_tokens", cached}}},
              {"output_tokens", u.completion_tokens},
              {"output_tokens_details",
               {{"reasoning_tokens", std::clamp(u.reasoning_tokens, 0L, u.completion_tokens)}}},
              {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json reasoning_item(const std::string& response_id, const std::string& reasoning) {
  return json{{"id", reasoning_item_id(response_id)},
              {"type", "reasoning"},
              {"summary", json::array()},
              {"content", json::array({{{"type", "reasoning_text"}, {"text", reasoning}}})}};
}

json message_item(const std::string& response_id, const std::string& text, const char* status) {
  return json{
      {"id", message_item_id(response_id)},
      {"type", "message"},
      {"status", status},
      {"role", "assistant"},
      {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

json function_call_item(const std::string& response_id, int index, const tool_call& call,
                        const char* status) {
  return json{{"id", function_call_item_id(response_id, index)},
              {"type", "function_call"},
              {"status", status},
              {"call_id", call.id},
              {"name", call.name},
              {"arguments", call.arguments}};
}

json output_items(const std::string& response_id, const assistant_output& output, run_finish finish_reason) {
  json items = json::array();
  if (!output.reasoning.empty()) items.push_back(reasoning_item(response_id, output.reasoning));
  if (!output.content.empty() || output.tool_calls.empty())
    items.push_back(
        message_item(response_id, output.content, incomplete(finish_reason) ? "incomplete" : "completed"));
  for (std::size_t i = 0; i < output.tool_calls.size(); ++i)
    items.push_back(function_call_item(response_id, static_cast<int>(i), output.tool_calls[i], "completed"));
  return items;
}

json responses_body(const responses_meta& meta, const assistant_output& output, run_finish finish_reason,
                    const usage_info& usage, const x_cache_info& x_cache) {
  json r = json::object();
  const bool cut = incomplete(finish_reason);
  add_head(r, meta, cut ? "incomplete" : "completed",
           cut ? json{{"reason", "max_output_tokens"}} : json(nullptr));
  r["output"] = output_items(meta.id, output, finish_reason);
  add_tail(r, meta, responses_usage_json(usage, x_cache));
  r["x_cache"] = json(x_cache_json(x_cache));
  return r;
}

json responses_in_progress(const responses_meta& meta) {
  json r = json::object();
  add_head(r, meta, "in_progress", nullptr);
  r["output"] = json::array();
  add_tail(r, meta, nullptr);
  return r;
}

std::string responses_json_text(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string responses_sse(const json& data) {
  return "event: " + data.value("type", std::string("message")) + "\ndata: " + responses_json_text(data) +
         "\n\n";
}

}  // namespace anchorage
