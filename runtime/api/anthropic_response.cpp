#include "runtime/api/anthropic_response.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <utility>

#include "runtime/api/openai_response.hpp"

namespace anchorage {

namespace {

using json = nlohmann::ordered_json;

const char* error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

anthropic_stop_reason to_anthropic_stop_reason(const assistant_output& output, run_finish finish_reason,
                                               const std::string& stop_sequence) {
  if (finish_reason == run_finish::length) return anthropic_stop_reason::max_tokens;
  if (!output.tool_calls.empty()) return anthropic_stop_reason::tool_use;
  if (!stop_sequence.empty()) return anthropic_stop_reason::stop_sequence;
  return anthropic_stop_reason::end_turn;
}

namespace {

json stop_sequence_json(anthropic_stop_reason reason, const std::string& stop_sequence) {
  return reason == anthropic_stop_reason::stop_sequence ? json(stop_sequence) : json(nullptr);
}

}  // namespace

const char* wire_name(anthropic_stop_reason r) {
  switch (r) {
    case anthropic_stop_reason::end_turn:
      return "end_turn";
    case anthropic_stop_reason::max_tokens:
      return "max_tokens";
    case anthropic_stop_reason::stop_sequence:
      return "stop_sequence";
    case anthropic_stop_reason::tool_use:
      return "tool_use";
  }
  return "end_turn";
}

json anthropic_error_body(const api_error& e) {
  return json{{"type", "error"}, {"error", {{"type", error_type(e.status)}, {"message", e.message}}}};
}

json anthropic_usage_json(const usage_info& u, const x_cache_info& x) {
  const long read = std::clamp(x.resumed_at, 0L, u.prompt_tokens);
  return json{{"input_tokens", u.prompt_tokens - read},
              {"output_tokens", u.completion_tokens},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", read}};
}

nlohmann::ordered_json anthropic_tool_input(const tool_call& call) {
  using ordered = nlohmann::ordered_json;
  if (call.arguments.find_first_not_of(" \t\r\n") == std::string::npos) return ordered::object();
  ordered parsed = ordered::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) return parsed;
  return ordered{{"arguments", call.arguments}};
}

std::string thinking_signature(const std::string& thinking) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "anchorage-%016zx", std::hash<std::string>{}(thinking));
  return buf;
}

json anthropic_message_body(const std::string& id, const std::string& model, const assistant_output& output,
                            run_finish finish_reason, const usage_info& usage, const x_cache_info& x_cache,
                            const std::string& stop_sequence) {
  const anthropic_stop_reason reason = to_anthropic_stop_reason(output, finish_reason, stop_sequence);
  json content = json::array();
  if (!output.reasoning.empty())
    content.push_back({{"type", "thinking"},
                       {"thinking", output.reasoning},
                       {"signature", thinking_signature(output.reasoning)}});
  if (!output.content.empty()) content.push_back({{"type", "text"}, {"text", output.content}});
  for (const tool_call& call : output.tool_calls)
    content.push_back(
        {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", anthropic_tool_input(call)}});
  return json{{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model},
              {"content", std::move(content)},
              {"stop_reason", wire_name(reason)},
              {"stop_sequence", stop_sequence_json(reason, stop_sequence)},
              {"usage", anthropic_usage_json(usage, x_cache)},
              {"x_cache", json(x_cache_json(x_cache))}};
}

json anthropic_count_body(long input_tokens) { return json{{"input_tokens", input_tokens}}; }

json anthropic_message_start(const std::string& id, const std::string& model) {
  return json{{"type", "message_start"},
              {"message",
               {{"id", id},
                {"type", "message"},
                {"role", "assistant"},
                {"model", model},
                {"content", json::array()},
                {"stop_reason", nullptr},
                {"stop_sequence", nullptr},
                {"usage", anthropic_usage_json({}, {})}}}};
}

json anthropic_block_start(int index, json block) {
  return json{{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(block)}};
}

json anthropic_block_delta(int index, json delta) {
  return json{{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}};
}

json anthropic_block_stop(int index) { return json{{"type", "content_block_stop"}, {"index", index}}; }

json anthropic_message_delta(anthropic_stop_reason reason, const std::string& stop_sequence,
                             const usage_info& usage, const x_cache_info& x_cache) {
  return json{
      {"type", "message_delta"},
      {"delta",
       {{"stop_reason", wire_name(reason)}, {"stop_sequence", stop_sequence_json(reason, stop_sequence)}}},
      {"usage", anthropic_usage_json(usage, x_cache)},
      {"x_cache", json(x_cache_json(x_cache))}};
}

std::string anthropic_json_text(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string anthropic_sse(const json& data) {
  return "event: " + data.value("type", std::string("message")) + "\ndata: " + anthropic_json_text(data) +
         "\n\n";
}

}  // namespace anchorage
