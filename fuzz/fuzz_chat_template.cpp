// The chat templates (runtime/text): Qwen3.5's and Qwen3's native renderers on any JSON
// conversation ({"messages": [...], "tools": [...], "enable_thinking": ..., ...}, the shape of
// tests/support/template_corpus/), every renderer on the messages the chat route parses out of
// the same bytes, the template recogniser on them as a template's source, and `tojson` on the
// tools. A renderer throws only template_error (std::invalid_argument for the built-in one);
// what it renders ends with its generation prompt; `tojson` text parses back to its value.
#include <exception>

#include "fuzz/fuzz_support.hpp"
#include "runtime/api/openai_request.hpp"
#include "runtime/text/template/chat_renderer.hpp"
#include "runtime/text/template/jinja_json.hpp"
#include "runtime/text/template/qwen35_template.hpp"
#include "runtime/text/template/qwen3_template.hpp"
#include "runtime/text/template/template_kind.hpp"

using namespace anchorage;
using json = nlohmann::ordered_json;

namespace {

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

template <class Render>
void render_native(Render render, const json& messages, const chat_render_options& o) {
  try {
    const std::string text = render(messages, o);
    if (o.add_generation_prompt)
      fuzz::check(ends_with(text, "<|im_start|>assistant\n") || ends_with(text, "<think>\n") ||
                      ends_with(text, "</think>\n\n"),
                  "a rendered prompt ends with the generation prompt");
  } catch (const template_error&) {
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
}

void render_parsed(std::string_view body, bool thinking) {
  auto parsed = parse_request(body, request_kind::chat);
  const auto* r = std::get_if<completion_request>(&parsed);
  if (r == nullptr) return;
  for (chat_renderer which : {chat_renderer::builtin, chat_renderer::qwen35, chat_renderer::qwen3}) {
    try {
      const std::string text = render_prompt_text(which, r->messages, r->tools, thinking);
      fuzz::check(!text.empty(), "a rendered prompt is not empty");
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
      fuzz::unexpected_exception(e.what());
    }
  }
}

void tojson_round_trip(const json& value) {
  try {
    const std::string text = python_json_dumps(value);
    const json back = json::parse(text, nullptr, false);
    fuzz::check(!back.is_discarded(), "tojson writes JSON");
    fuzz::check(back == value, "tojson's text parses back to its value");
  } catch (const template_error&) {
  } catch (const std::exception& e) {
    fuzz::unexpected_exception(e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  (void)recognize_template(text);

  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return 0;
  chat_render_options o;
  json messages = doc;
  bool thinking = true;
  if (doc.is_object()) {
    messages = doc.contains("messages") ? doc["messages"] : json();
    if (doc.contains("tools")) o.tools = doc["tools"];
    if (auto it = doc.find("add_generation_prompt"); it != doc.end() && it->is_boolean())
      o.add_generation_prompt = it->get<bool>();
    if (auto it = doc.find("enable_thinking"); it != doc.end() && it->is_boolean())
      thinking = it->get<bool>(), o.enable_thinking = thinking;
    if (auto it = doc.find("add_vision_id"); it != doc.end() && it->is_boolean())
      o.add_vision_id = it->get<bool>();
  }
  render_native(render_qwen35, messages, o);
  render_native(render_qwen3, messages, o);
  render_parsed(text, thinking);
  tojson_round_trip(doc);
  return 0;
}
