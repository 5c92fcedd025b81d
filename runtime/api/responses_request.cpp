#include "runtime/api/responses_request.hpp"

#include <utility>

#include "runtime/api/image_part.hpp"
#include "runtime/api/request_fields.hpp"

namespace anchorage {

namespace {

using namespace request_fields;

std::string at(const std::string& param, std::size_t i) { return param + "[" + std::to_string(i) + "]"; }

std::string type_of(const json& obj) {
  const json* t = field(obj, "type");
  return t && t->is_string() ? t->get<std::string>() : std::string();
}

void append_line(std::string& to, const std::string& text) {
  if (!to.empty()) to += "\n";
  to += text;
}

// ---- content parts ---------------------------------------------------------------------------

bool text_part(const std::string& type) {
  return type == "input_text" || type == "output_text" || type == "text";
}

// One part's text into `text` (its texts joined with "\n"), images into `parts` when given.
failure read_part(const json& part, const std::string& p, bool assistant, std::string& text,
                  std::vector<content_part>* parts) {
  if (!part.is_object()) return wrong_type(p, "an object (a content part)", part);
  const json* t = field(part, "type");
  if (!t || !t->is_string()) return invalid(p + ".type", p + ".type must be a string such as \"input_text\"");
  const std::string type = t->get<std::string>();
  std::string piece;
  if (text_part(type)) {
    const json* v = field(part, "text");
    if (!v || !v->is_string()) return invalid(p + ".text", p + ".text must be a string");
    piece = v->get<std::string>();
  } else if (type == "refusal" && assistant) {
    if (auto e = opt_string(part, "refusal", p + ".refusal", piece)) return e;
  } else if (type == "input_image" && !assistant) {
    const json* url = field(part, "image_url");
    if (!url) {
      const char* why = field(part, "file_id") ? " (file_id images are not stored by this server)" : "";
      return invalid(p + ".image_url",
                     p + ".image_url is required: the image as a data URI" + std::string(why));
    }
    content_part image;
    if (auto e = read_image_url(*url, p + ".image_url", image)) return e;
    if (parts) parts->push_back(std::move(image));
    return std::nullopt;
  } else {
    return invalid(p + ".type", "content part type '" + type + "' is not supported here: input_text, " +
                                    "output_text and input_image (user) or refusal (assistant) are");
  }
  append_line(text, piece);
  if (parts) parts->push_back({content_part::kind::text, piece, nullptr});
  return std::nullopt;
}

// content: a string, or an array of parts. `parts` (user, system, tool) keeps them as the chat
// route keeps a content array; an assistant's text is kept as a string.
failure read_parts(const json& v, const std::string& p, bool assistant, std::string& text,
                   std::vector<content_part>* parts) {
  if (v.is_string()) {
    text = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return wrong_type(p, "a string or an array of content parts", v);
  for (std::size_t j = 0; j < v.size(); ++j)
    if (auto e = read_part(v[j], at(p, j), assistant, text, parts)) return e;
  return std::nullopt;
}

// ---- input items -----------------------------------------------------------------------------

// The conversation as it is built, item by item: `open` is whether the last message is an
// assistant message that the next reasoning, message or function_call item may extend.
struct builder {
  std::vector<chat_message> out;
  bool open = false;

  chat_message& assistant() {
    if (!open) {
      chat_message m;
      m.role = "assistant";
      out.push_back(std::move(m));
      open = true;
    }
    return out.back();
  }
  void close() { open = false; }
};

failure read_message_item(const json& item, const std::string& p, builder& b) {
  std::string role;
  if (!field(item, "role")) return invalid(p + ".role", p + ".role is required");
  if (auto e = opt_string(item, "role", p + ".role", role)) return e;
  if (role == "developer") role = "system";
  if (role != "user" && role != "assistant" && role != "system")
    return invalid(p + ".role",
                   p + ".role '" + role + "' is unknown: expected user, assistant, system or developer");
  const json* content = field(item, "content");
  if (!content) return invalid(p + ".content", p + ".content is required");
  if (role == "assistant") {
    std::string text;
    if (auto e = read_parts(*content, p + ".content", true, text, nullptr)) return e;
    if (b.open && !b.out.back().tool_calls.empty()) b.close();
    chat_message& m = b.assistant();
    if (!m.content.empty()) m.content += "\n";
    m.content += text;
    return std::nullopt;
  }
  b.close();
  chat_message m;
  m.role = role;
  if (auto e =
          read_parts(*content, p + ".content", false, m.content, content->is_array() ? &m.parts : nullptr))
    return e;
  b.out.push_back(std::move(m));
  return std::nullopt;
}

// The texts of `key`'s parts of `part_type`, joined with "\n"; whether any was there.
failure part_texts(const json& item, const char* key, const char* part_type, const std::string& p,
                   std::string& text, bool& found) {
  const json* v = field(item, key);
  if (!v) return std::nullopt;
  if (!v->is_array()) return wrong_type(p + "." + key, "an array", *v);
  for (std::size_t j = 0; j < v->size(); ++j) {
    const json& part = (*v)[j];
    const std::string pp = at(p + "." + key, j);
    if (!part.is_object()) return wrong_type(pp, "an object", part);
    const std::string type = type_of(part);
    if (type != part_type && type != "text") continue;
    const json* t = field(part, "text");
    if (!t || !t->is_string()) return invalid(pp + ".text", pp + ".text must be a string");
    append_line(text, t->get<std::string>());
    found = true;
  }
  return std::nullopt;
}

failure read_reasoning_item(const json& item, const std::string& p, builder& b) {
  std::string content, summary;
  bool has_content = false, has_summary = false;
  if (auto e = part_texts(item, "content", "reasoning_text", p, content, has_content)) return e;
  if (auto e = part_texts(item, "summary", "summary_text", p, summary, has_summary)) return e;
  const std::string& text = has_content ? content : summary;
  if (text.empty()) return std::nullopt;  // encrypted_content only, or empty: nothing to render
  if (b.open && (!b.out.back().content.empty() || !b.out.back().tool_calls.empty())) b.close();
  chat_message& m = b.assistant();
  if (!m.reasoning_content) m.reasoning_content = std::string();
  if (!m.reasoning_content->empty()) *m.reasoning_content += "\n";
  *m.reasoning_content += text;
  return std::nullopt;
}

failure read_function_call(const json& item, const std::string& p, builder& b) {
  tool_call call;
  if (auto e = need_string(item, "call_id", p + ".call_id", call.id)) return e;
  if (auto e = need_string(item, "name", p + ".name", call.name)) return e;
  const json* args = field(item, "arguments");
  if (!args) {
    call.arguments = "{}";
  } else if (args->is_string()) {
    call.arguments = args->get<std::string>();
  } else if (args->is_object()) {
    call.arguments = dump_compact(*args);
  } else {
    return wrong_type(p + ".arguments", "a JSON string", *args);
  }
  b.assistant().tool_calls.push_back(std::move(call));
  return std::nullopt;
}

failure read_function_output(const json& item, const std::string& p, builder& b) {
  b.close();
  chat_message m;
  m.role = "tool";
  if (auto e = need_string(item, "call_id", p + ".call_id", m.tool_call_id)) return e;
  const json* output = field(item, "output");
  if (!output) return invalid(p + ".output", p + ".output is required");
  // parts are not kept: a tool message renders its text
  std::vector<content_part> ignored;
  if (auto e = read_parts(*output, p + ".output", false, m.content, &ignored)) return e;
  b.out.push_back(std::move(m));
  return std::nullopt;
}

failure read_item(const json& item, const std::string& p, builder& b) {
  if (!item.is_object()) return wrong_type(p, "an object (an input item)", item);
  const json* t = field(item, "type");
  if (t && !t->is_string()) return wrong_type(p + ".type", "a string", *t);
  const std::string type = t ? t->get<std::string>() : (field(item, "role") ? "message" : "");
  if (type == "message") return read_message_item(item, p, b);
  if (type == "reasoning") return read_reasoning_item(item, p, b);
  if (type == "function_call") return read_function_call(item, p, b);
  if (type == "function_call_output") return read_function_output(item, p, b);
  if (type.empty()) return invalid(p + ".type", p + " has neither a type nor a role");
  return invalid(p + ".type", "input item type '" + type +
                                  "' is not supported: message, reasoning, function_call and "
                                  "function_call_output are");
}

failure read_input(const json& body, std::vector<chat_message>& out) {
  const json* v = field(body, "input");
  if (!v) return invalid("input", "input is required");
  if (v->is_string()) {
    if (v->get_ref<const std::string&>().empty()) return invalid("input", "input must not be empty");
    chat_message m;
    m.role = "user";
    m.content = v->get<std::string>();
    out.push_back(std::move(m));
    return std::nullopt;
  }
  if (!v->is_array()) return wrong_type("input", "a string or an array of input items", *v);
  builder b;
  for (std::size_t i = 0; i < v->size(); ++i)
    if (auto e = read_item((*v)[i], at("input", i), b)) return e;
  out = std::move(b.out);
  return std::nullopt;
}

// ---- tools -----------------------------------------------------------------------------------

failure read_tools(const json& body, completion_request& r, responses_echo& echo) {
  const json* v = field(body, "tools");
  if (!v) return std::nullopt;
  if (!v->is_array()) return wrong_type("tools", "an array", *v);
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string p = at("tools", i);
    const json& tool = (*v)[i];
    if (!tool.is_object()) return wrong_type(p, "an object", tool);
    const json* t = field(tool, "type");
    if (!t || !t->is_string()) return invalid(p + ".type", p + ".type must be a string such as \"function\"");
    if (*t != "function") continue;  // a hosted tool this server cannot run
    std::string name;
    if (auto e = need_string(tool, "name", p + ".name", name)) return e;
    json fn = {{"name", name}};
    if (const json* d = field(tool, "description")) {
      if (!d->is_string()) return wrong_type(p + ".description", "a string", *d);
      fn["description"] = *d;
    }
    if (const json* s = field(tool, "parameters")) {
      if (!s->is_object()) return wrong_type(p + ".parameters", "an object (a JSON schema)", *s);
      fn["parameters"] = *s;
    }
    r.tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
    echo.tools.push_back(tool);
  }
  return std::nullopt;
}

bool has_tool(const json& tools, const std::string& name) {
  for (const json& tool : tools)
    if (tool["function"]["name"] == name) return true;
  return false;
}

failure read_tool_choice(const json& body, completion_request& r, responses_echo& echo) {
  const json* v = field(body, "tool_choice");
  if (!v) return std::nullopt;
  const char* expected = "\"auto\", \"none\", \"required\" or {\"type\":\"function\",\"name\":...}";
  std::string choice;
  if (v->is_string()) {
    choice = v->get<std::string>();
    if (choice != "auto" && choice != "none" && choice != "required")
      return invalid("tool_choice",
                     std::string("tool_choice must be ") + expected + ", got \"" + choice + "\"");
  } else if (v->is_object()) {
    const std::string type = type_of(*v);
    if (type == "function") {
      std::string name;
      if (auto e = need_string(*v, "name", "tool_choice.name", name)) return e;
      if (!has_tool(r.tools, name))
        return invalid("tool_choice.name",
                       "tool_choice names function '" + name + "', which is not in tools");
      choice = "function:" + name;
    } else if (type == "allowed_tools") {
      if (auto e = opt_string(*v, "mode", "tool_choice.mode", choice)) return e;
      if (choice != "auto" && choice != "required")
        return invalid("tool_choice.mode", "tool_choice.mode must be \"auto\" or \"required\"");
    } else {
      return invalid("tool_choice.type", "tool_choice.type '" + type +
                                             "' is not supported: function and allowed_tools are "
                                             "(hosted tools are not run by this server)");
    }
  } else {
    return wrong_type("tool_choice", expected, *v);
  }
  if (choice == "required" && r.tools.empty())
    return invalid("tool_choice", "tool_choice \"required\" needs at least one function tool in tools");
  r.tool_choice = choice;
  echo.tool_choice = *v;
  return std::nullopt;
}

// ---- the other fields ------------------------------------------------------------------------

failure read_reasoning(const json& body, completion_request& r, responses_echo& echo) {
  const json* v = field(body, "reasoning");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("reasoning", "an object such as {\"effort\":\"low\"}", *v);
  if (auto e = opt_string(*v, "effort", "reasoning.effort", echo.effort)) return e;
  if (!echo.effort) return std::nullopt;
  const std::string& effort = *echo.effort;
  if (effort == "none" || effort == "minimal") {
    r.enable_thinking = false;
  } else if (effort == "low" || effort == "medium" || effort == "high" || effort == "xhigh" ||
             effort == "max") {
    r.enable_thinking = true;
  } else {
    return invalid("reasoning.effort",
                   "reasoning.effort must be none, minimal, low, medium, high, xhigh or "
                   "max, got \"" +
                       effort + "\"");
  }
  return std::nullopt;
}

failure read_text_format(const json& body, completion_request& r) {
  const json* v = field(body, "text");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("text", "an object", *v);
  const json* format = field(*v, "format");
  if (!format) return std::nullopt;
  if (!format->is_object()) return wrong_type("text.format", "an object", *format);
  if (type_of(*format) != "text") r.response_format = *format;
  return std::nullopt;
}

failure read_sampling(const json& body, completion_request& r, responses_echo& echo) {
  if (auto e = opt_string(body, "model", "model", r.model)) return e;
  if (const json* v = field(body, "max_output_tokens")) {
    long n = 0;
    if (auto e = read_integer(*v, "max_output_tokens", 1, n)) return e;
    r.max_tokens = n;
    echo.max_output_tokens = n;
  }
  if (auto e = opt_ranged(body, "temperature", 0.0, 2.0, false, r.temperature)) return e;
  r.temperature_given = field(body, "temperature") != nullptr;
  if (auto e = opt_ranged(body, "top_p", 0.0, 1.0, true, r.top_p)) return e;
  echo.temperature = r.temperature;
  echo.top_p = r.top_p;
  if (auto e = opt_bool(body, "stream", "stream", r.stream)) return e;
  if (auto e = opt_string(body, "prompt_cache_key", "prompt_cache_key", r.prompt_cache_key)) return e;
  return opt_string(body, "user", "user", r.user);
}

failure read_state(const json& body, responses_echo& echo) {
  if (auto e = opt_string(body, "instructions", "instructions", echo.instructions)) return e;
  if (auto e = opt_bool(body, "store", "store", echo.store)) return e;
  if (field(body, "previous_response_id")) {
    std::string id;
    if (auto e = need_string(body, "previous_response_id", "previous_response_id", id)) return e;
    echo.previous_response_id = std::move(id);
  }
  if (const json* v = field(body, "metadata")) {
    if (!v->is_object()) return wrong_type("metadata", "an object", *v);
    echo.metadata = *v;
  }
  return std::nullopt;
}

}  // namespace

std::variant<responses_request, api_error> parse_responses_request(std::string_view body) {
  api_error error;
  const std::optional<json> parsed = parse_object(body, error);
  if (!parsed) return error;
  responses_request r;
  r.chat.kind = request_kind::chat;
  if (auto e = read_input(*parsed, r.input)) return *e;
  if (auto e = read_tools(*parsed, r.chat, r.echo)) return *e;
  if (auto e = read_tool_choice(*parsed, r.chat, r.echo)) return *e;
  if (auto e = read_reasoning(*parsed, r.chat, r.echo)) return *e;
  if (auto e = read_text_format(*parsed, r.chat)) return *e;
  if (auto e = read_sampling(*parsed, r.chat, r.echo)) return *e;
  if (auto e = read_state(*parsed, r.echo)) return *e;
  return r;
}

std::optional<api_error> assemble_conversation(responses_request& r, const std::vector<chat_message>& prior) {
  std::string system = r.echo.instructions.value_or("");
  std::vector<chat_message> rest;
  const std::vector<chat_message>& input = r.input;
  for (const std::vector<chat_message>* part : {&prior, &input}) {
    for (const chat_message& m : *part) {
      if (m.role == "system") {
        if (!m.content.empty()) append_line(system, m.content);
      } else {
        rest.push_back(m);
      }
    }
  }
  if (rest.empty()) return invalid("input", "input must hold at least one user, assistant or tool item");
  std::vector<chat_message>& out = r.chat.messages;
  out.clear();
  if (!system.empty()) {
    chat_message s;
    s.role = "system";
    s.content = std::move(system);
    out.push_back(std::move(s));
  }
  for (chat_message& m : rest) out.push_back(std::move(m));
  return std::nullopt;
}

chat_message answer_message(const assistant_output& output) {
  chat_message m;
  m.role = "assistant";
  m.content = output.content;
  if (!output.reasoning.empty()) m.reasoning_content = output.reasoning;
  m.tool_calls = output.tool_calls;
  return m;
}

}  // namespace anchorage
