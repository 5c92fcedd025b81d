#include "runtime/text/output/qwen35_tool_parser.hpp"

#include <algorithm>
#include <optional>

#include "runtime/text/template/jinja_json.hpp"

namespace anchorage {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view call_open = "<tool_call>";
constexpr std::string_view call_close = "</tool_call>";
constexpr std::string_view function_open = "<function=";
constexpr std::string_view function_close = "</function>";
constexpr std::string_view parameter_open = "<parameter=";
constexpr std::string_view parameter_close = "</parameter>";

// The properties of tool `name`'s parameters schema, or nullptr.
const json* tool_properties(const json& tools, const std::string& name) {
  if (!tools.is_array()) return nullptr;
  for (const json& tool : tools) {
    const json* f = tool.is_object() && tool.contains("function") ? &tool["function"] : &tool;
    if (!f->is_object() || f->value("name", json()) != name) continue;
    const auto params = f->find("parameters");
    if (params == f->end() || !params->is_object()) return nullptr;
    const auto props = params->find("properties");
    return props != params->end() && props->is_object() ? &*props : nullptr;
  }
  return nullptr;
}

bool is_string_type(const json& type) {
  if (type.is_string()) return type == "string";
  if (type.is_array()) {
    for (const json& t : type) {
      if (t == "string") return true;
    }
  }
  return false;
}

// True when the schema declares `key` with a type, and that type admits no strings.
bool declared_non_string(const json* properties, const std::string& key) {
  if (properties == nullptr) return false;
  const auto it = properties->find(key);
  if (it == properties->end() || !it->is_object()) return false;
  const auto type = it->find("type");
  return type != it->end() && (type->is_string() || type->is_array()) && !is_string_type(*type);
}

json parameter_value(std::string_view text, const json* properties, const std::string& key) {
  if (!text.empty() && text.front() == '\n') text.remove_prefix(1);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (declared_non_string(properties, key)) {
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) return parsed;
  }
  return std::string(text);
}

// The inside of one <tool_call>...</tool_call>, or nullopt when it holds no <function=NAME>.
std::optional<parsed_tool_call> parse_call(std::string_view body, const json& tools) {
  const std::size_t open = body.find(function_open);
  if (open == std::string_view::npos) return std::nullopt;
  const std::size_t name_end = body.find('>', open);
  if (name_end == std::string_view::npos) return std::nullopt;
  parsed_tool_call call;
  call.name = std::string(body.substr(open + function_open.size(), name_end - open - function_open.size()));
  const json* properties = tool_properties(tools, call.name);
  std::string_view rest = body.substr(name_end + 1);
  rest = rest.substr(0, rest.find(function_close));
  for (std::size_t p = rest.find(parameter_open); p != std::string_view::npos;
       p = rest.find(parameter_open)) {
    const std::size_t key_end = rest.find('>', p);
    if (key_end == std::string_view::npos) break;
    const std::string key(rest.substr(p + parameter_open.size(), key_end - p - parameter_open.size()));
    rest.remove_prefix(key_end + 1);
    // A missing </parameter> ends the value at the next parameter or at the end.
    std::size_t value_end = rest.find(parameter_close);
    std::size_t next = value_end == std::string_view::npos ? rest.size() : value_end + parameter_close.size();
    if (value_end == std::string_view::npos) {
      value_end = std::min(rest.find(parameter_open), rest.size());
      next = value_end;
    }
    call.arguments[key] = parameter_value(rest.substr(0, value_end), properties, key);
    rest.remove_prefix(next);
  }
  return call;
}

bool is_blank(std::string_view s) { return python_strip(s).empty(); }

}  // namespace

qwen35_parsed_output parse_qwen35_output(std::string_view text, const json& tools) {
  qwen35_parsed_output out;
  if (const std::size_t close = text.find("</think>"); close != std::string_view::npos) {
    std::string_view reasoning = text.substr(0, close);
    if (const std::size_t open = reasoning.find("<think>"); open != std::string_view::npos) {
      reasoning.remove_prefix(open + 7);
    }
    out.reasoning = std::string(python_strip(reasoning));
    text = python_lstrip(text.substr(close + 8), "\n");
  }
  std::string content;
  bool first_piece = true;
  while (!text.empty()) {
    const std::size_t open = text.find(call_open);
    const std::string_view piece = text.substr(0, open);
    if (first_piece || !is_blank(piece)) content += piece;
    first_piece = false;
    if (open == std::string_view::npos) break;
    text.remove_prefix(open);
    const std::size_t close = text.find(call_close);
    std::optional<parsed_tool_call> call;
    if (close != std::string_view::npos)
      call = parse_call(text.substr(call_open.size(), close - call_open.size()), tools);
    if (!call) {  // kept as text: a truncated call takes the rest, a malformed one itself
      out.malformed_call = true;
      const std::size_t end = close == std::string_view::npos ? text.size() : close + call_close.size();
      content += text.substr(0, end);
      text.remove_prefix(end);
      continue;
    }
    out.tool_calls.push_back(std::move(*call));
    text.remove_prefix(close + call_close.size());
  }
  out.content = out.tool_calls.empty() ? std::move(content) : std::string(python_strip(content));
  return out;
}

}  // namespace anchorage
