#include "runtime/text/output/output_parser.hpp"

#include "runtime/text/output/qwen35_tool_parser.hpp"

#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace anchorage {

namespace {

using json = nlohmann::json;

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr int max_call_depth = 128;                       // deeper tool-call JSON is treated as unparsable

// Length of the UTF-8 sequence `lead` starts, or 0 when it cannot start one.
int sequence_length(unsigned char lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `b` may follow a sequence started by `lead` at byte position `pos` (>= 1). The second
// byte's range excludes overlong forms, surrogates and code points above U+10FFFF.
bool continues(unsigned char lead, std::size_t pos, unsigned char b) {
  unsigned char lo = 0x80, hi = 0xBF;
  if (pos == 1) {
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  }
  return b >= lo && b <= hi;
}

// Each held byte becomes one U+FFFD.
void flush_held(std::string& held, std::string& out) {
  for (std::size_t i = 0; i < held.size(); ++i) out += replacement;
  held.clear();
}

// Adds byte `b` after the incomplete sequence `held` (at most 3 bytes). Complete sequences move
// to `out` verbatim; each byte of an invalid one becomes U+FFFD.
void push_byte(std::string& held, unsigned char b, std::string& out) {
  if (!held.empty()) {
    const auto lead = static_cast<unsigned char>(held.front());
    if (continues(lead, held.size(), b)) {
      held.push_back(static_cast<char>(b));
      if (held.size() == static_cast<std::size_t>(sequence_length(lead))) {
        out += held;
        held.clear();
      }
      return;
    }
    flush_held(held, out);  // interrupted: `b` starts afresh below
  }
  if (b < 0x80) {
    out.push_back(static_cast<char>(b));
  } else if (sequence_length(b) == 0) {
    out += replacement;
  } else {
    held.push_back(static_cast<char>(b));
  }
}

// `bytes` as valid UTF-8, invalid bytes replaced as push_byte does.
std::string sanitize(std::string_view bytes) {
  std::string held, out;
  for (char c : bytes) push_byte(held, static_cast<unsigned char>(c), out);
  flush_held(held, out);
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Splits off the longest suffix of `text` whose characters satisfy `pred`.
template <typename Pred>
std::string take_trailing(std::string& text, Pred pred) {
  std::size_t end = text.size();
  while (end > 0 && pred(text[end - 1])) --end;
  std::string tail = text.substr(end);
  text.resize(end);
  return tail;
}

json parse_limited(const std::string& text) {
  bool too_deep = false;
  const json::parser_callback_t limit = [&too_deep](int depth, json::parse_event_t, json&) {
    if (depth > max_call_depth) too_deep = true;
    return !too_deep;
  };
  json parsed = json::parse(text, limit, /*allow_exceptions=*/false);
  if (too_deep) return json(json::value_t::discarded);
  return parsed;
}

// The call in `text` ({"name": ..., "arguments": {...}}), or false when it is not one.
// The call in Qwen3.5's XML form: exactly one <function=...> and nothing else around it.
bool parse_xml_call(const std::string& text, const nlohmann::ordered_json& tools, tool_call& call) {
  const qwen35_parsed_output p = parse_qwen35_output("<tool_call>" + text + "</tool_call>", tools);
  if (p.malformed_call || p.tool_calls.size() != 1 || !p.content.empty() || p.tool_calls[0].name.empty())
    return false;
  call.name = p.tool_calls[0].name;
  call.arguments =
      p.tool_calls[0].arguments.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return true;
}

bool parse_call(const std::string& text, const nlohmann::ordered_json& tools, tool_call& call) {
  if (text.find("<function=") != std::string::npos) return parse_xml_call(text, tools, call);
  const json parsed = parse_limited(text);
  if (!parsed.is_object()) return false;  // discarded counts as not an object
  const auto name = parsed.find("name");
  if (name == parsed.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return false;
  }
  json args = json::object();
  const auto a = parsed.find("arguments");
  if (a != parsed.end() && !a->is_null()) {
    args = a->is_string() ? parse_limited(a->get<std::string>()) : *a;
    if (!args.is_object()) return false;
  }
  call.name = name->get<std::string>();
  call.arguments = args.dump(-1, ' ', false, json::error_handler_t::replace);
  return true;
}

}  // namespace

output_parser::output_parser(bool parse_reasoning, bool parse_tool_calls, bool starts_in_reasoning,
                             tokenizer tok, nlohmann::ordered_json tools)
    : tok_(std::move(tok)),
      tools_(std::move(tools)),
      parse_reasoning_(parse_reasoning),
      parse_tool_calls_(parse_tool_calls) {
  if (parse_reasoning_ && starts_in_reasoning) section_ = section::reasoning;
}

std::vector<output_delta> output_parser::feed(token_id t) {
  std::vector<output_delta> out;
  if (!tok_.is_defined(t)) return out;
  if (tok_.is_special(t)) {
    on_special(t, out);
  } else if (!tok_.is_byte_level()) {
    on_text(tok_.token_text(t), out);
  } else if (t < special_tokens::first) {
    on_byte(static_cast<unsigned char>(t), out);
  }  // reserved ids: nothing
  return out;
}

std::vector<output_delta> output_parser::finish() {
  std::vector<output_delta> out;
  if (section_ == section::tool_call) {
    section_ = section::content;
    route_content(std::move(call_ws_) + "<tool_call>" + lossy(call_bytes_), out);
    call_ws_.clear();
    call_bytes_.clear();
  } else {
    flush_utf8(out);
  }
  newlines_held_.clear();  // trailing newlines of unterminated reasoning are trimmed
  if (result_.tool_calls.empty()) emit_text(output_delta::kind::content, ws_held_, out);
  ws_held_.clear();
  return out;
}

void output_parser::on_byte(unsigned char b, std::vector<output_delta>& out) {
  if (section_ == section::tool_call) {
    call_bytes_.push_back(static_cast<char>(b));  // decoded at the closing tag
    return;
  }
  std::string text;
  push_byte(utf8_held_, b, text);
  if (!text.empty()) route_text(std::move(text), out);
}

void output_parser::on_text(const std::string& bytes, std::vector<output_delta>& out) {
  if (section_ == section::tool_call) {
    call_bytes_ += bytes;  // decoded at the closing tag
    return;
  }
  std::string text = utf8_.push(bytes);
  if (!text.empty()) route_text(std::move(text), out);
}

std::string shown_text(const tokenizer& tok, std::string_view bytes) {
  return tok.is_byte_level() ? sanitize(bytes) : utf8_lossy(bytes);
}

std::string output_parser::lossy(const std::string& bytes) const { return shown_text(tok_, bytes); }

void output_parser::flush_utf8(std::vector<output_delta>& out) {
  std::string text = utf8_.flush();
  flush_held(utf8_held_, text);
  if (!text.empty()) route_text(std::move(text), out);
}

void output_parser::on_special(token_id t, std::vector<output_delta>& out) {
  if (section_ != section::tool_call) flush_utf8(out);
  const bool in_call = section_ == section::tool_call;
  const chat_ids& ids = tok_.ids();
  if (t == ids.think_open || t == ids.think_close) {
    if (in_call) return;
    if (!parse_reasoning_) {
      route_text(tok_.token_text(t), out);
    } else if (t == ids.think_open) {
      if (section_ == section::start) {
        ws_held_.clear();  // whitespace before <think> is dropped
        section_ = section::reasoning;
      }  // a later <think> is dropped
    } else if (section_ == section::reasoning) {
      newlines_held_.clear();
      strip_newlines_ = true;
      section_ = section::content;
    } else if (section_ == section::start) {
      section_ = section::content;  // a stray </think> is dropped but ends the "first output"
    }
    return;
  }
  if (t == ids.tool_call_open) {
    if (parse_tool_calls_ && section_ != section::reasoning) {
      open_tool_call(out);
    } else {
      route_text(tok_.token_text(t), out);
    }
    return;
  }
  if (t == ids.tool_call_close) {
    if (in_call) {
      close_tool_call(out);
    } else {
      route_text(tok_.token_text(t), out);
    }
  }
  // every other special token: nothing
}

void output_parser::open_tool_call(std::vector<output_delta>& out) {
  if (section_ == section::tool_call) {  // nested: the open call goes out verbatim
    section_ = section::content;
    route_content(std::move(call_ws_) + "<tool_call>" + lossy(call_bytes_), out);
  }
  call_ws_ = std::move(ws_held_);  // dropped if the call parses, emitted before it if not
  ws_held_.clear();
  call_bytes_.clear();
  section_ = section::tool_call;
}

void output_parser::close_tool_call(std::vector<output_delta>& out) {
  section_ = section::content;
  tool_call call;
  if (!parse_call(call_bytes_, tools_, call)) {
    route_content(std::move(call_ws_) + "<tool_call>" + lossy(call_bytes_) + "</tool_call>", out);
  } else {
    const int index = static_cast<int>(result_.tool_calls.size());
    call.id = "call_" + std::to_string(index);
    result_.tool_calls.push_back(call);
    output_delta d;
    d.what = output_delta::kind::tool_call;
    d.call = std::move(call);
    d.index = index;
    out.push_back(std::move(d));
  }
  call_ws_.clear();
  call_bytes_.clear();
}

void output_parser::route_text(std::string text, std::vector<output_delta>& out) {
  if (section_ == section::reasoning) {
    route_reasoning(std::move(text), out);
  } else {
    route_content(std::move(text), out);
  }
}

void output_parser::route_reasoning(std::string text, std::vector<output_delta>& out) {
  if (result_.reasoning.empty() && newlines_held_.empty()) {
    const std::size_t first = text.find_first_not_of('\n');
    text.erase(0, first == std::string::npos ? text.size() : first);  // newlines after <think>
  }
  std::string tail = take_trailing(text, [](char c) { return c == '\n'; });
  if (text.empty()) {
    newlines_held_ += tail;
    return;
  }
  emit_text(output_delta::kind::reasoning, std::move(newlines_held_) + text, out);
  newlines_held_ = std::move(tail);
}

void output_parser::route_content(std::string text, std::vector<output_delta>& out) {
  if (strip_newlines_) {  // newlines after </think>
    const std::size_t first = text.find_first_not_of('\n');
    if (first == std::string::npos) return;
    text.erase(0, first);
    strip_newlines_ = false;
  }
  const bool hold = parse_tool_calls_ || (parse_reasoning_ && section_ == section::start);
  std::string tail = hold ? take_trailing(text, is_space) : std::string();
  if (text.empty()) {
    ws_held_ += tail;
    return;
  }
  const bool visible = text.find_first_not_of(" \t\r\n") != std::string::npos;
  if (visible && section_ == section::start) section_ = section::content;
  emit_text(output_delta::kind::content, std::move(ws_held_) + text, out);
  ws_held_ = std::move(tail);
}

void output_parser::emit_text(output_delta::kind what, std::string text, std::vector<output_delta>& out) {
  if (text.empty()) return;
  (what == output_delta::kind::reasoning ? result_.reasoning : result_.content) += text;
  if (!out.empty() && out.back().what == what) {
    out.back().text += text;
    return;
  }
  output_delta d;
  d.what = what;
  d.text = std::move(text);
  out.push_back(std::move(d));
}

}  // namespace anchorage
