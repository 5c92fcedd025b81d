#include "runtime/api/openai_request.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/api/image_part.hpp"
#include "runtime/api/request_fields.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

namespace {

// ordered_json: objects keep the client's key order (tools and tool-call arguments are rendered
// with `tojson`, which writes keys in the order given).
// The JSON readers (request_fields: json is ordered_json, failure an optional api_error).
using namespace request_fields;

constexpr int max_json_depth = 512;
constexpr std::size_t max_stop_strings = 4;
constexpr std::size_t max_logit_bias_entries = 300;
constexpr double max_logit_bias = 100.0;

// A positive integer; values beyond LONG_MAX are clamped to it.
failure read_positive(const json& v, const std::string& param, long& out) {
  if (!v.is_number_integer()) return wrong_type(param, "an integer", v);
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (u == 0) return invalid(param, param + " must be a positive integer, got 0");
    out = u > static_cast<std::uint64_t>(LONG_MAX) ? LONG_MAX : static_cast<long>(u);
    return std::nullopt;
  }
  const std::int64_t i = v.get<std::int64_t>();
  if (i < 1) return invalid(param, param + " must be a positive integer, got " + std::to_string(i));
  out = static_cast<long>(i);
  return std::nullopt;
}

// logit_bias: {"<token id>": bias, ...}. Keys are decimal ids in [0, vocab), values
// numbers in [-100, 100]; two keys naming one id ("7" and "07") are refused. Stored by id.
failure read_logit_bias(const json& body, int vocab, completion_request& r) {
  const json* v = field(body, "logit_bias");
  if (!v) return std::nullopt;
  const std::string p = "logit_bias";
  if (!v->is_object()) return wrong_type(p, "an object mapping token ids to biases", *v);
  if (v->size() > max_logit_bias_entries) {
    return invalid(p, "logit_bias may hold at most " + std::to_string(max_logit_bias_entries) +
                          " entries, got " + std::to_string(v->size()));
  }
  std::vector<std::pair<std::int32_t, float>> out;
  for (const auto& [key, bias] : v->items()) {
    const bool digits = !key.empty() && key.size() <= 9 &&
                        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long id = digits ? std::stol(key) : -1;
    if (id < 0 || id >= vocab) {
      return invalid(p, "logit_bias key " + json(key).dump() + " is not a token id in [0, " +
                            std::to_string(vocab) + ")");
    }
    if (!bias.is_number()) {
      return invalid(
          p, "logit_bias[" + json(key).dump() + "] must be a number, got " + std::string(bias.type_name()));
    }
    const double b = bias.get<double>();
    if (b < -max_logit_bias || b > max_logit_bias) {
      return invalid(p, "logit_bias[" + json(key).dump() + "] must be in [-100, 100], got " + bias.dump());
    }
    out.emplace_back(static_cast<std::int32_t>(id), static_cast<float>(b));
  }
  std::sort(out.begin(), out.end());
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (out[i].first == out[i - 1].first) {
      return invalid(p, "logit_bias names token " + std::to_string(out[i].first) + " twice");
    }
  }
  r.logit_bias = std::move(out);
  return std::nullopt;
}

// ---- fields shared by both kinds -------------------------------------------------------------

failure read_common(const json& body, int vocab, completion_request& r) {
  if (auto e = opt_string(body, "model", "model", r.model)) return e;
  // max_completion_tokens supersedes the deprecated max_tokens; both are validated.
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (const json* v = field(body, key)) {
      long n = 0;
      if (auto e = read_positive(*v, key, n)) return e;
      r.max_tokens = n;
    }
  }
  if (auto e = opt_ranged(body, "temperature", 0.0, 2.0, false, r.temperature)) return e;
  r.temperature_given = field(body, "temperature") != nullptr;
  if (auto e = opt_ranged(body, "top_p", 0.0, 1.0, true, r.top_p)) return e;
  // top_k: 0 (and vLLM's -1) is no limit; values beyond LONG_MAX are clamped to it.
  if (const json* v = field(body, "top_k")) {
    if (!v->is_number_integer()) return wrong_type("top_k", "a non-negative integer", *v);
    if (v->is_number_unsigned()) {
      const std::uint64_t k = v->get<std::uint64_t>();
      r.top_k = k > static_cast<std::uint64_t>(LONG_MAX) ? LONG_MAX : static_cast<long>(k);
    } else if (v->get<std::int64_t>() == -1) {
      r.top_k = 0;
    } else {
      return invalid("top_k", "top_k must be a non-negative integer (or -1: no limit), got " + v->dump());
    }
  }
  if (const json* v = field(body, "response_format")) {
    if (!v->is_object()) return wrong_type("response_format", "an object", *v);
    r.response_format = *v;
  }
  if (const json* v = field(body, "n"); v && *v != 1) {
    return invalid("n", "n must be 1: one choice per request is supported, got " + v->dump());
  }
  if (const json* v = field(body, "seed")) {
    if (!v->is_number_integer()) return wrong_type("seed", "a non-negative integer", *v);
    if (!v->is_number_unsigned()) {
      return invalid("seed", "seed must be a non-negative integer, got " + v->dump());
    }
    r.seed = v->get<std::uint64_t>();
  }
  if (const json* v = field(body, "stop")) {
    if (v->is_string()) {
      r.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > max_stop_strings) {
        return invalid("stop", "stop may hold at most 4 strings, got " + std::to_string(v->size()));
      }
      for (std::size_t i = 0; i < v->size(); ++i) {
        const json& s = (*v)[i];
        if (!s.is_string()) return wrong_type("stop[" + std::to_string(i) + "]", "a string", s);
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      return wrong_type("stop", "a string or an array of strings", *v);
    }
    for (const std::string& s : r.stop) {
      if (s.empty()) return invalid("stop", "stop strings must not be empty");
    }
  }
  if (auto e = read_logit_bias(body, vocab, r)) return e;
  if (auto e = opt_bool(body, "stream", "stream", r.stream)) return e;
  if (const json* v = field(body, "stream_options")) {
    if (!v->is_object()) return wrong_type("stream_options", "an object", *v);
    if (auto e = opt_bool(*v, "include_usage", "stream_options.include_usage", r.include_usage)) {
      return e;
    }
  }
  if (auto e = opt_bool(body, "return_progress", "return_progress", r.return_progress)) return e;
  if (auto e = opt_string(body, "prompt_cache_key", "prompt_cache_key", r.prompt_cache_key)) {
    return e;
  }
  if (auto e = opt_string(body, "user", "user", r.user)) return e;
  return std::nullopt;
}

// ---- completions -----------------------------------------------------------------------------

bool all_integers(const json& array) {
  for (const json& x : array) {
    if (!x.is_number_integer()) return false;
  }
  return true;
}

failure read_prompt(const json& body, int vocab, completion_request& r) {
  const json* p = field(body, "prompt");
  if (!p) return invalid("prompt", "prompt is required");
  const char* expected = "a string, an array of token ids, or an array of one string";
  const json* one = p;
  if (p->is_array() && !p->empty() && !all_integers(*p)) {
    // An array of prompts (strings or token-id arrays): only a single one is served.
    for (const json& x : *p) {
      if (!x.is_string() && !x.is_array()) return wrong_type("prompt", expected, *p);
    }
    if (p->size() > 1) return invalid("prompt", "one prompt per request is supported");
    one = &p->front();
    if (one->is_array() && !all_integers(*one)) return wrong_type("prompt", expected, *p);
  }
  if (!one->is_string() && !one->is_array()) return wrong_type("prompt", expected, *p);
  if (one->is_string() ? one->get_ref<const std::string&>().empty() : one->empty()) {
    return invalid("prompt", "prompt must not be empty");
  }
  if (one->is_string()) {
    r.prompt_text = one->get<std::string>();
    return std::nullopt;
  }
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < one->size(); ++i) {
    const json& x = (*one)[i];
    if (!x.is_number_unsigned() || x.get<std::uint64_t>() >= std::uint64_t(vocab)) {
      return invalid("prompt", "prompt[" + std::to_string(i) + "] = " + x.dump() +
                                   " is not a token id in [0, " + std::to_string(vocab) + ")");
    }
    ids.push_back(static_cast<std::int32_t>(x.get<std::uint64_t>()));
  }
  r.prompt_tokens = std::move(ids);
  return std::nullopt;
}

// Checks `obj` has type "function" (required unless type_optional) and a "function" object
// with a non-empty string "name", which it stores in `name`.
failure read_function(const json& obj, const std::string& p, bool type_optional, std::string& name) {
  const json* type = field(obj, "type");
  if ((type || !type_optional) && (!type || *type != "function")) {
    return invalid(p + ".type", p + ".type must be \"function\"");
  }
  const json* fn = field(obj, "function");
  if (!fn || !fn->is_object()) return invalid(p + ".function", p + ".function must be an object");
  const json* n = field(*fn, "name");
  if (!n || !n->is_string() || n->get_ref<const std::string&>().empty()) {
    return invalid(p + ".function.name", p + ".function.name must be a non-empty string");
  }
  name = n->get<std::string>();
  return std::nullopt;
}

// ---- chat: messages --------------------------------------------------------------------------

// A content part's type: text, or an image or a video, which the templates show as placeholders.
std::optional<content_part::kind> part_kind(const std::string& type) {
  if (type == "text") return content_part::kind::text;
  if (type == "image_url" || type == "input_image" || type == "image") return content_part::kind::image;
  if (type == "video_url" || type == "video") return content_part::kind::video;
  return std::nullopt;
}

// An image part's pixels: the URL in image_url ({"url": ...} or the URL string; input_image
// parts too) or in image (Qwen's own {"type": "image", "image": ...}).
failure read_image_part(const json& part, const std::string& p, content_part& out) {
  if (const json* iu = field(part, "image_url")) {
    if (iu->is_object()) {
      const json* url = field(*iu, "url");
      if (!url)
        return invalid(p + ".image_url.url", p + ".image_url.url is required (the image as a data URI)");
      return read_image_url(*url, p + ".image_url.url", out);
    }
    return read_image_url(*iu, p + ".image_url", out);
  }
  if (const json* im = field(part, "image")) return read_image_url(*im, p + ".image", out);
  return invalid(p + ".image_url", p + ".image_url is required: {\"url\": \"data:image/png;base64,...\"}");
}

// content: a string, null (""), or an array of parts, kept in m.parts; m.content gets the text
// parts joined with "\n".
failure read_content(const json& v, const std::string& param, chat_message& m) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) {
    m.content = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return wrong_type(param, "a string, null or an array of content parts", v);
  bool first_text = true;
  for (std::size_t j = 0; j < v.size(); ++j) {
    const std::string part_param = param + "[" + std::to_string(j) + "]";
    const json& part = v[j];
    if (!part.is_object()) return wrong_type(part_param, "an object", part);
    const json* type = field(part, "type");
    if (!type || !type->is_string()) {
      return invalid(part_param + ".type", part_param + ".type must be a string such as \"text\"");
    }
    const std::string& t = type->get_ref<const std::string&>();
    const std::optional<content_part::kind> kind = part_kind(t);
    if (!kind) {
      return invalid(part_param + ".type", "content part type '" + t +
                                               "' is not supported: text, image_url and video_url parts are");
    }
    content_part out;
    out.what = *kind;
    if (*kind == content_part::kind::text) {
      const json* text = field(part, "text");
      if (!text || !text->is_string()) {
        return invalid(part_param + ".text", part_param + ".text must be a string");
      }
      out.text = text->get<std::string>();
      if (!first_text) m.content += "\n";
      m.content += out.text;
      first_text = false;
    } else if (*kind == content_part::kind::image) {
      if (auto e = read_image_part(part, part_param, out)) return e;
    }
    m.parts.push_back(std::move(out));
  }
  return std::nullopt;
}

failure read_tool_calls(const json& v, const std::string& param, std::vector<tool_call>& out) {
  if (!v.is_array()) return wrong_type(param, "an array", v);
  for (std::size_t k = 0; k < v.size(); ++k) {
    const std::string p = param + "[" + std::to_string(k) + "]";
    const json& tc = v[k];
    if (!tc.is_object()) return wrong_type(p, "an object", tc);
    tool_call call;
    if (auto e = opt_string(tc, "id", p + ".id", call.id)) return e;
    if (auto e = read_function(tc, p, /*type_optional=*/true, call.name)) return e;
    const json* args = field(tc["function"], "arguments");
    if (!args) {
      call.arguments = "{}";
    } else if (args->is_string()) {
      call.arguments = args->get<std::string>();
    } else if (args->is_object()) {
      call.arguments = dump_compact(*args);
    } else {
      return wrong_type(p + ".function.arguments", "a JSON string or an object", *args);
    }
    out.push_back(std::move(call));
  }
  return std::nullopt;
}

failure read_message(const json& v, std::size_t index, chat_message& m) {
  const std::string p = "messages[" + std::to_string(index) + "]";
  if (!v.is_object()) return wrong_type(p, "an object", v);
  if (!field(v, "role")) return invalid(p + ".role", p + ".role is required");
  if (auto e = opt_string(v, "role", p + ".role", m.role)) return e;
  if (m.role == "developer") m.role = "system";
  if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
    return invalid(p + ".role", p + ".role '" + m.role +
                                    "' is unknown: expected system, developer, user, assistant "
                                    "or tool");
  }
  if (m.role == "system" && index != 0) {
    return invalid(p + ".role", "a system message is only allowed as the first message");
  }
  if (const json* c = field(v, "content")) {
    if (auto e = read_content(*c, p + ".content", m)) return e;
  }
  if (auto e = opt_string(v, "name", p + ".name", m.name)) return e;
  if (m.role == "assistant") {
    const std::string rc = p + ".reasoning_content";
    if (auto e = opt_string(v, "reasoning_content", rc, m.reasoning_content)) return e;
    if (const json* tc = field(v, "tool_calls")) {
      if (auto e = read_tool_calls(*tc, p + ".tool_calls", m.tool_calls)) return e;
    }
  }
  if (m.role == "tool") return opt_string(v, "tool_call_id", p + ".tool_call_id", m.tool_call_id);
  return std::nullopt;
}

failure read_messages(const json& body, std::vector<chat_message>& out) {
  const json* v = field(body, "messages");
  if (!v) return invalid("messages", "messages is required");
  if (!v->is_array()) return wrong_type("messages", "an array of message objects", *v);
  if (v->empty()) return invalid("messages", "messages must contain at least one message");
  out.resize(v->size());
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (auto e = read_message((*v)[i], i, out[i])) return e;
  }
  return std::nullopt;
}

// ---- chat: tools -----------------------------------------------------------------------------

failure read_tools(const json& body, json& out) {
  const json* v = field(body, "tools");
  if (!v) return std::nullopt;
  if (!v->is_array()) return wrong_type("tools", "an array", *v);
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string p = "tools[" + std::to_string(i) + "]";
    const json& tool = (*v)[i];
    if (!tool.is_object()) return wrong_type(p, "an object", tool);
    std::string name;
    if (auto e = read_function(tool, p, /*type_optional=*/false, name)) return e;
    const json* fn = &tool["function"];
    if (const json* d = field(*fn, "description"); d && !d->is_string()) {
      return wrong_type(p + ".function.description", "a string", *d);
    }
    if (const json* s = field(*fn, "parameters"); s && !s->is_object()) {
      return wrong_type(p + ".function.parameters", "an object (a JSON schema)", *s);
    }
  }
  out = *v;
  return std::nullopt;
}

bool has_tool(const json& tools, const std::string& name) {
  for (const json& tool : tools) {
    if (tool["function"]["name"] == name) return true;
  }
  return false;
}

failure read_tool_choice(const json& body, completion_request& r) {
  const json* v = field(body, "tool_choice");
  if (!v) return std::nullopt;
  const char* expected = "\"auto\", \"none\", \"required\" or {\"type\":\"function\",...}";
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    if (s != "auto" && s != "none" && s != "required") {
      return invalid("tool_choice", std::string("tool_choice must be ") + expected + ", got \"" + s + "\"");
    }
    r.tool_choice = s;
  } else if (v->is_object()) {
    std::string n;
    if (read_function(*v, "tool_choice", /*type_optional=*/false, n)) {
      return invalid("tool_choice",
                     "tool_choice as an object must be {\"type\":\"function\",\"function\":"
                     "{\"name\":...}}");
    }
    if (!has_tool(r.tools, n)) {
      return invalid("tool_choice", "tool_choice names function '" + n + "', which is not in tools");
    }
    r.tool_choice = "function:" + n;
  } else {
    return wrong_type("tool_choice", expected, *v);
  }
  if (r.tool_choice == "required" && r.tools.empty()) {
    return invalid("tool_choice", "tool_choice \"required\" needs at least one tool in tools");
  }
  return std::nullopt;
}

failure read_chat(const json& body, completion_request& r) {
  if (auto e = read_messages(body, r.messages)) return e;
  if (auto e = read_tools(body, r.tools)) return e;
  if (auto e = read_tool_choice(body, r)) return e;
  if (const json* v = field(body, "chat_template_kwargs")) {
    if (!v->is_object()) return wrong_type("chat_template_kwargs", "an object", *v);
    return opt_bool(*v, "enable_thinking", "chat_template_kwargs.enable_thinking", r.enable_thinking);
  }
  return std::nullopt;
}

}  // namespace

std::variant<completion_request, api_error> parse_request(std::string_view body, request_kind kind,
                                                          int vocab) {
  bool too_deep = false;
  const json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t, json&) {
    if (depth > max_json_depth) too_deep = true;
    return !too_deep;  // once too deep, keep nothing: the result is rejected anyway
  };
  const json parsed = json::parse(body.begin(), body.end(), limit_depth,
                                  /*allow_exceptions=*/false);
  if (too_deep) {
    return invalid("",
                   "the request body is nested deeper than " + std::to_string(max_json_depth) + " levels");
  }
  if (parsed.is_discarded()) return invalid("", "the request body is not valid JSON");
  if (!parsed.is_object()) return invalid("", "the request body must be a JSON object");

  completion_request r;
  r.kind = kind;
  if (kind == request_kind::completion) {
    if (auto e = read_prompt(parsed, vocab, r)) return *e;
  } else {
    if (auto e = read_chat(parsed, r)) return *e;
  }
  if (auto e = read_common(parsed, vocab, r)) return *e;
  return r;
}

}  // namespace anchorage
