#include "runtime/text/template/template_conversation.hpp"

#include "runtime/text/template/jinja_json.hpp"

namespace anchorage {

using json = nlohmann::ordered_json;

namespace {

json content_parts(const std::vector<content_part>& parts) {
  json out = json::array();
  for (const content_part& p : parts) {
    switch (p.what) {
      case content_part::kind::text:
        out.push_back({{"type", "text"}, {"text", p.text}});
        break;
      case content_part::kind::image:
        out.push_back({{"type", "image"}});
        break;
      case content_part::kind::video:
        out.push_back({{"type", "video"}});
        break;
    }
  }
  return out;
}

}  // namespace

json template_messages(const std::vector<chat_message>& messages, content_form form) {
  json out = json::array();
  for (const chat_message& m : messages) {
    json message = {{"role", m.role}};
    if (form == content_form::parts && !m.parts.empty())
      message["content"] = content_parts(m.parts);
    else
      message["content"] = m.content;
    if (m.reasoning_content) message["reasoning_content"] = *m.reasoning_content;
    if (!m.tool_calls.empty()) {
      json calls = json::array();
      for (const tool_call& call : m.tool_calls) {
        json arguments = json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
        if (arguments.is_discarded()) arguments = call.arguments;
        calls.push_back({{"type", "function"},
                         {"id", call.id},
                         {"function", {{"name", call.name}, {"arguments", std::move(arguments)}}}});
      }
      message["tool_calls"] = std::move(calls);
    }
    out.push_back(std::move(message));
  }
  return out;
}

namespace template_detail {

const json* field(const json& message, const char* key) {
  if (!message.is_object()) return nullptr;
  const auto it = message.find(key);
  return it == message.end() ? nullptr : &*it;
}

bool field_equals(const json& message, const char* key, const char* value) {
  const json* v = field(message, key);
  return v != nullptr && v->is_string() && v->get_ref<const std::string&>() == value;
}

json call_arguments(const json& arguments) {
  if (!arguments.is_string()) return arguments;
  json parsed = json::parse(arguments.get_ref<const std::string&>(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw template_error("tool call arguments are not valid JSON");
  return parsed;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view before_first(std::string_view s, std::string_view sep) {
  const std::size_t i = s.find(sep);
  return i == std::string_view::npos ? s : s.substr(0, i);
}

std::string_view after_last(std::string_view s, std::string_view sep) {
  const std::size_t i = s.rfind(sep);
  return i == std::string_view::npos ? s : s.substr(i + sep.size());
}

}  // namespace template_detail

}  // namespace anchorage
