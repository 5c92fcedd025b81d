#include "tools/replay/wire_outcome.hpp"

#include <utility>
#include <vector>

#include "protocol/openai_types.hpp"
#include "runtime/api/anthropic_response.hpp"

namespace anchorage {
namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

std::string str_of(const json& v, const char* key) {
  return v.is_object() && v.contains(key) && v[key].is_string() ? v[key].get<std::string>() : std::string();
}

long num_of(const json& v, const char* key) {
  return v.is_object() && v.contains(key) && v[key].is_number() ? v[key].get<long>() : 0L;
}

// The data lines of an SSE body that are JSON objects, parsed.
template <typename J>
std::vector<J> sse_data(const std::string& sse) {
  std::vector<J> out;
  for (const std::string& data : sse_payloads(sse)) {
    J j = J::parse(data, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

json outcome(const std::string& finish, std::string content, std::string reasoning, json calls, json usage) {
  return {{"status", 200},
          {"finish_reason", finish},
          {"content", std::move(content)},
          {"reasoning", std::move(reasoning)},
          {"tool_calls", std::move(calls)},
          {"usage", std::move(usage)}};
}

json messages_usage(const json& u) {
  const long read = num_of(u, "cache_read_input_tokens");
  return {{"prompt_tokens", num_of(u, "input_tokens") + read},
          {"completion_tokens", num_of(u, "output_tokens")},
          {"cached_tokens", read}};
}

std::string messages_finish(const json& stop_reason) {
  return stop_reason.is_string() && stop_reason.get<std::string>() == "max_tokens" ? "length" : "stop";
}

std::string input_text(const ordered& input) {
  return input.dump(-1, ' ', false, ordered::error_handler_t::replace);
}

json responses_usage(const json& u) {
  const json details = u.is_object() ? u.value("input_tokens_details", json::object()) : json::object();
  return {{"prompt_tokens", num_of(u, "input_tokens")},
          {"completion_tokens", num_of(u, "output_tokens")},
          {"cached_tokens", num_of(details, "cached_tokens")}};
}

// The outcome of a response object (the body, or a stream's last response event).
json responses_outcome(const ordered& r) {
  std::string content, reasoning;
  json calls = json::array();
  if (r.contains("output") && r["output"].is_array())
    for (const ordered& item : r["output"]) {
      if (!item.is_object()) continue;
      const std::string type = item.value("type", std::string());
      if (type == "function_call") {
        calls.push_back({{"name", item.value("name", std::string())},
                         {"arguments", item.value("arguments", std::string())}});
        continue;
      }
      if (!item.contains("content") || !item["content"].is_array()) continue;
      for (const ordered& part : item["content"]) {
        if (!part.is_object()) continue;
        const std::string text = part.value("text", std::string());
        if (type == "reasoning") reasoning += text;
        if (type == "message" && part.value("type", std::string()) == "output_text") content += text;
      }
    }
  const std::string status = r.value("status", std::string());
  return outcome(status == "incomplete" ? "length" : "stop", std::move(content), std::move(reasoning),
                 std::move(calls), responses_usage(json(r.value("usage", ordered()))));
}

}  // namespace

std::vector<std::string> sse_payloads(const std::string& sse) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    std::size_t end = sse.find('\n', pos);
    if (end == std::string::npos) end = sse.size();
    std::string line = sse.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data:", 0) != 0) continue;
    std::string data = line.substr(5);
    if (!data.empty() && data[0] == ' ') data.erase(0, 1);
    out.push_back(std::move(data));
  }
  return out;
}

replay_wire wire_of_path(const std::string& path) {
  if (path.rfind("/v1/messages", 0) == 0) return replay_wire::messages;
  if (path.rfind("/v1/responses", 0) == 0) return replay_wire::responses;
  if (path.find("chat") != std::string::npos) return replay_wire::chat;
  return replay_wire::completions;
}

json replay_error_outcome(int status, const json& body) {
  json out;
  if (status > 0) out["status"] = status;
  const json e = body.is_object() && body.contains("error") ? body["error"] : json();
  out["type"] = e.is_object() && e.contains("type") ? e["type"] : json();
  out["message"] = e.is_object() && e.contains("message") ? e["message"] : json();
  return out;
}

json messages_outcome_from_body(int status, const std::string& body) {
  const ordered m = ordered::parse(body, nullptr, false);
  if (status != 200) {
    if (m.is_discarded()) return {{"status", status}, {"type", nullptr}, {"message", body}};
    return replay_error_outcome(status, json(m));
  }
  std::string content, reasoning;
  json calls = json::array();
  if (m.is_object() && m.contains("content") && m["content"].is_array())
    for (const ordered& b : m["content"]) {
      if (!b.is_object()) continue;
      const std::string type = b.value("type", std::string());
      if (type == "text") content += b.value("text", std::string());
      if (type == "thinking") reasoning += b.value("thinking", std::string());
      if (type == "tool_use")
        calls.push_back({{"name", b.value("name", std::string())},
                         {"arguments", input_text(b.value("input", ordered::object()))}});
    }
  const json whole(m);
  return outcome(messages_finish(whole.value("stop_reason", json())), std::move(content),
                 std::move(reasoning), std::move(calls), messages_usage(whole.value("usage", json())));
}

json messages_outcome_from_sse(const std::string& sse) {
  std::string content, reasoning;
  json calls = json::array();
  std::vector<std::string> partial;  // each call's input_json_delta fragments, joined
  std::string block;                 // the open block's type
  json stop_reason, usage;
  for (const json& ev : sse_data<json>(sse)) {
    const std::string type = str_of(ev, "type");
    if (type == "error") return replay_error_outcome(0, ev);
    if (type == "content_block_start") {
      const json b = ev.value("content_block", json::object());
      block = str_of(b, "type");
      if (block == "text") content += str_of(b, "text");
      if (block == "thinking") reasoning += str_of(b, "thinking");
      if (block == "tool_use") {
        calls.push_back({{"name", str_of(b, "name")}, {"arguments", ""}});
        partial.emplace_back();
      }
    } else if (type == "content_block_delta") {
      const json d = ev.value("delta", json::object());
      const std::string kind = str_of(d, "type");
      if (kind == "text_delta") content += str_of(d, "text");
      if (kind == "thinking_delta") reasoning += str_of(d, "thinking");
      if (kind == "input_json_delta" && !partial.empty()) partial.back() += str_of(d, "partial_json");
    } else if (type == "message_delta") {
      stop_reason = ev.value("delta", json::object()).value("stop_reason", json());
      usage = ev.value("usage", json());
    }
  }
  for (std::size_t i = 0; i < partial.size(); ++i) {
    const ordered input = ordered::parse(partial[i].empty() ? "{}" : partial[i], nullptr, false);
    calls[i]["arguments"] = input.is_discarded() ? partial[i] : input_text(input);
  }
  return outcome(messages_finish(stop_reason), std::move(content), std::move(reasoning), std::move(calls),
                 messages_usage(usage));
}

json responses_outcome_from_body(int status, const std::string& body) {
  const ordered r = ordered::parse(body, nullptr, false);
  if (status != 200) {
    if (r.is_discarded()) return {{"status", status}, {"type", nullptr}, {"message", body}};
    return replay_error_outcome(status, json(r));
  }
  return responses_outcome(r.is_object() ? r : ordered::object());
}

json responses_outcome_from_sse(const std::string& sse) {
  ordered last;
  for (const ordered& ev : sse_data<ordered>(sse)) {
    const std::string type = ev.value("type", std::string());
    if (type == "error") return replay_error_outcome(0, json(ev));
    if ((type == "response.completed" || type == "response.incomplete") && ev.contains("response"))
      last = ev["response"];
  }
  if (!last.is_object()) return {{"type", nullptr}, {"message", "the stream ended without its response"}};
  return responses_outcome(last);
}

json messages_view(const json& recorded) {
  json out = recorded;
  if (!out.is_object() || !out.contains("tool_calls") || !out["tool_calls"].is_array()) return out;
  for (json& c : out["tool_calls"]) {
    tool_call call;
    call.name = str_of(c, "name");
    call.arguments = str_of(c, "arguments");
    c["arguments"] = anthropic_json_text(anthropic_tool_input(call));
  }
  return out;
}

}  // namespace anchorage
