#include "runtime/api/anthropic_request.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/api/image_part.hpp"
#include "runtime/api/request_fields.hpp"

namespace anchorage {

namespace {

// ordered_json (request_fields::json): tool schemas and tool_use inputs keep the client's key
// order, as the chat route keeps its tools and object arguments.
using namespace request_fields;

constexpr int max_json_depth = 512;
constexpr std::string_view billing_block = "x-anthropic-billing-header";

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

std::string block_type(const json& block) {
  const json* t = field(block, "type");
  return t && t->is_string() ? t->get<std::string>() : std::string();
}

// A block's "type" as a string, or the error naming it.
failure read_block_type(const json& block, const std::string& p, std::string& type) {
  if (!block.is_object()) return wrong_type(p, "an object (a content block)", block);
  const json* t = field(block, "type");
  if (!t || !t->is_string()) return invalid(p + ".type", p + ".type must be a string such as \"text\"");
  type = t->get<std::string>();
  return std::nullopt;
}

// Adds a text part to `m` (content joined with "\n", as the chat route joins its text parts).
// Empty texts are dropped; whitespace is kept (an answer echoed back renders as it was held).
void add_text(chat_message& m, const std::string& text) {
  if (text.empty()) return;
  const bool first = std::none_of(m.parts.begin(), m.parts.end(), [](const content_part& part) {
    return part.what == content_part::kind::text;
  });
  if (!first) m.content += "\n";
  m.content += text;
  m.parts.push_back({content_part::kind::text, text, nullptr});
}

failure read_text_block(const json& block, const std::string& p, std::string& text) {
  const json* t = field(block, "text");
  if (!t) return invalid(p + ".text", p + ".text is required");
  if (!t->is_string()) return wrong_type(p + ".text", "a string", *t);
  text = t->get<std::string>();
  return std::nullopt;
}

failure read_image_block(const json& block, const std::string& p, content_part& out) {
  const json* source = field(block, "source");
  if (!source || !source->is_object()) return invalid(p + ".source", p + ".source must be an object");
  return read_image_source(*source, p + ".source", out);
}

// A tool_result's content (a string or blocks of text and images) into a message of role tool.
failure read_tool_result(const json& block, const std::string& p, chat_message& tool) {
  tool.role = "tool";
  if (auto e = need_string(block, "tool_use_id", p + ".tool_use_id", tool.tool_call_id)) return e;
  bool is_error = false;
  if (auto e = opt_bool(block, "is_error", p + ".is_error", is_error)) return e;
  const json* content = field(block, "content");
  if (!content) return std::nullopt;
  if (content->is_string()) {
    tool.content = content->get<std::string>();
    return std::nullopt;
  }
  if (!content->is_array())
    return wrong_type(p + ".content", "a string or an array of content blocks", *content);
  for (std::size_t k = 0; k < content->size(); ++k) {
    const std::string bp = p + ".content[" + std::to_string(k) + "]";
    std::string type;
    if (auto e = read_block_type((*content)[k], bp, type)) return e;
    if (type == "text") {
      std::string text;
      if (auto e = read_text_block((*content)[k], bp, text)) return e;
      add_text(tool, text);
    } else if (type == "image") {
      content_part image;
      if (auto e = read_image_block((*content)[k], bp, image)) return e;
      tool.parts.push_back(std::move(image));
    }
    // other result blocks (search_result, document, tool_reference) carry nothing renderable
  }
  return std::nullopt;
}

// One Anthropic message into one chat message, or (a user message with tool results) into the
// tool messages followed by the user message holding the rest.
failure read_message(const json& v, std::size_t index, std::vector<chat_message>& out, std::string& system) {
  const std::string p = "messages[" + std::to_string(index) + "]";
  if (!v.is_object()) return wrong_type(p, "an object", v);
  const json* role = field(v, "role");
  if (!role) return invalid(p + ".role", p + ".role is required");
  if (!role->is_string()) return wrong_type(p + ".role", "a string", *role);
  const std::string r = role->get<std::string>();
  if (r != "user" && r != "assistant" && r != "system")
    return invalid(p + ".role", p + ".role '" + r + "' is unknown: expected user or assistant");
  chat_message m;
  m.role = r;
  std::vector<chat_message> tools;
  const json* content = field(v, "content");
  if (!content) return invalid(p + ".content", p + ".content is required");
  if (content->is_string()) {
    m.content = content->get<std::string>();
  } else if (!content->is_array()) {
    return wrong_type(p + ".content", "a string or an array of content blocks", *content);
  } else {
    for (std::size_t j = 0; j < content->size(); ++j) {
      const std::string bp = p + ".content[" + std::to_string(j) + "]";
      const json& block = (*content)[j];
      std::string type;
      if (auto e = read_block_type(block, bp, type)) return e;
      if (type == "text") {
        std::string text;
        if (auto e = read_text_block(block, bp, text)) return e;
        add_text(m, text);
      } else if (type == "image" && r != "assistant") {
        content_part image;
        if (auto e = read_image_block(block, bp, image)) return e;
        m.parts.push_back(std::move(image));
      } else if (type == "thinking" && r == "assistant") {
        std::string thinking;
        if (auto e = opt_string(block, "thinking", bp + ".thinking", thinking)) return e;
        if (!m.reasoning_content) m.reasoning_content = std::string();
        if (!m.reasoning_content->empty() && !thinking.empty()) *m.reasoning_content += "\n";
        *m.reasoning_content += thinking;
      } else if (type == "redacted_thinking" && r == "assistant") {
        continue;  // opaque: nothing this server can render
      } else if (type == "tool_use" && r == "assistant") {
        tool_call call;
        if (auto e = need_string(block, "id", bp + ".id", call.id)) return e;
        if (auto e = need_string(block, "name", bp + ".name", call.name)) return e;
        const json* input = field(block, "input");
        if (input && !input->is_object()) return wrong_type(bp + ".input", "an object", *input);
        call.arguments = input ? dump_compact(*input) : "{}";
        m.tool_calls.push_back(std::move(call));
      } else if (type == "tool_result" && r == "user") {
        chat_message tool;
        if (auto e = read_tool_result(block, bp, tool)) return e;
        tools.push_back(std::move(tool));
      } else {
        return invalid(bp + ".type", "content block type '" + type + "' is not supported in a " + r +
                                         " message: text, image, tool_result (user) and thinking, "
                                         "redacted_thinking, tool_use (assistant) are");
      }
    }
  }
  if (r == "system") {
    if (!m.tool_calls.empty() || !tools.empty())
      return invalid(p + ".content", "a system message holds text only");
    if (!blank(m.content)) system += (system.empty() ? "" : "\n") + m.content;
    return std::nullopt;
  }
  // A user message of only tool results is those results; text beside them follows them.
  const bool rest = !m.content.empty() || !m.parts.empty() || tools.empty();
  for (chat_message& t : tools) out.push_back(std::move(t));
  if (rest) out.push_back(std::move(m));
  return std::nullopt;
}

// system: a string, or text blocks (the billing block and empty ones left out).
failure read_system(const json& body, std::string& system) {
  const json* v = field(body, "system");
  if (!v) return std::nullopt;
  if (v->is_string()) {
    system = v->get<std::string>();
    return std::nullopt;
  }
  if (!v->is_array()) return wrong_type("system", "a string or an array of text blocks", *v);
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string p = "system[" + std::to_string(i) + "]";
    std::string type;
    if (auto e = read_block_type((*v)[i], p, type)) return e;
    if (type != "text") return invalid(p + ".type", p + ".type must be \"text\", got \"" + type + "\"");
    std::string text;
    if (auto e = read_text_block((*v)[i], p, text)) return e;
    if (blank(text) || text.compare(0, billing_block.size(), billing_block) == 0) continue;
    if (!system.empty()) system += "\n";
    system += text;
  }
  return std::nullopt;
}

failure read_messages(const json& body, completion_request& r) {
  std::string system;
  if (auto e = read_system(body, system)) return e;
  const json* v = field(body, "messages");
  if (!v) return invalid("messages", "messages: Field required");
  if (!v->is_array()) return wrong_type("messages", "an array of message objects", *v);
  if (v->empty()) return invalid("messages", "messages must contain at least one message");
  std::vector<chat_message> out;
  for (std::size_t i = 0; i < v->size(); ++i)
    if (auto e = read_message((*v)[i], i, out, system)) return e;
  if (out.empty()) return invalid("messages", "messages must hold at least one user or assistant message");
  if (!system.empty()) {
    chat_message s;
    s.role = "system";
    s.content = std::move(system);
    out.insert(out.begin(), std::move(s));
  }
  r.messages = std::move(out);
  return std::nullopt;
}

// tools: Anthropic's {name, description, input_schema} as the chat route's function tools.
failure read_tools(const json& body, completion_request& r) {
  const json* v = field(body, "tools");
  if (!v) return std::nullopt;
  if (!v->is_array()) return wrong_type("tools", "an array", *v);
  json tools = json::array();
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string p = "tools[" + std::to_string(i) + "]";
    const json& tool = (*v)[i];
    if (!tool.is_object()) return wrong_type(p, "an object", tool);
    const std::string type = block_type(tool);
    if (!type.empty() && type != "custom") continue;  // a server tool this server cannot run
    std::string name;
    if (auto e = need_string(tool, "name", p + ".name", name)) return e;
    json fn = {{"name", name}};
    if (const json* d = field(tool, "description")) {
      if (!d->is_string()) return wrong_type(p + ".description", "a string", *d);
      fn["description"] = *d;
    }
    const json* schema = field(tool, "input_schema");
    if (!schema) return invalid(p + ".input_schema", p + ".input_schema is required");
    if (!schema->is_object()) return wrong_type(p + ".input_schema", "an object (a JSON schema)", *schema);
    fn["parameters"] = *schema;
    tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  r.tools = std::move(tools);
  return std::nullopt;
}

failure read_tool_choice(const json& body, completion_request& r) {
  const json* v = field(body, "tool_choice");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("tool_choice", "an object such as {\"type\":\"auto\"}", *v);
  if (const json* d = field(*v, "disable_parallel_tool_use"); d && !d->is_boolean())
    return wrong_type("tool_choice.disable_parallel_tool_use", "a boolean", *d);
  const std::string type = block_type(*v);
  if (type == "auto" || type == "none") {
    r.tool_choice = type;
  } else if (type == "any") {
    if (r.tools.empty())
      return invalid("tool_choice", "tool_choice \"any\" needs at least one tool in tools");
    r.tool_choice = "required";
  } else if (type == "tool") {
    std::string name;
    if (auto e = need_string(*v, "name", "tool_choice.name", name)) return e;
    bool known = false;
    for (const json& t : r.tools) known = known || t["function"]["name"] == name;
    if (!known)
      return invalid("tool_choice.name", "tool_choice names tool '" + name + "', which is not in tools");
    r.tool_choice = "function:" + name;
  } else {
    return invalid("tool_choice.type", "tool_choice.type must be \"auto\", \"any\", \"tool\" or \"none\"");
  }
  return std::nullopt;
}

failure read_thinking(const json& body, completion_request& r) {
  r.enable_thinking = false;
  const json* v = field(body, "thinking");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("thinking", "an object such as {\"type\":\"enabled\"}", *v);
  const std::string type = block_type(*v);
  if (type == "disabled") return std::nullopt;
  if (type == "adaptive") {
    r.enable_thinking = true;
    return std::nullopt;
  }
  if (type != "enabled")
    return invalid("thinking.type", "thinking.type must be \"enabled\", \"adaptive\" or \"disabled\"");
  r.enable_thinking = true;
  if (const json* b = field(*v, "budget_tokens")) {
    long budget = 0;
    if (auto e = read_integer(*b, "thinking.budget_tokens", 1, budget)) return e;
    r.reasoning_budget = budget;
  }
  return std::nullopt;
}

// metadata.user_id: the user, and the session it names when it names one.
failure read_metadata(const json& body, completion_request& r) {
  const json* v = field(body, "metadata");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("metadata", "an object", *v);
  if (auto e = opt_string(*v, "user_id", "metadata.user_id", r.user)) return e;
  const json as_json = json::parse(r.user, nullptr, /*allow_exceptions=*/false);
  if (as_json.is_object()) {
    if (const json* s = field(as_json, "session_id"); s && s->is_string())
      r.session_header = s->get<std::string>();
  } else if (const auto at = r.user.rfind("_session_"); at != std::string::npos) {
    r.session_header = r.user.substr(at + 9);
  }
  return std::nullopt;
}

failure read_sampling(const json& body, anthropic_route route, completion_request& r) {
  if (auto e = opt_string(body, "model", "model", r.model)) return e;
  if (const json* v = field(body, "max_tokens")) {
    long n = 0;
    if (auto e = read_integer(*v, "max_tokens", 1, n)) return e;
    r.max_tokens = n;
  } else if (route == anthropic_route::create) {
    return invalid("max_tokens", "max_tokens: Field required");
  }
  if (auto e = opt_ranged(body, "temperature", 0.0, 2.0, false, r.temperature)) return e;
  r.temperature_given = field(body, "temperature") != nullptr;
  if (auto e = opt_ranged(body, "top_p", 0.0, 1.0, true, r.top_p)) return e;
  if (const json* v = field(body, "top_k")) {
    long k = 0;
    if (auto e = read_integer(*v, "top_k", 0, k)) return e;
    r.top_k = k;
  }
  if (const json* v = field(body, "stop_sequences")) {
    if (!v->is_array()) return wrong_type("stop_sequences", "an array of strings", *v);
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = "stop_sequences[" + std::to_string(i) + "]";
      const json& s = (*v)[i];
      if (!s.is_string()) return wrong_type(p, "a string", s);
      if (s.get_ref<const std::string&>().empty()) return invalid(p, p + " must not be empty");
      r.stop.push_back(s.get<std::string>());
    }
  }
  return opt_bool(body, "stream", "stream", r.stream);
}

}  // namespace

std::variant<completion_request, api_error> parse_anthropic_request(std::string_view body,
                                                                    anthropic_route route) {
  bool too_deep = false;
  const json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t, json&) {
    if (depth > max_json_depth) too_deep = true;
    return !too_deep;
  };
  const json parsed = json::parse(body.begin(), body.end(), limit_depth, /*allow_exceptions=*/false);
  if (too_deep)
    return invalid("",
                   "the request body is nested deeper than " + std::to_string(max_json_depth) + " levels");
  if (parsed.is_discarded()) return invalid("", "the request body is not valid JSON");
  if (!parsed.is_object()) return invalid("", "the request body must be a JSON object");

  completion_request r;
  r.kind = request_kind::chat;
  if (auto e = read_messages(parsed, r)) return *e;
  if (auto e = read_tools(parsed, r)) return *e;
  if (auto e = read_tool_choice(parsed, r)) return *e;
  if (auto e = read_thinking(parsed, r)) return *e;
  if (auto e = read_metadata(parsed, r)) return *e;
  if (auto e = read_sampling(parsed, route, r)) return *e;
  return r;
}

}  // namespace anchorage
